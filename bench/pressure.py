"""Bounded work: /healthz while status reads hammer a session that holds the most pending requests it may.

Security issue 24 (medium 1): with 400 pending requests of 255 KB, 12 status reads at once pushed /healthz to
2.5 s. Now a session holds at most MAX_PENDING_REQUESTS_PER_SESSION requests of MAX_PENDING_BYTES_PER_SESSION
bytes, a status read counts them from an index in a worker thread, and the goal is /healthz under 300 ms. The
baseline is /healthz on the same server with nothing else running, measured in the same run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from bench.stats import summary
from codap_relay.settings import Settings
from codap_relay_tooling.testing import web

FREE_TOOLS = [{"name": "t", "description": "takes any arguments", "inputSchema": {"type": "object"}}]
GOAL_MS = 300.0


async def fill(c: httpx.AsyncClient, code: str, count: int, each: int) -> int:
    """Queue ``count`` requests of about ``each`` bytes of arguments; returns how many the relay took."""
    taken = 0
    for i in range(count):
        r = await c.post("/request", json={"code": code, "tool": "t", "args": {"text": "x" * each, "i": i}})
        if r.status_code != 202:
            break
        taken += 1
    return taken


async def healthz_series(c: httpx.AsyncClient, seconds: float, gap: float = 0.02) -> list[float]:
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t = time.perf_counter()
        r = await c.get("/healthz")
        r.raise_for_status()
        out.append(time.perf_counter() - t)
        await asyncio.sleep(gap)
    return out


async def measure(base: str, *, readers: int, seconds: float) -> dict[str, Any]:
    s = Settings()
    # The most a session may hold (this version's defaults; an earlier relay, measured for comparison, had none)
    count = getattr(s, "max_pending_requests_per_session", 50)
    total = getattr(s, "max_pending_bytes_per_session", 4 * 1024 * 1024)
    each = min(s.max_request_bytes - 1024, total // count - 64)  # the most of both limits at once
    limits = httpx.Limits(max_connections=readers + 8)
    async with web.AsyncClient(base_url=base, timeout=60, limits=limits) as c:
        created = await c.post("/api/sessions", json={"tools": FREE_TOOLS})
        created.raise_for_status()
        code = created.json()["code"]
        held = await fill(c, code, count, each)
        status = (await c.get(f"/api/sessions/{code}")).json()
        baseline = await healthz_series(c, seconds)
        reads: list[float] = []
        loaded: list[float] = []
        errors = bursts = 0

        async def timed(path: str, into: list[float]) -> int:
            t = time.perf_counter()
            r = await c.get(path)
            into.append(time.perf_counter() - t)
            return r.status_code

        # Bursts as in the finding: ``readers`` status reads sent at once, and /healthz right behind them; the next
        # burst once all are answered.
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            burst = [asyncio.create_task(timed(f"/api/sessions/{code}", reads)) for _ in range(readers)]
            await asyncio.sleep(0)
            health = await timed("/healthz", loaded)
            codes = await asyncio.gather(*burst)
            errors += sum(s != 200 for s in codes) + (health != 200)
            bursts += 1
    under = summary(loaded)
    return {
        "readers": readers,
        "seconds": seconds,
        "pending_requests": status.get("pending"),
        "held_requests": held,
        "bytes_per_request": each,
        "healthz_alone": summary(baseline),
        "healthz_under_reads": under,
        "status_reads": summary(reads),
        "bursts": bursts,
        "status_reads_per_second": round(len(reads) / seconds, 1),
        "errors": errors,
        "goal_ms": GOAL_MS,
        "goal_met": under["max"] is not None and under["max"] < GOAL_MS,
    }


def run(base: str, *, readers: int = 12, seconds: float = 5.0) -> dict[str, Any]:
    return asyncio.run(measure(base, readers=readers, seconds=seconds))
