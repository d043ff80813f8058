"""The plugin inside the real CODAP app (a v3 production build) in chromium as Playwright starts it, where a
third-party frame gets no storage: it pairs and a tool call changes what CODAP holds; it pairs as a third-party
frame, from memory; it pairs in a public https CODAP once Local Network Access allows it; a classroom burst over
the session limit waits and pairs by itself; and a plugin that cannot start says so."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from codap_relay.codes import new_code
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import ARTIFACTS, web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.plugin_page import call_tool, ok_result, wait_until
from codap_relay_tooling.testing.real_codap import CodapPage, blocked_then_allowed, other_site, public_origin
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import free_port, serve_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser_args(codap_https_url: str) -> list[str]:
    args: list[str] = public_origin(codap_https_url)
    return args


@pytest.fixture(scope="module")
def full_browser() -> bool:
    """The browser itself, not its headless shell: what is tested here is what a person's Chrome does."""
    return True


def test_plugin_pairs_in_real_codap_and_a_tool_changes_codap(open_codap: Any, relay_url: str) -> None:
    codap = open_codap(f"{relay_url}/plugin/")
    code = codap.code()
    frame = codap.ok({"action": "get", "resource": "interactiveFrame"})
    assert frame["title"] == "CODAP Relay" and frame["version"] == "1.0.0"

    rows = [{"name": "Ada", "score": 91}, {"name": "Ben", "score": 78}]
    args = {"datasetName": "class", "dataType": "custom", "recordCount": 2, "customData": rows}
    result = ok_result(call_tool(relay_url, code, "create_codap_dataset", args))
    assert result["structuredContent"]["recordCount"] == 2
    held = sorted((i["values"]["name"], i["values"]["score"]) for i in codap.items("class"))
    assert held == [("Ada", 91), ("Ben", 78)]
    assert any(c["type"] == "caseTable" for c in codap.components())
    codap.screenshot(ARTIFACTS / "real-codap-paired.png")


def test_blocked_third_party_storage_pairs_from_memory_and_says_what_a_reload_loses(
    open_codap: Any, relay_url: str, codap_url: str
) -> None:
    # CODAP on localhost, the plugin on 127.0.0.1: the plugin is a third-party frame, as inside codap.concord.org.
    codap = open_codap(f"{relay_url}/plugin/", codap=other_site(codap_url))
    probe = codap.frame_storage()
    assert "SecurityError" in probe["sessionStorage"], f"third-party storage was not blocked here: {probe}"

    code = codap.code()
    note = codap.shown("storage-note")
    assert "lives in this page only" in note and "Reloading the plugin or CODAP ends this code" in note
    args = {"datasetName": "memory", "dataType": "random_numbers", "recordCount": 3}
    ok_result(call_tool(relay_url, code, "create_codap_dataset", args))
    assert len(codap.items("memory")) == 3
    codap.screenshot(ARTIFACTS / "real-codap-storage-blocked.png")

    # What the note said: a reload cannot keep the code. The old session is ended at once, so an LLM still
    # holding it is told so (404) instead of queueing requests for a page that is gone.
    codap.reload_plugin()
    new_code = codap.wait_paired()
    assert new_code != code
    wait_until(
        lambda: web.get(f"{relay_url}/api/sessions/{code}").status_code == 404,
        "the old session to be ended when its page went away",
    )
    assert "lives in this page only" in codap.shown("storage-note")
    ok_result(call_tool(relay_url, new_code, "get_codap_datasets", {}))


def test_public_codap_with_the_site_allowed_pairs_where_third_party_storage_is_blocked(
    open_codap: Any, relay_url: str, codap_https_url: str
) -> None:
    """The README's path in a browser that blocks third-party storage: https CODAP and the http plugin are two
    sites, so the plugin's frame has no storage. Blocked until allowed, then it pairs and works from memory."""
    codap = blocked_then_allowed(open_codap, f"{relay_url}/plugin/", codap_https_url)
    assert "SecurityError" in codap.frame_storage()["sessionStorage"]
    assert "lives in this page only" in codap.shown("storage-note")
    code = codap.code()
    args = {"datasetName": "public", "dataType": "random_numbers", "recordCount": 4}
    ok_result(call_tool(relay_url, code, "create_codap_dataset", args))
    assert len(codap.items("public")) == 4


class SessionPosts:
    """Every POST /api/sessions a page sent: when it started and when its answer ended, by the browser's own
    resource timing (event callbacks here run late, when the sync API next pumps its loop)."""

    def __init__(self, codap: CodapPage) -> None:
        self.posts: list[tuple[float, float, int]] = []  # (started, answered) in ms since the epoch, status

        def on_finished(request: Any) -> None:
            if request.method == "POST" and request.url.endswith("/api/sessions"):
                timing = request.timing
                response = request.response()
                status = response.status if response is not None else 0
                self.posts.append((timing["startTime"], timing["startTime"] + timing["responseEnd"], status))

        codap.page.on("requestfinished", on_finished)


COPY_BUTTONS = ("copy-code", "mcp", "claude", "prompt")


@dataclass
class Classroom:
    url: str
    clock: FakeClock
    issued: list[str]  # every pairing code the relay handed out


@pytest.fixture(scope="module")
def classroom() -> Iterator[Classroom]:
    """A relay that lets 3 sessions a minute through per address, on a clock the test moves: it stands 3 s
    before the end of a one-minute window, so the window reopens when the test says, not a minute later."""
    clock = FakeClock(math.floor(time.time() / 60) * 60 + 57)
    issued: list[str] = []

    def counted_code() -> str:
        issued.append(new_code())
        return issued[-1]

    relay = Relay(e2e_settings(rate_limit_session_per_ip=3), MemoryStore(), clock=clock, codes=counted_code)
    with serve_app(build_app(relay)) as url:
        yield Classroom(url, clock, issued)


def test_a_class_behind_one_address_over_the_session_limit_waits_and_pairs_by_itself(
    open_codap: Any, classroom: Classroom
) -> None:
    relay, clock = classroom.url, classroom.clock
    pages: list[CodapPage] = []
    posts: list[SessionPosts] = []
    for _ in range(5):  # five students open the plugin at once; the limit lets three through this minute
        page = open_codap(f"{relay}/plugin/", wait=False)
        pages.append(page)
        posts.append(SessionPosts(page))

    def waiting() -> list[CodapPage]:
        return [p for p in pages if p._safe(lambda p=p: p.status() == "Waiting…")]

    def paired() -> list[CodapPage]:
        return [p for p in pages if p._safe(lambda p=p: p.status() == "Connected" and len(p.code()) == 8)]

    def states() -> list[str]:
        return [str(p._safe(lambda p=p: f"{p.status()} {p.code()} {p.shown('notice')[:80]}")) for p in pages]

    try:
        wait_until(lambda: len(paired()) == 3 and len(waiting()) == 2, "three pages to pair and two to wait", 60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {states()} {[log.posts for log in posts]}") from None
    late = waiting()
    for page in late:
        # read in one go, again if the frame navigates meanwhile (on a busy machine CODAP may replace a frame
        # it loaded first after that frame already showed "Waiting…"; the new one waits the same way)
        def view(page: CodapPage = page) -> tuple[str, str, str, dict[str, bool]] | None:
            seen = page._safe(lambda: (page.status(), page.shown("notice"), page.code(), page.copy_buttons()))
            return seen if seen and seen[0] == "Waiting…" and seen[1] else None

        _, notice, code, buttons = wait_until(view, "a waiting page's notice", 30)
        assert "gets its code by itself in" in notice and "no need to reload" in notice, notice
        assert code == "…"
        assert buttons == dict.fromkeys(COPY_BUTTONS, False)  # nothing to copy yet
    late[0].screenshot(ARTIFACTS / "real-codap-waiting-for-the-limit.png")

    clock.advance(3)  # the window ends: the waiting pages come back after Retry-After and pair
    wait_until(lambda: len(paired()) == 5, "every page to pair once the window reopened", 60)
    for page in pages:
        page.wait_paired()
        assert page.copy_buttons() == dict.fromkeys(COPY_BUTTONS, True)
    codes = {page.code() for page in pages}
    assert len(codes) == 5
    # One session per page: none was created by the first load of the frame, which CODAP replaces at once.
    assert sorted(classroom.issued) == sorted(codes)
    late[0].screenshot(ARTIFACTS / "real-codap-paired-after-waiting.png")
    assert late[0].shown("notice") == ""

    # Retry-After was honoured: after each 429 a page waited at least the 3 s the relay asked for.
    refused = 0
    for log in posts:
        log.posts.sort()
        for (_, answered, status), (next_start, _, _) in zip(log.posts, log.posts[1:], strict=False):
            assert status == 429, log.posts  # only a refusal is followed by another try
            refused += 1
            assert next_start - answered >= 3000, log.posts
    assert refused >= 2


def test_a_plugin_that_cannot_start_says_so(browser: Any, relay_url: str, host_url: str) -> None:
    """The start-up failures with no CODAP in them: a file of the plugin that does not load, a relay that cannot
    be reached, a parent page that is not CODAP. Each ends in a message that says what to do, never in
    "Starting…" for good."""
    context = browser.new_context()
    try:
        broken = context.new_page()
        broken.route("**/plugin/plugin-*.js", lambda route: route.fulfill(status=500, body="upstream error"))
        broken.goto(f"{relay_url}/plugin/")
        wait_until(lambda: broken.inner_text("#status") == "Not connected", "the broken plugin to say so")
        assert "could not start" in broken.inner_text("#notice") and "Reload" in broken.inner_text("#notice")
        broken.screenshot(path=str(ARTIFACTS / "plugin-could-not-start.png"))

        dead = f"http://127.0.0.1:{free_port()}"
        lonely = context.new_page()
        lonely.goto(f"{relay_url}/plugin/?relay={dead}")
        wait_until(lambda: lonely.inner_text("#status") == "Waiting…", "the plugin to wait for its relay")
        notice = lonely.inner_text("#notice")
        assert f"Cannot reach the relay at {dead}" in notice and "Trying again in" in notice, notice

        # In a frame whose parent never answers the CODAP handshake: a code all the same, and a word about CODAP.
        framed = context.new_page()
        framed.goto(f"{host_url}/codap_model.js")  # a page on a host the relay lets frame the plugin (FRAME_ANCESTORS)
        framed.set_content(f'<iframe src="{relay_url}/plugin/?handshake=1" width="400" height="600"></iframe>')
        plugin = framed.frame_locator("iframe")
        wait_until(lambda: plugin.locator("#status").inner_text() == "Connected", "the framed plugin to pair")
        assert "no answer yet" in plugin.locator("#codap-status").inner_text()
        assert len(plugin.locator("#code").inner_text().replace("-", "")) == 8
    finally:
        context.close()


def test_the_plugin_refuses_to_be_framed_by_an_unlisted_origin_and_a_strangers_relay(
    browser: Any, host_url: str
) -> None:
    """The plugin's CSP: only FRAME_ANCESTORS (CODAP) and the relay itself may show it in a frame; a page on any
    other origin sees the frame blocked. And ?relay= naming a relay elsewhere is refused with a message, never
    paired with (its copy buttons would hand out that relay's URLs)."""
    relay = Relay(e2e_settings(frame_ancestors="https://codap.concord.org"), MemoryStore())
    context = browser.new_context()
    try:
        with serve_app(build_app(relay)) as only_codap:
            page = context.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.goto(f"{host_url}/codap_model.js")  # a page on 127.0.0.1:<port>: not CODAP
            page.set_content(f'<iframe id="p" src="{only_codap}/plugin/" width="400" height="600"></iframe>')
            wait_until(lambda: len(page.frames) == 2 and page.frames[1].url != "", "the frame to load or fail")
            wait_until(lambda: any("frame-ancestors" in line for line in console), "the browser to refuse the frame")
            assert page.frames[1].url.startswith("chrome-error://"), page.frames[1].url

            # The relay itself may frame its plugin (a CODAP build served at /codap/, the same origin).
            own = context.new_page()
            own.goto(f"{only_codap}/healthz")
            own.set_content(f'<iframe src="{only_codap}/plugin/?handshake=1" width="400" height="600"></iframe>')
            plugin = own.frame_locator("iframe")
            wait_until(lambda: plugin.locator("#status").inner_text() == "Connected", "the same-origin frame to pair")

            stranger = context.new_page()
            stranger.goto(f"{only_codap}/plugin/?relay=https://relay.evil.example")
            wait_until(lambda: stranger.inner_text("#status") == "Not connected", "the plugin to refuse ?relay=")
            notice = stranger.inner_text("#notice")
            assert "will not use it" in notice and "relay.evil.example" in notice, notice
            assert stranger.inner_text("#code") == "…"  # no code, so nothing to copy
    finally:
        context.close()
