"""Connection limits for ``codap-relay serve`` (uvicorn's HTTP/1.1 protocol, h11): a header-read timeout and a
cap on open connections.

Without them, a connection that never sends its request stays open until the peer gives up, and enough of them
use up the process's file handles (and every refused ``accept`` logs a line). With them:
- a connection whose first request's headers have not arrived within ``header_timeout`` seconds is closed (later
  requests on a kept-alive connection are covered by uvicorn's keep-alive timeout);
- a connection beyond ``max_connections`` open ones is answered at once with 503 and Retry-After (the relay's JSON
  error shape) and closed; one log line says when such a burst starts, not one line per refused connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("codap_relay.connections")

RETRY_AFTER_SECONDS = 5
DRAIN_SECONDS = 1.0  # a refused connection: how long its request may keep arriving (read and dropped) before close


def refusal(max_connections: int) -> bytes:
    body = json.dumps(
        {
            "error": "too_many_connections",
            "message": (
                f"The relay has {max_connections} connections open, its limit; try again in {RETRY_AFTER_SECONDS} s."
            ),
            "code": 503,
            "correlationId": "",
        }
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        f"retry-after: {RETRY_AFTER_SECONDS}\r\n"
        "cache-control: no-store\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class Burst:
    """Refused connections, one log line per burst: a burst starts at the first refusal after a connection was
    accepted and lasts until one is accepted again."""

    def __init__(self) -> None:
        self.active = False
        self.refused = 0

    def refuse(self, max_connections: int) -> None:
        self.refused += 1
        if not self.active:
            self.active = True
            log.warning(
                "%d connections open, the limit (--max-connections): refusing new ones with 503 until some close "
                "(no line per refused connection; %d refused so far since start)",
                max_connections,
                self.refused,
            )

    def accepted(self) -> None:
        self.active = False


def guarded_protocol(max_connections: int, header_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the two limits (a class per server: the burst is counted per server)."""
    burst = Burst()
    answer = refusal(max_connections)

    class GuardedH11Protocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _refused = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                self._refused = True
                burst.refuse(max_connections)
                transport.write(answer)
                if transport.can_write_eof():
                    transport.write_eof()  # the answer, then FIN; the peer's request is read and dropped
                self._timer = self.loop.call_later(DRAIN_SECONDS, transport.close)
                return
            burst.accepted()
            self._timer = self.loop.call_later(header_timeout, self._headers_too_slow)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)

        def _headers_too_slow(self) -> None:
            self._timer = None
            if self.cycle is None and not self.transport.is_closing():
                self.transport.close()  # no request yet: nothing to answer

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._refused:
                self.connections.discard(self)
                return
            super().connection_lost(exc)

    return GuardedH11Protocol
