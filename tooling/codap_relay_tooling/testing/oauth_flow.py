"""The OAuth side of ``/mcp`` as a client sees it: token storage for the SDK's ``OAuthClientProvider``, PKCE, and
the consent page driven over plain HTTP (a cookie jar and the form), for tests that need a grant but not a browser."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

CALLBACK = "http://127.0.0.1:9/callback"  # never reached: the browser's navigation to it is read, not followed


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
    rounds: list[str] = field(default_factory=list)

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
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": CALLBACK,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": resource,
        }
        r = await self.http.get("/authorize", params=params)
        assert r.status_code == 302, r.text
        return str(r.headers["location"])

    async def type_code(self, consent_url: str, code: str) -> httpx.Response:
        """Load the consent page (its cookie) and post the code; the answer is the waiting page's redirect."""
        page = await self.http.get(consent_url)
        assert page.status_code == 200, page.text
        return await self.http.post("/oauth/consent", data={**form_fields(page.text), "code": code})

    async def finish(self, consent_url: str) -> str:
        """Load the waiting page until the plugin answered: the redirect to the client, with its code."""
        for _ in range(200):
            r = await self.http.get(consent_url)
            if r.status_code == 302:
                return str(r.headers["location"])
            assert r.status_code == 200, r.text
            await asyncio.sleep(0.05)
        raise AssertionError("the plugin never answered the consent question")

    async def token(self, code: str, verifier: str) -> httpx.Response:
        return await self.http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": CALLBACK,
                "client_id": self.client_id,
                "code_verifier": verifier,
            },
        )

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
        r = await self.token(redirect["code"], verifier)
        assert r.status_code == 200, r.text
        tokens: dict[str, Any] = r.json()
        return tokens
