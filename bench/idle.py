"""Many idle SSE connections on one server process: memory per connection and heartbeat punctuality."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.load import PLUGIN_SESSION, new_client
from codap_relay_tooling.testing.sse_client import iter_events

ON_TIME_SLACK = 1.0  # a heartbeat counts as on time when it comes at most this many seconds after its schedule


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class IdleResult:
    connections: int
    connected: int = 0
    failed: int = 0
    connect_seconds: float = 0.0
    rss_before: int = 0
    rss_after: int = 0
    gaps: list[float] = field(default_factory=list)  # seconds between consecutive heartbeats on one stream
    beats: int = 0

    def report(self, heartbeat: float) -> dict[str, Any]:
        lateness = sorted(max(0.0, g - heartbeat) for g in self.gaps)
        on_time = sum(1 for g in self.gaps if g <= heartbeat + ON_TIME_SLACK)
        per_conn = (self.rss_after - self.rss_before) / self.connected if self.connected else None
        return {
            "connections": self.connections,
            "connected": self.connected,
            "failed": self.failed,
            "connect_seconds": round(self.connect_seconds, 3),
            "rss_before_mib": round(self.rss_before / 2**20, 1),
            "rss_after_mib": round(self.rss_after / 2**20, 1),
            "kib_per_connection": None if per_conn is None else round(per_conn / 1024, 1),
            "heartbeats": self.beats,
            "heartbeat_gaps": len(self.gaps),
            "on_time_fraction": round(on_time / len(self.gaps), 4) if self.gaps else None,
            "late_p50_ms": round(lateness[len(lateness) // 2] * 1000, 1) if lateness else None,
            "late_p99_ms": round(lateness[int(len(lateness) * 0.99)] * 1000, 1) if lateness else None,
            "late_max_ms": round(lateness[-1] * 1000, 1) if lateness else None,
        }


async def idle_streams(base: str, pid: int, count: int, hold: float, *, baseline: bool) -> IdleResult:
    """Open ``count`` streams (relay sessions, or the baseline heartbeat stream), hold them ``hold`` s, measure."""
    result = IdleResult(count)
    async with new_client(base) as client:
        targets: list[tuple[str, dict[str, str], dict[str, str]]] = []
        if baseline:
            targets = [("/bench/baseline-stream", {}, {})] * count
        else:
            for start in range(0, count, 100):
                batch = await asyncio.gather(
                    *(client.post("/api/sessions", json=PLUGIN_SESSION) for _ in range(min(100, count - start)))
                )
                for r in batch:
                    r.raise_for_status()
                    body = r.json()
                    targets.append(
                        ("/stream", {"code": body["code"]}, {"Authorization": f"Bearer {body['browserToken']}"})
                    )
        await asyncio.sleep(0.5)  # let the server settle before the memory reading
        result.rss_before = rss_of(pid)
        settled = asyncio.Event()
        gate = asyncio.Semaphore(100)  # open at most this many at once, as a crowd of browsers would not be atomic

        def tally() -> None:
            if result.connected + result.failed == count:
                settled.set()

        async def hold_one(path: str, params: dict[str, str], headers: dict[str, str]) -> None:
            last: float | None = None
            counted = False
            try:
                async with gate:
                    response_cm = client.stream("GET", path, params=params, headers=headers)
                    response = await response_cm.__aenter__()
                if response.status_code != 200:
                    result.failed += 1
                    tally()
                    await response_cm.__aexit__(None, None, None)
                    return
                result.connected += 1
                counted = True
                tally()
                try:
                    async for event in iter_events(response):
                        if event.event == "heartbeat":
                            now = time.perf_counter()
                            result.beats += 1
                            if last is not None:
                                result.gaps.append(now - last)
                            last = now
                finally:
                    await response_cm.__aexit__(None, None, None)
            except (httpx.TransportError, httpx.StreamError):
                if not counted:
                    result.failed += 1
                    tally()

        started = time.perf_counter()
        tasks = [asyncio.create_task(hold_one(*t)) for t in targets]
        try:
            await asyncio.wait_for(settled.wait(), 120)
            result.connect_seconds = time.perf_counter() - started
            await asyncio.sleep(hold)  # the measurement window itself
            result.rss_after = rss_of(pid)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return result
