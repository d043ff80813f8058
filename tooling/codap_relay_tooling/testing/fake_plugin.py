"""A stand-in for the browser plugin: holds the SSE stream (or the push channel's WebSocket, when the session
offers one), runs each tool request once, posts the answer.

Used by the tests, the MCP tests and the benchmarks to play the browser. It behaves as the real plugin must:
answers in seq order, deduplicates by request id, resumes with its cursor after a drop, retries failed POSTs.
Over push (push.js's protocol) it also holds a request that comes past cursor + 1 and asks the relay to resume
from its cursor, pings every ``pingSeconds``, and reconnects after 2.5 pings of silence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus, WebSocketException

from codap_relay import errors
from codap_relay.http.errors import STATUS

from . import web
from .sse_client import Event, iter_events

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
#: As push.js: the largest answer sent over the socket (API Gateway takes 128 KB), and how long the relay may take to
#: say it took one before it is posted instead.
ANSWER_MAX_BYTES = 120_000
ANSWER_TIMEOUT_SECONDS = 10.0


async def echo(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Default behaviour: answer with what was asked."""
    return {"result": {"tool": tool, "args": args}}


@dataclass
class FakePlugin:
    """Subclasses that keep a record (chaos_net.py) override the hooks (``_connection_started``, ``_received``,
    ``_refused``, ``_broken``, ``_execute``, ``_outcome``, ``_post``) and the class settings below."""

    base_url: str
    code: str
    token: str
    handler: Handler = echo
    client: httpx.AsyncClient | None = None
    stream_url: str | None = None  # where to open the stream when not at base_url (a proxy in between)
    executed: list[str] = field(default_factory=list)  # ids in the order they ran, once each
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> the answer it posts
    events: list[Event] = field(default_factory=list)
    cursor: str | None = None
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    stopped_by: str | None = None  # "superseded", "closed" or "expired" when the server ended the stream
    tab: str = field(default_factory=lambda: f"fake-{secrets.token_hex(8)}")  # the page's id (?tab=), to detach
    push_url: str | None = None  # the session's push channel (its answer's ``push``): spoken instead of SSE
    _task: asyncio.Task[None] | None = None
    _own_client: bool = False
    _ws: ClientConnection | None = None
    _push: _PushState = field(default_factory=lambda: _PushState())
    _posting: set[asyncio.Task[None]] = field(default_factory=set)

    #: Reconnect after a failure: first after this many seconds, doubling up to ``max_delay``.
    first_delay = 0.05
    max_delay = 1.0
    #: Stop for good when the server ends the session's stream (superseded, closed, expired).
    stops_when_ended = True
    client_timeout = httpx.Timeout(30, read=None)
    #: Over push: an open socket not attached within this many seconds has failed (push.js's attach timeout).
    attach_timeout = 10.0
    #: Over push: ping this often instead of the relay's ``pingSeconds`` (None: as the relay says).
    ping_every: float | None = None
    #: Over push: answer over the socket when attached (push.js does), else always by ``POST /response``.
    answers_over_push: bool = True

    @classmethod
    def for_session(cls, base_url: str, session_answer: dict[str, Any], **kw: Any) -> Self:
        """The plugin for a ``POST /api/sessions`` answer: over push when the relay offers it, else SSE."""
        push = session_answer.get("push")
        kw.setdefault("push_url", push if isinstance(push, str) and push else None)
        return cls(base_url, session_answer["code"], session_answer["browserToken"], **kw)

    async def __aenter__(self) -> FakePlugin:
        self._open_client()
        self.start()
        await asyncio.wait_for(self.connected.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        await self.detach()
        if self._own_client and self.client is not None:
            await self.client.aclose()

    def _open_client(self) -> None:
        if self.client is None:
            self.client = web.AsyncClient(base_url=self.base_url, timeout=self.client_timeout)
            self._own_client = True

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        # Cancel until it ends: a cancel that lands in a library call which swallows it must not leave stop()
        # waiting on a plugin that goes on running.
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1)
        if not task.cancelled():
            task.exception()  # retrieved: a failure while stopping is not this call's to report

    async def detach(self) -> None:
        """What the real plugin does on pagehide: its stream ends at the relay's next poll. Without it a host that
        keeps the function running after its client left (AWS, local-api) would serve a gone page for minutes."""
        assert self.client is not None
        with contextlib.suppress(httpx.HTTPError):  # best effort, as a page's last request is
            url = f"/api/sessions/{self.code}/detach"
            await self.client.post(url, params={"tab": self.tab}, headers={"Authorization": f"Bearer {self.token}"})

    async def wait_cursor(self, event_id: str, timeout: float = 10) -> None:
        """Wait until the plugin has recorded ``event_id`` as its cursor. It does so just after its answer is
        stored, so an LLM that sees the answer can get there first."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.cursor != event_id:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"the plugin's cursor is {self.cursor!r}, not {event_id!r}")
            await asyncio.sleep(0.01)

    async def drop(self) -> None:
        """Cut the connection as a network failure would, then reconnect with the cursor."""
        if self._ws is not None:
            self._ws.transport.abort()  # no close frame: the relay learns of it as it would of a dead network
        await self.stop()
        self.connected.clear()
        self.start()
        await asyncio.wait_for(self.connected.wait(), 10)

    async def _run(self) -> None:
        if self.push_url is not None:
            await self._run_push()
            return
        assert self.client is not None
        delay = self.first_delay
        url = f"{self.stream_url}/stream" if self.stream_url else "/stream"
        while True:
            self._connection_started()
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
            if self.cursor is not None:
                headers["Last-Event-ID"] = self.cursor
            try:
                params = {"code": self.code, "tab": self.tab}
                async with self.client.stream("GET", url, params=params, headers=headers) as r:
                    if r.status_code != 200:
                        await r.aread()
                        if self._refused(r):
                            self.connected.set()
                            return
                    else:
                        self.connected.set()
                        delay = self.first_delay
                        async for event in iter_events(r):
                            self._received(event)
                            if event.event in ("superseded", "closed", "expired") and self.stops_when_ended:
                                self.stopped_by = event.event
                                return
                            if event.event == "tool-request":
                                if not await self._execute(event):
                                    break  # leaves the `async with`: the connection closes, the answer unsent
                                self.cursor = event.id
            except (httpx.TransportError, httpx.StreamError):
                self._broken()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_delay)

    # --- the push channel -----------------------------------------------------------------------------------

    async def _run_push(self) -> None:
        assert self.push_url is not None
        delay = self.first_delay
        while True:
            self._connection_started()
            push = self._push = _PushState()
            try:
                async with connect(self.push_url, open_timeout=10, close_timeout=1, ping_interval=None) as ws:
                    self._ws = ws
                    try:
                        if await self._speak_push(ws):
                            return
                    except asyncio.CancelledError:
                        await ws.close(1001)  # stopped: going away, as a page that leaves says
                        raise
                    finally:
                        self._ws = None
            except InvalidStatus as exc:  # the upgrade refused ($connect said no)
                refusal = httpx.Response(exc.response.status_code, content=bytes(exc.response.body or b""))
                if self._refused(refusal):
                    self.connected.set()
                    return
            except (OSError, TimeoutError, WebSocketException):
                self._broken()
            if push.attached:
                delay = self.first_delay
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_delay)

    async def _speak_push(self, ws: ClientConnection) -> bool:
        """One connection: attach, then serve it until it ends. True: stop for good; False: reconnect."""
        push = self._push
        after = None if self.cursor is None else int(self.cursor)
        attach = {"action": "attach", **self._names(), "tab": self.tab, "after": after}
        await ws.send(json.dumps(attach))
        pinger: asyncio.Task[None] | None = None
        try:
            while True:
                # the watchdog: silence for 2.5 pings (or no answer to attach) means a dead socket
                wait = push.ping * 2.5 if push.attached else self.attach_timeout
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that lands as the
                # message arrives, and stop() then waited forever on a plugin that went on serving.
                async with asyncio.timeout(wait):
                    raw = await ws.recv()
                message = _message(raw)
                if message is None:
                    continue
                kind = str(message.get("event"))
                self._received(_event(message))
                self._answers_due(push)
                if kind in ("answered", "answer-refused"):
                    taken = push.unanswered.pop(str(message.get("id")), None)
                    if taken is not None and kind == "answer-refused" and _status_of_refusal(message) >= 500:
                        self._post_later(str(message.get("id")), taken[0])
                elif kind == "tool-request":
                    if not await self._push_request(ws, message):
                        return False
                elif kind == "resumed":
                    first = not push.attached
                    if not await self._push_resumed(ws, message):
                        return False
                    if first:
                        pinger = asyncio.create_task(self._ping(ws, self.ping_every or push.ping))
                        self.connected.set()
                elif kind == "cursor-reset":
                    # the relay has fewer requests than the cursor says: it sends every unanswered one again and
                    # then `resumed`, which sets the cursor anew; until then nothing runs
                    self.cursor = None
                    push.held.clear()
                    push.resuming = True
                elif kind in ("superseded", "closed", "expired"):
                    if self.stops_when_ended:
                        self.stopped_by = kind
                        return True
                    return False
                elif kind == "error":
                    if not push.attached:
                        refusal = httpx.Response(_status_of(message.get("code")), json=message)
                        if self._refused(refusal):
                            self.connected.set()
                            return True
                        return False
                    if message.get("code") == "not_attached":
                        return False
        finally:
            for rid, (outcome, _) in push.unanswered.items():  # the socket is gone: posted instead
                self._post_later(rid, outcome)
            push.unanswered.clear()
            if pinger is not None:
                pinger.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pinger

    def _answers_due(self, push: _PushState) -> None:
        """Answers sent over the socket that the relay said nothing of in time: posted instead."""
        now = asyncio.get_running_loop().time()
        for rid, (outcome, deadline) in list(push.unanswered.items()):
            if deadline <= now:
                del push.unanswered[rid]
                self._post_later(rid, outcome)

    def _names(self) -> dict[str, str]:
        """Every message names its session: the relay keeps nothing per connection (a Lambda per message)."""
        return {"code": self.code, "token": self.token}

    async def _ping(self, ws: ClientConnection, every: float) -> None:
        with contextlib.suppress(WebSocketException):
            while True:
                await asyncio.sleep(every)
                after = None if self.cursor is None else int(self.cursor)
                await ws.send(json.dumps({"action": "ping", **self._names(), "after": after}))

    async def _push_request(self, ws: ClientConnection, message: dict[str, Any]) -> bool:
        """A pushed request: run it if it is next, hold it if something before it has not come. False: drop."""
        push = self._push
        seq = message.get("seq")
        if not isinstance(seq, int) or not isinstance(message.get("id"), str):
            return True
        cursor = None if self.cursor is None else int(self.cursor)
        if cursor is not None and seq <= cursor:
            return True  # handed on before: a redelivery
        push.held[seq] = message
        if cursor is None or not push.attached:
            return True  # the answer to attach sets the cursor first
        if not await self._push_drain():
            return False
        await self._ask_resume(ws)
        return True

    async def _push_resumed(self, ws: ClientConnection, message: dict[str, Any]) -> bool:
        """The end of a resume: what is held up to ``upTo`` runs in order; seqs between that never came will
        not (answered, withdrawn or expired). False: drop."""
        push = self._push
        push.resuming = False
        up_to = message.get("upTo")
        seqs = sorted(push.held)
        through = up_to if isinstance(up_to, int) else (seqs[-1] if seqs else 0)
        for seq in seqs:
            if seq > through:
                break
            if not await self._push_hand_on(push.held.pop(seq)):
                return False
        self.cursor = str(max(int(self.cursor or 0), through))
        if not push.attached:
            push.attached = True
            ping = message.get("pingSeconds")
            if isinstance(ping, int | float) and ping > 0:
                push.ping = float(ping)
        if not await self._push_drain():
            return False
        await self._ask_resume(ws)
        return True

    async def _push_drain(self) -> bool:
        """Run the held requests that follow the cursor without a gap."""
        push = self._push
        while (message := push.held.pop(int(self.cursor or 0) + 1, None)) is not None:
            if not await self._push_hand_on(message):
                return False
        for seq in [s for s in push.held if s <= int(self.cursor or 0)]:
            del push.held[seq]
        return True

    async def _ask_resume(self, ws: ClientConnection) -> None:
        push = self._push
        if push.held and not push.resuming:
            push.resuming = True
            await ws.send(json.dumps({"action": "resume", **self._names(), "after": int(self.cursor or 0)}))

    async def _push_hand_on(self, message: dict[str, Any]) -> bool:
        """Fetch a pointer, run the request (``_execute``, as over SSE) and move the cursor. False: drop."""
        seq = message["seq"]
        request = {"id": message["id"], "tool": message.get("tool"), "args": message.get("args") or {}}
        if isinstance(message.get("pointer"), str):
            fetched = await self._fetch_pointer(message["pointer"])
            if fetched is None:  # answered or gone meanwhile: nothing to run
                self.cursor = str(seq)
                return True
            request = {"id": fetched["id"], "tool": fetched["tool"], "args": fetched.get("args") or {}}
        if not await self._execute(Event("tool-request", json.dumps(request), str(seq))):
            return False
        self.cursor = str(seq)
        return True

    async def _fetch_pointer(self, pointer: str) -> dict[str, Any] | None:
        assert self.client is not None
        headers = {"Authorization": f"Bearer {self.token}"}
        for attempt in range(20):
            try:
                r = await self.client.get(pointer.lstrip("/"), headers=headers)
                if r.status_code in (401, 403, 404):
                    return None
                if r.status_code == 200:
                    body: dict[str, Any] = r.json()
                    return body
            except httpx.TransportError:
                pass
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError(f"the request at {pointer} could not be fetched")

    # --- hooks ----------------------------------------------------------------------------------------------

    def _connection_started(self) -> None:
        """Called before each attempt to open the stream."""

    def _received(self, event: Event) -> None:
        self.events.append(event)

    def _refused(self, response: httpx.Response) -> bool:
        """GET /stream answered other than 200. True: stop for good (the default), False: reconnect."""
        self.stopped_by = f"http_{response.status_code}"
        return True

    def _broken(self) -> None:
        """The connection failed under the plugin (reset, cut mid-event)."""

    async def _execute(self, event: Event) -> bool:
        """Run one delivered request (once per id) and post its answer. False: drop the connection instead."""
        request = event.json()
        rid = request["id"]
        await self._post(rid, await self._outcome(rid, request))
        return True

    async def _outcome(self, rid: str, request: dict[str, Any]) -> dict[str, Any]:
        if rid not in self.outcomes:
            self.outcomes[rid] = await self.handler(request["tool"], request.get("args") or {})
            self.executed.append(rid)
        return self.outcomes[rid]

    async def _post(self, rid: str, outcome: dict[str, Any]) -> None:
        """The answer: over the push socket when attached and it fits a message (push.js does the same: a message
        costs the relay less than a request), else ``POST /response``. One sent over the socket that the relay
        does not take (no word within ANSWER_TIMEOUT_SECONDS, a 5xx refusal, the socket lost) is posted."""
        ws, push = self._ws, self._push
        if ws is not None and push.attached and self.answers_over_push:
            text = json.dumps({"action": "answer", **self._names(), "id": rid, **outcome})
            if len(text.encode()) <= ANSWER_MAX_BYTES:
                with contextlib.suppress(WebSocketException):
                    push.unanswered[rid] = (outcome, asyncio.get_running_loop().time() + ANSWER_TIMEOUT_SECONDS)
                    await ws.send(text)
                    return
                push.unanswered.pop(rid, None)
        await self._post_http(rid, outcome)

    def _post_later(self, rid: str, outcome: dict[str, Any]) -> None:
        """Post an answer the socket did not carry, beside the connection's own work."""
        task = asyncio.create_task(self._post_http(rid, outcome))
        self._posting.add(task)
        task.add_done_callback(self._posting.discard)

    async def _post_http(self, rid: str, outcome: dict[str, Any]) -> None:
        assert self.client is not None
        for attempt in range(20):
            try:
                r = await self.client.post(
                    "/response",
                    params={"code": self.code},  # the token is checked before the body is read
                    json={"code": self.code, "id": rid, **outcome},
                    headers={"Authorization": f"Bearer {self.token}"},
                )
                if r.status_code < 500:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))


@dataclass
class _PushState:
    """One push connection's order-keeping: what came early, whether it is attached, its ping interval."""

    held: dict[int, dict[str, Any]] = field(default_factory=dict)  # seq -> a request past cursor + 1
    # id -> (the answer sent over the socket, when it is posted instead if the relay said nothing of it)
    unanswered: dict[str, tuple[dict[str, Any], float]] = field(default_factory=dict)
    attached: bool = False  # the relay answered the attach
    resuming: bool = False  # a resume is asked for and its ``resumed`` not yet here
    ping: float = 15.0  # seconds; the relay names it in its answer to attach


def _message(raw: str | bytes) -> dict[str, Any] | None:
    """A relay message, or None for anything else (it is skipped, as push.js skips it)."""
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _event(message: dict[str, Any]) -> Event:
    """A push message as the SSE event it stands for: the name, the rest as data, the seq as the id."""
    kind = str(message.get("event"))
    rest = {k: v for k, v in message.items() if k not in ("event", "seq")}
    seq = message.get("seq")
    return Event(kind, json.dumps(rest), str(seq) if kind == "tool-request" and seq is not None else None)


def _status_of_refusal(message: dict[str, Any]) -> int:
    status = message.get("status")
    return status if isinstance(status, int) else 500


def _status_of(code: object) -> int:
    """The HTTP status the relay gives the error with this code (a refused attach reads as a refused stream)."""
    kinds: list[type[errors.RelayError]] = [errors.RelayError]
    while kinds:
        kind = kinds.pop()
        if kind.error == code:
            return next((status for cls, status in STATUS if issubclass(kind, cls)), 400)
        kinds.extend(kind.__subclasses__())
    return 400
