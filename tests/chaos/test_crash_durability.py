"""Case 6: `kill -9` the real local server (SQLite store) at random moments during 500 requests, restart it on
the same file. Every request that got a 202 must still be there and be delivered; none may be answered twice.

The plugin here does *not* deduplicate: each delivery runs again and posts a different result. So a relay that
lost an acknowledged answer (and redelivered the request) shows up as a second run, a 409 or a changed result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.chaos_net import RecordingPlugin, until
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.servers import free_port

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

REQUESTS = 500
KILLS = 5
WORKERS = 4


class Server:
    """The real `codap-relay serve` on a fixed port and file, restartable after SIGKILL."""

    def __init__(self, db: Path) -> None:
        self.port = free_port()
        self.db = db
        self.env = {
            **os.environ,
            "HEARTBEAT_SECONDS": "0.3",
            "RATE_LIMIT_REQUEST_PER_CODE": "100000",
            "RATE_LIMIT_SESSION_PER_IP": "1000",
            "GUESS_LIMIT_PER_IP": "100000",
            "MAX_PENDING_REQUESTS_PER_SESSION": "100000",
            "MAX_PENDING_BYTES_PER_SESSION": "10000000000",
            "REQUEST_BYTES_PER_IP_PER_HOUR": "10000000000",
        }
        self._cm: Any = None
        self.kills = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        # WARNING: serve_process pipes the server's output and nobody reads it during the run; access lines
        # for thousands of calls would fill the pipe and block the server.
        store = f"sqlite:///{self.db}"
        # 60 s to come back: it restarts under the full retry storm of the LLM side and the plugin
        self._cm = serve_process(
            "--store", store, "--log-level", "WARNING", env=self.env, port=self.port, start_timeout=60
        )
        _, self.proc = self._cm.__enter__()

    def kill9(self) -> None:
        self.proc.kill()  # SIGKILL: no shutdown handler, no flush, no goodbye
        self.proc.wait(10)
        self.kills += 1
        self._cm.__exit__(None, None, None)

    def stop(self) -> None:
        if self._cm is not None:
            self._cm.__exit__(None, None, None)


async def test_kill_9_during_500_requests_loses_nothing_and_answers_nothing_twice(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    server = Server(tmp_path / "relay.db")
    await asyncio.to_thread(server.start)
    kill_at = sorted(rng.sample(range(20, REQUESTS - 20), KILLS))
    acked: dict[str, int] = {}
    try:
        async with web.AsyncClient(base_url=server.base, timeout=10) as llm:
            s = (await llm.post("/api/sessions", json={})).json()
            code = s["code"]
            queue: asyncio.Queue[int] = asyncio.Queue()
            for i in range(REQUESTS):
                queue.put_nowait(i)

            async def submit(i: int) -> None:
                body = {"code": code, "id": f"k{i}", "tool": "get_codap_status", "args": {"includeComponents": True}}
                while True:  # an LLM client that retries with the same id until it gets its 202
                    try:
                        r = await llm.post("/request", json=body)
                    except httpx.TransportError:
                        await asyncio.sleep(0.05)
                        continue
                    if r.status_code == 202:
                        acked[body["id"]] = r.json()["seq"]
                        return
                    assert r.status_code >= 500, r.text
                    await asyncio.sleep(0.05)

            async def worker() -> None:
                while not queue.empty():
                    await submit(queue.get_nowait())

            async def killer() -> None:
                for threshold in kill_at:
                    await until(lambda t=threshold: len(acked) >= t, 120, f"{threshold} acknowledged requests")
                    await asyncio.sleep(rng.uniform(0, 0.05))  # land somewhere inside the traffic
                    await asyncio.to_thread(server.kill9)
                    await asyncio.to_thread(server.start)

            async with RecordingPlugin.for_session(server.base, s, dedup=False) as plugin:
                await asyncio.gather(killer(), *(worker() for _ in range(WORKERS)))
                try:
                    await until(lambda: set(plugin.acked) >= set(acked), 60, "every acknowledged request answered")
                except AssertionError:
                    missing = sorted(set(acked) - set(plugin.acked))
                    raise AssertionError(
                        f"unanswered {missing[:5]} ({len(missing)}), cursor {plugin.cursor}, "
                        f"refusals {plugin.refusals[-3:]}, last connections {plugin.connections[-3:]}"
                    ) from None
            log = (
                await llm.get(f"/api/sessions/{code}/log", headers={"Authorization": f"Bearer {s['browserToken']}"})
            ).json()
            answers = await asyncio.gather(*(llm.get("/response", params={"code": code, "id": rid}) for rid in acked))
    finally:
        with contextlib.suppress(Exception):
            server.stop()

    where = f"(seed {seed}, {server.kills} kills)"
    assert server.kills == KILLS
    assert len(acked) == REQUESTS
    entries = {e["id"]: e for e in log["entries"]}
    assert set(entries) == set(acked), f"lost or unexpected requests {where}"
    assert sorted(e["seq"] for e in log["entries"]) == list(range(1, REQUESTS + 1)), where
    assert all(entries[rid]["seq"] == seq for rid, seq in acked.items()), f"a retry got a different seq {where}"
    twice = {rid: n for rid, n in plugin.runs.items() if n > 1}
    assert twice == {} and plugin.conflicts == [], f"delivered again after its answer was acknowledged {where}"
    for r in answers:
        body = r.json()
        assert r.status_code == 200, f"{body} {where}"
        assert body["result"] == plugin.acked[body["id"]]["result"], f"the acknowledged answer was replaced {where}"
    print(
        f"kill -9 {where}: {len(plugin.connections)} stream connections, {sum(plugin.deliveries.values())} deliveries"
    )
