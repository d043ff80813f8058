"""The fake plugin over the push channel (docs: push-spec), against a small relay stand-in on real loopback
sockets (uvicorn, a starlette WebSocket route and the HTTP routes the plugin calls): seq order with hold-and-
resume, ``resumed.upTo``, dedupe by id, reconnect with the cursor, pings and the watchdog, pointers, the ends.

The stand-in keeps the relay's half of the protocol small and literal (attach/resume/ping answered from an
in-memory queue), so what these tests prove is the plugin's half; the real relay's half is tested on its side.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from codap_relay_tooling.testing.chaos_net import RecordingPlugin, until
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.servers import serve_app


@dataclass
class Socket:
    """One push connection as the relay saw it."""

    ws: WebSocket
    received: list[dict[str, Any]] = field(default_factory=list)  # the plugin's messages
    heard_at: list[float] = field(default_factory=list)  # time.monotonic() of each, as the relay read it
    spoke_at: float = 0.0  # time.monotonic() when the relay last sent on it
    silent: bool = False  # answers nothing (a connection dead in one direction)
    close_code: int | None = None  # how the plugin's side ended it

    async def send(self, message: dict[str, Any]) -> None:
        """The relay's every message on this connection goes through here, so ``spoke_at`` is exact."""
        await self.ws.send_text(json.dumps(message))
        self.spoke_at = time.monotonic()

    def sent(self, action: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("action") == action]


@dataclass
class Session:
    code: str
    token: str
    ping_seconds: float = 15
    requests: dict[int, dict[str, Any]] = field(default_factory=dict)  # seq -> {id, tool, args}, unanswered
    issued: dict[int, dict[str, Any]] = field(default_factory=dict)  # every request, answered or not
    answers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (id, body) as posted
    big: set[int] = field(default_factory=set)  # seqs sent as pointers
    crossing: list[int] = field(default_factory=list)  # seqs pushed between the next attach and its resume
    fetches: list[tuple[str, str | None]] = field(default_factory=list)  # (id, Authorization) of pointer GETs
    sockets: list[Socket] = field(default_factory=list)  # every connection, in order
    consumer: Socket | None = None
    last_seq: int = 0


class MiniRelay:
    """The relay's side of the push protocol, for one process: sessions in memory, messages sent at once."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.loop: asyncio.AbstractEventLoop | None = None  # uvicorn's, in its thread
        self.app = Starlette(
            routes=[
                WebSocketRoute("/push", self._push),
                Route("/response", self._response, methods=["POST"]),
                Route("/api/sessions/{code}/requests/{rid}", self._fetch, methods=["GET"]),
                Route("/api/sessions/{code}/detach", self._detach, methods=["POST"]),
            ]
        )

    def session(self, ping_seconds: float = 15) -> Session:
        s = Session(f"CODE{secrets.token_hex(2).upper()}", secrets.token_urlsafe(8), ping_seconds)
        self.sessions[s.code] = s
        return s

    async def run(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn`` on the server's loop (its sockets live there) and wait for it."""
        assert self.loop is not None
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(), self.loop))

    # --- what a test does to the relay (from the test's loop)

    def answered(self, s: Session, count: int) -> None:
        """``count`` requests issued and answered before the plugin came."""
        for _ in range(count):
            s.last_seq += 1
            s.issued[s.last_seq] = {"id": f"r{s.last_seq}", "tool": "t", "args": {"n": s.last_seq}}

    async def submit(self, s: Session, tool: str = "t", *, push: bool = True) -> int:
        """A durable request; pushed at once to the session's consumer unless ``push`` is False (lost)."""
        s.last_seq += 1
        seq = s.last_seq
        s.requests[seq] = s.issued[seq] = {"id": f"r{seq}", "tool": tool, "args": {"n": seq}}
        if push:
            await self.send_request(s, seq)
        return seq

    async def send_request(self, s: Session, seq: int) -> None:
        async def go() -> None:
            if s.consumer is not None:
                await self._send_request(s, s.consumer, seq)

        await self.run(go)

    async def end(self, s: Session, kind: str) -> None:
        async def go() -> None:
            assert s.consumer is not None
            await s.consumer.send({"event": kind})
            await s.consumer.ws.close()

        await self.run(go)

    # --- the server's side

    async def _send_request(self, s: Session, sock: Socket, seq: int) -> None:
        request = s.issued[seq]
        message: dict[str, Any] = {"event": "tool-request", "seq": seq, "id": request["id"], "tool": request["tool"]}
        if seq in s.big:
            message["pointer"] = f"/api/sessions/{s.code}/requests/{request['id']}"
        else:
            message["args"] = request["args"]
        await sock.send(message)

    async def _resume(self, s: Session, sock: Socket, after: int | None, *, attach: bool = False) -> None:
        if (after or 0) > s.last_seq:  # a cursor from before a reset of the relay's store
            await sock.send({"event": "cursor-reset", "lastEventId": after, "lastSeq": s.last_seq})
            after = 0
        for seq in sorted(s.requests):
            if seq > (after or 0):
                await self._send_request(s, sock, seq)
        resumed: dict[str, Any] = {"event": "resumed", "after": after, "upTo": s.last_seq}
        if attach:
            resumed["pingSeconds"] = s.ping_seconds
        await sock.send(resumed)

    async def _push(self, ws: WebSocket) -> None:
        self.loop = asyncio.get_running_loop()
        await ws.accept()
        sock = Socket(ws)
        s: Session | None = None
        try:
            while True:
                message = json.loads(await ws.receive_text())
                sock.received.append(message)
                sock.heard_at.append(time.monotonic())
                if sock.silent:
                    continue
                action = message.get("action")
                if action == "attach":
                    s = self.sessions.get(message["code"])
                    if s is None or message["token"] != s.token:
                        await sock.send({"event": "error", "code": "token_invalid", "message": "no"})
                        await ws.close()
                        return
                    s.sockets.append(sock)
                    old, s.consumer = s.consumer, sock
                    if old is not None and old is not sock:
                        with contextlib.suppress(Exception):  # gone already, as a dropped one is
                            await old.send({"event": "superseded"})
                            await old.ws.close()
                    for seq in s.crossing:  # publishes that raced the attach
                        await self._send_request(s, sock, seq)
                    s.crossing = []
                    await self._resume(s, sock, message["after"], attach=True)
                elif s is None or (message.get("code"), message.get("token")) != (s.code, s.token):
                    await sock.send({"event": "error", "code": "bad_input", "message": "name it"})
                elif s.consumer is not sock:
                    await sock.send({"event": "error", "code": "not_attached", "message": "attach"})
                elif action == "resume":
                    await self._resume(s, sock, message["after"])
                elif action == "ping":
                    await sock.send({"event": "heartbeat"})
                    if s.last_seq > (message["after"] or 0):
                        await self._resume(s, sock, message["after"])
                elif action == "answer":  # as POST /response, over the socket
                    self._answer(s, message)
                    await sock.send({"event": "answered", "id": message["id"]})
        except WebSocketDisconnect as exc:
            sock.close_code = exc.code
            if s is not None and s.consumer is sock:
                s.consumer = None  # $disconnect: the relay drops it as the consumer

    async def _response(self, request: Request) -> Response:
        body = await request.json()
        s = self.sessions[body["code"]]
        assert request.headers["authorization"] == f"Bearer {s.token}"
        self._answer(s, body)
        return JSONResponse({"accepted": True}, status_code=202)

    @staticmethod
    def _answer(s: Session, body: dict[str, Any]) -> None:
        s.answers.append((body["id"], {k: v for k, v in body.items() if k not in ("code", "id", "token", "action")}))
        for seq, r in list(s.requests.items()):
            if r["id"] == body["id"]:
                del s.requests[seq]

    async def _fetch(self, request: Request) -> Response:
        s = self.sessions[request.path_params["code"]]
        rid = request.path_params["rid"]
        s.fetches.append((rid, request.headers.get("authorization")))
        for seq, r in s.requests.items():
            if r["id"] == rid:
                return JSONResponse({**r, "seq": seq})
        return JSONResponse({"error": "request_not_found"}, status_code=404)

    async def _detach(self, request: Request) -> Response:
        return JSONResponse({"detached": True})


@pytest.fixture(scope="module")
def relay() -> Iterator[tuple[MiniRelay, str]]:
    mini = MiniRelay()
    with serve_app(mini.app) as base:
        yield mini, base


def plugin_for(base: str, s: Session, cls: type[FakePlugin] = FakePlugin, **kw: Any) -> Any:
    answer = {"code": s.code, "browserToken": s.token, "push": base.replace("http://", "ws://") + "/push"}
    return cls.for_session(base, answer, **kw)


def ran(plugin: FakePlugin) -> list[str]:
    return list(plugin.executed)


async def test_for_session_uses_push_only_when_the_answer_offers_it() -> None:
    answer = {"code": "ABCD2345", "browserToken": "tok"}
    assert FakePlugin.for_session("http://x", answer).push_url is None
    assert FakePlugin.for_session("http://x", {**answer, "push": ""}).push_url is None
    plugin = RecordingPlugin.for_session("http://x", {**answer, "push": "ws://y/push"}, dedup=False)
    assert (plugin.push_url, plugin.code, plugin.token, plugin.dedup) == ("ws://y/push", "ABCD2345", "tok", False)


async def test_a_request_past_a_gap_waits_and_the_plugin_resumes_from_its_cursor(
    relay: tuple[MiniRelay, str],
) -> None:
    mini, base = relay
    s = mini.session()
    async with plugin_for(base, s) as plugin:
        assert plugin.cursor == "0"
        attach = s.sockets[0].sent("attach")
        assert attach == [{"action": "attach", "code": s.code, "token": s.token, "tab": plugin.tab, "after": None}]
        await mini.submit(s, push=False)  # seq 1's push was lost
        await mini.submit(s)  # seq 2 comes first
        await until(lambda: len(s.answers) == 2, 10, "both answers")
        assert ran(plugin) == ["r1", "r2"], "1 ran before 2"
        assert s.sockets[0].sent("resume") == [{"action": "resume", "code": s.code, "token": s.token, "after": 0}]
        assert [rid for rid, _ in s.answers] == ["r1", "r2"]
        await mini.submit(s)
        await until(lambda: len(s.answers) == 3, 10, "the third answer")
        assert len(s.sockets[0].sent("resume")) == 1, "in order again: no resume"
        await plugin.wait_cursor("3")
    await until(lambda: s.sockets[0].close_code is not None, 10, "the close")
    assert s.sockets[0].close_code == 1001, "a plugin that stops closes its socket as a page that leaves"


async def test_resumed_up_to_moves_the_cursor_past_seqs_that_never_come(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session()
    async with plugin_for(base, s) as plugin:
        await mini.submit(s)
        await until(lambda: len(s.answers) == 1, 10, "the first answer")
        two = await mini.submit(s, push=False)
        del s.requests[two]  # withdrawn before the plugin ever got it
        await mini.submit(s)
        await until(lambda: len(s.answers) == 2, 10, "the third request's answer")
        assert ran(plugin) == ["r1", "r3"]
        assert s.sockets[0].sent("resume") == [{"action": "resume", "code": s.code, "token": s.token, "after": 1}]
        await plugin.wait_cursor("3")


async def test_pushes_that_cross_the_attach_wait_for_its_resume(relay: tuple[MiniRelay, str]) -> None:
    """Before the answer to attach nothing runs: a stale copy (at or before the cursor) is dropped and one past
    it waits, so no resume is asked for; the resume then brings everything in order."""
    mini, base = relay
    s = mini.session()
    mini.answered(s, 3)
    for _ in range(2):
        await mini.submit(s, push=False)
    s.crossing = [2, 5]
    plugin = plugin_for(base, s, RecordingPlugin, cursor="3")
    async with plugin:
        await until(lambda: len(s.answers) == 2, 10, "both answers")
    assert plugin.deliveries == {"r4": 1, "r5": 1}
    assert plugin.connections[0].seqs == [4, 5]
    assert s.sockets[0].sent("resume") == []


async def test_a_first_attach_starts_the_cursor_at_up_to(relay: tuple[MiniRelay, str]) -> None:
    """Every earlier request was answered: the cursor starts at the session's last seq, so the next push is next."""
    mini, base = relay
    s = mini.session()
    mini.answered(s, 2)
    async with plugin_for(base, s) as plugin:
        await plugin.wait_cursor("2")
        await mini.submit(s)
        await until(lambda: len(s.answers) == 1, 10, "the answer")
        assert ran(plugin) == ["r3"]
        assert s.sockets[0].sent("resume") == []


async def test_a_cursor_reset_starts_over_from_the_relay_s_resume(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session()
    mini.answered(s, 1)
    for _ in range(2):
        await mini.submit(s, push=False)
    plugin = plugin_for(base, s, RecordingPlugin, cursor="40")  # remembered from before the relay's store reset
    async with plugin:
        await until(lambda: len(s.answers) == 2, 10, "both answers")
        await plugin.wait_cursor("3")  # set just after the answer is stored, which the relay may see first
    assert plugin.connections[0].events[:4] == ["cursor-reset", "tool-request", "tool-request", "resumed"]
    assert plugin.connections[0].seqs == [2, 3]


async def test_duplicates_run_once_and_a_connection_dropped_before_its_answer_redelivers_with_the_cursor(
    relay: tuple[MiniRelay, str],
) -> None:
    mini, base = relay
    s = mini.session()
    plugin = plugin_for(base, s, RecordingPlugin)
    async with plugin:
        await until(lambda: plugin.connected.is_set(), 10, "the attach")
        one = await mini.submit(s)
        await until(lambda: len(s.answers) == 1, 10, "the first answer")
        await mini.send_request(s, one)  # the same push again (a retried publish)
        plugin.drop_before_post = 1  # the next request runs, then its connection drops before the answer
        await mini.submit(s)
        await until(lambda: len(s.answers) == 2, 10, "the second answer, after the reconnect")
    assert plugin.runs == {"r1": 1, "r2": 1}, "each id ran once"
    assert plugin.deliveries == {"r1": 1, "r2": 2}, "r2 came again on the new connection; the copy of r1 did not run"
    assert [rid for rid, _ in s.answers] == ["r1", "r2"]
    assert [c.cursor for c in plugin.connections[:2]] == [None, 1]
    assert s.sockets[1].sent("attach")[0]["after"] == 1, "re-attach from the cursor"
    assert plugin.connections[1].seqs == [2]


async def test_drop_cuts_the_socket_and_the_plugin_reattaches_with_its_cursor(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session()
    async with plugin_for(base, s) as plugin:
        for _ in range(3):
            await mini.submit(s)
        await until(lambda: len(s.answers) == 3, 10, "three answers")
        await plugin.wait_cursor("3")
        await plugin.drop()
        await until(lambda: s.sockets[0].close_code is not None, 10, "the relay to see the cut")
        assert s.sockets[0].close_code not in (1000, 1001), "cut, not closed: no close frame with a code"
        assert s.sockets[1].sent("attach")[0]["after"] == 3
        await mini.submit(s)
        # An answer the cut socket took without a word back is sent again (the relay keeps the first), so the
        # count of answers may reach 4 before r4's: wait for r4's own.
        await until(lambda: "r4" in {rid for rid, _ in s.answers}, 10, "an answer over the new socket")
        assert ran(plugin) == ["r1", "r2", "r3", "r4"]


async def test_pings_carry_the_cursor_and_silence_reconnects(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session(ping_seconds=0.2)
    async with plugin_for(base, s) as plugin:
        await mini.submit(s)
        await until(lambda: len(s.answers) == 1, 10, "the answer")
        await plugin.wait_cursor("1")
        first = s.sockets[0]
        await until(lambda: len(first.sent("ping")) >= 2, 5, "two pings")
        assert first.sent("ping")[-1] == {"action": "ping", "code": s.code, "token": s.token, "after": 1}
        # A ping finds a request whose push never came: the relay answers as resume would.
        await mini.submit(s, push=False)
        await until(lambda: len(s.answers) == 2, 5, "the request a ping found")
        first.silent = True  # no heartbeat from here on: dead, although the socket is open
        answered = len(first.received)
        await until(lambda: len(s.sockets) == 2, 5, "a new connection")
        # The watchdog gives a socket 2.5 pings of silence (0.5 s here). Counted from the relay's last word on it, a
        # load can only stretch that span, never shorten it, so the bound holds however busy the machine is.
        silence = s.sockets[1].heard_at[0] - first.spoke_at
        assert silence >= 2.5 * s.ping_seconds, f"gave the socket up after {silence:.3f} s of silence"

        # It went on pinging into the silence: the first ping is due 0.3 s before the watchdog, and a loop that
        # stalls past both still wakes the pinger first (the earlier deadline). The relay's side may record that
        # ping after it accepted the new connection (one loop, both sockets), so this waits for it.
        def unanswered() -> list[dict[str, Any]]:
            return [m for m in first.received[answered:] if m.get("action") == "ping"]

        await until(lambda: len(unanswered()) >= 1, 5, "a ping into the silence before it gave the socket up")
        assert unanswered()[0]["after"] == 2, "the ping carries the cursor"
        assert s.sockets[1].sent("attach")[0]["after"] == 2


async def test_a_pointer_is_fetched_with_the_token_and_runs_in_its_turn(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session()
    s.big = {1}
    async with plugin_for(base, s) as plugin:
        await mini.submit(s)
        await mini.submit(s)
        await until(lambda: len(s.answers) == 2, 10, "both answers")
        assert s.fetches == [("r1", f"Bearer {s.token}")]
        assert ran(plugin) == ["r1", "r2"]
        assert s.answers[0] == ("r1", {"result": {"tool": "t", "args": {"n": 1}}}), "the fetched args ran"


@pytest.mark.parametrize("kind", ["superseded", "closed", "expired"])
async def test_the_relay_ending_the_session_stops_the_plugin(relay: tuple[MiniRelay, str], kind: str) -> None:
    mini, base = relay
    s = mini.session()
    async with plugin_for(base, s) as plugin:
        await mini.end(s, kind)
        await until(lambda: plugin.stopped_by is not None, 10, "the plugin to stop")
        assert plugin.stopped_by == kind
        await asyncio.sleep(0.2)  # time in which a plugin that did not stop would have reconnected (50 ms)
        assert len(s.sockets) == 1


async def test_a_refused_attach_reads_as_a_refused_stream(relay: tuple[MiniRelay, str]) -> None:
    mini, base = relay
    s = mini.session()
    plugin = plugin_for(base, s)
    plugin.token = "wrong"
    async with plugin:
        assert plugin.stopped_by == "http_403"


async def test_stop_ends_a_plugin_whose_loop_swallowed_the_first_cancel() -> None:
    """On Python 3.11 ``asyncio.wait_for`` can swallow a cancel that lands as its message arrives: the loop then
    goes on as if nothing happened. stop() cancels again until the task has ended, instead of waiting forever."""
    cancels = 0

    async def swallows_one_cancel() -> None:
        nonlocal cancels
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancels += 1
                if cancels > 1:
                    raise

    plugin = FakePlugin("http://127.0.0.1:9", "CODE", "token")
    plugin._task = asyncio.create_task(swallows_one_cancel())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(plugin.stop())
    await asyncio.wait({stopping}, timeout=10)  # a deadline, not a timing claim: it takes a few milliseconds
    assert stopping.done(), "stop() still waits on the plugin it cancelled once"
    assert cancels == 2 and plugin._task is None
