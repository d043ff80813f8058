"""Server-sent events: the framing (the WHATWG EventSource wire format) and the streaming response."""

from __future__ import annotations

import contextlib
import re

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from ..delivery import StreamEvent
from ..jsonvalues import dumps

_LINE_END = re.compile(r"\r\n|\r|\n")


def encode(event: StreamEvent) -> bytes:
    lines: list[str] = []
    if event.retry_ms is not None:
        lines.append(f"retry: {event.retry_ms}")
    if event.event is not None:
        if event.id is not None:
            lines.append(f"id: {event.id}")
        lines.append(f"event: {event.event}")
        payload = dumps(event.data, separators=(",", ":"), ensure_ascii=False)
        # JSON escapes CR and LF inside strings, but split anyway: a raw one would end the field early. Split on
        # exactly what EventSource treats as a line end: str.splitlines() also breaks at U+2028, U+0085, ...,
        # which JSON leaves raw, and the browser would rejoin those pieces with "\n" into invalid JSON.
        lines.extend(f"data: {part}" for part in _LINE_END.split(payload))
    return ("\n".join(lines) + "\n\n").encode()


class EventStreamResponse(StreamingResponse):
    """A stream that ends as soon as its client disconnects, whatever ASGI version the server speaks.

    From ASGI 2.4 Starlette stops listening for ``http.disconnect`` and relies on a failing send instead; an
    idle event stream sends only a heartbeat every HEARTBEAT_SECONDS, so it would run on that long after the
    plugin left, and meanwhile keep telling the store that the plugin is connected."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def stream() -> None:
                with contextlib.suppress(OSError):  # the client went away mid-send
                    await self.stream_response(send)
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()
