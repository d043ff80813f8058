"""Cost model of the deployed stack, from operation counts the benchmark measures and published prices.

Counts come from the server under test running with the deployed waiting behaviour (``--poll`` with the template's
``PollIntervalSeconds``): DynamoDB requests and capacity units as DynamoDB Local reports them, store calls, and
wall time per route (what Lambda bills). Sizes and settings of the functions come from template.yaml.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bench.server import ROOT


@dataclass(frozen=True)
class Prices:
    """US East (N. Virginia) on-demand list prices, as published by AWS (checked November 2026)."""

    dynamodb_read_per_million: float = 0.125  # on-demand read request units (price since 1 Nov 2024)
    dynamodb_write_per_million: float = 0.625  # on-demand write request units
    lambda_gb_second: float = 0.0000166667  # x86_64, first 6 billion GB-s per month
    lambda_per_million_requests: float = 0.20
    api_gateway_rest_per_million: float = 3.50  # REST API, first 333 million requests per month


@dataclass(frozen=True)
class Deployment:
    """What the template deploys: waiting behaviour and memory per route."""

    poll_interval_seconds: float = 0.25
    stream_max_seconds: float = 840
    heartbeat_seconds: float = 15
    default_memory_mb: int = 256
    memory_mb: dict[str, int] | None = None  # route path -> MemorySize

    def memory_for(self, path: str) -> int:
        return (self.memory_mb or {}).get(path, self.default_memory_mb)


def deployment_from_template() -> Deployment:
    """Read template.yaml's defaults; fall back to the built-in ones when it is missing or unreadable."""
    try:
        from codap_relay.commands.dynamodb import load_template

        template = load_template(ROOT / "template.yaml")
    except Exception:
        return Deployment()
    params = template.get("Parameters") or {}

    def param(name: str, fallback: float) -> float:
        try:
            return float(params.get(name, {}).get("Default", fallback))
        except (TypeError, ValueError):
            return fallback

    default_mem = int(((template.get("Globals") or {}).get("Function") or {}).get("MemorySize", 256))
    memory: dict[str, int] = {}
    for resource in (template.get("Resources") or {}).values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        mem = int(props.get("MemorySize", default_mem))
        for event in (props.get("Events") or {}).values():
            path = ((event or {}).get("Properties") or {}).get("Path")
            if isinstance(path, str):
                memory[path] = mem
    return Deployment(
        poll_interval_seconds=param("PollIntervalSeconds", 0.25),
        stream_max_seconds=param("StreamMaxSeconds", 840),
        heartbeat_seconds=param("HeartbeatSeconds", 15),
        default_memory_mb=default_mem,
        memory_mb=memory,
    )


def units(counts: dict[str, Any]) -> tuple[float, float]:
    """(read units, write units) from DynamoDB's own reports, or store calls counted as 1 unit each otherwise."""
    dynamo = counts.get("dynamodb") or {}
    if dynamo.get("calls"):
        return float(dynamo["read_units"]), float(dynamo["write_units"])
    store = counts.get("store") or {}
    writes = sum(n for op, n in store.items() if op in STORE_WRITES)
    reads = sum(n for op, n in store.items() if op not in STORE_WRITES and op != "close")
    return float(reads), float(writes)


STORE_WRITES = frozenset(
    {"create_session", "update_session", "add_request", "mark_delivered", "complete_request", "incr_counter"}
)


def route_seconds(counts: dict[str, Any], key: str) -> tuple[int, float]:
    entry = (counts.get("routes") or {}).get(key) or {}
    return int(entry.get("count", 0)), float(entry.get("seconds", 0.0))


def per_call(
    counts: dict[str, Any],
    calls: int,
    seconds: float,
    idle_rate: tuple[float, float],
    routes: list[str],
    dep: Deployment,
) -> dict[str, Any]:
    """Per 1,000 tool calls: DynamoDB units beyond what an idle plugin costs anyway, Lambda GB-s, requests."""
    reads, writes = units(counts)
    reads = max(0.0, reads - idle_rate[0] * seconds)
    writes = max(0.0, writes - idle_rate[1] * seconds)
    lambda_ms = 0.0
    gb_seconds = 0.0
    requests = 0
    for key in routes:
        n, secs = route_seconds(counts, key)
        path = key.split(" ", 1)[1]
        lambda_ms += secs * 1000
        gb_seconds += secs * dep.memory_for(path) / 1024
        requests += n
    scale = 1000 / calls if calls else 0.0
    return {
        "read_units": round(reads * scale, 1),
        "write_units": round(writes * scale, 1),
        "lambda_ms": round(lambda_ms * scale, 1),
        "lambda_gb_seconds": round(gb_seconds * scale, 3),
        "requests": round(requests * scale),
        "dynamodb_calls": {
            k: round(v * scale, 1) for k, v in ((counts.get("dynamodb") or {}).get("calls") or {}).items()
        },
    }


def per_idle_hour(counts: dict[str, Any], seconds: float, dep: Deployment) -> dict[str, Any]:
    """One connected plugin doing nothing for an hour: its stream function runs the whole hour."""
    reads, writes = units(counts)
    scale = 3600 / seconds
    invocations = 3600 / dep.stream_max_seconds
    return {
        "read_units": round(reads * scale),
        "write_units": round(writes * scale),
        "lambda_ms": 3_600_000,
        "lambda_gb_seconds": round(3600 * dep.memory_for("/stream") / 1024, 1),
        "requests": round(invocations, 2),
        "dynamodb_calls": {k: round(v * scale) for k, v in ((counts.get("dynamodb") or {}).get("calls") or {}).items()},
    }


def dollars(figures: dict[str, Any], prices: Prices) -> dict[str, float]:
    dynamo = (
        figures["read_units"] * prices.dynamodb_read_per_million
        + figures["write_units"] * prices.dynamodb_write_per_million
    ) / 1e6
    lam = figures["lambda_gb_seconds"] * prices.lambda_gb_second + figures["requests"] * (
        prices.lambda_per_million_requests / 1e6
    )
    api = figures["requests"] * prices.api_gateway_rest_per_million / 1e6
    return {
        "dynamodb_usd": round(dynamo, 6),
        "lambda_usd": round(lam, 6),
        "api_gateway_usd": round(api, 6),
        "total_usd": round(dynamo + lam + api, 6),
    }


def model(
    idle: dict[str, Any],
    idle_seconds: float,
    http: dict[str, Any],
    http_calls: int,
    http_seconds: float,
    mcp: dict[str, Any] | None,
    mcp_calls: int,
    mcp_seconds: float,
    dep: Deployment,
    prices: Prices,
    source: str,
) -> dict[str, Any]:
    idle_reads, idle_writes = units(idle)
    rate = (idle_reads / idle_seconds, idle_writes / idle_seconds)
    out: dict[str, Any] = {"source": source, "prices": asdict(prices), "deployment": asdict(dep)}
    hour = per_idle_hour(idle, idle_seconds, dep)
    out["idle_plugin_hour"] = {**hour, **dollars(hour, prices)}
    http_routes = ["POST /request", "GET /response", "POST /response"]
    calls = per_call(http, http_calls, http_seconds, rate, http_routes, dep)
    out["per_1000_http_calls"] = {**calls, **dollars(calls, prices)}
    if mcp is not None:
        calls = per_call(mcp, mcp_calls, mcp_seconds, rate, ["POST /mcp/{code}", "POST /response"], dep)
        out["per_1000_mcp_calls"] = {**calls, **dollars(calls, prices)}
    return out
