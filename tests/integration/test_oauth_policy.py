"""What the MCP authorization spec of 2026-07-28 asks of the relay's authorization server, and its redirect policy.

Each requirement is checked through a real uvicorn on loopback: the metadata a host reads (RFC 8414 and OpenID
discovery, RFC 9728), RFC 9207's ``iss`` in every authorization response, RFC 8707's ``resource`` at the token
endpoint, and the redirect URIs a client may register (https, loopback http on any port per RFC 8252, an app's own
scheme; nothing else, no fragments), with no redirect ever to a URI that policy did not pass.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from codap_relay.http.app import build_app
from codap_relay.records import AuthItem
from codap_relay.relay import Relay
from codap_relay.relay.grants import CLIENT
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.oauth_flow import World, authorize_params, query_of
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import serve_app


@pytest.fixture
def relay() -> Relay:
    return Relay(make_settings(), MemoryStore())


@pytest.fixture
async def world(relay: Relay) -> AsyncIterator[World]:
    with serve_app(build_app(relay)) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            yield World(base, http)


def registration(*redirect_uris: str, **more: Any) -> dict[str, Any]:
    return {
        "redirect_uris": list(redirect_uris),
        "client_name": "Policy app",
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **more,
    }


# --- metadata: what the spec asks for and Claude reads ---------------------------------------------------------


async def test_the_authorization_server_metadata_says_what_the_spec_and_claude_read(world: World) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        asm = (await world.http.get(path)).json()
        assert asm["issuer"] == f"{world.base}/"
        assert asm["authorization_endpoint"] == f"{world.base}/authorize"
        assert asm["token_endpoint"] == f"{world.base}/token"
        # PKCE: clients refuse to go on without it, OpenID discovery included
        assert asm["code_challenge_methods_supported"] == ["S256"]
        # Claude uses a client's metadata document only with both of these; otherwise it registers every time
        assert asm["client_id_metadata_document_supported"] is True
        assert "none" in asm["token_endpoint_auth_methods_supported"]
        # RFC 9207: iss in every authorization response, said in the metadata (a client then rejects one without)
        assert asm["authorization_response_iss_parameter_supported"] is True
        assert asm["response_types_supported"] == ["code"]
        assert set(asm["grant_types_supported"]) == {"authorization_code", "refresh_token"}
        assert asm["scopes_supported"] == ["codap"]
        # dynamic registration is deprecated but still offered, for the hosts that have nothing else
        assert asm["registration_endpoint"] == f"{world.base}/register"


async def test_the_protected_resource_metadata_and_the_challenge(world: World) -> None:
    """RFC 9728 is a MUST: the resource names itself and its server; the 401 says where to read it and which
    scope to ask (the spec's scope selection: a client takes the challenge's scope first)."""
    r = await world.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    challenge = r.headers["www-authenticate"]
    assert r.status_code == 401 and 'scope="codap"' in challenge
    assert f'resource_metadata="{world.base}/.well-known/oauth-protected-resource/mcp"' in challenge
    prm = (await world.http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert prm["resource"] == world.resource and prm["authorization_servers"] == [f"{world.base}/"]
    assert prm["scopes_supported"] == ["codap"] and prm["bearer_methods_supported"] == ["header"]


# --- RFC 9207: iss in every authorization response -------------------------------------------------------------


async def test_every_authorization_response_carries_iss(world: World) -> None:
    app = await world.app("Claude")
    issuer = (await world.http.get("/.well-known/oauth-authorization-server")).json()["issuer"]
    async with world.plugin("A", "i" * 43) as a:
        _, _, granted = await app.consent(a["code"], world.resource)
        assert granted["iss"] == issuer and "code" in granted
    async with world.plugin("B", "j" * 43, allow=False) as b:
        _, _, denied = await app.consent(b["code"], world.resource)
        assert denied["iss"] == issuer and denied["error"] == "access_denied"
    # an error /authorize redirects itself (a resource that is not this relay's)
    r = await world.http.get("/authorize", params=authorize_params(app.client_id, "https://elsewhere.example/mcp"))
    assert r.status_code == 302
    assert query_of(r.headers["location"]) == {
        "error": "invalid_target",
        "error_description": f"This server is the resource {world.resource}.",
        "state": "s1",
        "iss": issuer,
    }


# --- RFC 8707: resource at the token endpoint -------------------------------------------------------------------


async def test_the_token_endpoint_refuses_a_foreign_resource(world: World) -> None:
    app = await world.app()
    async with world.plugin("A", "r" * 43) as a:
        verifier, _, redirect = await app.consent(a["code"], world.resource)
        foreign = await app.token(redirect["code"], verifier, resource="https://elsewhere.example/mcp")
        assert foreign.status_code == 400 and foreign.json()["error"] == "invalid_target", foreign.text
        # the code was not spent on the refusal: the same exchange with this relay's resource gets tokens
        ok = await app.token(redirect["code"], verifier, resource=world.resource)
        assert ok.status_code == 200, ok.text
        refresh = {"grant_type": "refresh_token", "refresh_token": ok.json()["refresh_token"]}
        r = await world.http.post(
            "/token", data={**refresh, "client_id": app.client_id, "resource": "https://elsewhere.example/mcp"}
        )
        assert r.status_code == 400 and r.json()["error"] == "invalid_target"
        # the canonical URI with an upper-case host is the same resource (the spec: accept it)
        upper = world.resource.replace("127.0.0.1", "127.0.0.1".upper())
        r = await world.http.post("/token", data={**refresh, "client_id": app.client_id, "resource": upper})
        assert r.status_code == 200, r.text


# --- redirect URIs by policy -------------------------------------------------------------------------------------

ACCEPTED = [
    "https://claude.ai/api/mcp/auth_callback",
    "http://127.0.0.1:33418/callback",
    "http://127.0.0.1/callback",
    "http://[::1]:8080/cb",
    "http://localhost:3000/callback",
    "cursor://anysphere.cursor-retrieval/oauth/callback",
    "com.example.app:/oauth2redirect",
    "vscode://vscode.github-authentication/did-authenticate",
]
REFUSED = [
    "javascript:alert(document.domain)",
    "data:text/html,<script>alert(1)</script>",
    "file:///etc/passwd",
    "blob:https://claude.ai/1234",
    "about:blank",
    "vbscript:msgbox(1)",
    "http://evil.example/callback",
    "http://127.0.0.1.evil.example/callback",
    "http://0.0.0.0:8080/callback",
    "https://claude.ai/api/mcp/auth_callback#fragment",
    "https://user:pw@claude.ai/callback",
    "wss://claude.ai/callback",
    "ftp://claude.ai/callback",
]


@pytest.mark.parametrize("uri", ACCEPTED)
async def test_registration_takes_https_loopback_and_app_schemes(world: World, uri: str) -> None:
    r = await world.http.post("/register", json=registration(uri))
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("uri", REFUSED)
async def test_registration_refuses_every_other_redirect_uri(world: World, uri: str) -> None:
    """Finding: javascript:, data:, file:, plain http to any host and fragments were registered, and /authorize's
    error redirects went there."""
    r = await world.http.post("/register", json=registration("https://claude.ai/ok", uri))
    assert r.status_code == 400 and r.json()["error"] == "invalid_redirect_uri", r.text


async def test_a_loopback_redirect_uri_matches_on_any_port(world: World) -> None:
    """RFC 8252 7.3: a native app listens on whatever port is free when it signs in, so the port of a loopback
    redirect URI is not compared; everything else is."""
    r = await world.http.post("/register", json=registration("http://127.0.0.1:9/callback"))
    client_id = r.json()["client_id"]
    ok = await world.http.get(
        "/authorize", params=authorize_params(client_id, world.resource, "http://127.0.0.1:51234/callback")
    )
    assert ok.status_code == 302 and urlsplit(ok.headers["location"]).path == "/oauth/consent", ok.text
    for other in ("http://127.0.0.1:51234/other", "http://localhost:51234/callback", "https://127.0.0.1:9/callback"):
        r = await world.http.get("/authorize", params=authorize_params(client_id, world.resource, other))
        assert r.status_code == 400 and "location" not in r.headers, other


async def test_no_error_redirect_goes_to_a_uri_the_policy_did_not_pass(world: World, relay: Relay) -> None:
    """A client kept from before the policy (or a store someone wrote) with a javascript: redirect URI: /authorize
    answers its errors itself, with 400, and never redirects there."""
    item = {
        "client_id": "old-client",
        "client_name": "Old",
        "redirect_uris": ["javascript:alert(1)//"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    }
    await relay.grants.io.run(relay.store.put_auth, AuthItem(CLIENT, "old-client", None, item, relay.clock.now() + 600))
    for more in ({}, {"code_challenge_method": "plain"}, {"resource": "https://elsewhere.example/mcp"}):
        params = {**authorize_params("old-client", world.resource, "javascript:alert(1)//"), **more}
        r = await world.http.get("/authorize", params=params)
        assert r.status_code == 400 and "location" not in r.headers, (more, r.headers.get("location"))
