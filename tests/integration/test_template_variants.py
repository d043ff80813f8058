"""Every option of template.yaml lints clean: the template rendered for combinations of its condition-driving
parameters (codap_relay_tooling.testing.template_variants), each linted as `sam validate --lint` and `cfn-lint` lint
it, all in one process.

Which combinations: the 9 options have 576 distinct outcomes, and one lint takes about 3 s of CPU, so all of them
take half an hour: ``python -m codap_relay_tooling.testing.template_variants`` lints them all, a check to run when the
template's options change. The variants here form a covering array of strength 2 instead: every pair of two options'
values is in at least one variant (10 variants). A lint finding that needs options together comes from one option's
resources referring to another's (a Ref, a DependsOn, an alarm's metric of a conditional function), which is a pair;
the template's composite conditions (AlarmsByEmail, BudgetOn, ThrottleAlarmOn, PushAlarmOn) join two options each.
The unrendered template, every condition at once, is linted by test_sam.py and test_dynamodb_store.py.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codap_relay.sam_template import load_template
from codap_relay_tooling.testing.sam import SAM_VENV, TEMPLATE_PATH, need_sam
from codap_relay_tooling.testing.template_variants import (
    OPTIONS,
    RENDERING_ONLY,
    condition_parameters,
    distinct_variants,
    lint_findings,
    pairs_of,
    pairwise,
    render,
    sam_validate_lint,
    write_variants,
)

pytestmark = pytest.mark.slow

TEMPLATE = load_template(TEMPLATE_PATH)


def test_the_options_cover_every_condition_driving_parameter() -> None:
    assert set(OPTIONS) == condition_parameters(TEMPLATE), "a new condition's parameter needs its values here"
    for name, values in OPTIONS.items():
        allowed = TEMPLATE["Parameters"][name].get("AllowedValues")
        if allowed is not None:
            assert sorted(values) == sorted(allowed), f"{name}: lint each of its allowed values"


def test_the_variants_hold_every_pair_of_option_values() -> None:
    chosen = pairwise(OPTIONS)
    every_pair = set().union(*(pairs_of(dict(zip(OPTIONS, v, strict=True))) for v in _product()))
    assert set().union(*(pairs_of(c) for c in chosen)) == every_pair
    assert len(chosen) <= 12, "the lint's time grows with each variant"


def _product() -> list[tuple[str, ...]]:
    import itertools

    return list(itertools.product(*OPTIONS.values()))


def test_rendering_decides_every_condition() -> None:
    on = render(TEMPLATE, {"PushChannel": "websocket", "Alarms": "Enabled", "AlertEmail": "ops@example.org"})
    off = render(TEMPLATE, {"PushChannel": "sse", "Alarms": "Disabled"})
    assert "Conditions" not in on and "PushApi" in on["Resources"] and "AlertTopic" in on["Resources"]
    assert "PushApi" not in off["Resources"] and "LambdaErrorsAlarm" not in off["Resources"]
    # the push function's metric is in the alarm only where the function exists
    metrics = on["Resources"]["LambdaErrorsAlarm"]["Properties"]["Metrics"]
    assert any(m["Id"] == "push" for m in metrics)
    assert '"Fn::If"' not in repr(on).replace("'", '"')
    assert "AWS::NoValue" not in repr(off)


def _lint_cli(paths: list[Path]) -> str:
    """The dev extra's cfn-lint, on every file at once; its output (empty when clean)."""
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    cmd = [str(cfn_lint), "--format", "parseable", "--ignore-checks", *RENDERING_ONLY, "--", *map(str, paths)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return result.stdout + result.stderr if result.returncode else ""


def _sam_cfn_lint_version() -> str:
    cmd = [str(SAM_VENV / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('cfn-lint'))"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout.strip()


def test_every_option_combination_lints_clean(tmp_path: Path) -> None:
    need_sam()
    variants: dict[str, dict[str, Any]] = distinct_variants(TEMPLATE, pairwise(OPTIONS))
    files = write_variants(variants, tmp_path)
    failures = lint_findings(sam_validate_lint(list(files)), files)
    assert not failures, "\n".join(f"{name}:\n  " + "\n  ".join(m) for name, m in failures.items())
    # `cfn-lint` is the same library `sam validate --lint` calls: run it apart only if the versions differ.
    if importlib.metadata.version("cfn-lint") != _sam_cfn_lint_version():
        assert not (output := _lint_cli(list(files))), output
