"""One connector per relay: ``/mcp`` as an OAuth protected resource, the relay its own authorization server, the
consent page as the pairing (a code typed on the page, Allow in the plugin), grants bound to the plugin's key in
its browser, and limits by what the caller holds.

A real uvicorn on loopback serves the relay on SQLite and on the memory store; FakePlugin (an SSE client) plays the
plugin and answers the consent question; the consent page is driven over HTTP with its cookie and form (the
browser test, tests/e2e/test_oauth_connector.py, drives it in Chromium with the SDK's own OAuth client).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_MODERN_VERSION

from codap_relay.codes import new_code
from codap_relay.http.app import build_app
from codap_relay.oauth.consent import CONSENT_TOOL
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store.base import Store
from codap_relay.store.memory import MemoryStore
from codap_relay.store.sqlite import SqliteStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.oauth_flow import CALLBACK, HttpClientApp, form_fields, pkce, query_of
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window, make_settings
from codap_relay_tooling.testing.servers import bearer, serve_app

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = SqliteStore(tmp_path / "relay.db") if request.param == "sqlite" else MemoryStore()
    yield s
    s.close()


@pytest.fixture
def settings() -> Settings:
    result: Settings = make_settings()
    return result


class World:
    """The relay on uvicorn, an HTTP client for apps and plugins, and the plugins opened."""

    def __init__(self, base: str, http: httpx.AsyncClient) -> None:
        self.base = base
        self.http = http
        self.asked: list[dict[str, Any]] = []
        self.ran: dict[str, list[str]] = {}

    @property
    def resource(self) -> str:
        return f"{self.base}/mcp"

    def handler(self, name: str, allow: bool = True) -> Any:
        async def handle(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            if tool == CONSENT_TOOL:
                self.asked.append({**args, "plugin": name})
                return {"result": {"allow": allow}}
            self.ran.setdefault(name, []).append(tool)
            return {"result": DATASETS if tool == "get_codap_datasets" else {"tool": tool}}

        return handle

    async def session(self, identity: str | None) -> dict[str, Any]:
        r = await self.http.post("/api/sessions", json={} if identity is None else {"identity": identity})
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        return body

    @contextlib.asynccontextmanager
    async def plugin(self, name: str, identity: str | None, allow: bool = True) -> AsyncIterator[dict[str, Any]]:
        session = await self.session(identity)
        async with FakePlugin.for_session(self.base, session, handler=self.handler(name, allow)):
            yield session

    async def app(self, name: str = "Test app") -> HttpClientApp:
        app = HttpClientApp(web.AsyncClient(base_url=self.base, timeout=10), name)
        await app.register()
        return app

    @contextlib.asynccontextmanager
    async def mcp(self, token: str) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=bearer(token), timeout=10) as http,
            Client(
                streamable_http_client(self.resource, http_client=http),
                mode=LATEST_MODERN_VERSION,
                read_timeout_seconds=MCP_ANSWER_SECONDS,
            ) as client,
        ):
            yield client

    async def datasets(self, token: str) -> types.CallToolResult:
        async with self.mcp(token) as client:
            return await client.call_tool("get_codap_datasets", {})

    async def raw_call(
        self, token: str, tool: str = "get_codap_datasets", args: dict[str, Any] | None = None
    ) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args or {}}}
        headers = {**bearer(token), "Accept": "application/json, text/event-stream"}
        return await self.http.post("/mcp", json=body, headers=headers)


@pytest.fixture
async def world(store: Store, settings: Settings) -> AsyncIterator[World]:
    with serve_app(build_app(Relay(settings, store))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            yield World(base, http)


def key() -> str:
    return secrets.token_urlsafe(32)


async def test_discovery_from_the_401_and_the_metadata(world: World) -> None:
    r = await world.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert (
        challenge.startswith("Bearer ")
        and f'resource_metadata="{world.base}/.well-known/oauth-protected-resource/mcp"' in challenge
    )
    prm = (await world.http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert prm["resource"] == world.resource and prm["authorization_servers"] == [f"{world.base}/"]
    asm = (await world.http.get("/.well-known/oauth-authorization-server")).json()
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert (
        asm["registration_endpoint"] == f"{world.base}/register"
        and asm["revocation_endpoint"] == f"{world.base}/revoke"
    )
    assert set(asm["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    # the per-code routes work as before, with no token
    async with world.plugin("A", None) as session:
        r = await world.http.get("/metadata", params={"code": session["code"]})
        assert r.status_code == 200


async def test_the_whole_flow_over_http_then_tools_reach_the_plugin(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = await world.app("Claude")
    async with world.plugin("A", key()) as session:
        tokens = await app.grant(session["code"], world.resource)
        assert world.asked == [{"app": "Claude", "redirect": "127.0.0.1", "plugin": "A"}]
        assert len(tokens["access_token"]) >= 43 and tokens["token_type"] == "Bearer" and tokens["refresh_token"]
        result = await world.datasets(tokens["access_token"])
        assert not result.is_error and result.structured_content == DATASETS
        assert world.ran["A"] == ["get_codap_datasets"]
        listed = (
            await world.http.get(f"/api/sessions/{session['code']}/grants", headers=bearer(session["browserToken"]))
        ).json()
        assert listed["persistent"] is True and [a["app"] for a in listed["apps"]] == ["Claude"]
    # What the relay's side logs. Not the test's own HTTP clients, which log their URLs, codes included; nor
    # uvicorn's access log, which `codap-relay serve` turns off (it logs here only because caplog's handler is there).
    relay_side = ("codap_relay", "uvicorn.error", "mcp.server", "starlette")
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(relay_side))
    assert '"route": "/token"' in logged and '"route": "/mcp"' in logged  # the access log was captured
    for secret in (tokens["access_token"], tokens["refresh_token"], session["code"], session["browserToken"]):
        assert secret not in logged


async def test_a_new_code_in_the_same_browser_is_reached_by_the_same_token_with_no_new_consent(world: World) -> None:
    app = await world.app()
    browser_key = key()
    async with world.plugin("first class", browser_key) as first:
        tokens = await app.grant(first["code"], world.resource)
        await world.http.delete(f"/api/sessions/{first['code']}", headers=bearer(first["browserToken"]))
    async with world.plugin("next class", browser_key) as second:
        assert second["code"] != first["code"]
        result = await world.datasets(tokens["access_token"])
        assert not result.is_error, result
        assert world.ran == {"next class": ["get_codap_datasets"]} and len(world.asked) == 1
        # a refreshed token (rotated) reaches it too; the old refresh token then works no more
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": app.client_id}
        r = await world.http.post("/token", data=refresh)
        assert r.status_code == 200, r.text
        assert not (await world.datasets(r.json()["access_token"])).is_error
        again = await world.http.post("/token", data=refresh)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


async def test_a_token_for_plugin_a_never_reaches_plugin_b(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", key()) as a, world.plugin("B", key()):
        tokens = await app.grant(a["code"], world.resource)
        for _ in range(3):
            assert not (await world.datasets(tokens["access_token"])).is_error
        assert world.ran == {"A": ["get_codap_datasets"] * 3}


async def test_storage_blocked_the_grant_ends_with_its_code(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", None) as a:
        tokens = await app.grant(a["code"], world.resource)
        listed = (await world.http.get(f"/api/sessions/{a['code']}/grants", headers=bearer(a["browserToken"]))).json()
        assert listed["persistent"] is False and len(listed["apps"]) == 1
        assert not (await world.datasets(tokens["access_token"])).is_error
        await world.http.delete(f"/api/sessions/{a['code']}", headers=bearer(a["browserToken"]))
    async with world.plugin("A again", None):
        # the grant ended with its code: a new code of a browser that keeps nothing is not reached; the host still
        # connects and lists the tools, and a call says the plugin is not open
        r = await world.raw_call(tokens["access_token"])
        assert r.status_code == 200 and r.json()["result"]["isError"] is True, r.text
        assert "not open" in r.json()["result"]["content"][0]["text"]
        async with world.mcp(tokens["access_token"]) as client:
            assert "get_codap_datasets" in {t.name for t in (await client.list_tools()).tools}
        assert "A again" not in world.ran


async def test_a_disconnected_or_revoked_grant_is_refused_at_once(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", key()) as a:
        tokens = await app.grant(a["code"], world.resource)
        assert (await world.raw_call(tokens["access_token"])).status_code == 200
        listed = (await world.http.get(f"/api/sessions/{a['code']}/grants", headers=bearer(a["browserToken"]))).json()
        [grant] = listed["apps"]
        r = await world.http.delete(
            f"/api/sessions/{a['code']}/grants/{grant['id']}", headers=bearer(a["browserToken"])
        )
        assert r.status_code == 200
        refused = await world.raw_call(tokens["access_token"])
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": app.client_id}
        assert (await world.http.post("/token", data=refresh)).status_code == 400
        # RFC 7009 revocation by the app ends its grant the same way
        tokens = await app.grant(a["code"], world.resource)
        r = await world.http.post("/revoke", data={"token": tokens["access_token"], "client_id": app.client_id})
        assert r.status_code == 200, r.text
        assert (await world.raw_call(tokens["access_token"])).status_code == 401
        empty = (await world.http.get(f"/api/sessions/{a['code']}/grants", headers=bearer(a["browserToken"]))).json()
        assert empty["apps"] == []


async def test_no_token_for_a_reused_code_a_wrong_verifier_or_another_resource(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", key()) as a:
        verifier, consent_url, redirect = await app.consent(a["code"], world.resource)
        code = redirect["code"]
        _, challenge = pkce()
        wrong = await app.token(code, pkce()[0])
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        ok = await app.token(code, verifier)
        assert ok.status_code == 200
        assert (await world.raw_call(ok.json()["access_token"])).status_code == 200
        reused = await app.token(code, verifier)
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        # a code sent again may be in other hands: what its first exchange issued is revoked
        assert (await world.raw_call(ok.json()["access_token"])).status_code == 401
        # the consent link works once
        assert (await app.http.get(consent_url)).status_code in (404, 410)
        base = {"response_type": "code", "client_id": app.client_id, "redirect_uri": CALLBACK,
                "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
        # a token asked for another resource is refused at /authorize
        r = await app.http.get("/authorize", params={**base, "resource": "https://elsewhere.example/mcp"})
        assert r.status_code == 302 and query_of(r.headers["location"])["error"] == "invalid_target"
        # a redirect URI that is not exactly the registered one is refused, with no redirect
        r = await app.http.get("/authorize", params={**base, "redirect_uri": f"{CALLBACK}/x"})
        assert r.status_code == 400
        # plain PKCE is not offered
        r = await app.http.get("/authorize", params={**base, "code_challenge_method": "plain"})
        assert r.status_code == 302 and query_of(r.headers["location"])["error"] == "invalid_request"


async def test_denied_in_the_plugin_no_grant(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", key(), allow=False) as a:
        _, _, redirect = await app.consent(a["code"], world.resource)
        assert redirect["error"] == "access_denied" and "code" not in redirect
        listed = (await world.http.get(f"/api/sessions/{a['code']}/grants", headers=bearer(a["browserToken"]))).json()
        assert listed["apps"] == []


async def test_the_consent_form_refuses_cross_site_posts_and_is_never_framed(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", key()) as a:
        _, challenge = pkce()
        consent_url = await app.authorize(challenge, world.resource)
        page = await app.http.get(consent_url)
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        cookie = page.headers["set-cookie"].lower()
        assert "samesite=strict" in cookie and "httponly" in cookie
        fields = form_fields(page.text)
        # another site's page can post the form's fields, but the browser sends no SameSite=Strict cookie with it
        async with web.AsyncClient(base_url=world.base) as elsewhere:
            r = await elsewhere.post("/oauth/consent", data={**fields, "code": a["code"]})
            assert r.status_code == 403
            r = await app.http.post("/oauth/consent", data={**fields, "csrf": "forged", "code": a["code"]})
            assert r.status_code == 403
        assert world.asked == []
        # an unknown code shows the form again with why, and counts towards the guessing guard
        r = await app.http.post("/oauth/consent", data={**fields, "code": "ZZZZ2222"})
        assert r.status_code == 200 and "No CODAP session has this pairing code" in r.text


async def test_the_guessing_guard_counts_unknown_codes_on_the_consent_page(world: World) -> None:
    app = await world.app()
    _, challenge = pkce()
    consent_url = await app.authorize(challenge, world.resource)
    fields = form_fields((await app.http.get(consent_url)).text)
    clear_of_rate_window()
    statuses = [
        (await app.http.post("/oauth/consent", data={**fields, "code": new_code()})).status_code for _ in range(25)
    ]
    assert statuses[:20] == [200] * 20 and statuses[20:] == [429] * 5


@pytest.fixture
def tight() -> Settings:
    """Small limits, so a test reaches them quickly: what an address may queue an hour, what a grant may call."""
    result: Settings = make_settings(request_bytes_per_ip_per_hour=1024 * 1024, rate_limit_request_per_grant=8)
    return result


async def test_limits_follow_what_the_caller_holds_not_its_address(store: Store, tight: Settings) -> None:
    """From one address, another tenant's unknown codes and its whole byte budget never refuse a token's calls;
    one grant's overuse gets 429 with Retry-After for that grant only."""
    with serve_app(build_app(Relay(tight, store))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            world = World(base, http)
            app, other_app = await world.app("Mine"), await world.app("Theirs")
            async with world.plugin("mine", key()) as mine, world.plugin("tenant", key()) as tenant:
                tokens = await app.grant(mine["code"], world.resource)
                others = await other_app.grant(tenant["code"], world.resource)
                # the other tenant, from this same address: the address's whole byte budget, sent by code...
                big = {
                    "code": tenant["code"],
                    "tool": "create_codap_dataset",
                    "args": {"datasetName": "d" * 200_000, "dataType": "random_numbers", "recordCount": 5},
                }
                statuses = [(await http.post("/request", json=big)).status_code for _ in range(5)]
                r = await http.post("/request", json=big)
                assert statuses == [202] * 5 and r.status_code == 429, statuses
                assert r.json()["error"] == "request_bytes_exceeded"
                # ...and 25 unknown codes: the address is refused every code lookup, the tenant's own code included
                clear_of_rate_window()
                guessed = [(await http.get("/metadata", params={"code": new_code()})).status_code for _ in range(25)]
                assert guessed[-1] == 429
                assert (await http.get("/metadata", params={"code": tenant["code"]})).status_code == 429
                # the token's calls pass all the same, and its grant's window is its own
                clear_of_rate_window()
                for _ in range(tight.rate_limit_request_per_grant):
                    r = await world.raw_call(tokens["access_token"])
                    assert r.status_code == 200 and "error" not in r.json(), r.text
                over = await world.raw_call(tokens["access_token"])
                assert over.status_code == 429 and int(over.headers["retry-after"]) >= 1
                assert over.json()["error"] == "rate_limited"
                # the other grant, from the same address, is not refused
                r = await world.raw_call(others["access_token"])
                assert r.status_code == 200 and "error" not in r.json(), r.text
