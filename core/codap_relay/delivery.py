"""Delivery of tool requests to the plugin over its event stream: one ``Delivery`` per stream connection.

It sends every unanswered request in seq order from the plugin's cursor, a heartbeat when nothing happens, and
ends the stream when the session ends, another tab takes it over, or the host's time limit nears.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from .errors import SessionNotFound, StoreUnavailable
from .notify import Notifier, stream_key
from .records import DETACHED, SessionRecord
from .settings import Settings
from .store.base import STALE_POLL_SECONDS, Store

T = TypeVar("T")
WITHDRAWN = "withdrawn:"


def withdrawn_mark(tool: str, request_id: str) -> str:
    """The change mark (store note_changes) of a request the model withdrew before the plugin received it."""
    return f"{WITHDRAWN}{tool}:{request_id}"


def withdrawn_of(mark: str) -> dict[str, str] | None:
    """{id, tool} of a withdrawn mark, else None (tool names have no colon; ids may)."""
    if not mark.startswith(WITHDRAWN):
        return None
    tool, _, request_id = mark[len(WITHDRAWN) :].partition(":")
    return {"id": request_id, "tool": tool} if request_id else None


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event. ``event`` None means a bare ``retry:`` preamble."""

    event: str | None
    data: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    retry_ms: int | None = None


class StreamHost(Protocol):
    """What delivery needs of the relay (the plugin stream unit, relay/stream.py, is one): its store and wake-ups,
    and its rules for sessions."""

    settings: Settings
    store: Store
    notifier: Notifier

    def now(self) -> float: ...

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def live(self, session: SessionRecord | None, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord: ...

    def touch_due(self, session: SessionRecord) -> bool: ...

    async def touch(self, session: SessionRecord, *, consumer: str | None = None) -> None: ...

    def wait_slice(self, remaining: float, *, quiet_for: float = 0.0) -> float: ...


class Delivery:
    def __init__(self, relay: StreamHost, session: SessionRecord, consumer: str) -> None:
        self.relay = relay
        self.session = session  # as authenticated when the stream opened
        self.consumer = consumer  # this connection's mark on the session: another one means superseded

    async def events(
        self, cursor: int | None, *, poll: bool = False, max_seconds: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """Once the stream has started, a store fault can no longer be a 503: end the stream with ``reconnect``
        (and a retry delay) so the plugin comes back with its cursor instead of seeing a broken connection."""
        try:
            async for event in self._live_events(cursor, poll=poll, max_seconds=max_seconds):
                yield event
        except StoreUnavailable as exc:
            yield StreamEvent(
                "reconnect",
                {"message": "The relay's store is briefly unavailable; reconnect with Last-Event-ID."},
                retry_ms=exc.retry_after * 1000,
            )

    async def _live_events(
        self, cursor: int | None, *, poll: bool, max_seconds: float | None
    ) -> AsyncIterator[StreamEvent]:
        session, consumer, relay = self.session, self.consumer, self.relay
        code = session.code
        heartbeat = relay.settings.heartbeat_seconds
        limit = max_seconds if max_seconds is not None else relay.settings.stream_max_seconds
        started = last_beat = active = time.monotonic()
        yield StreamEvent(None, retry_ms=1000 if not poll else 2000)
        after = 0
        if cursor is not None:
            if cursor > session.last_seq:
                # The client remembers more than this session ever issued (store reset, wrong session):
                # say so, and send everything unanswered instead of silently skipping.
                yield StreamEvent("cursor-reset", {"lastEventId": cursor, "lastSeq": session.last_seq})
            else:
                after = cursor
        announced: set[str] = set()
        check_withdrawn = True  # at the start; then after each wake-up where this process sees every write
        read_fresh = started - STALE_POLL_SECONDS  # the first poll reads fresh
        with relay.notifier.listen(stream_key(code)) as listener:
            while True:
                # Polls may read a replica that lags (half the price), as long as one reads fresh at least every
                # STALE_POLL_SECONDS: a request never waits longer than that behind a replica, however far behind.
                fresh = time.monotonic() - read_fresh >= STALE_POLL_SECONDS
                if fresh:
                    read_fresh = time.monotonic()
                current, pending = await relay.io(relay.store.deliver, code, consumer, after, relay.now(), fresh=fresh)
                try:
                    current = relay.live(current)
                except SessionNotFound as exc:
                    yield _ended(exc)
                    return
                if current.consumer == DETACHED:
                    # Its tab said it left. Ended without a word: were the page still there after all (restored from
                    # the back-forward cache), EventSource reconnects and attaches again.
                    return
                if current.consumer != consumer:
                    yield StreamEvent("superseded", {"message": "This session is now served by another tab."})
                    return
                if check_withdrawn:
                    # Requests the model withdrew before the plugin received them, for its activity log. The plugin
                    # shows each once per page (by id), so every stream sends them all; a stream of a store written
                    # by other processes (DynamoDB) learns of them when it (re)opens, as the plugin would anyway.
                    marks = await relay.io(relay.store.get_changes, code)
                    for mark in sorted(marks.marks, key=marks.marks.__getitem__) if marks else ():
                        gone = withdrawn_of(mark)
                        if gone is not None and mark not in announced:
                            announced.add(mark)
                            request = await relay.io(relay.store.get_request, code, gone["id"])
                            args = request.args if request is not None else {}
                            yield StreamEvent("withdrawn", {**gone, "args": args})
                    check_withdrawn = relay.store.pushes
                for request in pending:
                    yield StreamEvent(
                        "tool-request",
                        {"id": request.id, "tool": request.tool, "args": request.args},
                        id=str(request.seq),
                    )
                    after = request.seq
                if poll and pending:
                    return
                mono = time.monotonic()
                if pending:
                    active = mono
                if relay.touch_due(current):
                    try:
                        await relay.touch(current)
                    except SessionNotFound as exc:  # it expired since the read above (the clock jumped)
                        yield _ended(exc)
                        return
                if limit and mono - started >= limit:
                    yield StreamEvent("reconnect", {"message": "Stream ended to stay within the host's time limit."})
                    return
                to_beat = heartbeat - (mono - last_beat)
                if to_beat <= 0:
                    yield StreamEvent("heartbeat", {})
                    last_beat = mono
                    if poll:
                        return
                    continue
                if limit:
                    to_beat = min(to_beat, max(0.0, limit - (mono - started)))
                await listener.wait(relay.wait_slice(to_beat, quiet_for=mono - active))


def _ended(exc: SessionNotFound) -> StreamEvent:
    """The last event of a stream whose session ended: closed in the plugin, or expired."""
    return StreamEvent("closed" if exc.reason == "closed" else "expired", {"reason": exc.reason})
