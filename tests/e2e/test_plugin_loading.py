"""What opening the plugin costs its relay, in Chromium: the page and its three built files (scripts/build-plugin)
on a first load, and on every later load in the same browser only the page, checked with its ETag (304); the
scripts and styles come from the browser's cache without a request. The relay counts what reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.plugin_bundle import page_files
from codap_relay_tooling.testing.plugin_page import PluginPage, close_tabs, new_page
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import serve_app

pytestmark = pytest.mark.browser

MAX_FILE_REQUESTS = 6


@dataclass
class Counted:
    """What reached the relay under /plugin: (path, status, bytes of body) per request, in order."""

    url: str
    hits: list[tuple[str, int, int]] = field(default_factory=list)

    def take(self) -> list[tuple[str, int, int]]:
        taken, self.hits[:] = list(self.hits), []
        return taken


@pytest.fixture(scope="module")
def counted() -> Iterator[Counted]:
    app = build_app(Relay(e2e_settings(), MemoryStore()))
    state = Counted("")

    async def counting(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/plugin"):
            await app(scope, receive, send)
            return
        status, size = 0, 0

        async def counting_send(message: Message) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        await app(scope, receive, counting_send)
        state.hits.append((scope["path"], status, size))

    with serve_app(counting) as url:
        state.url = url
        yield state


def open_in(context: Any, counted: Counted, host_url: str) -> PluginPage:
    page, messages = new_page(context)
    plugin = PluginPage(page, counted.url, host_url, console=messages)
    plugin.open()
    return plugin


def test_the_plugin_loads_four_files_and_a_second_load_only_checks_the_page(
    browser: Any, host_url: str, counted: Counted
) -> None:
    context = browser.new_context()
    try:
        counted.take()
        first = open_in(context, counted, host_url)
        cold = counted.take()
        built = page_files(first.frame.content())
        assert len(built) == 3, built
        assert sorted(path for path, _, _ in cold) == sorted(["/plugin/", *(f"/plugin/{name}" for name in built)])
        assert len(cold) <= MAX_FILE_REQUESTS and all(status == 200 for _, status, _ in cold), cold
        print(f"first load: {len(cold)} requests, {sum(size for _, _, size in cold)} bytes")

        # Another tab of the same browser, and a reload of the plugin's frame: the page is checked (304, no body),
        # nothing else is asked for. Both run the plugin (a new code, connected), so every file did load.
        second = open_in(context, counted, host_url)
        assert counted.take() == [("/plugin/", 304, 0)]
        second.reload_plugin()
        second.wait_connected()
        assert counted.take() == [("/plugin/", 304, 0)]
        assert second.code() != first.code()
    finally:
        close_tabs(context)
