"""The push channel's HTTP side, in process: the session answer offers the push URL, the plugin page's CSP lets it
connect there, and GET /api/sessions/{code}/requests/{id} (a pushed pointer) is the plugin's alone."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.relay.publisher import PUSH_INLINE_BYTES
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_publisher import FakePublisher
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import bearer

PUSH_URL = "wss://ws123.execute-api.us-east-1.amazonaws.com/v1"
TOOLS = [{"name": "big_tool", "description": "", "inputSchema": {"type": "object"}}]


@pytest.fixture
def pub() -> FakePublisher:
    return FakePublisher()


@pytest.fixture
async def pushing(pub: FakePublisher) -> AsyncIterator[tuple[Relay, httpx.AsyncClient]]:
    settings = make_settings(push_url=PUSH_URL, push_endpoint=PUSH_URL.replace("wss://", "https://"))
    relay = Relay(settings, MemoryStore(), publisher=pub)
    transport = httpx.ASGITransport(app=build_app(relay), client=("203.0.113.7", 5555))
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as c:
        yield relay, c


async def test_the_session_offers_push_and_the_page_may_connect_there(
    pushing: tuple[Relay, httpx.AsyncClient],
) -> None:
    _, c = pushing
    created = (await c.post("/api/sessions", json={})).json()
    assert created["push"] == PUSH_URL
    csp = (await c.get("/plugin/")).headers["content-security-policy"]
    connect = next(d for d in csp.split("; ") if d.startswith("connect-src ")).split()[1:]
    assert connect[0] == "'self'" and "wss://ws123.execute-api.us-east-1.amazonaws.com" in connect
    plain = Relay(make_settings(), MemoryStore())
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(plain)), base_url="http://t") as other:
        assert "push" not in (await other.post("/api/sessions", json={})).json()  # SSE only: the answer as before
        assert "wss:" not in (await other.get("/plugin/")).headers["content-security-policy"]


async def test_a_pointer_is_fetched_with_the_browser_token_only(
    pushing: tuple[Relay, httpx.AsyncClient], pub: FakePublisher
) -> None:
    relay, c = pushing
    created = (await c.post("/api/sessions", json={"tools": TOOLS})).json()
    code, token = created["code"], created["browserToken"]
    attach = {"action": "attach", "code": code, "token": token, "tab": "tab-aaaaaaaa", "after": None}
    await relay.push.message("C1", json.dumps(attach))
    args = {"text": "é" * PUSH_INLINE_BYTES}  # two bytes a character in UTF-8: well over the limit
    queued = await c.post("/request", json={"code": code, "tool": "big_tool", "args": args, "id": "big"})
    assert queued.status_code == 202, queued.text
    pushed = pub.to("C1")[-1]
    assert pushed["pointer"] == f"/api/sessions/{code}/requests/big" and "args" not in pushed
    got = await c.get(pushed["pointer"], headers=bearer(token))
    assert got.status_code == 200 and got.json() == {"id": "big", "tool": "big_tool", "args": args, "seq": 1}
    assert (await c.get(pushed["pointer"])).status_code == 401
    wrong = await c.get(pushed["pointer"], headers=bearer("not-the-token"))
    assert wrong.status_code == 403 and wrong.json()["error"] == "token_invalid"
    unknown = await c.get(f"/api/sessions/{code}/requests/nope", headers=bearer(token))
    assert unknown.status_code == 404 and unknown.json()["error"] == "request_not_found"
    gone = await c.get("/api/sessions/ZZZZ2222/requests/big", headers=bearer(token))
    assert gone.status_code == 404 and gone.json()["error"] == "session_not_found"
