"""The plugin's stream as deployed (issue 23, point 1 of "What to build"): through ``codap-relay local-api``, whose
stream function, as on AWS, runs on after its client left, and which refuses a stream over the function's reserved
concurrency (``StreamConcurrency=1`` here) as Lambda does, with the template's 503 + Retry-After.

- A closed tab's stream function ends within a second of the tab's detach reaching the relay (the plugin detaches
  with a keepalive request on pagehide), and the LLM then sees the plugin as not connected.
- A second tab, over the limit, gets 503 + Retry-After, tells its person it is waiting for room, keeps its code
  alive, and pairs by itself once the first tab's stream ends.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest

from codap_relay.records import DETACHED
from codap_relay.store.base import Store
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import local_api_process
from codap_relay_tooling.testing.plugin_page import PluginPage, close_tabs, new_page, wait_until
from codap_relay_tooling.testing.servers import ServerProcess

ENV = {
    "RATE_LIMIT_SESSION_PER_IP": "100000",
    "RATE_LIMIT_STATUS_PER_IP": "100000",
    "GUESS_LIMIT_PER_IP": "100000",
    "ALLOWED_HOSTS": "localhost,127.0.0.1,[::1]",
    # the fake CODAP host on loopback frames the plugin (testing.relay_settings.TEST_FRAME_ANCESTORS)
    "FRAME_ANCESTORS": "http://127.0.0.1:*,http://localhost:*",
}
STREAM_REPORT = re.compile(r"\[StreamFunction#\d+\] REPORT RequestId: (\S+)")
THROTTLED = "StreamFunction: all 1 of its reserved concurrency are busy: throttled"


@pytest.fixture(scope="module")
def deployed() -> Iterator[tuple[str, ServerProcess, Store]]:
    """local-api on DynamoDB Local, SSE only, with one stream function at most (StreamConcurrency=1), and its table
    (read with the credentials local-api gets: DynamoDB Local keeps each key's tables apart)."""
    from codap_relay.store.dynamodb import DynamoStore
    from codap_relay_tooling.testing.dynamodb_shared import env_for, fresh_table, store_url

    with fresh_table() as (dynamo, table):
        env = {**os.environ, **env_for(dynamo), **ENV}
        args = ("--store", store_url(dynamo, table), "--parameter", "StreamConcurrency=1", "--push-channel", "sse")
        with local_api_process(*args, env=env) as (base, process):
            yield base, process, DynamoStore(dynamo.client(), table)


def stream_reports(process: ServerProcess) -> list[str]:
    """The request ids of the stream function's finished invocations, in order."""
    return STREAM_REPORT.findall(process.output())


class FirstSeen:
    """When each condition was first seen true, watched every 10 ms on a thread of its own (the test's own waits
    would add their latency to one side of a difference)."""

    def __init__(self, **conditions: Callable[[], bool]) -> None:
        self.conditions = conditions
        self.at: dict[str, float] = {}
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> FirstSeen:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def all_seen(self) -> bool:
        """Whether every condition was seen; a condition that raised raises here, in the test's thread."""
        if self.error is not None:
            raise self.error
        return len(self.at) == len(self.conditions)

    def _watch(self) -> None:
        try:
            while not self._stop.is_set() and len(self.at) < len(self.conditions):
                for name, holds in self.conditions.items():
                    if name not in self.at and holds():
                        self.at[name] = time.monotonic()
                self._stop.wait(0.01)
        except Exception as exc:
            self.error = exc


def status(base: str, code: str) -> dict[str, Any]:
    """The session as the LLM sees it (the pairing code alone)."""
    r = web.get(f"{base}/api/sessions/{code}", timeout=30)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_closed_tab_frees_its_stream_within_a_second_and_a_waiting_tab_pairs(
    browser: Any, host_url: str, deployed: tuple[str, ServerProcess, Store]
) -> None:
    base, process, store = deployed
    first_context, second_context = browser.new_context(), browser.new_context()
    try:
        first_page, first_console = new_page(first_context)
        first = PluginPage(first_page, base, host_url, console=first_console)
        first.open()
        first_code = first.code()
        wait_until(lambda: status(base, first_code)["connected"], "the LLM to see the first tab connected")

        # A second tab while the one stream function is taken: its stream (and its check) get 503 + Retry-After.
        page, console = new_page(second_context)
        refusals: list[tuple[int, str | None]] = []
        page.on(
            "response",
            lambda r: refusals.append((r.status, r.headers.get("retry-after"))) if "/stream?" in r.url else None,
        )
        second = PluginPage(page, base, host_url, console=console)
        page.goto(f"{host_url}/?di={quote(second.plugin_url, safe='')}")
        wait_until(lambda: second._safe(lambda: second.status() == "Waiting for room…"), "the waiting word")
        assert (503, "5") in refusals, refusals
        assert THROTTLED in process.output()
        notice = second.text("#notice")
        assert "keeps its code" in notice and "looks again in" in notice, notice
        second_code = second.code()
        assert len(second_code) == 8
        before = status(base, second_code)
        assert before["connected"] is False  # nothing is delivered to it yet, and the LLM is told so
        # Its code stays alive while it waits: each look slides the expiry (the status call with its token).
        wait_until(lambda: status(base, second_code)["expiresAt"] > before["expiresAt"], "the code's expiry to slide")

        # The first tab closes: pagehide detaches its stream, whose function (left running after the client went,
        # as on AWS) ends at its next poll.
        ended_before = len(stream_reports(process))

        def detached() -> bool:
            session = store.get_session(first_code)
            return session is not None and session.consumer == DETACHED

        with FirstSeen(detached=detached, ended=lambda: len(stream_reports(process)) > ended_before) as seen:
            closed_at = time.monotonic()
            # page.close() runs the page's unload steps (pagehide) as closing a tab does; a context's close does not.
            first_page.close()
            wait_until(seen.all_seen, "the first tab to detach and its stream function to end", 5)
        took = seen.at["ended"] - seen.at["detached"]
        print(
            f"\ndetach stored -> stream function ended: {took * 1000:.0f} ms; from pagehide (the tab's own closing"
            f" and the detach's trip through local-api included): {(seen.at['ended'] - closed_at) * 1000:.0f} ms"
        )
        assert took < 1.0, f"the detached tab's stream function ran on for {took:.2f} s"
        assert status(base, first_code)["connected"] is False

        # The slot is free: the waiting tab looks again after its Retry-After (5 s + up to 2.5 s) and pairs.
        wait_until(lambda: second._safe(lambda: second.status() == "Connected"), "the second tab to pair", 15)
        assert second.code() == second_code  # the same code: nothing to give the LLM again
        wait_until(lambda: status(base, second_code)["connected"], "the LLM to see the second tab connected")
        assert not second._safe(lambda: second.text("#notice"))  # the countdown is gone
    finally:
        for context in (first_context, second_context):
            close_tabs(context)
