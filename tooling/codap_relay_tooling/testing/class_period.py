"""A class period behind the chat: CODAP tabs, each paired with a relay started here, that an LLM keeps calling
while they are hidden behind another tab (hidden_tab.py); what each call took, what the relay said of the plugin,
which channels the plugin opened, and what the page's timers did. Shared by tests/e2e/test_hidden_codap.py (three
minutes) and ``python -m bench.hidden`` (a class period).

The channels:
- ``serve``: Chromium through ``codap-relay serve`` (SSE, SQLite), as a teacher runs it on a laptop;
- ``local_api``: Chromium through ``codap-relay local-api`` with the push WebSocket (the deployed shape);
- ``local_api_sse``: Chromium through local-api without it (SSE through the stream function, which ends a stream
  after 14 minutes as API Gateway does, ``STREAM_MAX_SECONDS``);
- ``firefox``: Firefox through serve.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import web
from .commands import local_api_process, serve_process
from .engines import CodapTab, xvfb
from .hidden_tab import CdpChromium, HideableFirefox, HideableTab
from .plugin_page import answer, submit
from .relay_settings import TEST_FRAME_ANCESTORS

CHANNELS = ("serve", "local_api", "local_api_sse", "firefox")
RELAY_ENV = {
    "FRAME_ANCESTORS": TEST_FRAME_ANCESTORS,
    "ALLOWED_HOSTS": "localhost,127.0.0.1,[::1]",
    "RATE_LIMIT_SESSION_PER_IP": "1000",
}
# How long a call may take to be answered at all: Firefox answers a hidden tab's plugin messages a second late each,
# and a graph with its picture took 15-32 s there on a loaded machine.
ANSWER_SECONDS = 120.0
MEASURES = """() => performance.getEntriesByType("measure").filter((m) => m.name.startsWith("codap-relay "))
  .slice(-30).map((m) => [m.name, Math.round(m.startTime), Math.round(m.duration)])"""


@dataclass
class Channel:
    """One CODAP tab with its relay, and what was seen of it."""

    name: str
    browser: HideableTab
    tab: CodapTab
    code: str = ""
    hidden_at: float | None = None  # time.monotonic() when it was hidden
    front: dict[str, float] = field(default_factory=dict)  # tool -> seconds, in front
    hidden: list[dict[str, Any]] = field(default_factory=list)  # each call made hidden: {at, tool, seconds}
    again: dict[str, float] = field(default_factory=dict)  # tool -> seconds, back in front
    pixels: dict[str, int | None] = field(default_factory=dict)  # point pixels of its pictures, by moment
    statuses: list[bool] = field(default_factory=list)  # the relay's "connected", polled while hidden
    timers: dict[str, Any] = field(default_factory=dict)
    added: int = 0  # cases the calls added
    graphs: dict[str, Any] = field(default_factory=dict)  # graph ids by what they are for

    @property
    def relay(self) -> str:
        return self.tab.relay

    def call(self, tool: str, args: dict[str, Any], timeout: float = ANSWER_SECONDS) -> tuple[dict[str, Any], float]:
        """A tool call as an HTTP-tool LLM makes it (POST /request?wait=10, then GET /response?wait=5 until the
        answer is there); the answer's body and how long it took. One not answered in ``timeout`` fails with what
        the plugin measured of its last calls and messages to CODAP."""
        started = time.monotonic()
        request_id = submit(self.relay, self.code, tool, args)
        try:
            body = answer(self.relay, self.code, request_id, timeout=timeout)
        except AssertionError as exc:
            raise AssertionError(f"{self.name}: {exc}; the plugin's last measures: {self.measures()}") from exc
        return body, time.monotonic() - started

    def result(self, tool: str, args: dict[str, Any], into: dict[str, float]) -> dict[str, Any]:
        """A call that must complete; its time goes to ``into`` (front or again) under the tool's name."""
        body, took = self.call(tool, args)
        assert body["status"] == "completed", body
        into[tool] = round(took, 2)
        result: dict[str, Any] = body["result"]
        return result

    def hidden_call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A call made while hidden, recorded with when and how long; its answer's body."""
        body, took = self.call(tool, args)
        self.hidden.append({"at": round(self.hidden_for(), 1), "tool": tool, "seconds": round(took, 2)})
        return body

    def measures(self) -> Any:
        """The plugin's own User Timing of its last calls and CODAP messages (runner.js, codap.js)."""
        with contextlib.suppress(Exception):
            return self.browser.evaluate(MEASURES)
        return None

    def connected(self) -> bool:
        """Whether the relay counts the plugin as connected, as an LLM reads it (GET /api/sessions/{code})."""
        status = web.get(f"{self.relay}/api/sessions/{self.code}", timeout=10)
        return status.status_code == 200 and status.json()["connected"] is True

    def hide(self) -> None:
        self.browser.hide()
        self.hidden_at = time.monotonic()
        for frame in (True, False):
            self.browser.start_probe(frame=frame)

    def hidden_for(self) -> float:
        return 0.0 if self.hidden_at is None else time.monotonic() - self.hidden_at

    def read_timers(self) -> dict[str, Any]:
        """The page's and the frame's timer probes (hidden_tab.TimerReport), summed up, and kept."""
        for where, frame in (("page", False), ("frame", True)):
            r = self.browser.read_probe(frame=frame)
            self.timers[where] = {
                "seconds": round(r.span),
                "visibility": r.visibility,
                "frames": r.frames,
                "slowedAt": r.slowed_at(),
                "perMinuteFirst50s": round(r.per_minute(0, 50), 1),
                "perMinuteAfter90s": round(r.per_minute(90), 1),
            }
        return self.timers

    def figures(self) -> dict[str, Any]:
        return {
            "browser": f"{self.browser.name} {self.browser.version}",
            "front": self.front,
            "hidden": self.hidden,
            "again": self.again,
            "pointPixels": self.pixels,
            "channelsOpened": [o["kind"] for o in self.browser.channels()],
            "connectedPolls": [sum(self.statuses), len(self.statuses)],
            "timers": self.timers,
        }


def start_channels(
    stack: contextlib.ExitStack,
    codap_url: str,
    folder: Path,
    names: tuple[str, ...] = ("serve", "local_api", "firefox"),
    *,
    push_ping_seconds: float | None = None,
    stream_max_seconds: float | None = None,
) -> dict[str, Channel]:
    """Start the relays and browsers ``names`` needs (closed by ``stack``) and pair a CODAP tab in each; the
    channels by name, in order. ``push_ping_seconds`` and ``stream_max_seconds``: local-api's PUSH_PING_SECONDS and
    STREAM_MAX_SECONDS (the template's defaults, 90 and 840, if None)."""
    relays: dict[str, str] = {}
    if {"serve", "firefox"} & set(names):
        relays["serve"], _ = stack.enter_context(
            serve_process("--store", f"sqlite:///{folder / 'relay.db'}", env=RELAY_ENV)
        )
    for name, push in (("local_api", ("--push-channel", "websocket")), ("local_api_sse", ())):
        if name not in names:
            continue
        from .dynamodb_shared import env_for, fresh_table, store_url

        dynamo, table = stack.enter_context(fresh_table())
        env = {**env_for(dynamo), **RELAY_ENV}
        if push_ping_seconds is not None:
            env["PUSH_PING_SECONDS"] = f"{push_ping_seconds:g}"
        if stream_max_seconds is not None:
            env["STREAM_MAX_SECONDS"] = f"{stream_max_seconds:g}"
        args = ("--store", store_url(dynamo, table), *push)
        relays[name], _ = stack.enter_context(local_api_process(*args, env=env))
    channels: dict[str, Channel] = {}
    for name in names:
        # A display for each Chromium: on one, the window in front hides the one it covers (Chrome tracks
        # occlusion on X11 too), and CODAP would be hidden while it should be in front.
        browser: HideableTab = HideableFirefox() if name == "firefox" else CdpChromium(stack.enter_context(xvfb()))
        stack.callback(browser.close)
        relay = relays["serve" if name == "firefox" else name]
        channel = Channel(name, browser, CodapTab(browser, codap_url, f"{relay}/plugin/"))
        channel.code = channel.tab.open()
        channels[name] = channel
    return channels
