"""One connector per relay through the deployed shape: ``codap-relay local-api`` (template.yaml's routes, each
function in processes of its own, the stage in every URL) on DynamoDB Local. The MCP SDK's own OAuth client holds
only ``BASE/mcp``: it finds the metadata from the 401, finds the authorization server whose issuer carries the stage
(the RFC 8414 address is outside the stage, so API Gateway refuses it and the client goes on to the one under it),
registers, and is sent to the consent page, where the code is typed over HTTP as a browser would; the fake plugin
allows, and the client's ``tools/call`` reaches it."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from mcp_types.version import LATEST_MODERN_VERSION

from codap_relay.oauth.consent import CONSENT_TOOL
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.oauth_flow import (
    HttpClientApp,
    MemoryTokens,
    Person,
    consent_answer,
    query_of,
    sdk_client,
)
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS

pytestmark = pytest.mark.dynamodb_local

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}
APP = "Test MCP host"


class Host:
    """An MCP host: the SDK's OAuth client, its token store, and the person's part of the consent over HTTP."""

    def __init__(self, base: str, pairing_code: str, person: Person) -> None:
        self.base = base
        self.pairing_code = pairing_code
        self.person = person  # reads the consent page's number, types it in the plugin
        self.tokens = MemoryTokens()
        self.seen: list[tuple[str, str, int]] = []  # (method, path, status) of every request the client made
        self.redirect: asyncio.Future[str] | None = None
        self.consents = 0

    async def _on_redirect(self, authorize_url: str) -> None:
        """The browser's part: /authorize sends it to the consent page, where it types the code; the page goes on
        by itself once the plugin allowed, to the client's redirect URI (read, not followed)."""
        self.consents += 1
        async with web.AsyncClient(base_url=self.base, timeout=30) as browser:
            r = await browser.get(authorize_url)
            assert r.status_code == 302, r.text
            consent_url = str(r.headers["location"])
            assert consent_url.startswith(f"{self.base}/oauth/consent?")
            page = HttpClientApp(browser, person=self.person)
            posted = await page.type_code(consent_url, self.pairing_code)
            assert posted.status_code == 303, posted.text
            self.redirect = asyncio.get_running_loop().create_future()
            self.redirect.set_result(await page.finish(consent_url))

    async def _on_callback(self) -> AuthorizationCodeResult:
        assert self.redirect is not None
        got = query_of(await self.redirect)
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))  # RFC 9207

    async def _record(self, response: httpx2.Response) -> None:
        self.seen.append((response.request.method, response.request.url.path, response.status_code))

    async def call(self, tool: str) -> Any:
        provider = sdk_client(f"{self.base}/mcp", APP, self.tokens, self._on_redirect, self._on_callback)
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [self._record]}) as http,
            Client(
                streamable_http_client(f"{self.base}/mcp", http_client=http),
                mode=LATEST_MODERN_VERSION,
                read_timeout_seconds=MCP_ANSWER_SECONDS,
            ) as client,
        ):
            return await client.call_tool(tool, {})


async def test_the_sdks_oauth_client_holding_only_the_mcp_url_reaches_the_plugin_through_local_api(
    local_api: Any,
) -> None:
    base: str = local_api.base
    asked: list[dict[str, Any]] = []
    ran: list[str] = []
    person = Person()

    async def plugin(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == CONSENT_TOOL:
            asked.append(args)
            return await consent_answer(person)
        ran.append(tool)
        return {"result": DATASETS}

    async with web.AsyncClient(base_url=base, timeout=30) as http:
        created = await http.post("/api/sessions", json={"identity": secrets.token_urlsafe(32)})
        assert created.status_code == 201, created.text
        session = created.json()
    async with FakePlugin.for_session(base, session, handler=plugin):
        host = Host(base, session["code"], person)
        result = await host.call("get_codap_datasets")
        assert not result.is_error and result.structured_content == DATASETS
        assert ran == ["get_codap_datasets"] and [(a["app"], a["redirect"], a["verified"]) for a in asked] == [
            (APP, "127.0.0.1", None)
        ]

        stage = urlsplit(base).path  # /v1
        statuses = {(method, path): status for method, path, status in host.seen}
        # Discovery from the 401's resource_metadata, under the stage; the RFC 8414 and path-inserted OpenID
        # addresses lie outside it (API Gateway: 403 Forbidden); the OpenID address appended to the issuer serves.
        assert statuses[("POST", f"{stage}/mcp")] == 200
        assert statuses[("GET", f"{stage}/.well-known/oauth-protected-resource/mcp")] == 200
        assert statuses[("GET", f"/.well-known/oauth-authorization-server{stage}")] == 403
        assert statuses[("GET", f"/.well-known/openid-configuration{stage}")] == 403
        assert statuses[("GET", f"{stage}/.well-known/openid-configuration")] == 200
        assert statuses[("POST", f"{stage}/register")] == 201 and statuses[("POST", f"{stage}/token")] == 200
        assert host.tokens.tokens is not None and host.consents == 1

        # The same token again, from a new connection: no new consent, the plugin answers.
        again = await host.call("get_codap_datasets")
        assert not again.is_error and ran == ["get_codap_datasets"] * 2 and host.consents == 1

        # The plugin's connected apps through its own route; Disconnect there refuses the token at once.
        browser = {"Authorization": f"Bearer {session['browserToken']}"}
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            listed = await http.get(f"/api/sessions/{session['code']}/grants", headers=browser)
            assert listed.status_code == 200, listed.text
            apps = listed.json()["apps"]
            assert listed.json()["persistent"] is True and [a["app"] for a in apps] == [APP]
            gone = await http.delete(f"/api/sessions/{session['code']}/grants/{apps[0]['id']}", headers=browser)
            assert gone.status_code == 200, gone.text
            token = host.tokens.tokens.access_token
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            refused = await http.post(
                "/mcp",
                json=ping,
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
            )
            assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]
