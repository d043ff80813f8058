"""template.yaml rendered for each combination of its options, and linted as ``sam validate --lint`` lints it.

A variant is the template as one choice of the condition-driving parameters leaves it: every condition decided,
``Fn::If`` replaced by its branch, ``AWS::NoValue`` dropped, resources and outputs whose condition is false
removed, and the chosen values made the parameters' defaults (the SAM transform reads some, e.g. ``Tracing``).
What a deploy with those parameters would see, with no condition left for a linter to reason about.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from codap_relay_tooling.localapi.template import Resolver
from codap_relay_tooling.testing.sam import SAM_VENV, need_sam

NO_VALUE = {"Ref": "AWS::NoValue"}
# Each condition-driving parameter of template.yaml, with one value per outcome of the conditions it decides.
OPTIONS = {
    "Tracing": ["Disabled", "Active"],
    "WebAdapterLayerArn": ["", "arn:aws:lambda:us-east-1:111122223333:layer:MyAdapter:3"],
    "StreamConcurrency": ["0", "100"],
    "TableWarmReadUnitsPerSecond": ["0", "30000"],
    "PushChannel": ["sse", "websocket"],
    "ApiAccessLogging": ["Disabled", "UseAccountRole", "CreateAccountRole"],
    "Alarms": ["Enabled", "Disabled"],
    "AlertEmail": ["", "ops@example.org"],
    "MonthlyBudgetUsd": ["0", "100"],
}
# Parameters the rendered variants no longer read (only a dropped branch did): an artefact of rendering.
RENDERING_ONLY = ("W2001",)


def condition_parameters(template: Mapping[str, Any]) -> set[str]:
    """Every parameter the Conditions section reads."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("Ref"), str) and node["Ref"] in (template.get("Parameters") or {}):
                names.add(node["Ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(template.get("Conditions") or {})
    return names


def combinations(options: Mapping[str, Iterable[str]]) -> list[dict[str, str]]:
    """Every combination of the options' values."""
    names = sorted(options)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(options[n] for n in names))]


def pairs_of(choice: Mapping[str, str]) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    items = sorted(choice.items())
    return set(itertools.combinations(items, 2))


def pairwise(options: Mapping[str, Iterable[str]]) -> list[dict[str, str]]:
    """Few combinations that hold every pair of two options' values at least once (a covering array of strength
    2, built greedily: each step takes the combination that covers the most pairs not yet covered)."""
    candidates = combinations(options)
    uncovered = set().union(*(pairs_of(c) for c in candidates))
    chosen: list[dict[str, str]] = []
    while uncovered:
        best = max(candidates, key=lambda c: len(pairs_of(c) & uncovered))
        chosen.append(best)
        uncovered -= pairs_of(best)
    return chosen


def decided_conditions(template: Mapping[str, Any], values: Mapping[str, str], region: str) -> dict[str, bool]:
    params = {n: str(values.get(n, p.get("Default", ""))) for n, p in (template.get("Parameters") or {}).items()}
    resolver = Resolver(template, params, region, stack_name="codap-relay", symbolic=True)
    return {name: resolver.condition(name) for name in template.get("Conditions") or {}}


def render(template: Mapping[str, Any], values: Mapping[str, str], region: str = "us-east-1") -> dict[str, Any]:
    """The template as the parameter ``values`` (the rest at their defaults) deploy it, without conditions."""
    conditions = decided_conditions(template, values, region)

    def decide(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::If"}:
                name, then, otherwise = node["Fn::If"]
                return decide(then if conditions[name] else otherwise)
            out = {}
            for key, value in node.items():
                decided = decide(value)
                if decided != NO_VALUE:
                    out[key] = decided
            return out
        if isinstance(node, list):
            return [d for d in (decide(v) for v in node) if d != NO_VALUE]
        return node

    out = copy.deepcopy(dict(template))
    out.pop("Conditions", None)
    for section in ("Resources", "Outputs"):
        kept = {}
        for name, entry in (out.get(section) or {}).items():
            condition = entry.pop("Condition", None)
            if condition is None or conditions[condition]:
                kept[name] = decide(entry)
        out[section] = kept
    out["Globals"] = decide(out.get("Globals") or {})
    for name, value in values.items():
        # The one value this deploy passes: a linter resolving a Ref sees it, not the parameter's whole range.
        out["Parameters"][name]["Default"] = value
        out["Parameters"][name]["AllowedValues"] = [value]
    return out


def distinct_variants(
    template: Mapping[str, Any], choices: list[dict[str, str]], region: str = "us-east-1"
) -> dict[str, dict[str, Any]]:
    """One rendered template per distinct outcome of the conditions (choices that decide every condition alike
    render the same template but for defaults no resource reads), keyed by a readable name of the choice."""
    seen: dict[tuple[bool, ...], tuple[str, dict[str, Any]]] = {}
    for values in choices:
        outcome = tuple(decided_conditions(template, values, region).values())
        if outcome not in seen:
            seen[outcome] = (",".join(f"{k}={v}" for k, v in sorted(values.items())), render(template, values, region))
    return dict(seen.values())


# Runs in the SAM CLI's virtualenv: what `sam validate --lint --region R` does for one template
# (samcli.commands.validate.validate._lint: cfnlint.api.lint with that region), once per file.
LINT = """
import json, sys
from cfnlint.api import ManualArgs, lint
region, paths = sys.argv[1], sys.argv[2:]
out = {}
for path in paths:
    out[path] = [str(m) for m in lint(open(path).read(), config=ManualArgs(regions=[region]))]
print(json.dumps(out))
"""


def sam_validate_lint(
    paths: list[Path], region: str = "us-east-1", timeout: float | None = 900
) -> dict[str, list[str]]:
    """Every file's lint matches as ``sam validate --lint`` reports them (one process for all of them)."""
    need_sam()
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
    result = subprocess.run(
        [str(SAM_VENV / "bin" / "python"), "-c", LINT, region, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    found: dict[str, list[str]] = json.loads(result.stdout)
    return found


def write_variants(variants: Mapping[str, dict[str, Any]], folder: Path) -> dict[Path, str]:
    """Each variant as a JSON template file (CloudFormation and cfn-lint read JSON as they read YAML)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for n, (name, template) in enumerate(variants.items()):
        path = folder / f"variant-{n:03d}.json"
        path.write_text(json.dumps(template, indent=1))
        files[path] = name
    return files


def lint_findings(found: Mapping[str, list[str]], files: Mapping[Path, str]) -> dict[str, list[str]]:
    """The variants (by name) with findings, rendering's own artefacts left out."""
    failures = {
        files[Path(path)]: [m for m in matches if not any(f"[{rule}:" in m for rule in RENDERING_ONLY)]
        for path, matches in found.items()
    }
    return {name: matches for name, matches in failures.items() if matches}


def lint_every_combination(folder: Path, processes: int) -> tuple[int, dict[str, list[str]]]:
    """Every distinct outcome of every combination of OPTIONS, linted as ``sam validate --lint`` lints it, in
    ``processes`` lint processes side by side: (how many variants, the failing ones). About 3 s of CPU each."""
    from concurrent.futures import ThreadPoolExecutor

    from codap_relay.sam_template import load_template

    from .sam import TEMPLATE_PATH

    variants = distinct_variants(load_template(TEMPLATE_PATH), combinations(OPTIONS))
    files = write_variants(variants, folder)
    paths = sorted(files)
    chunks = [paths[n : n + 24] for n in range(0, len(paths), 24)]  # a process each: progress shows as they end
    found: dict[str, list[str]] = {}
    with ThreadPoolExecutor(processes) as pool:
        for part in pool.map(lambda chunk: sam_validate_lint(chunk, timeout=None), chunks):
            found.update(part)
            print(f"{len(found)} of {len(paths)} linted", flush=True)
    return len(files), lint_findings(found, files)


def main() -> None:
    """``python -m codap_relay_tooling.testing.template_variants [processes]``: the full lint, beyond CI's pairs."""
    import sys
    import tempfile
    import time

    processes = int(sys.argv[1]) if len(sys.argv) > 1 else (os.cpu_count() or 1)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        count, failures = lint_every_combination(Path(folder), processes)
    for name, matches in failures.items():
        print(f"{name}:\n  " + "\n  ".join(matches))
    print(f"{count} variants linted in {time.monotonic() - started:.0f} s: {len(failures)} with findings")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
