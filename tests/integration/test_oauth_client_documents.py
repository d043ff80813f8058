"""Client ID Metadata Documents: a client whose client_id is its document's URL, fetched by the relay itself.

The documents are served by a second uvicorn on loopback over plain http, which only the test-only setting
(oauth_client_documents_allow_loopback) lets through; a relay without it refuses that and every private address.
Each refusal is seen at /authorize, with why; the happy path goes through the SDK's handlers to a token whose
tools/call reaches the fake plugin."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from codap_relay.http.app import build_app
from codap_relay.oauth.client_documents import MAX_BYTES, TIMEOUT_SECONDS, public_address
from codap_relay.oauth.consent import CONSENT_TOOL
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.oauth_flow import CALLBACK, HttpClientApp, pkce
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import bearer, serve_app

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


class Documents:
    """The clients' web server: each path a document (or a misbehaviour), and how often each was fetched."""

    def __init__(self) -> None:
        self.base = ""
        self.hits: dict[str, int] = {}

    def document(self, path: str, **changes: Any) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "client_id": f"{self.base}{path}",
            "client_name": "Document app",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        doc.update(changes)
        return doc

    async def serve(self, request: Request) -> Response:
        path = request.url.path
        self.hits[path] = self.hits.get(path, 0) + 1
        name = path.rsplit("/", 1)[-1]
        if name == "slow.json":
            await asyncio.sleep(TIMEOUT_SECONDS + 3)
        if name == "redirect.json":
            return RedirectResponse(f"{self.base}/clients/good.json", status_code=302)
        if name == "big.json":
            return JSONResponse(self.document(path, padding="x" * MAX_BYTES))
        if name == "bad.json":
            return Response('{"client_id": ', media_type="application/json")
        if name == "array.json":
            return JSONResponse([self.document(path)])
        if name == "other-id.json":
            return JSONResponse(self.document(path, client_id=f"{self.base}/clients/good.json"))
        if name == "secret.json":
            return JSONResponse(self.document(path, token_endpoint_auth_method="client_secret_post"))
        if name == "no-redirects.json":
            doc = self.document(path)
            del doc["redirect_uris"]
            return JSONResponse(doc)
        if name == "bad-uris.json":
            return JSONResponse(self.document(path, redirect_uris=["not a url"]))
        if name == "missing.json":
            return JSONResponse({"error": "not here"}, status_code=404)
        return JSONResponse(self.document(path))


@pytest.fixture(scope="module")
def documents() -> Iterator[Documents]:
    docs = Documents()
    with serve_app(Starlette(routes=[Route("/clients/{name}", docs.serve)])) as base:
        docs.base = base
        yield docs


@pytest.fixture
async def relay() -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(oauth_client_documents_allow_loopback=True)
    with serve_app(build_app(Relay(settings, MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            yield http


async def authorize(http: httpx.AsyncClient, client_id: str, redirect_uri: str = CALLBACK) -> httpx.Response:
    _, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "resource": f"{str(http.base_url).rstrip('/')}/mcp",
    }
    return await http.get("/authorize", params=params)


def refusal(r: httpx.Response) -> str:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] in ("invalid_client", "invalid_request") and "location" not in r.headers
    return str(body["error_description"])


async def test_the_metadata_advertises_client_id_metadata_documents(relay: httpx.AsyncClient) -> None:
    asm = (await relay.get("/.well-known/oauth-authorization-server")).json()
    assert asm["client_id_metadata_document_supported"] is True
    assert "none" in asm["token_endpoint_auth_methods_supported"]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("big.json", f"over {MAX_BYTES} bytes"),
        ("redirect.json", "follows no redirect"),
        ("bad.json", "not JSON"),
        ("array.json", "not a JSON object"),
        ("other-id.json", "must be its own URL"),
        ("secret.json", "authenticates with none"),
        ("no-redirects.json", "redirect_uris: Field required"),
        ("bad-uris.json", "not valid: redirect_uris.0"),
        ("missing.json", "answered 404"),
    ],
)
async def test_a_document_that_cannot_be_used_is_refused_and_says_why(
    relay: httpx.AsyncClient, documents: Documents, name: str, said: str
) -> None:
    assert said in refusal(await authorize(relay, f"{documents.base}/clients/{name}"))
    assert documents.hits.get(f"/clients/{name}") == 1


async def test_a_slow_document_is_given_up_on_after_the_timeout(relay: httpx.AsyncClient, documents: Documents) -> None:
    started = time.monotonic()
    said = refusal(await authorize(relay, f"{documents.base}/clients/slow.json"))
    took = time.monotonic() - started
    assert f"within {TIMEOUT_SECONDS:g} s" in said and TIMEOUT_SECONDS - 0.5 < took < TIMEOUT_SECONDS + 2


async def test_a_redirect_uri_not_in_the_document_is_refused(relay: httpx.AsyncClient, documents: Documents) -> None:
    said = refusal(await authorize(relay, f"{documents.base}/clients/good.json", "http://127.0.0.1:9/callback/"))
    assert "not registered" in said
    said = refusal(await authorize(relay, f"{documents.base}/clients/good.json", "http://127.0.0.1:9/elsewhere"))
    assert "not registered" in said


@pytest.mark.parametrize(
    ("client_id", "said"),
    [
        ("https://127.0.0.1/clients/app.json", "not a public address"),
        ("https://localhost/clients/app.json", "not a public address"),
        ("https://10.1.2.3/clients/app.json", "not a public address"),
        ("https://192.168.0.10/clients/app.json", "not a public address"),
        ("https://169.254.169.254/latest/meta-data/", "not a public address"),
        ("https://[::1]/clients/app.json", "not a public address"),
        ("https://[fd00::1]/clients/app.json", "not a public address"),
        ("https://[::ffff:10.0.0.1]/clients/app.json", "not a public address"),
        ("http://example.org/clients/app.json", "must be https"),
        ("https://example.org/", "needs a path"),
        ("https://example.org/a/../b.json", "needs a path"),
        ("https://user:pw@example.org/app.json", "no user name"),
    ],
)
async def test_without_the_test_setting_no_private_address_and_only_https(client_id: str, said: str) -> None:
    with serve_app(build_app(Relay(make_settings(), MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            assert said in refusal(await authorize(http, client_id))


async def test_loopback_over_http_is_refused_without_the_test_setting(documents: Documents) -> None:
    with serve_app(build_app(Relay(make_settings(), MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            assert "must be https" in refusal(await authorize(http, f"{documents.base}/clients/never.json"))
    assert "/clients/never.json" not in documents.hits


def test_addresses_public_and_not() -> None:
    assert public_address("93.184.216.34", allow_loopback=False)
    assert public_address("2606:2800:220:1:248:1893:25c8:1946", allow_loopback=False)
    for private in ("127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"):
        assert not public_address(private, allow_loopback=False), private
    for private in ("::1", "fe80::1%eth0", "fc00::1", "::ffff:127.0.0.1", "::"):
        assert not public_address(private, allow_loopback=False), private
    assert public_address("127.0.0.1", allow_loopback=True) and not public_address("10.0.0.1", allow_loopback=True)


async def test_the_whole_flow_with_a_document_as_client_then_tools_reach_the_plugin(
    relay: httpx.AsyncClient, documents: Documents
) -> None:
    client_id = f"{documents.base}/clients/flow.json"  # any other name is a good document too
    asked: list[dict[str, Any]] = []

    async def plugin(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == CONSENT_TOOL:
            asked.append(args)
            return {"result": {"allow": True}}
        return {"result": DATASETS}

    created = await relay.post("/api/sessions", json={"identity": secrets.token_urlsafe(32)})
    session = created.json()
    base = str(relay.base_url).rstrip("/")
    async with FakePlugin.for_session(base, session, handler=plugin):
        app = HttpClientApp(relay, client_id=client_id)  # no registration: the document is the client
        tokens = await app.grant(session["code"], f"{base}/mcp")
        assert asked == [{"app": "Document app", "redirect": "127.0.0.1"}]
        assert documents.hits["/clients/flow.json"] == 1  # /authorize fetched it; /token read the copy kept
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_codap_datasets", "arguments": {}},
        }
        headers = {**bearer(tokens["access_token"]), "Accept": "application/json, text/event-stream"}
        r = await relay.post("/mcp", json=call, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["structuredContent"] == DATASETS
