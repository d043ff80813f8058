"""Presence on its own, on the memory store and a fake clock: when the plugin counts as connected, its signs of
life, and the session's status as the LLM reads it."""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay.errors import RateLimited, SessionNotFound
from codap_relay.records import DETACHED, NewRequest, SessionRecord
from codap_relay.relay.presence import Presence, SessionState
from codap_relay.relay.sessions import Sessions
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay


def presence_of(settings: Settings, clock: FakeClock) -> tuple[Presence, Sessions, MemoryStore]:
    store = MemoryStore()
    relay = unit_relay(settings, clock, store)
    return relay.presence, relay.sessions, store


def seen(session: SessionRecord, at: float | None, consumer: str | None = "tab.1") -> SessionRecord:
    return session.with_(last_seen=at, consumer=consumer)


async def test_connected_while_seen_within_the_grace_and_not_detached(settings: Settings, clock: FakeClock) -> None:
    presence, sessions, _ = presence_of(settings.model_copy(update={"connected_grace_seconds": 30}), clock)
    session, _ = await sessions.create()
    now = clock.now()
    assert not presence.is_connected(seen(session, None))
    assert presence.is_connected(seen(session, now - 30))
    assert not presence.is_connected(seen(session, now - 30.5))
    assert not presence.is_connected(seen(session, now, DETACHED))  # its tab said it left


async def test_a_sign_of_life_is_due_each_third_of_the_grace_or_beat(settings: Settings, clock: FakeClock) -> None:
    s = settings.model_copy(update={"connected_grace_seconds": 30, "heartbeat_seconds": 15})
    presence, sessions, _ = presence_of(s, clock)
    session, _ = await sessions.create()
    now = clock.now()
    assert presence.touch_due(seen(session, None))
    assert not presence.touch_due(seen(session, now - 9.9))
    assert presence.touch_due(seen(session, now - 10))  # a third of 30 s, sooner than the 15 s heartbeat
    fast, _, _ = presence_of(s.model_copy(update={"heartbeat_seconds": 2}), clock)
    assert fast.touch_due(seen(session, now - 2)) and not fast.touch_due(seen(session, now - 1.9))


async def test_touch_slides_the_expiry_and_records_when_and_which_stream(settings: Settings, clock: FakeClock) -> None:
    presence, sessions, store = presence_of(settings, clock)
    session, _ = await sessions.create()
    clock.advance(100)
    await presence.touch(session, consumer="tab.7")
    stored = store.get_session(session.code)
    assert stored is not None
    assert (stored.expires_at, stored.last_seen, stored.consumer) == (
        clock.now() + settings.session_ttl_seconds,
        clock.now(),
        "tab.7",
    )


async def test_status_counts_what_waits_and_the_token_keeps_the_code(settings: Settings, clock: FakeClock) -> None:
    presence, sessions, store = presence_of(settings.model_copy(update={"rate_limit_status_per_ip": 3}), clock)
    session, token = await sessions.create()
    for rid in ("a", "b"):
        store.add_request(session.code, NewRequest(rid, "get_codap_datasets", {}, "f", clock.now(), clock.now() + 3600))
    clock.advance(100)
    state = await presence.status(session.code, client="1.2.3.4")
    assert state == SessionState(session.with_(last_seq=2), connected=False, pending=2)  # read, nothing changed
    with_token = await presence.status(session.code, client="1.2.3.4", token=token)
    assert with_token.session.expires_at == clock.now() + settings.session_ttl_seconds
    assert with_token.session.last_seen is None and not with_token.connected  # a sign of life, not a connection
    clock.advance(5)
    other = await presence.status(session.code, token="not-its-token")
    assert other.session.expires_at == with_token.session.expires_at  # only the session's own token slides it
    await presence.status(session.code, client="1.2.3.4")
    with pytest.raises(RateLimited):
        await presence.status(session.code, client="1.2.3.4")


async def test_a_status_read_with_the_token_never_revives_a_code_that_expired_meanwhile(
    settings: Settings, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token's status read slides the expiry of the session it read. Were the clock to pass the expiry between
    that read and the write (a machine that slept), the code is expired, not revived."""
    presence, sessions, store = presence_of(settings, clock)
    session, token = await sessions.create()
    read = sessions.for_llm

    async def read_then_sleep(code: str, **kw: Any) -> SessionRecord:
        found = await read(code, **kw)
        clock.advance(settings.session_ttl_seconds)
        return found

    monkeypatch.setattr(sessions, "for_llm", read_then_sleep)
    with pytest.raises(SessionNotFound) as raised:
        await presence.status(session.code, token=token)
    assert raised.value.reason == "expired" and store.get_session(session.code) == session
