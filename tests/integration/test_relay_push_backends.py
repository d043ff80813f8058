"""The push channel's key scenarios on every store backend (memory, SQLite, moto, DynamoDB Local): attach with a
queued request, publish on submit, a takeover by a newer connection, a gone connection detached, and a later
attach that resumes from its cursor. The scenarios themselves: tests/unit/test_relay_push.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay.records import DETACHED
from codap_relay.relay import Relay
from codap_relay.store.base import Store
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.fake_publisher import FakePublisher
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.store_backends import BACKENDS

TAB, TAB2 = "tab-aaaaaaaa", "tab-bbbbbbbb"


async def attach(relay: Relay, conn: str, code: str, token: str, after: int | None = None, tab: str = TAB) -> None:
    message = {"action": "attach", "code": code, "token": token, "tab": tab, "after": after}
    await relay.push.message(conn, json.dumps(message), client="203.0.113.9")


async def ask(relay: Relay, code: str, rid: str) -> None:
    await relay.queue.submit(code, "get_codap_datasets", {}, rid, client="203.0.113.9")


def requests_in(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(m["seq"], m["id"]) for m in messages if m["event"] == "tool-request"]


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Store]:
    with BACKENDS[request.param]() as s:
        yield s


async def test_attach_publish_gone_and_resume_on_every_backend(backend: Store) -> None:
    pub = FakePublisher()
    relay = Relay(make_settings(), backend, clock=FakeClock(), ids=counting_ids(), publisher=pub)
    session, token = await relay.sessions.create()
    code = session.code
    await ask(relay, code, "r1")
    await attach(relay, "C1", code, token)
    assert requests_in(pub.to("C1")) == [(1, "r1")] and pub.to("C1")[-1]["event"] == "resumed"
    await ask(relay, code, "r2")
    assert requests_in(pub.to("C1")) == [(1, "r1"), (2, "r2")]
    await attach(relay, "C2", code, token, after=2, tab=TAB2)
    assert pub.closed == ["C1"] and pub.events("C1")[-1] == "superseded"
    pub.gone.add("C2")
    await ask(relay, code, "r3")
    assert (await relay.store_io.read(backend.get_session, code)).consumer == DETACHED  # type: ignore[union-attr]
    await attach(relay, "C3", code, token, after=1)
    messages = pub.to("C3")
    assert requests_in(messages) == [(2, "r2"), (3, "r3")]
    assert messages[-1] == {"event": "resumed", "after": 1, "upTo": 3, "pingSeconds": relay.settings.push_ping_seconds}
