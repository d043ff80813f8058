"""Connection limits for ``codap-relay serve`` (uvicorn's HTTP/1.1 protocol, h11): read deadlines and caps on
open connections, overall and per client address.

Without them, a connection that never sends its request, or sends its body a byte at a time, stays open until the
peer gives up, and enough of them use up every slot (security issues 24 and 31: ten sockets trickling bodies kept
``/healthz`` at 503 for over 70 s). With them:
- a connection whose first request's headers have not arrived within ``header_timeout`` seconds is closed;
- a request whose body has not all arrived within ``body_timeout`` seconds of its headers is closed (its handler
  sees the client gone), and so is a later request on a kept-alive connection that has not arrived whole within
  ``header_timeout + body_timeout`` of its first byte; between requests uvicorn's keep-alive timeout applies;
- a connection beyond ``max_connections`` open ones, or beyond ``per_address`` from one client address, is
  answered at once with 503 and Retry-After (the relay's JSON error shape) and closed; one log line says when such
  a burst starts (per address for the second), not one line per refused connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..bursts import Burst
from ..jsonvalues import dumps

log = logging.getLogger("codap_relay.connections")

RETRY_AFTER_SECONDS = 5
DRAIN_SECONDS = 1.0  # a refused connection: how long its request may keep arriving (read and dropped) before close


def refusal(error: str, message: str) -> bytes:
    said = f"{message} Try again in {RETRY_AFTER_SECONDS} s."
    body = dumps({"error": error, "message": said, "code": 503, "correlationId": ""}).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        f"retry-after: {RETRY_AFTER_SECONDS}\r\n"
        "cache-control: no-store\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


def guarded_protocol(
    max_connections: int, header_timeout: float, *, per_address: int | None = None, body_timeout: float = 20.0
) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the limits (a class per server: counts and bursts are per server).
    ``per_address``: connections one client address may hold (default: half of ``max_connections``)."""
    from_one = per_address if per_address is not None else max(1, max_connections // 2)
    full = refusal("too_many_connections", f"The relay has {max_connections} connections open, its limit.")
    crowded = refusal(
        "too_many_connections_from_address",
        f"Your address has {from_one} connections open to the relay, its limit per address.",
    )
    overall = Burst(
        log,
        f"{max_connections} connections open, the limit (--max-connections): refusing new ones with 503 until "
        "some close (no line per refused connection; %(refused)d refused so far since start)",
    )
    from_address = Burst(
        log,
        f"%(key)s has {from_one} connections open, the limit per address (--max-connections-per-address): "
        "refusing its new ones with 503 until some close (no line per refused connection; %(refused)d refused "
        "so far since start)",
    )
    open_from: dict[str, int] = {}

    class GuardedH11Protocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _refused = False
        _address = ""
        _body_timed = False  # this request's body deadline is armed (once: more bytes never extend it)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._address = self.client[0] if self.client else ""
            if len(self.connections) > max_connections:
                self._refuse(full)
                overall.refuse()
                return
            if open_from.get(self._address, 0) >= from_one:
                self._refuse(crowded)
                from_address.refuse(self._address)
                return
            overall.admitted()
            from_address.admitted(self._address)
            open_from[self._address] = open_from.get(self._address, 0) + 1
            self._arm(header_timeout)

        def _refuse(self, answer: bytes) -> None:
            self._refused = True
            self.transport.write(answer)
            if self.transport.can_write_eof():
                self.transport.write_eof()  # the answer, then FIN; the peer's request is read and dropped
            self._timer = self.loop.call_later(DRAIN_SECONDS, self.transport.close)

        def _arm(self, seconds: float) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_later(seconds, self._too_slow)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self._timer is None and self.conn.their_state is h11.IDLE:
                self._arm(header_timeout + body_timeout)  # a later request on a kept-alive connection begins
            super().data_received(data)
            if self.transport.is_closing() or self._timer is None:
                return
            state = self.conn.their_state
            if state is h11.SEND_BODY and not self._body_timed:
                self._body_timed = True
                self._arm(body_timeout)  # headers in: the body's own deadline
            elif state is not h11.IDLE and state is not h11.SEND_BODY:
                self._timer.cancel()  # the whole request is in: the handler's time is its own
                self._timer = None
                self._body_timed = False

        def _too_slow(self) -> None:
            self._timer = None
            if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
                return
            self.transport.close()  # its request never arrived whole: nothing to answer

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._refused:
                self.connections.discard(self)
                return
            left = open_from.get(self._address, 1) - 1
            if left > 0:
                open_from[self._address] = left
            else:
                open_from.pop(self._address, None)
            super().connection_lost(exc)

    return GuardedH11Protocol
