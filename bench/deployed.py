"""The deployed shape: ``codap-relay local-api`` (API Gateway's stage in front, every Lambda function in processes
of its own with the template's environment, the stream behind the Web Adapter-style proxy) on DynamoDB Local,
with the counting proxy (``bench.dynamo_proxy``) between the functions and DynamoDB Local.

Measured, one session pair, calls one after another:

- each call type (HTTP ``POST /request?wait``, HTTP ``POST /request`` + ``GET /response?wait``, MCP
  ``tools/call``): latency beside the floor (two ``GET /healthz`` in a row through the same stage: a function that
  touches no store), DynamoDB requests and capacity units per call (polling reads apart), Lambda invocations and
  billed time per function (local-api's REPORT lines), CPU time per function (the function processes' own);
- idle connected plugins (after the fast-polling window has passed): DynamoDB requests and units per plugin-hour,
  the stream function's CPU;
- the first call after minutes idle on each of those plugins (a conversation resuming), and the call after it;
- each function's largest ``Max Memory Used``;
- the push channel, counted the same way: each call type over push (plugins that do not ping during the burst, as
  at the production ping of 90 s), the pings of idle push plugins (the bench's relay asks for a ping every
  ``PING_SECONDS``; each ping refreshes the presence at any interval, so a ping costs the same), and a reconnect
  ($disconnect, $connect, attach). WebSocket messages are counted at the plugin, each way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from bench import load
from bench.cost import Deployment
from bench.dynamo import LocalTable
from bench.server import ROOT
from bench.stats import ratio, summary
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.servers import ServerProcess, free_port

STREAM_FUNCTION = "StreamFunction"
PUSH_FUNCTION = "PushFunction"
NOT_REST = (STREAM_FUNCTION, PUSH_FUNCTION)  # invoked by a held stream or a WebSocket message, not a REST request
PING_SECONDS = 1  # the bench's relay: push plugins ping every second (SSE plugins never ping: their figures stay)
QUIET_SECONDS = 3600.0  # a push plugin that does not ping during a burst of calls (production pings every 90 s)
REPORT_RE = re.compile(
    r"^\[(?P<function>\w+)#\d+\] REPORT RequestId: \S+\tDuration: (?P<ms>[\d.]+) ms"
    r"\tBilled Duration: (?P<billed>\d+) ms\tMemory Size: (?P<memory>\d+) MB\tMax Memory Used: (?P<used>\d+) MB"
)
CALL_KINDS: dict[str, load.RoundTrip] = {
    "http_wait": load.http_wait_round_trip,
    "http": load.http_round_trip,
    "mcp": load.mcp_round_trip,
}
WARM_UP_CALLS = 5
# How the plugin gets its requests: each channel is a factory of connected session pairs (LLM client + plugin).
# Every channel's round trips are measured and printed, locally (local-api runs with the push channel on; the
# SSE pairs ignore it) and against --url (a stack deployed without PushChannel=websocket offers no push: said so).
Pairs = Callable[[str, int], AbstractAsyncContextManager[tuple[httpx.AsyncClient, list[load.Pair]]]]


def sse_pairs(base: str, count: int) -> AbstractAsyncContextManager[tuple[httpx.AsyncClient, list[load.Pair]]]:
    return load.session_pairs(base, count, push=False)


CHANNELS: dict[str, Pairs] = {"sse": sse_pairs, "websocket": load.session_pairs}
# The bench makes more calls a minute than the request limit allows one client; the counters still run.
ENV = {
    "RATE_LIMIT_SESSION_PER_IP": "100000",
    "RATE_LIMIT_REQUEST_PER_CODE": "100000",
    "GUESS_LIMIT_PER_IP": "100000",
    "RATE_LIMIT_STATUS_PER_IP": "100000",
    "REQUEST_BYTES_PER_IP_PER_HOUR": "10000000000",
    "PUSH_PING_SECONDS": str(PING_SECONDS),
    # local-api's @connections shares this machine's cores: a post that AWS answers in milliseconds can take over
    # the 1 s a deployment allows it on a busy machine, and a call would then wait for the next ping. What is
    # counted here (messages, units) does not depend on it.
    "PUSH_PUBLISH_SECONDS": "5",
}


@dataclass
class Report:
    function: str
    ms: float
    billed_ms: int
    memory_mb: int
    used_mb: int


@dataclass
class Stack:
    base: str  # http://127.0.0.1:PORT/v1
    proxy: str
    pid: int
    log: IO[bytes]

    def counts(self) -> dict[str, Any]:
        body: dict[str, Any] = web.get(f"{self.proxy}/__bench/counts", timeout=30).json()
        return body

    def reset(self) -> None:
        web.post(f"{self.proxy}/__bench/reset", timeout=30).raise_for_status()

    def offset(self) -> int:
        self.log.flush()
        return os.fstat(self.log.fileno()).st_size

    def reports(self, since: int = 0) -> list[Report]:
        self.log.flush()
        self.log.seek(since)
        text = self.log.read().decode(errors="replace")
        self.log.seek(0, os.SEEK_END)
        out = []
        for line in text.splitlines():
            m = REPORT_RE.match(line)
            if m:
                out.append(Report(m["function"], float(m["ms"]), int(m["billed"]), int(m["memory"]), int(m["used"])))
        return out

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) so far of each function's processes, by function name."""
        ticks = os.sysconf("SC_CLK_TCK")
        out: defaultdict[str, float] = defaultdict(float)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(fields[1]) != self.pid:  # fields[1] is the parent's pid
                    continue
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except (OSError, ValueError):
                continue
            for var in environ:
                if var.startswith(b"AWS_LAMBDA_FUNCTION_NAME="):
                    out[var.split(b"=", 1)[1].decode()] += (int(fields[11]) + int(fields[12])) / ticks
        return dict(out)


@contextlib.contextmanager
def _child(cmd: list[str], env: dict[str, str], log: IO[bytes]) -> Iterator[ServerProcess]:
    child_env = {**env, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)}
    proc = ServerProcess(cmd, child_env, log, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.stop(grace=15)


@contextlib.contextmanager
def run_stack(dynamo: LocalTable) -> Iterator[Stack]:
    """DynamoDB Local ← counting proxy ← local-api, all on loopback; stopped again on exit."""
    proxy_port, api_port = free_port(), free_port()
    proxy = f"http://127.0.0.1:{proxy_port}"
    env = {**dynamo.env, **ENV}
    with tempfile.TemporaryFile() as proxy_log, tempfile.TemporaryFile() as log:
        proxy_cmd = [sys.executable, "-m", "bench.dynamo_proxy", "--port", str(proxy_port)]
        with _child([*proxy_cmd, "--upstream", dynamo.endpoint], env, proxy_log) as proxy_proc:
            _wait(f"{proxy}/__bench/counts", proxy_proc, proxy_log, 30)
            api_cmd = [sys.executable, "-m", "codap_relay.cli", "local-api", "--host", "127.0.0.1"]
            api_cmd += ["--port", str(api_port), "--store", dynamo.store_url_via(proxy), "--push-channel", "websocket"]
            with _child(api_cmd, env, log) as api:
                base = f"http://127.0.0.1:{api_port}/v1"
                _wait(f"{base}/healthz", api, log, 120)
                yield Stack(base, proxy, api.pid, log)


def _wait(url: str, proc: subprocess.Popen[bytes], log: IO[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}: {log.read().decode()[-2000:]}")
        with contextlib.suppress(httpx.TransportError):
            if web.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout:g} s")


# --- one phase: calls or idleness, and what the stack did meanwhile ------------------------------------------


class Phase:
    """Counts DynamoDB requests, REPORT lines and CPU time between ``start`` and ``stop``."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    async def start(self) -> None:
        await asyncio.to_thread(self.stack.reset)
        self.since = self.stack.offset()
        self.cpu = self.stack.cpu_seconds()
        self.started = time.perf_counter()

    async def stop(self) -> dict[str, Any]:
        seconds = time.perf_counter() - self.started
        await asyncio.sleep(0.2)  # the last invocation's REPORT line reaches the log
        counts = await asyncio.to_thread(self.stack.counts)
        cpu = self.stack.cpu_seconds()
        reports = self.stack.reports(self.since)
        lambdas: dict[str, dict[str, float]] = defaultdict(lambda: {"invocations": 0, "ms": 0.0, "billed_ms": 0})
        for r in reports:
            entry = lambdas[r.function]
            entry["invocations"] += 1
            entry["ms"] += r.ms
            entry["billed_ms"] += r.billed_ms
        cpu_delta = {f: round(cpu.get(f, 0.0) - self.cpu.get(f, 0.0), 4) for f in cpu}
        return {"seconds": seconds, "dynamodb": counts, "lambda": dict(lambdas), "cpu_seconds": cpu_delta}


def per_call(phase: dict[str, Any], calls: int) -> dict[str, Any]:
    """A phase's figures divided by its calls. API requests: the invocations of every function but the stream's
    and the push function's (a WebSocket message, not a REST request)."""
    d = phase["dynamodb"]
    invocations = {f: v["invocations"] for f, v in phase["lambda"].items() if f not in NOT_REST}
    return {
        "seconds_per_call": round(phase["seconds"] / calls, 4),
        "dynamodb_requests": round(sum(d["requests"].values()) / calls, 2),
        "dynamodb_by_operation": {op: round(n / calls, 2) for op, n in sorted(d["requests"].items())},
        "polling_reads": round(sum(d["polling_reads"].values()) / calls, 2),
        "read_units": round(d["read_units"] / calls, 2),
        "write_units": round(d["write_units"] / calls, 2),
        "polling_read_units": round(d["polling_read_units"] / calls, 2),
        "api_requests": round(sum(invocations.values()) / calls, 2),
        # every function's invocations, the push function's (the plugin's answers over its socket) included
        "lambda_invocations": round(
            sum(v["invocations"] for f, v in phase["lambda"].items() if f != STREAM_FUNCTION) / calls, 2
        ),
        "lambda_ms": {f: round(v["ms"] / calls, 2) for f, v in phase["lambda"].items() if f != STREAM_FUNCTION},
        "lambda_billed_ms": {
            f: round(v["billed_ms"] / calls, 2) for f, v in phase["lambda"].items() if f != STREAM_FUNCTION
        },
        "cpu_ms": {f: round(s * 1000 / calls, 2) for f, s in sorted(phase["cpu_seconds"].items()) if s > 0},
        "dynamodb_ms": d["upstream_ms"],
        "errors": d["errors"],
    }


def per_hour(phase: dict[str, Any], plugins: int) -> dict[str, Any]:
    d = phase["dynamodb"]
    scale = 3600 / phase["seconds"] / plugins
    return {
        "dynamodb_requests": round(sum(d["requests"].values()) * scale),
        "dynamodb_by_operation": {op: round(n * scale) for op, n in sorted(d["requests"].items())},
        "polling_reads": round(sum(d["polling_reads"].values()) * scale),
        "read_units": round(d["read_units"] * scale),
        "write_units": round(d["write_units"] * scale),
        "stream_cpu_seconds": round(phase["cpu_seconds"].get(STREAM_FUNCTION, 0.0) * scale, 2),
    }


# --- the push channel: per call, per ping, per reconnect -------------------------------------------------------


def messages_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in sorted(after.items()) if n - before.get(k, 0)}


PING_MESSAGES = ("in:ping", "out:heartbeat")


def per_ping(phase: dict[str, Any], messages: dict[str, int]) -> dict[str, Any]:
    """An idle push phase divided by the pings sent in it: DynamoDB, the push function, WebSocket messages."""
    d, pings = phase["dynamodb"], max(1, messages.get("in:ping", 0))
    push = phase["lambda"].get(PUSH_FUNCTION) or {"invocations": 0, "ms": 0.0, "billed_ms": 0}
    return {
        "pings": messages.get("in:ping", 0),
        "seconds": round(phase["seconds"], 1),
        "dynamodb_requests": round(sum(d["requests"].values()) / pings, 3),
        "dynamodb_by_operation": {op: round(n / pings, 3) for op, n in sorted(d["requests"].items())},
        "read_units": round(d["read_units"] / pings, 3),
        "write_units": round(d["write_units"] / pings, 3),
        "push_invocations": round(push["invocations"] / pings, 3),
        "push_billed_ms": round(push["billed_ms"] / pings, 2),
        "push_ms": round(push["ms"] / pings, 2),
        "websocket_messages": round(sum(messages.values()) / pings, 3),
        "websocket_by_kind": {k: round(n / pings, 3) for k, n in messages.items()},
        "errors": d["errors"],
    }


def per_reconnect(
    phase: dict[str, Any], messages: dict[str, int], ping: dict[str, Any], plugins: int
) -> dict[str, Any]:
    """A reconnect phase divided by its reconnects, less the pings that fell into it (at the measured ping)."""
    d, pings = phase["dynamodb"], messages.get("in:ping", 0)
    push = phase["lambda"].get(PUSH_FUNCTION) or {"invocations": 0, "ms": 0.0, "billed_ms": 0}
    own = {k: n for k, n in messages.items() if k not in PING_MESSAGES}

    def less(total: float, per: float) -> float:
        return round(max(0.0, total - pings * per) / plugins, 3)

    return {
        "reconnects": plugins,
        "pings_within": pings,
        "read_units": less(d["read_units"], ping["read_units"]),
        "write_units": less(d["write_units"], ping["write_units"]),
        "dynamodb_by_operation": {
            op: less(n, ping["dynamodb_by_operation"].get(op, 0.0)) for op, n in sorted(d["requests"].items())
        },
        "push_invocations": less(push["invocations"], ping["push_invocations"]),
        "push_billed_ms": less(push["billed_ms"], ping["push_billed_ms"]),
        "websocket_messages": round(sum(own.values()) / plugins, 3),
        "websocket_by_kind": {k: round(n / plugins, 3) for k, n in own.items()},
    }


async def warm_up(
    llm: httpx.AsyncClient, pair: load.Pair, kinds: Iterable[load.RoundTrip], calls: int = WARM_UP_CALLS
) -> None:
    """Calls of each kind whose figures are dropped: cold starts, and DynamoDB Local's JIT warming up."""
    for kind in kinds:
        for i in range(calls):
            await kind(llm, pair, -1 - i, load.Samples())


async def timed_calls(kind: load.RoundTrip, llm: httpx.AsyncClient, pair: load.Pair, calls: int) -> load.Samples:
    samples = load.Samples()
    for i in range(calls):
        await kind(llm, pair, i, samples)
    return samples


def trip_figures(samples: load.Samples) -> dict[str, Any]:
    """A call type's round trips: latency, errors, and the delivery leg where it was measured."""
    figures: dict[str, Any] = {"latency": summary(samples.round_trip), "call_errors": samples.errors}
    if samples.delivery:
        figures["delivery"] = summary(samples.delivery)
    return figures


async def counted_calls(
    stack: Stack, kind: load.RoundTrip, llm: httpx.AsyncClient, pair: load.Pair, calls: int
) -> dict[str, Any]:
    """``calls`` calls of ``kind`` in one counted phase: what each cost (``per_call``) and its round trips."""
    phase = Phase(stack)
    await phase.start()
    samples = await timed_calls(kind, llm, pair, calls)
    return {**per_call(await phase.stop(), calls), **trip_figures(samples)}


async def measure_push(
    stack: Stack, kinds: dict[str, load.RoundTrip], *, calls: int, plugins: int, idle: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The push channel counted as the SSE one is: (round trips as ``channel_round_trips`` gives them, counts).

    Calls: one pair whose plugin does not ping during the burst (each pushed request resets its watchdog), so a
    call's figures hold no ping, as a burst between two pings 90 s apart would not. Pings: ``plugins`` idle push
    plugins pinging every ``PING_SECONDS``. Reconnect: each of them cut and reconnected with its cursor."""
    trips: dict[str, Any] = {}
    counts: dict[str, Any] = {"ping_seconds": PING_SECONDS, "kinds": {}}
    async with load.session_pairs(stack.base, 1, ping_every=QUIET_SECONDS) as (llm, pairs):
        pair = pairs[0]
        await warm_up(llm, pair, kinds.values())
        for name, kind in kinds.items():
            print(f"  deployed: websocket {name} …", file=sys.stderr, flush=True)
            before = load.message_counts(pairs)
            figures = await counted_calls(stack, kind, llm, pair, calls)
            messages = messages_between(before, load.message_counts(pairs))
            figures["websocket_messages"] = round(sum(messages.values()) / calls, 3)
            figures["websocket_by_kind"] = {k: round(n / calls, 3) for k, n in messages.items()}
            figures["largest_message_bytes"] = pair.plugin.largest_message
            figures["reconnects"] = messages.get("in:attach", 0)  # the watchdog fired: the figures hold an attach
            trips[name] = {k: figures[k] for k in ("latency", "call_errors", "delivery") if k in figures}
            counts["kinds"][name] = figures
    if "mcp" in kinds:
        # The same MCP call by an app connected by OAuth (the one connector per relay, /mcp with its token): what
        # its grant's checks and limits add to a call through /mcp/CODE.
        print("  deployed: websocket mcp through OAuth …", file=sys.stderr, flush=True)
        async with load.session_pairs(stack.base, 1, ping_every=QUIET_SECONDS, identity=True) as (llm, pairs):
            await load.connect_app(llm, pairs[0])
            await warm_up(llm, pairs[0], [load.mcp_oauth_round_trip])
            before = load.message_counts(pairs)
            figures = await counted_calls(stack, load.mcp_oauth_round_trip, llm, pairs[0], calls)
            messages = messages_between(before, load.message_counts(pairs))
            figures["websocket_messages"] = round(sum(messages.values()) / calls, 3)
            figures["websocket_by_kind"] = {k: round(n / calls, 3) for k, n in messages.items()}
            figures["largest_message_bytes"] = pairs[0].plugin.largest_message
            counts["kinds"]["mcp_oauth"] = figures
    print(f"  deployed: {plugins} idle push plugins pinging every {PING_SECONDS} s …", file=sys.stderr, flush=True)
    async with load.session_pairs(stack.base, plugins) as (llm, pairs):
        await asyncio.sleep(0.3)  # connected: attach answered, its REPORT line written; the first ping comes at 1 s
        before = load.message_counts(pairs)
        phase = Phase(stack)
        await phase.start()
        await asyncio.sleep(max(idle, 2 * PING_SECONDS))
        stats = await phase.stop()
        counts["ping"] = per_ping(stats, messages_between(before, load.message_counts(pairs)))
        before = load.message_counts(pairs)
        phase = Phase(stack)
        await phase.start()
        for pair in pairs:
            await pair.plugin.drop()
        await asyncio.sleep(0.3)  # $disconnect runs after the connection is gone
        stats = await phase.stop()
        messages = messages_between(before, load.message_counts(pairs))
        counts["reconnect"] = per_reconnect(stats, messages, counts["ping"], plugins)
    return trips, counts


# --- the run -------------------------------------------------------------------------------------------------


async def _floor(base: str, n: int) -> load.Samples:
    samples = load.Samples()
    async with load.new_client(base) as client:
        for i in range(n + 1):
            started = time.perf_counter()
            for _ in range(2):
                r = await client.get("/healthz")
                if r.status_code != 200:
                    samples.errors += 1
            if i:  # the first warms the plugin function
                samples.round_trip.append(time.perf_counter() - started)
    return samples


async def _measure(
    stack: Stack, dep: Deployment, *, calls: int, plugins: int, idle: float, resume: float, mcp: bool
) -> Any:
    out: dict[str, Any] = {"calls": calls, "kinds": {}}
    kinds = {name: kind for name, kind in CALL_KINDS.items() if mcp or name != "mcp"}
    floor = await _floor(stack.base, calls)
    out["floor"] = summary(floor.round_trip)
    async with sse_pairs(stack.base, 1) as (llm, pairs):
        pair = pairs[0]
        await warm_up(llm, pair, kinds.values())
        for name, kind in kinds.items():
            print(f"  deployed: {name} …", file=sys.stderr, flush=True)
            figures = await counted_calls(stack, kind, llm, pair, calls)
            figures["latency_floor"] = ratio(figures["latency"]["p50"], out["floor"]["p50"])
            out["kinds"][name] = figures
    # The push channel, counted as above; its round trips are the channel's rows beside the stream's.
    trips, out["push"] = await measure_push(stack, kinds, calls=calls, plugins=plugins, idle=idle)
    out["channels"] = {"websocket": trips}
    print(f"  deployed: {plugins} idle plugins, first call after {resume:g} s …", file=sys.stderr, flush=True)
    async with sse_pairs(stack.base, plugins) as (llm, pairs):
        for i, pair in enumerate(pairs):
            await load.http_wait_round_trip(llm, pair, i, load.Samples())
        idle_from = time.perf_counter()
        settle = min(dep.poll_active_seconds + 2, max(0.0, resume - idle))  # the fast-polling window has passed
        await asyncio.sleep(settle)
        phase = Phase(stack)
        await phase.start()
        await asyncio.sleep(idle)
        out["idle"] = per_hour(await phase.stop(), plugins)
        out["idle"]["measured_seconds"] = idle
        out["idle"]["after_seconds"] = round(settle, 1)
        await asyncio.sleep(max(0.0, resume - (time.perf_counter() - idle_from)))
        first, second = load.Samples(), load.Samples()
        for i, pair in enumerate(pairs):
            await load.http_wait_round_trip(llm, pair, 1000 + i, first)
            await load.http_wait_round_trip(llm, pair, 2000 + i, second)
        out["resume"] = {
            "idle_seconds": round(time.perf_counter() - idle_from, 1),
            "first": summary(first.round_trip),
            "first_delivery": summary(first.delivery),
            "second": summary(second.round_trip),
            "second_delivery": summary(second.delivery),
            "errors": first.errors + second.errors,
        }
    # The plugins detached on leaving; their streams end at their next poll and then write their REPORT lines.
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline and not any(r.function == STREAM_FUNCTION for r in stack.reports()):
        await asyncio.sleep(0.2)
    used: dict[str, int] = {}
    for r in stack.reports():
        used[r.function] = max(used.get(r.function, 0), r.used_mb)
    out["max_memory_used_mb"] = dict(sorted(used.items()))
    return out


# --- a deployed stack by URL: round trips only (its DynamoDB, Lambda and CPU figures are CloudWatch's) ----------


async def channel_round_trips(
    base: str, pairs: Pairs, kinds: dict[str, load.RoundTrip], calls: int, *, warm_up_calls: int = WARM_UP_CALLS
) -> dict[str, Any]:
    """Latency of each call type through one channel, one session pair per type (a deployed stack limits the
    requests per code and minute), after ``warm_up_calls`` calls that take the cold starts."""
    out: dict[str, Any] = {}
    for name, kind in kinds.items():
        print(f"  deployed: {name} …", file=sys.stderr, flush=True)
        async with pairs(base, 1) as (llm, (pair,)):
            if pairs is load.session_pairs and pair.plugin.push_url is None:
                return {"skipped": "the relay offers no push channel (deployed without PushChannel=websocket)"}
            await warm_up(llm, pair, [kind], warm_up_calls)
            samples = await timed_calls(kind, llm, pair, calls)
        out[name] = trip_figures(samples)
    return out


async def _remote(base: str, calls: int, mcp: bool, channels: dict[str, Pairs]) -> dict[str, Any]:
    kinds = {name: kind for name, kind in CALL_KINDS.items() if mcp or name != "mcp"}
    floor = await _floor(base, calls)
    out: dict[str, Any] = {"url": base, "calls": calls, "floor": summary(floor.round_trip), "channels": {}}
    for channel, pairs in channels.items():
        out["channels"][channel] = await channel_round_trips(base, pairs, kinds, calls)
    return out


def run_url(base: str, *, calls: int, mcp: bool = True, channels: dict[str, Pairs] | None = None) -> dict[str, Any]:
    """The round trips of a stack deployed anywhere (``https://…/v1``), nothing started here."""
    result: dict[str, Any] = asyncio.run(_remote(base.rstrip("/"), calls, mcp, channels or CHANNELS))
    return result


def run(
    dynamo: LocalTable, dep: Deployment, *, calls: int, plugins: int, idle: float, resume: float, mcp: bool = True
) -> dict[str, Any]:
    with run_stack(dynamo) as stack:
        result: dict[str, Any] = asyncio.run(
            _measure(stack, dep, calls=calls, plugins=plugins, idle=idle, resume=resume, mcp=mcp)
        )
    return result
