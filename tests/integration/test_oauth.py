"""One connector per relay: ``/mcp`` as an OAuth protected resource, the relay its own authorization server, the
consent page as the pairing (a code typed on the page, Allow in the plugin), grants bound to the plugin's key in
its browser, and limits by what the caller holds.

A real uvicorn on loopback serves the relay on SQLite and on the memory store; FakePlugin (an SSE client) plays the
plugin and answers the consent question with the number the consent page showed (``Person``); the consent page is
driven over HTTP with its cookie and form (the browser tests, tests/e2e/test_oauth_connector.py and
test_oauth_phishing.py, drive it in Chromium with the real plugin in real CODAP).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
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
from codap_relay_tooling.testing.oauth_flow import (
    CALLBACK,
    DATASETS,
    World,
    form_fields,
    pkce,
    query_of,
)
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window, make_settings
from codap_relay_tooling.testing.servers import bearer, serve_app
from codap_relay_tooling.testing.sse_client import iter_events


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = SqliteStore(tmp_path / "relay.db") if request.param == "sqlite" else MemoryStore()
    yield s
    s.close()


@pytest.fixture
def settings() -> Settings:
    result: Settings = make_settings()
    return result


@pytest.fixture
async def world(store: Store, settings: Settings) -> AsyncIterator[World]:
    with serve_app(build_app(Relay(settings, store))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            yield World(base, http)


def key() -> str:
    return secrets.token_urlsafe(32)


async def eventually(predicate: Any, what: str, timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


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
        [asked] = world.asked
        # the name is the app's own say: a registered client is unverified; it returns to this computer
        assert {k: asked[k] for k in ("app", "verified", "redirect", "loopback", "plugin")} == {
            "app": "Claude", "verified": None, "redirect": "127.0.0.1", "loopback": True, "plugin": "A"
        }  # fmt: skip
        assert "number" not in asked  # the number is on the consent page only
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
    one grant's overuse is refused (rate_limited, with when to retry) for that grant only."""
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
                # over it, the tool call is refused as a call by code over its window is: its result says why (the
                # windows are counted with the call's append, in one transaction)
                over = (await world.raw_call(tokens["access_token"])).json()["result"]
                assert over["isError"] and over["structuredContent"]["error"] == "rate_limited"
                assert over["structuredContent"]["retryAfter"] >= 1
                # the other grant, from the same address, is not refused
                r = await world.raw_call(others["access_token"])
                assert r.status_code == 200 and "error" not in r.json(), r.text


# --- the fourth security round: the consent bound to the person's own flow, refresh chains, the compatibility mode


@pytest.mark.parametrize(
    "answer",
    [{"allow": True}, {"allow": True, "number": "00"}, {"allow": True, "number": "\uff11\uff12"}],
    ids=["allow-with-no-number", "allow-with-a-number-guessed", "allow-with-non-ascii-digits"],
)
async def test_a_stranger_who_types_the_code_gets_no_code_without_the_number_on_their_own_page(
    world: World, answer: dict[str, Any]
) -> None:
    """The phishing of finding 1 over HTTP: a stranger registers "Claude" with Claude's callback, starts the flow in
    their own browser and types the victim's live code. The victim's plugin asks; the victim, who started nothing,
    has no page and no number, and presses Allow. The stranger's page redirects with an error, never a code
    (tests/e2e/test_oauth_phishing.py does the same with the real plugin in real CODAP)."""
    attacker = await world.app("Claude")
    victim_key = key()

    async def victim(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == CONSENT_TOOL:
            world.asked.append(args)
            return {"result": answer}
        return {"result": DATASETS}

    session = await world.session(victim_key)
    async with FakePlugin.for_session(world.base, session, handler=victim):
        _, challenge = pkce()
        consent_url = await attacker.authorize(challenge, world.resource)
        posted = await attacker.type_code(consent_url, session["code"])
        assert posted.status_code == 303
        redirect = query_of(await attacker.finish(consent_url))
        assert "code" not in redirect and redirect["error"] == "access_denied", redirect
        assert "number" in redirect["error_description"]
        [question] = world.asked
        assert question["app"] == "Claude" and question["verified"] is None  # a registration proves nothing
        listed = await world.http.get(
            f"/api/sessions/{session['code']}/grants", headers=bearer(session["browserToken"])
        )
        assert listed.json()["apps"] == []


async def test_a_replayed_refresh_token_ends_the_whole_chain(world: World) -> None:
    """A rotated refresh token used again means two parties hold the chain: the grant ends, so the tokens issued
    after it are refused too (finding: they stayed valid, 30 sliding days for a thief)."""
    app = await world.app()
    async with world.plugin("A", key()) as a:
        first = await app.grant(a["code"], world.resource)
        refresh = {"grant_type": "refresh_token", "client_id": app.client_id, "resource": world.resource}
        second = await world.http.post("/token", data={**refresh, "refresh_token": first["refresh_token"]})
        assert second.status_code == 200, second.text
        assert (await world.raw_call(second.json()["access_token"])).status_code == 200
        replayed = await world.http.post("/token", data={**refresh, "refresh_token": first["refresh_token"]})
        assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
        assert (await world.raw_call(second.json()["access_token"])).status_code == 401
        again = await world.http.post("/token", data={**refresh, "refresh_token": second.json()["refresh_token"]})
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        listed = await world.http.get(f"/api/sessions/{a['code']}/grants", headers=bearer(a["browserToken"]))
        assert listed.json()["apps"] == []


async def test_with_the_compatibility_mode_a_code_alone_never_answers_a_consent(store: Store) -> None:
    """REQUIRE_BROWSER_TOKEN=false lets a code alone read the stream: a stranger who typed the code on their own
    consent page reads the question off /stream and answers it with their own page's number. The answer needs the
    browser token whatever the mode, so no grant is made (finding: a code alone became a grant)."""
    settings: Settings = make_settings(require_browser_token=False)
    with serve_app(build_app(Relay(settings, store))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            world = World(base, http)
            stranger = await world.app("Claude")
            session = await world.session(key())
            _, challenge = pkce()
            consent_url = await stranger.authorize(challenge, world.resource)
            assert (await stranger.type_code(consent_url, session["code"])).status_code == 303

            # The stranger reads the question off the stream with the code alone, as the mode lets them...
            async with http.stream("GET", "/stream", params={"code": session["code"], "mode": "poll"}) as r:
                assert r.status_code == 200
                events = [e async for e in iter_events(r) if e.event == "tool-request"]
            [question] = [e.json() for e in events if e.json()["tool"] == CONSENT_TOOL]
            # ...and answers it with the number their own page shows: refused without the browser token
            answer = {"allow": True, "number": await stranger.person.typed()}
            r = await http.post("/response", json={"code": session["code"], "id": question["id"], "result": answer})
            assert r.status_code == 401 and r.json()["error"] == "token_required", r.text
            page = await stranger.http.get(consent_url)
            assert page.status_code == 200, page.headers.get("location")  # still waiting: no code, no error
            listed = await http.get(f"/api/sessions/{session['code']}/grants", headers=bearer(session["browserToken"]))
            assert listed.json()["apps"] == []
            # the token is needed for the apps' list and Disconnect too, whatever the mode
            assert (await http.get(f"/api/sessions/{session['code']}/grants")).status_code == 401


async def test_consent_questions_stay_out_of_the_activity_resource(world: World) -> None:
    """codap://activity lists the calls that change the document to anyone holding the code or a grant; a consent
    question (which app asked, and when) is the relay's own and not among them (finding: it was listed)."""
    app = await world.app("Claude")
    async with world.plugin("A", key()) as a:
        tokens = await app.grant(a["code"], world.resource)
        for url, token in ((f"{world.base}/mcp/{a['code']}", None), (world.resource, tokens["access_token"])):
            async with (
                httpx2.AsyncClient(headers={} if token is None else bearer(token), timeout=10) as http,
                Client(streamable_http_client(url, http_client=http), mode=LATEST_MODERN_VERSION) as client,
            ):
                read = await client.read_resource("codap://activity")
            activity = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert activity == {"total": 0, "calls": []}, activity
