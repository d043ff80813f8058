"""A stand-in for the browser plugin: holds the SSE stream, runs each tool request once, posts the answer.

Used by the tests, the MCP tests and the benchmarks to play the browser. It behaves as the real plugin must:
answers in seq order, deduplicates by request id, resumes with its cursor after a drop, retries failed POSTs.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from .sse_client import Event, iter_events

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


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
    _task: asyncio.Task[None] | None = None
    _own_client: bool = False

    #: Reconnect after a failure: first after this many seconds, doubling up to ``max_delay``.
    first_delay = 0.05
    max_delay = 1.0
    #: Stop for good when the server ends the session's stream (superseded, closed, expired).
    stops_when_ended = True
    client_timeout = httpx.Timeout(30, read=None)

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
            self.client = httpx.AsyncClient(base_url=self.base_url, timeout=self.client_timeout)
            self._own_client = True

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

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
        await self.stop()
        self.connected.clear()
        self.start()
        await asyncio.wait_for(self.connected.wait(), 10)

    async def _run(self) -> None:
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
