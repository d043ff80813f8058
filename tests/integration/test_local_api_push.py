"""The push channel's connection handling through ``codap-relay local-api`` (the relay's template, DynamoDB Local,
the emulated WebSocket API): a closed socket is detached at once by its $disconnect, and a bad message, or one
past the connection's message rate, closes the socket, as it would on API Gateway."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import LocalApi

pytestmark = pytest.mark.dynamodb_local
TAB = "tab-localapi1"


def new_session(base: str) -> dict[str, Any]:
    r = web.post(f"{base}/api/sessions", json={}, timeout=30)
    assert r.status_code == 201, r.text
    session: dict[str, Any] = r.json()
    assert session.get("push"), "local-api's relay offers the push channel"
    return session


def connected(base: str, code: str) -> bool:
    r = web.get(f"{base}/api/sessions/{code}", timeout=30)
    assert r.status_code == 200, r.text
    return bool(r.json()["connected"])


def attach(ws: ClientConnection, s: dict[str, Any]) -> None:
    ws.send(json.dumps({"action": "attach", "code": s["code"], "token": s["browserToken"], "tab": TAB, "after": None}))
    while (message := json.loads(ws.recv(timeout=30)))["event"] != "resumed":
        pass
    assert message["upTo"] == 0


def closed_after(ws: ClientConnection) -> list[dict[str, Any]]:
    """What the socket received until the server closed it."""
    heard = []
    with pytest.raises(ConnectionClosed):
        while True:
            heard.append(json.loads(ws.recv(timeout=30)))
    return heard


def detached_soon(base: str, code: str) -> None:
    deadline = time.monotonic() + 20  # $disconnect runs after the socket is gone (best effort, as on AWS)
    while connected(base, code):
        assert time.monotonic() < deadline, "still connected: $disconnect did not detach (the grace is 225 s)"
        time.sleep(0.2)


def test_a_closed_socket_is_detached_at_once(local_api: LocalApi) -> None:
    s = new_session(local_api.base)
    with connect(s["push"], open_timeout=20) as ws:
        attach(ws, s)
        assert connected(local_api.base, s["code"])
    detached_soon(local_api.base, s["code"])


def test_a_bad_message_closes_the_socket(local_api: LocalApi) -> None:
    s = new_session(local_api.base)
    with connect(s["push"], open_timeout=20) as ws:
        attach(ws, s)
        ws.send("not json")
        heard = closed_after(ws)
    assert [(m["event"], m["code"]) for m in heard] == [("error", "bad_input")]
    detached_soon(local_api.base, s["code"])  # closed by the relay: its $disconnect detaches it too
