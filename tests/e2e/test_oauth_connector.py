"""One connector per relay, end to end in Chromium: the MCP SDK's own OAuth client holds only ``RELAY/mcp``; it
finds the relay's authorization server from the 401, registers, and sends the person to the consent page, where
Chromium types the code the plugin shows in the real CODAP build; the plugin asks "APP asks to use this CODAP",
Chromium types there the number the consent page shows and presses Allow, and the client's ``tools/call`` then
reaches the plugin and changes CODAP's document (read back from CODAP itself). The plugin's "New code" keeps the
connection; its Disconnect ends it at once.

The SDK client runs on an event loop of its own thread (Playwright's sync API holds this thread's); the two meet
through a queue (the authorization URL) and a future (the redirect's code). Screenshots of the consent page and
the plugin's connected apps go to OAUTH_SHOTS (default: none taken).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from mcp_types.version import LATEST_MODERN_VERSION

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.oauth_flow import CALLBACK, MemoryTokens, query_of, sdk_client
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS, wait_until
from codap_relay_tooling.testing.real_codap import CodapPage
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import bearer, serve_app

T = TypeVar("T")
SHOTS = os.environ.get("OAUTH_SHOTS")
APP = "Test MCP host"


@pytest.fixture(scope="module")
def full_browser() -> bool:
    """The browser itself, not its headless shell: the consent page's redirect to the app (a 302 after a script's
    navigation) is caught by a Playwright route, and the shell lets that redirect past the route (tried here: the
    browser recorded it, the shell went to the network)."""
    return True


@pytest.fixture(
    scope="module", params=["serve", pytest.param("local_api", marks=pytest.mark.dynamodb_local, id="local_api")]
)
def relay(request: pytest.FixtureRequest) -> Iterator[str]:
    """The relay in process (as ``serve`` runs it), then the deployed shape: local-api on DynamoDB Local, every
    route a function of its own, the stage in every URL, the plugin on the push channel."""
    if request.param == "local_api":
        yield request.getfixturevalue("local_api").base
        return
    with serve_app(build_app(Relay(e2e_settings(), MemoryStore()))) as url:
        yield url


def shoot(target: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(Path(SHOTS) / name))


class Host:
    """An MCP host on a thread of its own: the SDK's OAuth client and its token store, kept between calls."""

    def __init__(self, mcp_url: str) -> None:
        self.mcp_url = mcp_url
        self.tokens = MemoryTokens()
        self.authorize_urls: queue.Queue[str] = queue.Queue()
        self.redirect: concurrent.futures.Future[str] = concurrent.futures.Future()
        self.requests: list[str] = []

    async def _on_redirect(self, url: str) -> None:
        self.authorize_urls.put(url)

    async def _on_callback(self) -> AuthorizationCodeResult:
        got = query_of(await asyncio.wrap_future(self.redirect))
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))  # RFC 9207

    async def _count(self, request: httpx2.Request) -> None:
        self.requests.append(f"{request.method} {request.url.path}")

    async def _call(self, tool: str, args: dict[str, Any]) -> Any:
        provider = sdk_client(self.mcp_url, APP, self.tokens, self._on_redirect, self._on_callback)
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"request": [self._count]}) as http,
            Client(
                streamable_http_client(self.mcp_url, http_client=http),
                mode=LATEST_MODERN_VERSION,
                read_timeout_seconds=MCP_ANSWER_SECONDS,
            ) as client,
        ):
            return await client.call_tool(tool, args)

    def call(self, tool: str, args: dict[str, Any] | None = None) -> concurrent.futures.Future[Any]:
        return run_on_thread(lambda: self._call(tool, args or {}))


def run_on_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(asyncio.run(make()))
        except BaseException as exc:  # handed to the test thread, which raises it
            done.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return done


def consent_in_chromium(context: Any, host: Host, code: str, plugin: CodapPage) -> dict[str, float]:
    """The person's part: the consent page (type the code), then Allow in the plugin. Returns timings (s)."""
    url = host.authorize_urls.get(timeout=30)
    started = time.monotonic()
    page = context.new_page()

    def callback(route: Any) -> None:
        host.redirect.set_result(route.request.url)
        route.fulfill(body="ok")

    page.route(f"{CALLBACK}**", callback)
    page.goto(url)
    assert page.locator("h1").inner_text() == "Connect an app to CODAP" and APP in page.inner_text("main")
    page.fill("#code", f"{code[:4]}-{code[4:]}")
    shoot(page, "consent-page.png")
    page.click("button[type=submit]")
    number = page.wait_for_selector("#number").inner_text()
    shoot(page, "consent-waiting.png")
    frame = plugin.frame
    frame.wait_for_selector("#consent:not([hidden])")
    assert APP in frame.text_content("#consent")  # as written (the heading is shown in capitals)
    frame.fill("#consent-number", number)  # what the person read on the page where they connect
    shoot(plugin.page, "plugin-consent-question.png")
    frame.click("#consent-allow")
    # Playwright's sync API runs the route handler only while this thread is inside one of its calls
    wait_until(lambda: host.redirect.done() or page.wait_for_timeout(50), "the redirect to the client", timeout=30)
    page.close()
    return {"person": time.monotonic() - started}


def test_the_sdk_oauth_client_connects_through_the_consent_page_and_the_plugin_in_real_codap(
    pages: Callable[..., CodapPage], relay: str
) -> None:
    plugin = pages(f"{relay}/plugin/")
    code = plugin.wait_paired()
    mcp_url = f"{relay}/mcp"
    host = Host(mcp_url)
    started = time.monotonic()
    made = {"datasetName": "over oauth", "dataType": "random_numbers", "recordCount": 3}
    answer = host.call("create_codap_dataset", made)
    person = consent_in_chromium(plugin.page.context, host, code, plugin)
    result = answer.result(timeout=90)
    elapsed = time.monotonic() - started
    assert not result.is_error, result
    assert len(plugin.items("over oauth")) == 3  # read back from CODAP, not from the tool's answer
    print(
        f"\nOAuth flow: {len(host.requests)} HTTP requests by the client ({', '.join(host.requests)}); "
        f"{elapsed:.2f} s in all, of which the person's part (page, code, Allow) {person['person']:.2f} s"
    )
    discovery = [r for r in host.requests if "well-known" in r or r.endswith(("/register", "/token"))]
    assert discovery and host.tokens.tokens is not None
    token = host.tokens.tokens.access_token
    # the plugin lists the app
    wait_until(lambda: APP in plugin.frame.inner_text("#apps"), "the connected app in the plugin's list")
    shoot(plugin.page, "plugin-connected-apps.png")
    # a new code in the same browser: the same token reaches it, and nobody is asked again
    plugin.frame.click("#new-code")
    wait_until(lambda: plugin._safe(lambda: plugin.code() not in (code, "…")), "a new code")
    fresh = plugin.code()
    wait_until(lambda: web.get(f"{relay}/api/sessions/{fresh}").json().get("connected"), "the new code's stream")
    again = host.call("get_codap_status").result(timeout=60)
    assert not again.is_error and host.authorize_urls.empty()
    assert host.tokens.tokens.access_token == token
    # Disconnect in the plugin: the token is refused at once
    plugin.frame.click("#apps button")
    wait_until(lambda: plugin._safe(lambda: plugin.frame.locator("#apps li").count() == 0), "the list to empty")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_codap_status", "arguments": {}}}
    headers = {
        **bearer(token),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_MODERN_VERSION,
    }
    refused = web.post(mcp_url, json=body, headers=headers, timeout=10)
    assert refused.status_code == 401 and "invalid_token" in refused.headers["www-authenticate"]
