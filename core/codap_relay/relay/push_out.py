"""What the relay posts to a plugin's push connection (the push channel, issue 23): tool requests right after
the durable write (``RequestQueue.submit``), ``withdrawn`` (cancel), ``closed`` (the session ended), ``superseded``
(another consumer took over). A post never fails its caller: it is sent, gone (410: the connection is detached)
or unknown (a fault or no answer within PUSH_PUBLISH_SECONDS, logged, never with the session's code). Requests go
out in seq order and stop at the first that is not sent: the plugin holds nothing past a gap, and the request
stays unanswered for its next attach, resume or ping. The connection's own messages are push.py's."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ..clock import Clock
from ..errors import StoreUnavailable
from ..jsonvalues import dumps
from ..records import RequestRecord, SessionRecord, push_connection
from .publisher import PUSH_INLINE_BYTES, Outcome, Publisher, encode_message
from .store_io import StoreIO

T = TypeVar("T")
log = logging.getLogger("codap_relay.push")
#: How many times a request's post is made when each fails fast, and the pause before the first retry (doubling).
PUBLISH_ATTEMPTS = 3
RETRY_PAUSE_SECONDS = 0.02


def request_pointer(code: str, request_id: str) -> str:
    """Where the plugin fetches a request too large to push (GET, plugin role), relative to the relay's base."""
    return f"/api/sessions/{code}/requests/{request_id}"


def tool_request(code: str, request: RequestRecord) -> dict[str, Any]:
    """A request as pushed: whole when the message fits PUSH_INLINE_BYTES, else a pointer to fetch it by."""
    message = {
        "event": "tool-request",
        "seq": request.seq,
        "id": request.id,
        "tool": request.tool,
        "args": request.args,
    }
    if len(encode_message(message)) <= PUSH_INLINE_BYTES:
        return message
    return {**{k: message[k] for k in ("event", "seq", "id", "tool")}, "pointer": request_pointer(code, request.id)}


class PushSender:
    def __init__(self, store_io: StoreIO, clock: Clock, publisher: Publisher | None, *, timeout: float = 1.0) -> None:
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.publisher = publisher
        self.timeout = timeout  # one post's whole time, whatever the publisher's own timeouts
        self._prepared = False

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        assert self.publisher is not None
        if not self._prepared:
            await self._run(self.publisher.prepare)
            self._prepared = True
        if self.publisher.blocking:
            with anyio.fail_after(self.timeout):  # a thread that overruns is left to end on its own timeouts
                return await anyio.to_thread.run_sync(lambda: fn(*args), abandon_on_cancel=True)
        return fn(*args)

    async def _run(self, fn: Callable[[], None]) -> None:
        assert self.publisher is not None
        if self.publisher.blocking:
            await anyio.to_thread.run_sync(fn)
        else:
            fn()

    async def post_retrying(self, connection_id: str, message: dict[str, Any]) -> Outcome:
        """``post``, tried again after a fault that came quickly (a 5xx, a reset: the management API's own hiccup),
        up to PUBLISH_ATTEMPTS times: a request would otherwise wait for the plugin's next ping (minutes). A post that
        ran out of time is not tried again (its time is the call's too). The plugin runs each seq once, so a
        post that did arrive before its fault was reported costs only a duplicate it drops."""
        started = time.monotonic()
        for attempt in range(PUBLISH_ATTEMPTS):
            outcome = await self.post(connection_id, message)
            spent = time.monotonic() - started
            if outcome is not Outcome.UNKNOWN or spent >= self.timeout / 2 or attempt == PUBLISH_ATTEMPTS - 1:
                return outcome
            await anyio.sleep(min(RETRY_PAUSE_SECONDS * 2**attempt, self.timeout / 2 - spent))
        return Outcome.UNKNOWN

    async def post(self, connection_id: str, message: dict[str, Any]) -> Outcome:
        """Post one message: sent, gone (410) or unknown. A fault is logged (never the session's code: messages
        carry none in the log) and is unknown, never sent: the plugin's next ping or resume catches up."""
        if self.publisher is None:
            return Outcome.GONE
        try:
            sent = await self._call(self.publisher.publish, connection_id, message)
        except Exception as exc:  # a publish must never fail the write it follows
            log.warning(dumps({"push": "publish_failed", "connection": connection_id, "fault": type(exc).__name__}))
            return Outcome.UNKNOWN
        return Outcome.SENT if sent else Outcome.GONE

    async def close(self, connection_id: str) -> None:
        if self.publisher is None:
            return
        try:
            await self._call(self.publisher.close, connection_id)
        except Exception as exc:
            log.warning(dumps({"push": "close_failed", "connection": connection_id, "fault": type(exc).__name__}))

    async def end(self, connection_id: str, message: dict[str, Any]) -> None:
        """The last word to a connection (superseded, closed, expired, an error), then close it."""
        await self.post(connection_id, message)
        await self.close(connection_id)

    async def gone(self, code: str, consumer: str) -> None:
        """A connection that is gone: its consumer is detached (if it still owns the session), so the plugin shows
        as not connected and the next attach finds every pending request still to deliver."""
        log.info(dumps({"push": "gone", "connection": push_connection(consumer)}))
        with contextlib.suppress(StoreUnavailable):  # then its pings stop: not connected once the grace passes
            await self.store_io.run(self.store.detach, code, consumer)

    async def requests(
        self, code: str, consumer: str, requests: list[RequestRecord]
    ) -> tuple[Outcome, RequestRecord | None]:
        """Post each request in seq order, stopping at the first not sent (a gone connection is detached). Returns
        that post's outcome and request, or (sent, None) when every one was sent."""
        connection = push_connection(consumer)
        assert connection is not None
        for request in requests:
            outcome = await self.post_retrying(connection, tool_request(code, request))
            if outcome is Outcome.GONE:
                await self.gone(code, consumer)
            if outcome is not Outcome.SENT:
                return outcome, request
        return Outcome.SENT, None

    def can_post(self, session: SessionRecord) -> bool:
        """Whether a request for ``session`` (as read) will be posted the moment it is stored: this relay offers
        push and the session's consumer is a push connection."""
        return self.publisher is not None and push_connection(session.consumer) is not None

    async def new_request(self, session: SessionRecord, request: RequestRecord) -> None:
        """Right after ``request`` was durably queued: push it when the session is delivered over push. A request
        stored as delivered (``NewRequest.deliver_to``: its push consumer still had the session when it was
        appended) is posted as it is, with no read; any other is read for once more, if this relay offers push."""
        if self.publisher is None:
            return
        try:
            if request.status == "delivered" and self.can_post(session):
                assert session.consumer is not None
                await self.requests(session.code, session.consumer, [request])
                return
            # The submit read the session before a plugin attached (or before another took over): an attach that
            # came after that read may also have resumed before this request was stored. Read once more (fresh):
            # whichever came second sees it.
            fresh = await self.store_io.run(self.store.get_session, session.code)
            consumer = fresh.consumer if fresh is not None else None
            if push_connection(consumer) is None:
                return
            assert consumer is not None
            current, pending = await self.store_io.run(
                self.store.deliver, session.code, consumer, request.seq - 1, self.clock.now()
            )
            if current is not None and current.consumer == consumer:
                await self.requests(session.code, consumer, pending)
        except Exception as exc:  # the 202 stands: the request waits for the next attach, resume or ping
            log.warning(dumps({"push": "submit_publish_failed", "fault": type(exc).__name__}))

    async def withdrawn(self, session: SessionRecord, requests: list[RequestRecord]) -> None:
        """Tell a push consumer of requests the model withdrew before it received them (its activity log)."""
        connection = push_connection(session.consumer)
        if connection is None:
            return
        for request in requests:
            message = {"event": "withdrawn", "id": request.id, "tool": request.tool, "args": request.args}
            if await self.post(connection, message) is Outcome.GONE:
                assert session.consumer is not None
                await self.gone(session.code, session.consumer)
                return

    async def ended(self, consumer: str | None, event: str) -> None:
        """The consumer lost the session (``closed``, ``superseded``): tell it, and close its connection."""
        connection = push_connection(consumer)
        if connection is not None:
            await self.end(connection, {"event": event})
