"""Security properties: least privilege per role, cross-session isolation, CORS, the guessing guard, no secrets
in logs. Each test states what an attacker tries and checks both the answer and that nothing changed."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.relays import make_relay, open_session
from codap_relay_tooling.testing.servers import bearer, serve_app

pytestmark = pytest.mark.chaos

UNKNOWN = "ZZZZZZZ2"


def plugin_calls(code: str, rid: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Every endpoint of the plugin role, as (method, path, httpx kwargs) without credentials."""
    return {
        "stream": ("GET", "/stream", {"params": {"code": code, "mode": "poll"}}),
        "answer": ("POST", "/response", {"json": {"code": code, "id": rid, "result": {"forged": True}}}),
        "log": ("GET", f"/api/sessions/{code}/log", {"params": {"full": "1"}}),
        "end": ("DELETE", f"/api/sessions/{code}", {}),
    }


def credentials(own: str, other: str) -> dict[str, tuple[dict[str, str], dict[str, str], int]]:
    """Ways to call without this session's token: (headers, extra query, expected status)."""
    return {
        "none": ({}, {}, 401),
        "empty bearer": ({"Authorization": "Bearer "}, {}, 401),
        "basic auth": ({"Authorization": "Basic dXNlcjpwYXNz"}, {}, 401),
        "the code as token": (bearer(own), {}, 403),
        "other session's token": (bearer(other), {}, 403),
        "other token in query": ({}, {"token": other}, 403),
        "token with a suffix": (bearer(other + "x"), {}, 403),
        "huge token": (bearer("A" * 8000), {}, 403),
    }


async def test_the_code_alone_or_a_foreign_token_can_do_nothing_of_the_plugin_role() -> None:
    relay = make_relay(MemoryStore())
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(relay)), base_url="http://t") as c:
        a, b = await open_session(c), await open_session(c)
        r = await c.post("/request", json={"code": a["code"], "id": "a1", "tool": "get_codap_datasets"})
        assert r.status_code == 202
        for cred, (headers, query, status) in credentials(a["code"], b["browserToken"]).items():
            for name, (method, path, kwargs) in plugin_calls(a["code"], "a1").items():
                params = {**kwargs.get("params", {}), **query}
                r = await c.request(method, path, headers=headers, **{**kwargs, "params": params})
                assert r.status_code == status, f"{name} with {cred}: {r.status_code} {r.text}"
                assert r.json()["error"] in ("token_required", "token_invalid")
        # Nothing happened: not delivered, not answered, not closed.
        [req] = relay.store.list_requests(a["code"])
        assert (req.status, req.delivered_at) == ("queued", None)
        assert relay.store.get_response(a["code"], "a1") is None
        assert relay.store.get_session(a["code"]).closed_at is None  # type: ignore[union-attr]
        # And the real token still works for its own session.
        r = await c.get("/stream", params={"code": a["code"], "mode": "poll"}, headers=bearer(a["browserToken"]))
        assert r.status_code == 200 and '"id":"a1"' in r.text


async def test_sessions_are_isolated_on_every_endpoint() -> None:
    relay = make_relay(MemoryStore())
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(relay)), base_url="http://t") as c:
        a, b = await open_session(c), await open_session(c)
        ta, tb = bearer(a["browserToken"]), bearer(b["browserToken"])
        for s, rid in ((a, "shared"), (b, "shared"), (b, "only-b")):
            r = await c.post("/request", json={"code": s["code"], "id": rid, "tool": "get_codap_datasets"})
            assert r.status_code == 202 and r.json()["seq"] in (1, 2)
        # B answers its own "shared": A's request of the same id must stay unanswered.
        r = await c.post("/response", json={"code": b["code"], "id": "shared", "result": "b"}, headers=tb)
        assert r.status_code == 202
        assert (await c.get("/response", params={"code": a["code"], "id": "shared"})).status_code == 202
        # A's plugin cannot answer or read B's request through its own session.
        r = await c.post("/response", json={"code": a["code"], "id": "only-b", "result": "x"}, headers=ta)
        assert r.status_code == 404 and r.json()["error"] == "request_not_found"
        assert (await c.get("/response", params={"code": a["code"], "id": "only-b"})).status_code == 404
        # A's token on B's code is refused, whatever the endpoint.
        for name, (method, path, kwargs) in plugin_calls(b["code"], "only-b").items():
            r = await c.request(method, path, headers=ta, **kwargs)
            assert r.status_code == 403, name
        # A's stream and log show only A's requests.
        stream = await c.get("/stream", params={"code": a["code"], "mode": "poll"}, headers=ta)
        assert "only-b" not in stream.text and '"id":"shared"' in stream.text
        log = (await c.get(f"/api/sessions/{a['code']}/log", params={"full": "1"}, headers=ta)).json()
        assert [e["id"] for e in log["entries"]] == ["shared"] and "result" not in log["entries"][0]
        status = (await c.get(f"/api/sessions/{a['code']}")).json()
        assert status["pending"] == 1
        # Ending A leaves B untouched.
        assert (await c.delete(f"/api/sessions/{a['code']}", headers=ta)).status_code == 200
        r = await c.get("/response", params={"code": b["code"], "id": "only-b"})
        assert r.status_code == 202 and r.json()["status"] == "queued"


async def test_cors_other_origins_get_nothing_and_preflights_are_refused(tmp_path: Path) -> None:
    env = {**os.environ, "CORS_ORIGIN": "https://codap.concord.org"}
    with serve_process("--store", "memory:", env=env) as (base, _):
        async with web.AsyncClient(base_url=base, timeout=10) as c:
            s = await open_session(c)
            routes = [
                ("POST", "/api/sessions"),
                ("GET", f"/api/sessions/{s['code']}"),
                ("DELETE", f"/api/sessions/{s['code']}"),
                ("GET", f"/api/sessions/{s['code']}/log"),
                ("GET", "/stream"),
                ("POST", "/request"),
                ("POST", "/response"),
                ("GET", "/response"),
                ("GET", "/metadata"),
                ("GET", "/openapi.json"),
            ]
            hostile = [
                "https://evil.example",
                "https://codap.concord.org.evil.example",
                "http://codap.concord.org",
                "https://codap.concord.org:8443",
                "null",
            ]
            pre = {"Access-Control-Request-Headers": "authorization,content-type"}
            for origin in hostile:
                for method, path in routes:
                    r = await c.options(
                        path, headers={"Origin": origin, "Access-Control-Request-Method": method, **pre}
                    )
                    # Refused, and nothing that grants access (Starlette still lists methods; without an
                    # allow-origin the browser blocks the real request).
                    assert r.status_code >= 400, (origin, method, path)
                    assert "access-control-allow-origin" not in r.headers, (origin, path)
                    assert "access-control-allow-credentials" not in r.headers, (origin, path)
                    if method == "GET":
                        r = await c.get(path, params={"code": s["code"]}, headers={"Origin": origin})
                        granted = {"access-control-allow-origin", "access-control-allow-credentials"} & set(r.headers)
                        assert not granted, (origin, path)
            good = "https://codap.concord.org"
            r = await c.options("/request", headers={"Origin": good, "Access-Control-Request-Method": "POST", **pre})
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == good
            assert "access-control-allow-credentials" not in r.headers  # tokens travel in headers, never cookies


async def test_guessing_guard_cuts_off_a_burst_of_unknown_codes_on_every_endpoint() -> None:
    """A guesser must not find live codes through any endpoint: not the LLM's, and not the plugin's, where a
    known code answers 401/403 and an unknown one 404."""
    limit = 10
    relay = make_relay(MemoryStore(), guess_limit_per_ip=limit)
    with serve_app(build_app(relay)) as base:
        async with web.AsyncClient(base_url=base, timeout=10) as c:
            live = await open_session(c)
            probes: list[Callable[[str], Awaitable[httpx.Response]]] = [
                lambda code: c.get("/metadata", params={"code": code}),
                lambda code: c.get(f"/api/sessions/{code}"),
                lambda code: c.post("/request", json={"code": code, "tool": "get_codap_datasets"}),
                lambda code: c.get("/response", params={"code": code, "id": "x"}),
                lambda code: c.get("/stream", params={"code": code, "mode": "poll"}, headers=bearer("guess")),
                lambda code: c.post("/response", json={"code": code, "id": "x", "result": 1}, headers=bearer("g")),
                lambda code: c.get(f"/api/sessions/{code}/log", headers=bearer("guess")),
                lambda code: c.delete(f"/api/sessions/{code}", headers=bearer("guess")),
            ]
            for i, probe in enumerate(probes):
                relay.guard.reset()
                codes = [f"ZZZZ{n:04o}".replace("0", "A").replace("1", "B") for n in range(40)]
                answers = await asyncio.gather(*(probe(code) for code in codes))
                statuses = [r.status_code for r in answers]
                assert statuses.count(429) == len(codes) - limit, (i, statuses)
                for r in answers:
                    if r.status_code == 429:
                        assert int(r.headers["retry-after"]) >= 1 and r.json()["error"] == "rate_limited"
                # Once cut off, even the live code gets 429 on this probe: no oracle.
                assert (await probe(live["code"])).status_code == 429, i
                # The counter is per window: a new window lets the address try again.
                relay.clock.advance(61)  # type: ignore[attr-defined]
                relay.guard.reset()


async def test_logs_of_a_full_flow_carry_no_token_and_no_full_code(tmp_path: Path) -> None:
    env = {**os.environ, "HEARTBEAT_SECONDS": "0.2"}
    db = tmp_path / "relay.db"
    with serve_process("--store", f"sqlite:///{db}", "--log-level", "DEBUG", env=env) as (base, proc):
        async with web.AsyncClient(base_url=base, timeout=20) as c:
            s = await open_session(c)
            code, token = s["code"], s["browserToken"]
            async with FakePlugin.for_session(base, s) as plugin:
                r = await c.post("/request?wait=10", json={"code": code.lower(), "tool": "get_codap_datasets"})
                assert r.status_code == 200 and plugin.executed
            # Token in the query string (the EventSource fallback), errors that echo input, the log, the end.
            await c.get("/stream", params={"code": code, "mode": "poll", "token": token})
            await c.get("/stream", params={"code": code, "mode": "poll", "token": token + "x"})
            await c.get(f"/api/sessions/{code}/log", params={"token": token, "full": "1"})
            await c.post("/request", json={"code": code, "tool": "nope"})
            await c.post(
                "/request",
                content=f'{{"code": "{code}", "tool": '.encode(),
                headers={"content-type": "application/json"},
            )
            await c.get("/response", params={"code": code, "id": "missing"})
            await c.get("/response", params={"code": code, "id": "bad id"})
            await c.delete(f"/api/sessions/{code}", headers=bearer(token))
            await c.get(f"/api/sessions/{code}")
        proc.terminate()
        proc.wait(10)
        text = proc.output()
    assert '"route": "/request"' in text or '"route":"/request"' in text, text[-2000:]
    for secret in (token, code, code.lower()):
        assert secret not in text, f"a secret reached the logs: {secret[:3]}…"
