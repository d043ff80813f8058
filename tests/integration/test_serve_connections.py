"""``codap-relay serve`` under a connection flood: connections that never send their request are closed after the
header timeout, connections beyond the limit are answered 503 with Retry-After at once, and the log gets one line
per burst rather than one per connection (security issue 24: 3,000 half-open connections stayed open 65 s and
~20,000 used up the file handles while logging 11 MB). Slow clients (security issue 31: ten sockets trickling their
bodies kept /healthz at 503 for over 70 s): a body has 20 s to arrive, and one address holds at most half the
connections."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import command_process

MAX = 20


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, object]]:
    # every connection of these tests comes from 127.0.0.1: the per-address cap is lifted to the global one here
    args = ["--store", "memory:", "--max-connections", str(MAX), "--max-connections-per-address", str(MAX)]
    args += ["--header-timeout", "1", "--body-timeout", "2", "--log-level", "warning"]
    with command_process("serve", *args) as (base, process):
        yield base, process


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_a_connection_that_sends_no_request_is_closed_after_the_header_timeout(served: tuple[str, object]) -> None:
    base, _process = served
    silent = _connect(base)
    half = _connect(base)
    half.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
    started = time.monotonic()
    try:
        assert _read_all(silent) == b""  # closed by the relay, not by our 5 s socket timeout
        assert _read_all(half) == b""
        assert time.monotonic() - started < 4
    finally:
        silent.close()
        half.close()
    assert web.get(f"{base}/healthz").status_code == 200


def test_connections_beyond_the_limit_get_503_with_retry_after_and_one_log_line(served: tuple[str, object]) -> None:
    base, process = served
    held = [_connect(base) for _ in range(MAX)]
    time.sleep(0.3)  # all of them accepted
    refused: list[bytes] = []
    try:
        for _ in range(30):
            extra = _connect(base)
            try:
                refused.append(_read_all(extra))
            finally:
                extra.close()
    finally:
        for sock in held:
            sock.close()
    for answer in refused:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503"), answer[:200]
        assert b"retry-after: 5" in head.lower()
        assert json.loads(body)["error"] == "too_many_connections"
    time.sleep(0.3)
    assert web.get(f"{base}/healthz").status_code == 200  # served again once connections closed
    output = process.output()  # type: ignore[attr-defined]
    assert output.count("refusing new ones with 503") == 1, output[-2000:]


def _closed_while_trickling(sock: socket.socket, data: bytes, every: float, limit: float) -> float | None:
    """Send ``data`` a byte every ``every`` seconds; the seconds until the relay closed the connection, or None if
    it was still open after ``limit`` seconds."""
    started = time.monotonic()
    sock.setblocking(False)
    for i in range(10**6):
        if time.monotonic() - started > limit:
            return None
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - started
        except BlockingIOError:
            pass
        except OSError:
            return time.monotonic() - started
        try:
            sock.send(data[i : i + 1] or b" ")
        except OSError:
            return time.monotonic() - started
        time.sleep(every)
    return None


def test_a_body_trickled_in_is_closed_after_the_body_timeout(served: tuple[str, object]) -> None:
    base, _process = served
    sock = _connect(base)
    try:
        sock.sendall(b"POST /request HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n")
        took = _closed_while_trickling(sock, b"{", 0.2, 10)
    finally:
        sock.close()
    assert took is not None and 1.5 < took < 6, took  # --body-timeout 2, from the headers


def test_a_later_request_trickled_on_a_kept_alive_connection_is_closed_too(served: tuple[str, object]) -> None:
    """uvicorn's keep-alive timeout stops at the first byte of the next request: from there the header and body
    deadlines together bound it (1 + 2 s here)."""
    base, _process = served
    sock = _connect(base)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        took = _closed_while_trickling(sock, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 200, 0.2, 12)
    finally:
        sock.close()
    assert took is not None and took < 6, took


SLOTS = 12


@pytest.fixture(scope="module")
def defaults() -> Iterator[tuple[str, object]]:
    """serve with its default read deadlines and per-address cap, and twelve connections in all."""
    with command_process("serve", "--store", "memory:", "--max-connections", str(SLOTS)) as (base, process):
        yield base, process


def _trickle(sockets: list[socket.socket], stop: threading.Event) -> list[socket.socket]:
    """Send each socket's request headers (a 100 kB body announced), then a byte of body a second; return the
    sockets the relay closed."""
    closed: list[socket.socket] = []
    for sock in sockets:
        head = b"POST /request HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        sock.sendall(head + b"Content-Length: 100000\r\n\r\n{")

    def run() -> None:
        while not stop.is_set() and len(closed) < len(sockets):
            for sock in sockets:
                if sock in closed:
                    continue
                try:
                    sock.sendall(b" ")
                    sock.setblocking(False)
                    try:
                        if sock.recv(65536) == b"":
                            closed.append(sock)
                    except BlockingIOError:
                        pass
                    finally:
                        sock.setblocking(True)
                except OSError:
                    closed.append(sock)
            stop.wait(1.0)

    threading.Thread(target=run, daemon=True).start()
    return closed


def _healthz(base: str) -> int:
    try:
        return web.get(f"{base}/healthz", timeout=2).status_code
    except httpx.HTTPError:
        return 0


@pytest.mark.slow  # the default 20 s body timeout, as shipped
def test_twelve_sockets_trickling_bodies_from_one_address_leave_healthz_answering_within_30_s(
    defaults: tuple[str, object],
) -> None:
    base, process = defaults
    started = time.monotonic()
    sockets = [_connect(base) for _ in range(SLOTS)]
    stop = threading.Event()
    try:
        closed = _trickle(sockets, stop)
        statuses: list[int] = []
        while time.monotonic() - started < 30:
            statuses.append(_healthz(base))
            if statuses[-1] == 200:
                break
            time.sleep(0.5)
        answered = time.monotonic() - started
        assert statuses[-1] == 200, f"/healthz still {statuses[-5:]} after {answered:.0f} s"
        # the slots came free because the relay closed the trickling bodies (20 s), not because they gave up
        deadline = time.monotonic() + 5
        while len(closed) < SLOTS and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(closed) == SLOTS, f"{SLOTS - len(closed)} trickling sockets still open after {answered:.0f} s"
    finally:
        stop.set()
        for sock in sockets:
            sock.close()
    print(f"/healthz answered 200 after {answered:.1f} s")
    output = process.output()  # type: ignore[attr-defined]
    assert output.count("the limit per address") == 1, output[-2000:]


def test_one_address_holds_at_most_half_the_connections(defaults: tuple[str, object]) -> None:
    base, _process = defaults
    held = [_connect(base) for _ in range(SLOTS // 2)]
    time.sleep(0.3)
    try:
        extra = _connect(base)
        try:
            answer = _read_all(extra)
        finally:
            extra.close()
    finally:
        for sock in held:
            sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 5" in head.lower(), answer[:200]
    assert json.loads(body)["error"] == "too_many_connections_from_address"
    time.sleep(0.3)
    assert _healthz(base) == 200
