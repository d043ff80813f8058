"""Cost model of the deployed stack, from what the benchmark measures through local-api and published prices.

The counts come from bench.deployed: DynamoDB requests and capacity units as AWS bills them (bench.dynamo_proxy),
Lambda billed duration per function from local-api's REPORT lines, API requests as invocations. Memory sizes,
architecture and waiting settings come from template.yaml.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bench.server import ROOT


@dataclass(frozen=True)
class Prices:
    """US East (N. Virginia) on-demand list prices, as AWS publishes them on aws.amazon.com/lambda/pricing,
    aws.amazon.com/dynamodb/pricing/on-demand and aws.amazon.com/api-gateway/pricing; assumed as of 2026-11-22
    (docs/performance.md says how they were checked)."""

    dynamodb_read_per_million: float = 0.125  # on-demand read request units (price since 1 Nov 2024)
    dynamodb_write_per_million: float = 0.625  # on-demand write request units
    lambda_gb_second_x86_64: float = 0.0000166667  # first 6 billion GB-s per month
    lambda_gb_second_arm64: float = 0.0000133334  # first 7.5 billion GB-s per month
    lambda_per_million_requests: float = 0.20
    api_gateway_rest_per_million: float = 3.50  # REST API, first 333 million requests per month

    def lambda_gb_second(self, architecture: str) -> float:
        return self.lambda_gb_second_arm64 if architecture == "arm64" else self.lambda_gb_second_x86_64


@dataclass(frozen=True)
class Deployment:
    """What the template deploys: waiting behaviour, and memory and architecture per function (logical id)."""

    poll_interval_seconds: float = 0.1
    idle_poll_interval_seconds: float | None = None  # None: one interval, active or not
    poll_active_seconds: float = 0.0
    stream_max_seconds: float = 840
    heartbeat_seconds: float = 15
    architecture: str = "x86_64"
    default_memory_mb: int = 256
    memory_mb: dict[str, int] | None = None  # function logical id -> MemorySize

    def memory_for(self, function: str) -> int:
        return (self.memory_mb or {}).get(function, self.default_memory_mb)


def deployment_from_template() -> Deployment:
    """Read template.yaml's defaults; fall back to the built-in ones when it is missing or unreadable."""
    try:
        from codap_relay.sam_template import load_template

        template = load_template(ROOT / "template.yaml")
    except Exception:
        return Deployment()
    params = template.get("Parameters") or {}

    def param(name: str, fallback: float | None) -> float | None:
        try:
            return float(params[name]["Default"]) if name in params else fallback
        except (TypeError, ValueError, KeyError):
            return fallback

    globals_ = (template.get("Globals") or {}).get("Function") or {}
    default_mem = int(globals_.get("MemorySize", 256))
    architecture = str((globals_.get("Architectures") or ["x86_64"])[0])
    memory: dict[str, int] = {}
    for name, resource in (template.get("Resources") or {}).items():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function":
            memory[name] = int((resource.get("Properties") or {}).get("MemorySize", default_mem))
    return Deployment(
        poll_interval_seconds=param("PollIntervalSeconds", 0.1) or 0.1,
        idle_poll_interval_seconds=param("IdlePollIntervalSeconds", None),
        poll_active_seconds=param("PollActiveSeconds", 0.0) or 0.0,
        stream_max_seconds=param("StreamMaxSeconds", 840) or 840,
        heartbeat_seconds=param("HeartbeatSeconds", 15) or 15,
        architecture=architecture,
        default_memory_mb=default_mem,
        memory_mb=memory,
    )


STREAM_FUNCTION = "StreamFunction"


def idle_hour(idle: dict[str, Any], dep: Deployment) -> dict[str, Any]:
    """One connected plugin doing nothing for an hour: its stream function runs (and is billed) the whole hour."""
    requests = 3600 / dep.stream_max_seconds
    return {
        "read_units": idle["read_units"],
        "write_units": idle["write_units"],
        "lambda_gb_seconds": round(3600 * dep.memory_for(STREAM_FUNCTION) / 1024, 1),
        "lambda_requests": round(requests, 2),
        "api_requests": round(requests, 2),
    }


def thousand_calls(call: dict[str, Any], idle: dict[str, Any] | None, dep: Deployment) -> dict[str, Any]:
    """1,000 calls of one type: DynamoDB units beyond what the idle plugin costs anyway over the same time,
    Lambda GB-s of every function but the stream (billed duration x memory), API Gateway and Lambda requests."""
    seconds = call["seconds_per_call"]
    idle_reads = (idle or {}).get("read_units", 0) / 3600 * seconds
    idle_writes = (idle or {}).get("write_units", 0) / 3600 * seconds
    gb_seconds = sum(ms / 1000 * dep.memory_for(f) / 1024 for f, ms in call["lambda_billed_ms"].items())
    return {
        "read_units": round(max(0.0, call["read_units"] - idle_reads) * 1000, 1),
        "write_units": round(max(0.0, call["write_units"] - idle_writes) * 1000, 1),
        "lambda_gb_seconds": round(gb_seconds * 1000, 3),
        "lambda_requests": round(call["api_requests"] * 1000),
        "api_requests": round(call["api_requests"] * 1000),
    }


def dollars(figures: dict[str, Any], prices: Prices, architecture: str) -> dict[str, float]:
    dynamo = (
        figures["read_units"] * prices.dynamodb_read_per_million
        + figures["write_units"] * prices.dynamodb_write_per_million
    ) / 1e6
    lam = figures["lambda_gb_seconds"] * prices.lambda_gb_second(architecture) + figures["lambda_requests"] * (
        prices.lambda_per_million_requests / 1e6
    )
    api = figures["api_requests"] * prices.api_gateway_rest_per_million / 1e6
    return {
        "dynamodb_usd": round(dynamo, 6),
        "lambda_usd": round(lam, 6),
        "api_gateway_usd": round(api, 6),
        "total_usd": round(dynamo + lam + api, 6),
    }


def model(deployed: dict[str, Any], dep: Deployment, prices: Prices) -> dict[str, Any]:
    """Price the deployed stack's measured figures (bench.deployed)."""
    out: dict[str, Any] = {"prices": asdict(prices), "deployment": asdict(dep)}
    idle = deployed.get("idle")
    if idle is not None:
        hour = idle_hour(idle, dep)
        out["idle_plugin_hour"] = {**hour, **dollars(hour, prices, dep.architecture)}
    for kind, call in deployed["kinds"].items():
        figures = thousand_calls(call, idle, dep)
        out[f"per_1000_{kind}"] = {**figures, **dollars(figures, prices, dep.architecture)}
    return out
