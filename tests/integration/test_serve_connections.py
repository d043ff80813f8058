"""``codap-relay serve`` under a connection flood: connections that never send their request are closed after the
header timeout, connections beyond the limit are answered 503 with Retry-After at once, and the log gets one line
per burst rather than one per connection (security issue 24: 3,000 half-open connections stayed open 65 s and
~20,000 used up the file handles while logging 11 MB)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from codap_relay_tooling.testing.commands import command_process

MAX = 20


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, object]]:
    args = ("--store", "memory:", "--max-connections", str(MAX), "--header-timeout", "1", "--log-level", "warning")
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
    assert httpx.get(f"{base}/healthz").status_code == 200


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
    assert httpx.get(f"{base}/healthz").status_code == 200  # served again once connections closed
    output = process.output()  # type: ignore[attr-defined]
    assert output.count("refusing new ones with 503") == 1, output[-2000:]
