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
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from codap_relay.http.app import build_app
from codap_relay.oauth.client_documents import (
    CLIENT_DOCUMENT_FETCHES_PER_MINUTE,
    FETCH_FAILED,
    MAX_BYTES,
    TIMEOUT_SECONDS,
)
from codap_relay.oauth.consent import CONSENT_TOOL
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.oauth_flow import CALLBACK, HttpClientApp, Person, authorize_params, consent_answer
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window, make_settings
from codap_relay_tooling.testing.servers import bearer, free_port, serve_app

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


class Documents:
    """The clients' web server: each path a document (or a misbehaviour), and how often each was fetched."""

    def __init__(self) -> None:
        self.base = ""
        self.hits: dict[str, int] = {}
        self.missing: set[str] = set()

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
        if name == "script-uri.json":
            return JSONResponse(self.document(path, redirect_uris=["javascript:alert(1)"]))
        if name == "long-name.json":
            return JSONResponse(self.document(path, client_name="n" * 101))
        if name == "missing.json" or name in self.missing:
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
    params = authorize_params(client_id, f"{str(http.base_url).rstrip('/')}/mcp", redirect_uri)
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
        ("bad.json", "not JSON"),
        ("array.json", "not a JSON object"),
        ("other-id.json", "must be its own URL"),
        ("secret.json", "authenticates with none"),
        ("no-redirects.json", "redirect_uris: Field required"),
        ("bad-uris.json", "redirect_uris: a redirect URI must be absolute"),
        ("script-uri.json", "redirect_uris: javascript: is not an app's own scheme"),
        ("long-name.json", "client_name is at most 100 characters"),
    ],
)
async def test_a_document_that_cannot_be_used_is_refused_and_says_why(
    relay: httpx.AsyncClient, documents: Documents, name: str, said: str
) -> None:
    """What is wrong with a document read from a public host is said: it helps whoever wrote it, and tells
    nothing of the network."""
    assert said in refusal(await authorize(relay, f"{documents.base}/clients/{name}"))
    assert documents.hits.get(f"/clients/{name}") == 1


@pytest.mark.parametrize("name", ["big.json", "redirect.json", "missing.json", "slow.json"])
async def test_a_fetch_that_fails_says_one_thing_whatever_failed(
    relay: httpx.AsyncClient, documents: Documents, name: str
) -> None:
    """Why a fetch failed (refused, timed out, redirected, not 200, too long) is never said: the answers would
    make the relay a port scanner of other hosts (finding: the refusal named the exception)."""
    started = time.monotonic()
    said = refusal(await authorize(relay, f"{documents.base}/clients/{name}"))
    took = time.monotonic() - started
    assert said == FETCH_FAILED
    if name == "slow.json":
        assert TIMEOUT_SECONDS - 0.5 < took < TIMEOUT_SECONDS + 2


async def test_a_connection_refused_says_the_same(relay: httpx.AsyncClient) -> None:
    closed = f"http://127.0.0.1:{free_port()}/clients/app.json"
    assert refusal(await authorize(relay, closed)) == FETCH_FAILED


async def test_a_failed_fetch_is_remembered_and_fetches_are_throttled_per_address(documents: Documents) -> None:
    """A client_id whose fetch failed is not fetched again for a while; an address gets a few fetches a minute,
    then 429 without a fetch (finding: nothing remembered, nothing throttled)."""
    settings = make_settings(oauth_client_documents_allow_loopback=True)
    with serve_app(build_app(Relay(settings, MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            clear_of_rate_window()
            missing = f"{documents.base}/clients/missing-{secrets.token_hex(4)}.json"
            documents.missing.add(missing.rsplit("/", 1)[-1])
            for _ in range(3):
                assert refusal(await authorize(http, missing)) == FETCH_FAILED
            assert documents.hits[urlsplit(missing).path] == 1
            statuses = []
            for i in range(CLIENT_DOCUMENT_FETCHES_PER_MINUTE + 2):
                r = await authorize(http, f"{documents.base}/clients/throttled-{i}.json")
                statuses.append(r.status_code)
            fetched = sum(1 for path in documents.hits if path.startswith("/clients/throttled-"))
            assert 429 in statuses and fetched <= CLIENT_DOCUMENT_FETCHES_PER_MINUTE, statuses


async def test_a_redirect_uri_not_in_the_document_is_refused(relay: httpx.AsyncClient, documents: Documents) -> None:
    said = refusal(await authorize(relay, f"{documents.base}/clients/good.json", "http://127.0.0.1:9/callback/"))
    assert "not registered" in said
    said = refusal(await authorize(relay, f"{documents.base}/clients/good.json", "http://127.0.0.1:9/elsewhere"))
    assert "not registered" in said


@pytest.mark.parametrize(
    ("client_id", "said"),
    [
        ("https://127.0.0.1/clients/app.json", FETCH_FAILED),
        ("https://localhost/clients/app.json", FETCH_FAILED),
        ("https://10.1.2.3/clients/app.json", FETCH_FAILED),
        ("https://192.168.0.10/clients/app.json", FETCH_FAILED),
        ("https://169.254.169.254/latest/meta-data/", FETCH_FAILED),
        ("https://[::1]/clients/app.json", FETCH_FAILED),
        ("https://[fd00::1]/clients/app.json", FETCH_FAILED),
        ("https://[::ffff:10.0.0.1]/clients/app.json", FETCH_FAILED),
        ("https://[64:ff9b::a00:1]/clients/app.json", FETCH_FAILED),
        ("https://[::a00:1]/clients/app.json", FETCH_FAILED),
        ("https://[2002:a00:1::1]/clients/app.json", FETCH_FAILED),
        ("https://[::ffff:0:a00:1]/clients/app.json", FETCH_FAILED),
        ("https://[ff0e::1]/clients/app.json", FETCH_FAILED),
        ("https://224.0.0.1/clients/app.json", FETCH_FAILED),
        ("http://example.org/clients/app.json", "must be https"),
        ("https://example.org/", "needs a path"),
        ("https://example.org/a/../b.json", "needs a path"),
        ("https://user:pw@example.org/app.json", "no user name"),
    ],
)
async def test_without_the_test_setting_no_special_address_and_only_https(client_id: str, said: str) -> None:
    """Every special-purpose address is refused before a connection is tried, and the refusal does not say why
    (finding: NAT64, ::a.b.c.d, 6to4, ::ffff:0:a.b.c.d and multicast were taken for public)."""
    with serve_app(build_app(Relay(make_settings(), MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            refused = refusal(await authorize(http, client_id))
            assert refused == said if said == FETCH_FAILED else said in refused


async def test_loopback_over_http_is_refused_without_the_test_setting(documents: Documents) -> None:
    with serve_app(build_app(Relay(make_settings(), MemoryStore()))) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            assert "must be https" in refusal(await authorize(http, f"{documents.base}/clients/never.json"))
    assert "/clients/never.json" not in documents.hits


async def test_the_whole_flow_with_a_document_as_client_then_tools_reach_the_plugin(
    relay: httpx.AsyncClient, documents: Documents
) -> None:
    client_id = f"{documents.base}/clients/flow.json"  # any other name is a good document too
    asked: list[dict[str, Any]] = []
    person = Person()

    async def plugin(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == CONSENT_TOOL:
            asked.append(args)
            return await consent_answer(person)
        return {"result": DATASETS}

    created = await relay.post("/api/sessions", json={"identity": secrets.token_urlsafe(32)})
    session = created.json()
    base = str(relay.base_url).rstrip("/")
    async with FakePlugin.for_session(base, session, handler=plugin):
        app = HttpClientApp(relay, client_id=client_id, person=person)  # no registration: the document is the client
        tokens = await app.grant(session["code"], f"{base}/mcp")
        # what the relay can prove of the app: its document's host (the name is the document's own say)
        [question] = asked
        assert question["app"] == "Document app" and question["verified"] == urlsplit(client_id).netloc
        assert question["redirect"] == "127.0.0.1" and question["loopback"] is True
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
