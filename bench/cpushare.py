"""The stream function at Lambda's CPU share: CPU per idle poll, and what a poll and a delivery take when the
process gets only the share of a CPU that its memory buys (1,769 MB = one vCPU).

The stream runs for real: the relay's app on uvicorn (bench.target) on DynamoDB Local, polling (no in-process
wake-ups, as across Lambda instances), with a connected fake plugin; the LLM's side is a second server process on
the same table, so the stream learns of a request only by polling. The stream's process is then throttled the way
CFS bandwidth control throttles a Lambda sandbox: a SIGSTOP/SIGCONT duty cycle on a 10 ms period, running for
share x 10 ms of each. A duty cycle is a little harsher than CFS for waiting (an answer from DynamoDB that arrives
while the process is stopped waits for the next window; CFS would let it run while quota is left), so the wall
times are an upper bound.

Measured per share: CPU per idle poll (the process's own CPU time from /proc/PID/task/*/schedstat over the idle
window, heartbeats and presence writes included, divided by the polls it made: its GetItem requests), the wall time
per poll (the poll period minus the configured interval), and the delivery of a request (``POST /request`` sent →
the ``tool-request`` event at the plugin) at the idle interval, requests spread over the poll period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench import load
from bench.cost import Deployment, Prices
from bench.dynamo import LocalTable
from bench.server import run_target
from bench.stats import summary

VCPU_MB = 1769  # Lambda: one full vCPU at 1,769 MB, CPU in proportion below it
MEMORY_SIZES = (128, 256, 512)
PERIOD_SECONDS = 0.010  # CFS's bandwidth period is 100 ms by default; Lambda's slices are finer. 10 ms, the brief's


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of ``pid`` so far, every thread's, those that ended included (/proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DutyCycle:
    """Lets ``pid`` run ``share`` of each ``period`` (SIGCONT ... SIGSTOP), from a thread of this process."""

    def __init__(self, pid: int, share: float, period: float = PERIOD_SECONDS) -> None:
        self.pid, self.share, self.period = pid, share, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"duty-cycle-{pid}", daemon=True)
        self.open_seconds = 0.0
        self.elapsed = 0.0

    def __enter__(self) -> DutyCycle:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def achieved(self) -> float:
        """The share the process really had (the stop and start signals arrive late on a loaded machine)."""
        return self.open_seconds / self.elapsed if self.elapsed else 0.0

    def _run(self) -> None:
        run = self.share * self.period
        started = tick = time.perf_counter()
        try:
            while not self._stop.is_set():
                opened = time.perf_counter()  # read before it runs: this thread may be preempted right after
                os.kill(self.pid, signal.SIGCONT)
                _sleep_until(tick + run)
                os.kill(self.pid, signal.SIGSTOP)
                self.open_seconds += time.perf_counter() - opened
                tick += self.period
                now = time.perf_counter()
                if tick < now:  # late (this thread was not scheduled): start afresh rather than catch up
                    tick = now
                _sleep_until(tick)
        finally:
            os.kill(self.pid, signal.SIGCONT)
            self.elapsed = time.perf_counter() - started


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


@contextlib.contextmanager
def throttled(pid: int, memory_mb: int | None) -> Iterator[DutyCycle | None]:
    if memory_mb is None or memory_mb >= VCPU_MB:
        yield None
        return
    with DutyCycle(pid, memory_mb / VCPU_MB) as duty:
        yield duty


def get_items(counts: dict[str, Any]) -> int:
    return int((counts.get("dynamodb") or {}).get("calls", {}).get("GetItem", 0))


async def _idle(stream: Any, seconds: float) -> dict[str, float]:
    before = await asyncio.to_thread(stream.counts)
    cpu0, t0 = process_cpu_seconds(stream.pid), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu1, t1 = process_cpu_seconds(stream.pid), time.perf_counter()
    after = await asyncio.to_thread(stream.counts)
    polls = max(1, get_items(after) - get_items(before))
    return {"seconds": t1 - t0, "polls": polls, "cpu_seconds": cpu1 - cpu0}


async def _deliveries(llm: httpx.AsyncClient, pair: load.Pair, n: int, interval: float) -> load.Samples:
    samples = load.Samples()
    for i in range(n):
        await asyncio.sleep(random.uniform(0, interval))  # anywhere in the poll period
        started = time.perf_counter()
        body = {"code": pair.code, "tool": load.TOOL, "args": load.tool_args(i)}
        r = await llm.post("/request", json=body)
        if r.status_code != 202:
            samples.errors += 1
            continue
        rid = r.json()["id"]
        deadline = started + 10
        while rid not in pair.plugin.arrivals and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        arrived = pair.plugin.arrivals.pop(rid, None)
        if arrived is None:
            samples.errors += 1
            continue
        samples.delivery.append(arrived - started)
        # the plugin's answer lands before the next request, so each delivery meets an idle stream
        answer = await llm.get("/response", params={"code": pair.code, "id": rid, "wait": "15"})
        if answer.status_code != 200:
            samples.errors += 1
    return samples


async def _measure(
    llm_base: str, stream: Any, interval: float, sizes: list[int | None], idle_seconds: float, calls: int
) -> list[dict[str, Any]]:
    rows = []
    async with load.new_client(llm_base) as llm, load.new_client(stream.base) as browser:
        r = await llm.post("/api/sessions", json=load.PLUGIN_SESSION)
        r.raise_for_status()
        body = r.json()
        plugin = load.TimingPlugin(stream.base, body["code"], body["browserToken"], client=browser)
        plugin.start()
        try:
            await asyncio.wait_for(plugin.connected.wait(), 60)
            pair = load.Pair(body["code"], plugin)
            await _deliveries(llm, pair, 2, interval)  # warm both sides up
            for memory in sizes:
                label = "unthrottled" if memory is None else f"{memory} MB"
                print(f"  cpu share: {label} …", file=sys.stderr, flush=True)
                with throttled(stream.pid, memory) as duty:
                    idle = await _idle(stream, idle_seconds)
                    deliveries = await _deliveries(llm, pair, calls, interval)
                period = idle["seconds"] / idle["polls"]
                rows.append(
                    {
                        "memory_mb": memory,
                        "share": round(memory / VCPU_MB, 4) if memory else None,
                        "achieved_share": round(duty.achieved, 4) if duty else None,
                        "polls": idle["polls"],
                        "cpu_ms_per_poll": round(idle["cpu_seconds"] * 1000 / idle["polls"], 3),
                        "wall_ms_per_poll": round(max(0.0, period - interval) * 1000, 2),
                        "delivery": summary(deliveries.delivery),
                        "errors": deliveries.errors,
                    }
                )
        finally:
            await plugin.stop()
            await plugin.detach()
    return rows


def run(
    dynamo: LocalTable, dep: Deployment, *, idle_seconds: float, calls: int, sizes: tuple[int, ...] = MEMORY_SIZES
) -> dict[str, Any]:
    interval = dep.idle_poll_interval_seconds or dep.poll_interval_seconds
    # Every poll at the idle interval (no fast-polling window): what an open tab does most of the time, and the
    # delivery of the first call after a pause.
    env = {
        **dynamo.env,
        "POLL_INTERVAL_SECONDS": str(interval),
        "IDLE_POLL_INTERVAL_SECONDS": str(interval),
        "POLL_ACTIVE_SECONDS": "0",
    }
    heartbeat = dep.heartbeat_seconds
    with (
        run_target(dynamo.store_url, poll=True, wakeups=False, heartbeat=heartbeat, env=env) as llm_side,
        run_target(dynamo.store_url, poll=True, wakeups=False, heartbeat=heartbeat, env=env) as stream,
    ):
        rows = asyncio.run(_measure(llm_side.base, stream, interval, [None, *sizes], idle_seconds, calls))
    prices = Prices()
    for row in rows:
        if row["memory_mb"]:
            gb_hour = row["memory_mb"] / 1024 * 3600 * prices.lambda_gb_second(dep.architecture)
            row["stream_usd_per_hour"] = round(gb_hour, 5)
    return {
        "poll_interval_seconds": interval,
        "period_ms": PERIOD_SECONDS * 1000,
        "idle_seconds": idle_seconds,
        "calls": calls,
        "architecture": dep.architecture,
        "rows": rows,
    }
