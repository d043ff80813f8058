"""``python -m bench``: the relay's benchmark. Starts what it needs on loopback, runs, stops everything, prints a table.

Sections (all by default; ``--only`` picks some): round trips over HTTP (``?wait`` and ``GET /response``) and MCP
at several concurrencies on the default store (SQLite), store operations per call type, the other stores (memory,
DynamoDB Local), throughput at saturation, /healthz while status reads hammer a full session (pressure), idle SSE
streams, cold start of the Lambda handlers, the deployed shape (local-api on DynamoDB Local) with the cost model
priced from it, and each tool's time inside the real CODAP build (codap). Each figure comes with a baseline
measured in the same run on the same server: a trivial endpoint (and the floor, two bare POSTs in a row), the same
client, the same concurrency (for codap: one Data Interactive message to CODAP).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import codap_bench, coldstart, cost, cpushare, deployed, load, pressure
from bench.dynamo import LocalTable, dynamodb_local
from bench.idle import idle_streams
from bench.report import render
from bench.server import run_target
from bench.stats import ratio, summary
from codap_relay_tooling.testing.servers import raise_fd_limit

SECTIONS = (
    "roundtrip",
    "ops",
    "stores",
    "throughput",
    "pressure",
    "idle",
    "coldstart",
    "deployed",
    "cpushare",
    "codap",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--only", help=f"comma-separated sections to run: {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--concurrency", default="1,10,100", help="session pairs for the round-trip section")
    p.add_argument("--round-trips", type=int, default=300, help="round trips per concurrency level (spread over pairs)")
    p.add_argument("--no-mcp", action="store_true", help="skip the MCP tools/call measurements")
    p.add_argument("--ops-calls", type=int, default=30, help="calls of each type for the store-operation counts")
    p.add_argument("--stores", default="memory,sqlite,dynamodb", help="stores for the stores section")
    p.add_argument("--store-concurrency", default="1,10", help="session pairs for the stores section")
    p.add_argument("--store-round-trips", type=int, default=60)
    p.add_argument("--throughput-concurrency", type=int, default=32)
    p.add_argument("--throughput-seconds", type=float, default=5.0)
    p.add_argument("--pressure-readers", type=int, default=12, help="concurrent status readers (pressure section)")
    p.add_argument("--pressure-seconds", type=float, default=5.0, help="how long /healthz is timed, alone and loaded")
    p.add_argument("--idle-connections", type=int, default=1000)
    p.add_argument("--idle-heartbeat", type=float, default=5.0, help="heartbeat interval during the idle test (s)")
    p.add_argument("--idle-hold", type=float, default=12.0, help="how long the idle streams are held (s)")
    p.add_argument("--functions", help="comma-separated Lambda functions for the cold-start section (default: all)")
    p.add_argument("--no-dynamodb", action="store_true", help="never start DynamoDB Local (stores and cost skip it)")
    p.add_argument("--coldstart-repeat", type=int, default=3, help="fresh interpreters per handler; best one counts")
    p.add_argument("--deployed-calls", type=int, default=60, help="calls of each type through local-api")
    p.add_argument("--idle-plugins", type=int, default=3, help="idle connected plugins through local-api")
    p.add_argument("--idle-measure-seconds", type=float, default=30.0, help="how long their idling is counted")
    p.add_argument(
        "--resume-idle-seconds", type=float, default=120.0, help="idle time before each plugin's next call (resume)"
    )
    p.add_argument("--cpushare-idle-seconds", type=float, default=20.0, help="idle polls counted per CPU share")
    p.add_argument("--cpushare-calls", type=int, default=20, help="deliveries timed per CPU share")
    p.add_argument("--url", help="deployed section: measure this deployed stack (https://…/v1) instead of local-api")
    p.add_argument(
        "--no-codap-webgl",
        action="store_true",
        help="skip timing CODAP's WebGL graphs (software-rendered without a GPU: about a minute)",
    )
    p.add_argument("--json", type=Path, help="write every figure (and the raw samples) to this file")
    p.add_argument("--plot", type=Path, help="draw the latency distributions to this PNG (needs the bench extra)")
    p.add_argument("--quick", action="store_true", help="tiny counts: checks that everything runs (seconds)")
    args = p.parse_args(argv)
    if args.quick:
        args.concurrency, args.round_trips, args.store_concurrency, args.store_round_trips = "1,4", 8, "1", 4
        args.throughput_concurrency, args.throughput_seconds = 4, 0.5
        args.idle_connections, args.idle_heartbeat, args.idle_hold = 20, 0.5, 1.2
        args.coldstart_repeat, args.deployed_calls, args.idle_plugins = 1, 3, 1
        args.idle_measure_seconds, args.resume_idle_seconds = 1.0, 3.0
        args.ops_calls = 3
        args.pressure_seconds = 0.5
        args.cpushare_idle_seconds, args.cpushare_calls = 2.0, 3
        args.no_codap_webgl = True
    args.sections = SECTIONS if not args.only else tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    return args


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def machine() -> dict[str, Any]:
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def with_ratios(relay: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    return {k: ratio(relay.get(k), base.get(k)) for k in ("p50", "p95", "p99", "max")}


# --- sections --------------------------------------------------------------------------------------------------


def roundtrip_levels(
    base: str, levels: list[int], total: int, *, mcp: bool, samples: dict[str, list[float]], group: str, label: str
) -> list[dict[str, Any]]:
    """Baseline, floor, HTTP round trips (``?wait`` and ``GET /response``) and (optionally) MCP tools/call at each
    concurrency, on one running server. Every series gets ratios to the single-GET baseline and p50 ÷ the floor
    (two bare POSTs one after the other: what a relayed call costs at the least)."""
    out = []
    for c in levels:
        per_pair = max(1, total // c)
        series = {"baseline": load.BASELINE, "floor": load.FLOOR, "http_wait": load.http_wait_round_trip}
        series["http"] = load.http_round_trip
        if mcp:
            series["mcp"] = load.mcp_round_trip
        got = asyncio.run(load.run_interleaved(base, c, per_pair, series))
        baseline, floor, wait, http = got["baseline"], got["floor"], got["http_wait"], got["http"]
        entry: dict[str, Any] = {
            "concurrency": c,
            "baseline": summary(baseline.round_trip),
            "floor": summary(floor.round_trip),
            "http_wait": summary(wait.round_trip),
            "http": summary(http.round_trip),
            "delivery": summary(http.delivery),
            "errors": sum(s.errors for s in got.values()),
        }
        if mcp:
            entry["mcp"] = summary(got["mcp"].round_trip)
        for key in ("floor", "http_wait", "http", "delivery", "mcp"):
            if key in entry:
                entry[f"{key}_ratio"] = with_ratios(entry[key], entry["baseline"])
                entry[f"{key}_floor"] = ratio(entry[key]["p50"], entry["floor"]["p50"])
        samples[f"{group}|{label} baseline|{c}"] = baseline.round_trip
        samples[f"{group}|{label} floor (2 POSTs)|{c}"] = floor.round_trip
        samples[f"{group}|{label} HTTP ?wait|{c}"] = wait.round_trip
        samples[f"{group}|{label} HTTP GET /response|{c}"] = http.round_trip
        if mcp:
            samples[f"{group}|{label} MCP|{c}"] = got["mcp"].round_trip
        out.append(entry)
        print(f"  round trips c={c}: done", file=sys.stderr, flush=True)
    return out


CALL_KINDS: dict[str, load.RoundTrip] = {
    "http_wait": load.http_wait_round_trip,
    "http": load.http_round_trip,
    "mcp": load.mcp_round_trip,
}


async def _ops_per_call(target: Any, calls: int) -> dict[str, Any]:
    """Store operations per relayed call, by call type: all the calls of one type on one session pair (the
    LLM's side, the plugin's stream and its answer), counted by the server's CountingStore, divided by calls."""
    out: dict[str, Any] = {}
    async with load.session_pairs(target.base, 1) as (llm, pairs):
        pair = pairs[0]
        for kind in CALL_KINDS.values():  # first-call effects (caches, the stream's first read) out of the counts
            await kind(llm, pair, -1, load.Samples())
        for name, kind in CALL_KINDS.items():
            await asyncio.to_thread(target.reset)
            samples = load.Samples()
            for i in range(calls):
                await kind(llm, pair, i, samples)
            counts = await asyncio.to_thread(target.counts)
            by_method = {m: round(n / calls, 2) for m, n in sorted(counts["store"].items())}
            out[name] = {"total": round(sum(counts["store"].values()) / calls, 2), "by_method": by_method}
            out[name]["errors"] = samples.errors
    return out


def run_ops(args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Store operations per relayed call on the local stores (in-process wake-ups: no polling reads at all)."""
    print("store operations per call …", file=sys.stderr, flush=True)
    stores: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, url in (("memory", "memory:"), ("sqlite", sqlite_url(tmp))):
            with run_target(url) as target:
                stores[name] = asyncio.run(_ops_per_call(target, args.ops_calls))
    results["ops"] = {"calls": args.ops_calls, "stores": stores}


def throughput(base: str, concurrency: int, seconds: float) -> dict[str, Any]:
    baseline = asyncio.run(load.run_baseline_for(base, concurrency, seconds))
    relay = asyncio.run(load.run_pairs_for(base, concurrency, seconds))
    base_rps = len(baseline.round_trip) / baseline.wall if baseline.wall else 0.0
    relay_rps = len(relay.round_trip) / relay.wall if relay.wall else 0.0
    # A round trip is three HTTP requests (POST /request, POST /response, GET /response) plus one SSE event.
    ceiling = base_rps / 3
    return {
        "concurrency": concurrency,
        "seconds": seconds,
        "round_trips_per_second": round(relay_rps, 1),
        "baseline_requests_per_second": round(base_rps, 1),
        "ceiling_round_trips_per_second": round(ceiling, 1),
        "fraction_of_ceiling": ratio(relay_rps, ceiling),
        "errors": relay.errors + baseline.errors,
    }


def sqlite_url(tmp: str) -> str:
    return f"sqlite:///{Path(tmp) / 'bench.db'}"


def run_main_store(args: argparse.Namespace, results: dict[str, Any], samples: dict[str, list[float]]) -> None:
    """Round trips and throughput on the default store (SQLite), one server process."""
    with tempfile.TemporaryDirectory() as tmp, run_target(sqlite_url(tmp)) as target:
        if "roundtrip" in args.sections:
            print("round trips (SQLite) …", file=sys.stderr, flush=True)
            levels = roundtrip_levels(
                target.base,
                ints(args.concurrency),
                args.round_trips,
                mcp=not args.no_mcp,
                samples=samples,
                group="round trips",
                label="sqlite",
            )
            results["round_trip"] = {"store": "sqlite", "levels": levels}
        if "throughput" in args.sections:
            print("throughput …", file=sys.stderr, flush=True)
            results["throughput"] = throughput(target.base, args.throughput_concurrency, args.throughput_seconds)


def store_rows(
    name: str,
    url: str,
    env: dict[str, str] | None,
    args: argparse.Namespace,
    samples: dict[str, list[float]],
    **kw: Any,
) -> list[dict[str, Any]]:
    with run_target(url, env=env, **kw) as target:
        levels = roundtrip_levels(
            target.base,
            ints(args.store_concurrency),
            args.store_round_trips,
            mcp=False,
            samples=samples,
            group="stores",
            label=name,
        )
    return [{"store": name, **level} for level in levels]


def run_stores(
    args: argparse.Namespace, results: dict[str, Any], samples: dict[str, list[float]], dynamo: LocalTable | str | None
) -> None:
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in [s.strip() for s in args.stores.split(",") if s.strip()]:
        print(f"store {name} …", file=sys.stderr, flush=True)
        if name == "memory":
            rows += store_rows("memory", "memory:", None, args, samples)
        elif name == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                rows += store_rows("sqlite", sqlite_url(tmp), None, args, samples)
        elif name == "dynamodb":
            if not isinstance(dynamo, LocalTable):
                notes.append(f"DynamoDB Local not measured: {dynamo}")
                continue
            rows += store_rows("dynamodb-local", dynamo.store_url, dynamo.env, args, samples)
        else:
            notes.append(f"unknown store {name!r} skipped")
    results["stores"] = {"rows": rows, "notes": notes}


def run_idle(args: argparse.Namespace, results: dict[str, Any]) -> None:
    print(f"idle streams ({args.idle_connections}) …", file=sys.stderr, flush=True)
    n, hb, hold = args.idle_connections, args.idle_heartbeat, args.idle_hold
    with run_target("memory:", heartbeat=hb) as target:
        baseline = asyncio.run(idle_streams(target.base, target.pid, n, hold, baseline=True))
    with tempfile.TemporaryDirectory() as tmp, run_target(sqlite_url(tmp), heartbeat=hb) as target:
        relay = asyncio.run(idle_streams(target.base, target.pid, n, hold, baseline=False))
    r, b = relay.report(hb), baseline.report(hb)
    results["idle"] = {
        "store": "sqlite",
        "heartbeat_seconds": hb,
        "hold_seconds": hold,
        "relay": r,
        "baseline": b,
        "kib_per_connection_ratio": ratio(r["kib_per_connection"], b["kib_per_connection"]),
    }


def run_deployed(args: argparse.Namespace, results: dict[str, Any], dynamo: LocalTable | str | None) -> None:
    """The deployed shape through local-api on DynamoDB Local, and the cost model priced from it."""
    if args.url:
        print(f"deployed stack at {args.url} …", file=sys.stderr, flush=True)
        results["deployed"] = deployed.run_url(args.url, calls=args.deployed_calls, mcp=not args.no_mcp)
        return
    if args.no_dynamodb:
        results["deployed"] = {"skipped": "--no-dynamodb was given (the deployed shape runs on DynamoDB Local)"}
        return
    if not isinstance(dynamo, LocalTable):
        results["deployed"] = {"skipped": f"DynamoDB Local not available: {dynamo}"}
        return
    print("deployed shape (local-api on DynamoDB Local) …", file=sys.stderr, flush=True)
    dep = cost.deployment_from_template()
    measured = deployed.run(
        dynamo,
        dep,
        calls=args.deployed_calls,
        plugins=args.idle_plugins,
        idle=args.idle_measure_seconds,
        resume=args.resume_idle_seconds,
        mcp=not args.no_mcp,
    )
    results["deployed"] = {**measured, "cost": cost.model(measured, dep, cost.Prices())}


def run_cpushare(args: argparse.Namespace, results: dict[str, Any], dynamo: LocalTable | str | None) -> None:
    """The stream function's polls and deliveries at the CPU share of each memory size (bench.cpushare)."""
    if not isinstance(dynamo, LocalTable):
        results["cpushare"] = {"skipped": f"DynamoDB Local not available: {dynamo}"}
        return
    print("stream at Lambda's CPU share …", file=sys.stderr, flush=True)
    results["cpushare"] = cpushare.run(
        dynamo, cost.deployment_from_template(), idle_seconds=args.cpushare_idle_seconds, calls=args.cpushare_calls
    )


# --- main ------------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit()
    results: dict[str, Any] = {
        "machine": machine(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "plot")},
    }
    results["settings"]["sections"] = list(args.sections)
    samples: dict[str, list[float]] = {}
    started = time.perf_counter()
    seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(name: str) -> Iterator[None]:
        """The wall time of one part of the run, so a slow run shows where its time went."""
        begun = time.perf_counter()
        try:
            yield
        finally:
            seconds[name] = round(time.perf_counter() - begun, 1)

    if "roundtrip" in args.sections or "throughput" in args.sections:
        with timed("roundtrip+throughput"):
            run_main_store(args, results, samples)
    need_dynamo = ("stores" in args.sections and "dynamodb" in args.stores) or "cpushare" in args.sections
    need_dynamo = need_dynamo or ("deployed" in args.sections and not args.url)
    need_dynamo = need_dynamo and not args.no_dynamodb
    if need_dynamo:
        print("starting DynamoDB Local …", file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        with timed("dynamodb_local_start"):
            dynamo = stack.enter_context(dynamodb_local() if need_dynamo else _skipped("--no-dynamodb was given"))
        if "stores" in args.sections:
            with timed("stores"):
                run_stores(args, results, samples, dynamo)
        if "deployed" in args.sections:
            with timed("deployed"):
                run_deployed(args, results, dynamo)
        if "cpushare" in args.sections:
            with timed("cpushare"):
                run_cpushare(args, results, dynamo)
    if "ops" in args.sections:
        with timed("ops"):
            run_ops(args, results)
    if "pressure" in args.sections:
        print("status reads against a full session (pressure) …", file=sys.stderr, flush=True)
        with timed("pressure"), tempfile.TemporaryDirectory() as tmp, run_target(sqlite_url(tmp)) as target:
            results["pressure"] = pressure.run(
                target.base, readers=args.pressure_readers, seconds=args.pressure_seconds
            )
    if "idle" in args.sections:
        with timed("idle"):
            run_idle(args, results)
    if "coldstart" in args.sections:
        print("cold start …", file=sys.stderr, flush=True)
        only = [f.strip() for f in args.functions.split(",")] if args.functions else None
        with timed("coldstart"):
            results["coldstart"] = coldstart.run(repeat=args.coldstart_repeat, only=only)
    if "codap" in args.sections:
        print("tool time in the real CODAP …", file=sys.stderr, flush=True)
        with timed("codap"):
            results["codap"] = codap_bench.run(
                quick=args.quick,
                webgl=not args.no_codap_webgl,
                log=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
            )
    results["section_seconds"] = seconds
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    results["samples_ms"] = {k: [round(s * 1000, 3) for s in v] for k, v in samples.items()}
    return results


class _skipped:
    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __enter__(self) -> str:
        return self.reason

    def __exit__(self, *exc: object) -> None:
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    print(render(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
        print(f"figures written to {args.json}")
    if args.plot:
        from bench.plot import plot

        plot(results, args.plot)
        print(f"latency distributions drawn to {args.plot}")
    return 0
