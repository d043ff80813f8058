"""``python -m bench``: the relay's benchmark. Starts what it needs on loopback, runs, stops everything, prints a table.

Sections (all by default; ``--only`` picks some): round trips over HTTP and MCP at several concurrencies on the
default store (SQLite), the other stores (memory, DynamoDB Local), throughput at saturation, idle SSE streams,
cold start of the Lambda handlers, the cost model, and each tool's time inside the real CODAP build (codap). Each
figure comes with a baseline measured in the same run on the same server: a trivial endpoint, the same client, the
same concurrency (for codap: one Data Interactive message to CODAP).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import codap_bench, coldstart, cost, load
from bench.dynamo import LocalTable, dynamodb_local
from bench.idle import idle_streams
from bench.report import render
from bench.server import run_target
from bench.stats import ratio, summary

SECTIONS = ("roundtrip", "stores", "throughput", "idle", "coldstart", "cost", "codap")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--only", help=f"comma-separated sections to run: {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--concurrency", default="1,10,100", help="session pairs for the round-trip section")
    p.add_argument("--round-trips", type=int, default=300, help="round trips per concurrency level (spread over pairs)")
    p.add_argument("--no-mcp", action="store_true", help="skip the MCP tools/call measurements")
    p.add_argument("--stores", default="memory,sqlite,dynamodb", help="stores for the stores section")
    p.add_argument("--store-concurrency", default="1,10", help="session pairs for the stores section")
    p.add_argument("--store-round-trips", type=int, default=60)
    p.add_argument("--throughput-concurrency", type=int, default=32)
    p.add_argument("--throughput-seconds", type=float, default=5.0)
    p.add_argument("--idle-connections", type=int, default=1000)
    p.add_argument("--idle-heartbeat", type=float, default=5.0, help="heartbeat interval during the idle test (s)")
    p.add_argument("--idle-hold", type=float, default=12.0, help="how long the idle streams are held (s)")
    p.add_argument("--functions", help="comma-separated Lambda functions for the cold-start section (default: all)")
    p.add_argument("--no-dynamodb", action="store_true", help="never start DynamoDB Local (stores and cost skip it)")
    p.add_argument("--coldstart-repeat", type=int, default=3, help="fresh interpreters per handler; best one counts")
    p.add_argument("--cost-idle-seconds", type=float, default=10.0)
    p.add_argument("--cost-calls", type=int, default=40)
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
        args.coldstart_repeat, args.cost_idle_seconds, args.cost_calls = 1, 1.0, 3
        args.no_codap_webgl = True
    args.sections = SECTIONS if not args.only else tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    return args


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


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
    """Baseline, HTTP round trips and (optionally) MCP tools/call at each concurrency, on one running server."""
    out = []
    for c in levels:
        per_pair = max(1, total // c)
        baseline = asyncio.run(load.run_baseline(base, c, per_pair * 3))
        http = asyncio.run(load.run_pairs(base, c, per_pair))
        entry: dict[str, Any] = {
            "concurrency": c,
            "baseline": summary(baseline.round_trip),
            "http": summary(http.round_trip),
            "delivery": summary(http.delivery),
            "errors": http.errors + baseline.errors,
        }
        entry["http_ratio"] = with_ratios(entry["http"], entry["baseline"])
        entry["delivery_ratio"] = with_ratios(entry["delivery"], entry["baseline"])
        samples[f"{group}|{label} baseline|{c}"] = baseline.round_trip
        samples[f"{group}|{label} HTTP|{c}"] = http.round_trip
        if mcp:
            via_mcp = asyncio.run(load.run_pairs(base, c, per_pair, load.mcp_round_trip))
            entry["mcp"] = summary(via_mcp.round_trip)
            entry["mcp_ratio"] = with_ratios(entry["mcp"], entry["baseline"])
            entry["errors"] += via_mcp.errors
            samples[f"{group}|{label} MCP|{c}"] = via_mcp.round_trip
        out.append(entry)
        print(f"  round trips c={c}: done", file=sys.stderr, flush=True)
    return out


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
    rows = []
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
    for level in levels:
        rows.append(
            {
                "store": name,
                "concurrency": level["concurrency"],
                "http": level["http"],
                "delivery": level["delivery"],
                "baseline": level["baseline"],
                "http_ratio": level["http_ratio"],
                "errors": level["errors"],
            }
        )
    return rows


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
            # The deployed waiting: no in-process wake-ups, polling at the template's interval.
            dep = cost.deployment_from_template()
            env = {**dynamo.env, "POLL_INTERVAL_SECONDS": str(dep.poll_interval_seconds)}
            label = f"dynamodb-local, polling {dep.poll_interval_seconds:g} s"
            rows += store_rows(label, dynamo.store_url, env, args, samples, poll=True, wakeups=False)
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


def run_cost(args: argparse.Namespace, results: dict[str, Any], dynamo: LocalTable | str | None) -> None:
    """Count operations with the deployed waiting behaviour, then price them."""
    print("cost model …", file=sys.stderr, flush=True)
    dep = cost.deployment_from_template()
    if isinstance(dynamo, LocalTable):
        url, env, source = dynamo.store_url, dict(dynamo.env), "DynamoDB requests and capacity units (DynamoDB Local)"
    else:
        url, env, source = "memory:", {}, f"store calls, 1 unit each (DynamoDB Local unavailable: {dynamo})"
    env["POLL_INTERVAL_SECONDS"] = str(dep.poll_interval_seconds)
    with run_target(url, env=env, poll=True, wakeups=False, heartbeat=dep.heartbeat_seconds) as target:
        measured = asyncio.run(_cost_counts(target, args, mcp=not args.no_mcp))
    results["cost"] = cost.model(dep=dep, prices=cost.Prices(), source=source, **measured)


async def _cost_counts(target: Any, args: argparse.Namespace, *, mcp: bool) -> dict[str, Any]:
    async with load.session_pairs(target.base, 1) as (llm, pairs):
        pair = pairs[0]
        await load.http_round_trip(llm, pair, 0, load.Samples())  # warm: first-call effects out of the counts

        async def phase(body: Callable[[], Any]) -> tuple[dict[str, Any], float]:
            await asyncio.to_thread(target.reset)
            started = time.perf_counter()
            await body()
            elapsed = time.perf_counter() - started
            return await asyncio.to_thread(target.counts), elapsed

        idle, idle_s = await phase(lambda: asyncio.sleep(args.cost_idle_seconds))

        async def calls(kind: load.RoundTrip) -> None:
            samples = load.Samples()
            for i in range(args.cost_calls):
                await kind(llm, pair, i, samples)

        http, http_s = await phase(lambda: calls(load.http_round_trip))
        out: dict[str, Any] = {
            "idle": idle,
            "idle_seconds": idle_s,
            "http": http,
            "http_calls": args.cost_calls,
            "http_seconds": http_s,
            "mcp": None,
            "mcp_calls": 0,
            "mcp_seconds": 0.0,
        }
        if mcp:
            out["mcp"], out["mcp_seconds"] = await phase(lambda: calls(load.mcp_round_trip))
            out["mcp_calls"] = args.cost_calls
        return out


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
    if "roundtrip" in args.sections or "throughput" in args.sections:
        run_main_store(args, results, samples)
    need_dynamo = ("stores" in args.sections and "dynamodb" in args.stores) or "cost" in args.sections
    need_dynamo = need_dynamo and not args.no_dynamodb
    if need_dynamo:
        print("starting DynamoDB Local …", file=sys.stderr, flush=True)
    with dynamodb_local() if need_dynamo else _skipped("--no-dynamodb was given") as dynamo:
        if "stores" in args.sections:
            run_stores(args, results, samples, dynamo)
        if "cost" in args.sections:
            run_cost(args, results, dynamo)
    if "idle" in args.sections:
        run_idle(args, results)
    if "coldstart" in args.sections:
        print("cold start …", file=sys.stderr, flush=True)
        only = [f.strip() for f in args.functions.split(",")] if args.functions else None
        results["coldstart"] = coldstart.run(repeat=args.coldstart_repeat, only=only)
    if "codap" in args.sections:
        print("tool time in the real CODAP …", file=sys.stderr, flush=True)
        results["codap"] = codap_bench.run(
            quick=args.quick, webgl=not args.no_codap_webgl, log=lambda m: print(f"  {m}", file=sys.stderr, flush=True)
        )
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
