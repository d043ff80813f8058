"""A stand-in for the browser plugin: holds the SSE stream, runs each tool request once, posts the answer.

Used by the tests, the MCP tests and the benchmarks to play the browser. It behaves as the real plugin must:
answers in seq order, deduplicates by request id, resumes with its cursor after a drop, retries failed POSTs.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    base_url: str
    code: str
    token: str
    handler: Handler = echo
    client: httpx.AsyncClient | None = None
    executed: list[str] = field(default_factory=list)  # ids in the order they ran, once each
    events: list[Event] = field(default_factory=list)
    cursor: str | None = None
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    stopped_by: str | None = None  # "superseded", "closed" or "expired" when the server ended the stream
    _results: dict[str, dict[str, Any]] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None
    _own_client: bool = False

    async def __aenter__(self) -> FakePlugin:
        if self.client is None:
            self.client = httpx.AsyncClient(base_url=self.base_url, timeout=httpx.Timeout(30, read=None))
            self._own_client = True
        self.start()
        await asyncio.wait_for(self.connected.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        if self._own_client and self.client is not None:
            await self.client.aclose()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

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
        delay = 0.05
        while True:
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
            if self.cursor is not None:
                headers["Last-Event-ID"] = self.cursor
            try:
                async with self.client.stream("GET", "/stream", params={"code": self.code}, headers=headers) as r:
                    if r.status_code != 200:
                        await r.aread()
                        self.stopped_by = f"http_{r.status_code}"
                        self.connected.set()
                        return
                    self.connected.set()
                    delay = 0.05
                    async for event in iter_events(r):
                        self.events.append(event)
                        if event.event in ("superseded", "closed", "expired"):
                            self.stopped_by = event.event
                            return
                        if event.event == "tool-request":
                            await self._execute(event)
                            self.cursor = event.id
            except (httpx.TransportError, httpx.StreamError):
                pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _execute(self, event: Event) -> None:
        request = event.json()
        rid = request["id"]
        if rid not in self._results:
            self._results[rid] = await self.handler(request["tool"], request.get("args") or {})
            self.executed.append(rid)
        await self._post(rid, self._results[rid])

    async def _post(self, rid: str, outcome: dict[str, Any]) -> None:
        assert self.client is not None
        for attempt in range(20):
            try:
                r = await self.client.post(
                    "/response",
                    json={"code": self.code, "id": rid, **outcome},
                    headers={"Authorization": f"Bearer {self.token}"},
                )
                if r.status_code < 500:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
