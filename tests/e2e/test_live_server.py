"""The real command (`codap-relay serve`) on loopback with the SQLite store, a real SSE client as the plugin."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window
from codap_relay_tooling.testing.servers import bearer
from codap_relay_tooling.testing.sse_client import iter_events


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HEARTBEAT_SECONDS": "0.3", "CORS_ORIGIN": "https://codap.concord.org"}


@pytest.fixture
def server(tmp_path: Path, server_env: dict[str, str]) -> Iterator[str]:
    with serve_process("--store", f"sqlite:///{tmp_path / 'relay.db'}", env=server_env) as (base, _):
        yield base


async def new_session(c: httpx.AsyncClient) -> dict[str, Any]:
    r = await c.post("/api/sessions", json={})
    assert r.status_code == 201
    body: dict[str, Any] = r.json()
    return body


async def test_full_round_trip_through_sse(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as llm:
        s = await new_session(llm)
        async with FakePlugin(server, s["code"], s["browserToken"]) as plugin:
            r = await llm.post(
                "/request?wait=10",
                json={"code": s["code"], "tool": "get_codap_status", "args": {"includeComponents": False}},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "completed"
            assert body["result"] == {"tool": "get_codap_status", "args": {"includeComponents": False}}
            assert plugin.executed == [body["id"]]
            status = (await llm.get(f"/api/sessions/{s['code']}")).json()
            assert status["connected"] is True and status["pending"] == 0
            log = (await llm.get(f"/api/sessions/{s['code']}/log", headers=bearer(s["browserToken"]))).json()
            [entry] = log["entries"]
            assert entry["status"] == "completed" and entry["deliveredAt"] is not None


async def test_heartbeats_and_retry_preamble(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as c:
        s = await new_session(c)
        seen: list[tuple[str, int | None]] = []
        async with c.stream("GET", "/stream", params={"code": s["code"], "token": s["browserToken"]}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            assert r.headers["cache-control"].startswith("no-cache")
            async for ev in iter_events(r):
                seen.append((ev.event, ev.retry))
                if len(seen) == 3:
                    break
        # A retry-only block first (EventSource reports no event for it), then heartbeats.
        assert seen == [("message", 1000), ("heartbeat", None), ("heartbeat", None)]


async def test_reconnect_with_cursor_delivers_what_was_missed_exactly_once(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as llm:
        s = await new_session(llm)
        async with FakePlugin.for_session(server, s) as plugin:
            first = await llm.post(
                "/request?wait=10", json={"code": s["code"], "id": "one", "tool": "get_codap_datasets"}
            )
            assert first.status_code == 200
            await plugin.wait_cursor("1")
            await plugin.stop()  # the connection is gone
            for rid in ["two", "three"]:
                r = await llm.post("/request", json={"code": s["code"], "id": rid, "tool": "get_codap_datasets"})
                assert r.status_code == 202
            assert plugin.cursor == "1"
            plugin.connected.clear()
            plugin.start()  # reconnects with Last-Event-ID: 1
            for rid in ["two", "three"]:
                r = await llm.get("/response", params={"code": s["code"], "id": rid, "wait": 10})
                assert r.status_code == 200 and r.json()["status"] == "completed"
            assert plugin.executed == ["one", "two", "three"]
            delivered = [e.json()["id"] for e in plugin.events if e.event == "tool-request"]
            assert delivered == ["one", "two", "three"]


async def test_reconnect_without_cursor_resends_unanswered(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as llm:
        s = await new_session(llm)
        for rid in ["a", "b"]:
            await llm.post("/request", json={"code": s["code"], "id": rid, "tool": "get_codap_datasets"})
        params = {"code": s["code"], "token": s["browserToken"]}
        async with llm.stream("GET", "/stream", params=params) as r:
            async for ev in iter_events(r):
                if ev.event == "tool-request":
                    assert ev.json()["id"] == "a"
                    break  # drop before answering anything
        got: list[str] = []
        async with llm.stream("GET", "/stream", params=params) as r:
            async for ev in iter_events(r):
                if ev.event == "tool-request":
                    got.append(ev.json()["id"])
                    if len(got) == 2:
                        break
        assert got == ["a", "b"]


async def test_new_tab_supersedes_old(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as llm:
        s = await new_session(llm)
        async with FakePlugin.for_session(server, s) as old:
            async with FakePlugin.for_session(server, s) as new:
                for _ in range(100):
                    if old.stopped_by:
                        break
                    await asyncio.sleep(0.05)
                assert old.stopped_by == "superseded"
                r = await llm.post(
                    "/request?wait=10", json={"code": s["code"], "id": "x", "tool": "get_codap_datasets"}
                )
                assert r.status_code == 200
                assert new.executed == ["x"] and old.executed == []


async def test_poll_mode_returns_pending_and_closes(server: str) -> None:
    async with web.AsyncClient(base_url=server, timeout=30) as llm:
        s = await new_session(llm)
        await llm.post("/request", json={"code": s["code"], "id": "p1", "tool": "get_codap_datasets"})
        params = {"code": s["code"], "token": s["browserToken"], "mode": "poll"}
        r = await llm.get("/stream", params=params)
        assert r.status_code == 200 and "event: tool-request" in r.text and '"id":"p1"' in r.text
        r = await llm.get("/stream", params={**params, "lastEventId": "1"})
        assert "event: heartbeat" in r.text and "tool-request" not in r.text


async def test_accepted_requests_survive_a_restart(tmp_path: Path, server_env: dict[str, str]) -> None:
    db = f"sqlite:///{tmp_path / 'relay.db'}"
    with serve_process("--store", db, env=server_env) as (base, _):
        async with web.AsyncClient(base_url=base, timeout=30) as llm:
            s = await new_session(llm)
            r = await llm.post("/request", json={"code": s["code"], "id": "durable", "tool": "get_codap_datasets"})
            assert r.status_code == 202
    with serve_process("--store", db, env=server_env) as (base, _):
        async with web.AsyncClient(base_url=base, timeout=30) as llm:
            async with FakePlugin.for_session(base, s) as plugin:
                r = await llm.get("/response", params={"code": s["code"], "id": "durable", "wait": 10})
                assert r.status_code == 200 and plugin.executed == ["durable"]


def test_serve_rejects_bad_settings_clearly(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "SESSION_TTL_SECONDS": "forever"}
    out = subprocess.run(
        [sys.executable, "-m", "codap_relay.cli", "serve", "--store", "memory:"],
        env=env,
        capture_output=True,
        timeout=30,
    )
    assert out.returncode == 2 and b"SESSION_TTL_SECONDS" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "codap_relay.cli", "serve", "--store", "sqlite://relative.db"],
        capture_output=True,
        timeout=30,
    )
    assert out.returncode == 2 and b"absolute path" in out.stderr


def test_forwarded_for_from_loopback_does_not_reset_limits_without_trust_proxy(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    """With TRUST_PROXY off (the default), X-Forwarded-For is the client's own word: a new value per request must
    not make a new address for the per-address session limit (uvicorn's proxy_headers would, from loopback)."""
    env = {**server_env, "RATE_LIMIT_SESSION_PER_IP": "3"}
    with serve_process("--store", "memory:", env=env) as (base, _):
        clear_of_rate_window()
        statuses = [
            web.post(f"{base}/api/sessions", json={}, headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
            for i in range(5)
        ]
    assert statuses == [201, 201, 201, 429, 429]
