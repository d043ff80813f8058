"""The OAuth side of ``/mcp`` as a client sees it: token storage for the SDK's ``OAuthClientProvider``, PKCE, and
the consent page driven over plain HTTP (a cookie jar and the form), for tests that need a grant but not a browser.

``Person`` is the one who carries the consent page's number to the plugin: the page shows it once the code is typed
(``HttpClientApp.type_code`` reads it), and a fake plugin's handler answers the question with it
(``consent_answer``), as the person types it there."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_types.version import LATEST_MODERN_VERSION
from pydantic import AnyUrl

from codap_relay.oauth.consent import CONSENT_TOOL

from . import web
from .fake_plugin import FakePlugin
from .plugin_page import MCP_ANSWER_SECONDS
from .servers import bearer

CALLBACK = "http://127.0.0.1:9/callback"  # never reached: the browser's navigation to it is read, not followed
NUMBER_RE = re.compile(r'id="number"[^>]*>(\d+)<')


@dataclass
class Person:
    """The person at the consent page and the plugin: what they read on the page, they type in the plugin."""

    numbers: asyncio.Queue[str] = field(default_factory=asyncio.Queue)

    def saw(self, number: str) -> None:
        self.numbers.put_nowait(number)

    async def typed(self, timeout: float = 20) -> str:
        """The number the person read on the page where they typed the code (waits until they did)."""
        return await asyncio.wait_for(self.numbers.get(), timeout)


async def consent_answer(person: Person, allow: bool = True) -> dict[str, Any]:
    """A plugin's answer to the consent question: Allow with the number the person read on the page, or Deny."""
    if not allow:
        return {"result": {"allow": False}}
    return {"result": {"allow": True, "number": await person.typed()}}


def number_on(page: str) -> str | None:
    """The number the consent page's waiting state shows, if it shows one."""
    found = NUMBER_RE.search(page)
    return found.group(1) if found else None


@dataclass
class MemoryTokens:
    """The SDK client's TokenStorage, in memory."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def sdk_client(
    mcp_url: str,
    name: str,
    storage: MemoryTokens,
    on_redirect: Callable[[str], Awaitable[None]],
    on_callback: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> OAuthClientProvider:
    """The MCP SDK's OAuth client as a host sets it up: a public client (PKCE, no secret) that registers itself."""
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[AnyUrl(CALLBACK)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
    )


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize_params(client_id: str, resource: str, redirect_uri: str = CALLBACK, **more: str) -> dict[str, str]:
    """An authorization request's parameters (PKCE S256 with a fresh challenge, state ``s1``), ``more`` on top."""
    _, challenge = pkce()
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "resource": resource,
        **more,
    }


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', html))


@dataclass
class HttpClientApp:
    """An OAuth client registered at the relay, driving /authorize, the consent page and /token over HTTP."""

    http: httpx.AsyncClient
    name: str = "Test app"
    client_id: str = ""
    person: Person = field(default_factory=Person)
    redirected: str | None = None  # the redirect to the client, when the look at the number met it already

    async def register(self) -> None:
        r = await self.http.post(
            "/register",
            json={
                "redirect_uris": [CALLBACK],
                "client_name": self.name,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        assert r.status_code == 201, r.text
        self.client_id = r.json()["client_id"]

    async def authorize(self, challenge: str, resource: str) -> str:
        """The consent page's URL for a new authorization request."""
        params = {**authorize_params(self.client_id, resource), "code_challenge": challenge}
        r = await self.http.get("/authorize", params=params)
        assert r.status_code == 302, r.text
        return str(r.headers["location"])

    async def type_code(self, consent_url: str, code: str) -> httpx.Response:
        """Load the consent page (its cookie) and post the code; the answer is the waiting page's redirect. The
        waiting page's number, when it shows one, goes to the person (``Person.saw``)."""
        page = await self.http.get(consent_url)
        assert page.status_code == 200, page.text
        posted = await self.http.post("/oauth/consent", data={**form_fields(page.text), "code": code})
        if posted.status_code == 303:
            waiting = await self.http.get(consent_url)
            number = number_on(waiting.text)
            if waiting.status_code == 302:  # the plugin answered already (a Deny needs no number)
                self.redirected = str(waiting.headers["location"])
            elif waiting.status_code == 200 and number is not None:
                self.person.saw(number)
        return posted

    async def finish(self, consent_url: str) -> str:
        """Load the waiting page until the plugin answered: the redirect to the client, with its code."""
        if self.redirected is not None:
            found, self.redirected = self.redirected, None
            return found
        for _ in range(200):
            r = await self.http.get(consent_url)
            if r.status_code == 302:
                return str(r.headers["location"])
            assert r.status_code == 200, r.text
            await asyncio.sleep(0.05)
        raise AssertionError("the plugin never answered the consent question")

    async def token(self, code: str, verifier: str, resource: str | None = None) -> httpx.Response:
        """The code exchanged, with ``resource`` (the spec's MUST) when given."""
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": self.client_id,
            "code_verifier": verifier,
        }
        return await self.http.post("/token", data=data if resource is None else {**data, "resource": resource})

    async def consent(self, pairing_code: str, resource: str) -> tuple[str, str, dict[str, str]]:
        """Authorize, type the code, wait for the plugin: (PKCE verifier, consent URL, the redirect's query)."""
        verifier, challenge = pkce()
        consent_url = await self.authorize(challenge, resource)
        posted = await self.type_code(consent_url, pairing_code)
        assert posted.status_code == 303, posted.text
        return verifier, consent_url, query_of(await self.finish(consent_url))

    async def grant(self, pairing_code: str, resource: str) -> dict[str, Any]:
        """The whole flow for a plugin that allows: the token answer."""
        verifier, _, redirect = await self.consent(pairing_code, resource)
        r = await self.token(redirect["code"], verifier, resource)
        assert r.status_code == 200, r.text
        tokens: dict[str, Any] = r.json()
        return tokens


DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


class World:
    """A relay serving at ``base`` as apps and plugins meet it: an HTTP client, fake plugins that answer the consent
    question with the number the ``person`` read, registered apps, and MCP calls with a token."""

    def __init__(self, base: str, http: httpx.AsyncClient) -> None:
        self.base = base
        self.http = http
        self.asked: list[dict[str, Any]] = []
        self.ran: dict[str, list[str]] = {}
        self.person = Person()  # one person at the apps' consent pages and the plugins here

    @property
    def resource(self) -> str:
        return f"{self.base}/mcp"

    def handler(self, name: str, allow: bool = True) -> Any:
        async def handle(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            if tool == CONSENT_TOOL:
                self.asked.append({**args, "plugin": name})
                return await consent_answer(self.person, allow)
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
        app = HttpClientApp(web.AsyncClient(base_url=self.base, timeout=10), name, person=self.person)
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
