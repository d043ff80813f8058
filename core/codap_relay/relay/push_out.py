"""What the relay posts to a plugin's push connection (the push channel, issue 23): tool requests right after
the durable write (``RequestQueue.submit``), ``withdrawn`` (cancel), ``closed`` (the session ended), ``superseded``
(another consumer took over). A post never fails its caller: a gone connection (410) is detached, a fault is
logged (never with the session's code); the request stays pending for the plugin's next attach, resume or ping.
The connection's own messages are push.py's."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from ..clock import Clock
from ..errors import StoreUnavailable
from ..jsonvalues import dumps
from ..records import RequestRecord, SessionRecord, push_connection
from .publisher import PUSH_INLINE_BYTES, Publisher, encode_message
from .store_io import StoreIO

T = TypeVar("T")
log = logging.getLogger("codap_relay.push")


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
    def __init__(self, store_io: StoreIO, clock: Clock, publisher: Publisher | None) -> None:
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.publisher = publisher

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        assert self.publisher is not None
        if self.publisher.blocking:
            return await anyio.to_thread.run_sync(lambda: fn(*args))
        return fn(*args)

    async def post(self, connection_id: str, message: dict[str, Any]) -> bool:
        """Post one message; False only when the connection is gone. A fault is logged (never the session's code:
        messages carry none in the log) and counts as not gone: the plugin's next ping catches up."""
        if self.publisher is None:
            return False
        try:
            return await self._call(self.publisher.publish, connection_id, message)
        except Exception as exc:  # a publish must never fail the write it follows
            log.warning(
                dumps({"push": "publish_failed", "connection": connection_id, "fault": type(exc).__name__})
            )
            return True

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

    async def requests(self, code: str, consumer: str, requests: list[RequestRecord]) -> bool:
        """Post each request in seq order; on a gone connection detach it and stop. False when it was gone."""
        connection = push_connection(consumer)
        assert connection is not None
        for request in requests:
            if not await self.post(connection, tool_request(code, request)):
                await self.gone(code, consumer)
                return False
        return True

    async def new_request(self, session: SessionRecord, request: RequestRecord) -> None:
        """Right after ``request`` was durably queued: push it (and any earlier one not yet delivered) when the
        session is delivered over push. No store read without a publisher (a relay that offers no push)."""
        if self.publisher is None:
            return
        try:
            consumer = session.consumer
            if push_connection(consumer) is None:
                # The submit read the session before a plugin attached; an attach that came after that read may
                # also have resumed before this request was stored. Read once more: whichever came second sees it.
                fresh = await self.store_io.run(self.store.get_session, session.code)
                consumer = fresh.consumer if fresh is not None else None
                if push_connection(consumer) is None:
                    return
            assert consumer is not None
            for attempt in range(2):
                current, pending = await self.store_io.run(
                    self.store.deliver, session.code, consumer, request.seq - 1, self.clock.now()
                )
                if current is not None and current.consumer != consumer:
                    # A takeover raced the submit: once more for the new owner if it too is a push connection.
                    if attempt == 0 and push_connection(current.consumer) is not None:
                        assert current.consumer is not None
                        consumer = current.consumer
                        continue
                    return
                await self.requests(session.code, consumer, pending)
                return
        except Exception as exc:  # the 202 stands: the request waits for the next attach, resume or ping
            log.warning(dumps({"push": "submit_publish_failed", "fault": type(exc).__name__}))

    async def withdrawn(self, session: SessionRecord, requests: list[RequestRecord]) -> None:
        """Tell a push consumer of requests the model withdrew before it received them (its activity log)."""
        connection = push_connection(session.consumer)
        if connection is None:
            return
        for request in requests:
            message = {"event": "withdrawn", "id": request.id, "tool": request.tool, "args": request.args}
            if not await self.post(connection, message):
                assert session.consumer is not None
                await self.gone(session.code, session.consumer)
                return

    async def ended(self, consumer: str | None, event: str) -> None:
        """The consumer lost the session (``closed``, ``superseded``): tell it, and close its connection."""
        connection = push_connection(consumer)
        if connection is not None:
            await self.end(connection, {"event": event})
