"""Cold-start proxy: import time of each Lambda handler module (``-X importtime``) and a first invocation under moto.

Lambda's own init (runtime start, downloading the package) is not measured; what is measured is the part the
code controls: what a handler module imports and builds at init, and what its first invocation costs over a warm one.

Both are also measured in CPU time, which a loaded machine disturbs less than wall time, and projected onto the
function's share of a vCPU on Lambda (memory / 1,769 MB, as template.yaml configures it): the cold start a
function would see if Lambda gave its init no more CPU than its invocations. That projection is what the waits'
budget under API Gateway's 29 s (docs/deploy.md) is built on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.server import ROOT

PROBE = Path(__file__).resolve().parent / "coldstart_probe.py"
TEMPLATE = ROOT / "template.yaml"
FULL_VCPU_MB = 1769  # Lambda gives a function one vCPU's worth of CPU time at 1,769 MB, in proportion below
FUNCTIONS = ROOT / "functions"
EVENTS = ROOT / "events"
TABLE = "codap-relay-bench"
MARKER = "--- bench: loading the handler module ---"


def handler_modules() -> list[Path]:
    """Every ``functions/<name>/app.py`` (the Mangum handlers). The stream function runs the local app module."""
    return sorted(FUNCTIONS.glob("*/app.py"))


def _env() -> dict[str, str]:
    # Never AWS: fake credentials, and a store URL that builds a client without calling anything at import.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "RELAY_STORE": f"dynamodb://{TABLE}?region=us-east-1",
            "TABLE_NAME": TABLE,
            "BENCH_TABLE": TABLE,
            "POWERTOOLS_METRICS_NAMESPACE": "codap-relay-bench",
            "POWERTOOLS_SERVICE_NAME": "codap-relay",
            # As template.yaml sets it with Tracing=Disabled, its default: no X-Ray SDK at init.
            "POWERTOOLS_TRACE_DISABLED": "true",
            # As in the deployment: the core package and functions/shared (the CoreLayer) on the path.
            "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(FUNCTIONS / "shared"), str(ROOT)]),
        }
    )
    return env


def parse_importtime(stderr: str) -> dict[str, Any]:
    """Total import time and the packages that dominate it (self time summed by top-level package)."""
    by_package: Counter[str] = Counter()
    total_us = 0
    lines = stderr.splitlines()
    if MARKER in lines:  # only what the handler module pulled in, not interpreter start-up
        lines = lines[lines.index(MARKER) + 1 :]
    for line in lines:
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        head, cumulative_us, name = line.split("|", 2)
        self_us = int(head.split(":")[1])
        indent = len(name) - len(name.lstrip(" "))
        by_package[name.strip().split(".")[0]] += self_us
        if indent == 1:  # a direct import of the probe: its cumulative time covers everything under it
            total_us += int(cumulative_us)
    top = [{"package": p, "ms": round(us / 1000, 1)} for p, us in by_package.most_common(6)]
    return {"import_ms": round(total_us / 1000, 1), "top": top}


def measure_import(module: Path, repeat: int) -> dict[str, Any]:
    """Best of ``repeat`` fresh interpreters (the machine is shared; the minimum is the least disturbed)."""
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", str(PROBE), "import", str(module)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        parsed = parse_importtime(proc.stderr)
        run = {
            "init_ms": round(figures["init_seconds"] * 1000, 1),
            "init_cpu_ms": round(figures["init_cpu_seconds"] * 1000, 1),
            **parsed,
        }
        if best is None or run["init_ms"] < best["init_ms"]:
            best = run
    assert best is not None
    return best


def event_for(module: Path) -> Path | None:
    """The function's main happy-path event: ``<name>.json``, else ``<name>-create``/``-tools-call``/…"""
    name = module.parent.name
    for suffix in ("", "-create", "-tools-call", "-health", "-poll", "-get"):
        candidate = EVENTS / f"{name}{suffix}.json"
        if candidate.exists():
            return candidate
    found = sorted(EVENTS.glob(f"{name}*.json"))
    return found[0] if found else None


def measure_invocation(module: Path) -> dict[str, Any]:
    event = event_for(module)
    if event is None:
        return {"error": f"no events/{module.parent.name}*.json to invoke it with"}
    proc = subprocess.run(
        [sys.executable, str(PROBE), "invoke", str(module), str(event)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    raw = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "event": event.name,
        "init_under_moto_ms": round(raw["init_seconds"] * 1000, 1),
        "first_invocation_ms": round(raw["first_seconds"] * 1000, 1),
        "first_invocation_cpu_ms": round(raw["first_cpu_seconds"] * 1000, 1),
        "warm_invocation_ms": round(raw["warm_seconds"] * 1000, 1),
        "statuses": raw["statuses"],
    }


def memory_mb(module: Path) -> int | None:
    """The function's MemorySize in template.yaml (its own, else the Globals'), found by its CodeUri."""
    from codap_relay.sam_template import load_template

    template = load_template(TEMPLATE)
    default = template.get("Globals", {}).get("Function", {}).get("MemorySize")
    code_uri = str(module.parent.relative_to(ROOT))
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::Function" and str(props.get("CodeUri", "")).rstrip("/") == code_uri:
            size = props.get("MemorySize", default)
            return int(size) if size is not None else None
    return None


def projected_cold_start(entry: dict[str, Any], memory: int | None) -> dict[str, Any]:
    """Init + first invocation CPU time, stretched to the function's vCPU share at its configured memory."""
    first = (entry.get("invocation") or {}).get("first_invocation_cpu_ms")
    if memory is None or "init_cpu_ms" not in entry or first is None:
        return {}
    share = min(1.0, memory / FULL_VCPU_MB)
    cpu_ms = entry["init_cpu_ms"] + first
    return {
        "memory_mb": memory,
        "vcpu_share": round(share, 3),
        "cold_cpu_ms": round(cpu_ms, 1),
        "projected_cold_ms": round(cpu_ms / share),
    }


def run(repeat: int = 3, invoke: bool = True, only: list[str] | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for module in handler_modules():
        if only is not None and module.parent.name not in only:
            continue
        entry = {"module": str(module.relative_to(ROOT)), **measure_import(module, repeat)}
        if invoke:
            entry["invocation"] = measure_invocation(module)
            entry["at_memory"] = projected_cold_start(entry, memory_mb(module))
        results[module.parent.name] = entry
    baseline = measure_baseline(repeat)
    return {"functions": results, "baseline": baseline}


def measure_baseline(repeat: int) -> dict[str, Any]:
    """The baseline handler: starlette and mangum alone, i.e. the floor of any ASGI-on-Lambda handler here."""
    path = Path(__file__).resolve().parent / "baseline_handler.py"
    return {"module": str(path.relative_to(ROOT)), **measure_import(path, repeat)}
