"""PluginStream on its own, on the memory store and a fake clock: opening the plugin's stream for a tab, delivery
through it, and detaching a tab that left."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import boto3
import pytest
from moto import mock_aws

from codap_relay.clock import SystemClock
from codap_relay.delivery import StreamEvent
from codap_relay.errors import SessionNotFound, TokenInvalid
from codap_relay.notify import Notifier, stream_key
from codap_relay.records import DETACHED, NewRequest, SessionRecord
from codap_relay.relay.sessions import Sessions
from codap_relay.relay.stream import PluginStream
from codap_relay.settings import Settings
from codap_relay.store.dynamodb import DynamoStore
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.dynamodb_local import CREDENTIALS, new_table
from codap_relay_tooling.testing.lagging_dynamodb import LaggingClient
from codap_relay_tooling.testing.relays import unit_relay
from codap_relay_tooling.testing.store_backends import SerializedClient


def stream_of(settings: Settings, clock: FakeClock) -> tuple[PluginStream, Sessions, MemoryStore, Notifier]:
    store = MemoryStore()
    relay = unit_relay(settings, clock, store, ids=counting_ids("conn-"))
    return relay.streams, relay.sessions, store, relay.notifier


async def next_event(events: AsyncIterator[StreamEvent], within: float = 5) -> StreamEvent:
    async def first() -> StreamEvent:
        async for event in events:
            if event.event not in (None, "heartbeat"):
                return event
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(first(), within)


async def anext_all(events: AsyncIterator[StreamEvent]) -> list[str | None]:
    return [e.event async for e in events if e.event not in (None, "heartbeat")]


async def test_a_stream_opens_only_for_the_plugin_and_marks_its_tab(settings: Settings, clock: FakeClock) -> None:
    stream, sessions, store, notifier = stream_of(settings, clock)
    session, token = await sessions.create()
    _, other_token = await sessions.create()
    with pytest.raises(TokenInvalid):  # raised when opened, before any event could be sent
        await stream.open(session.code, other_token, None)
    with notifier.listen(stream_key(session.code)) as older:
        events = await stream.open(session.code, token, None, tab="tab1")
        assert await older.wait(0)  # an older stream of the session learns it is superseded
    stored = store.get_session(session.code)
    assert stored is not None and (stored.consumer, stored.last_seen) == ("tab1.conn-1", clock.now())
    store.add_request(session.code, NewRequest("r1", "get_codap_datasets", {}, "f", clock.now(), clock.now() + 60))
    notifier.notify(stream_key(session.code))
    event = await next_event(events)
    assert (event.event, event.id, event.data["id"]) == ("tool-request", "1", "r1")
    await events.aclose()


async def test_a_newer_stream_supersedes_and_a_detached_tab_ends(settings: Settings, clock: FakeClock) -> None:
    stream, sessions, store, _ = stream_of(settings, clock)
    session, token = await sessions.create()
    first = await stream.open(session.code, token, None, tab="tab1")
    second = await stream.open(session.code, token, None, tab="tab2")
    assert (await next_event(first)).event == "superseded"
    assert not await stream.detach(session.code, token, "tab1")  # an older tab never touches a newer one's stream
    assert await stream.detach(session.code, token, "tab2")
    stored = store.get_session(session.code)
    assert stored is not None and stored.consumer == DETACHED
    rest = asyncio.wait_for(anext_all(second), 5)
    assert await rest == []  # it ended, without a word


async def test_it_is_the_host_delivery_reads_through(settings: Settings, clock: FakeClock) -> None:
    stream, sessions, store, _ = stream_of(settings, clock)
    session, _ = await sessions.create()
    assert (stream.settings, stream.store, stream.now()) == (settings, store, clock.now())
    assert await stream.io(store.get_session, session.code) == session
    assert stream.live(session) is session and stream.touch_due(session)
    await stream.touch(session, consumer="tab.9")
    stored = store.get_session(session.code)
    assert stored is not None and stored.consumer == "tab.9" and not stream.touch_due(stored)
    assert stream.wait_slice(3.0) == 3.0  # the memory store pushes its writes


async def test_a_clock_jump_between_the_read_and_the_sign_of_life_ends_the_stream(
    settings: Settings, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that slept with a stream open can wake after the stream read its live session and before the sign
    of life it then writes. The code has expired meanwhile: the stream ends with `expired`, and the write that was
    due does not revive the code."""
    stream, sessions, store, _ = stream_of(settings, clock)
    session, token = await sessions.create()
    events = await stream.open(session.code, token, None, tab="tab1")
    jumps = iter([settings.session_ttl_seconds + 1])

    def jump_then_due(current: SessionRecord) -> bool:
        clock.advance(next(jumps, 0))
        return True

    monkeypatch.setattr(stream, "touch_due", jump_then_due)
    event = await next_event(events)
    assert (event.event, event.data) == ("expired", {"reason": "expired"})
    stored = store.get_session(session.code)
    assert stored is not None and stored.expires_at < clock.now()


async def test_a_sign_of_life_never_revives_an_expired_code(settings: Settings, clock: FakeClock) -> None:
    stream, sessions, store, _ = stream_of(settings, clock)
    session, _ = await sessions.create()
    clock.advance(settings.session_ttl_seconds)
    with pytest.raises(SessionNotFound) as raised:
        await stream.touch(session, consumer="tab.9")
    assert raised.value.reason == "expired" and store.get_session(session.code) == session


async def test_a_request_never_waits_behind_a_lagging_replica_longer_than_a_stale_poll_may(
    settings: Settings,
) -> None:
    """The stream's polls may read a replica that lags (DynamoDB's eventually consistent read, half the price), but
    one reads fresh every STALE_POLL_SECONDS: a request appended while the replica is a minute behind reaches the
    plugin within that, not a minute later. DynamoStore on moto in process, its replica a minute behind."""
    with mock_aws():
        raw = SerializedClient(boto3.client("dynamodb", **CREDENTIALS))
        lagging = LaggingClient(raw, 0.0)
        store = DynamoStore(lagging, new_table(raw))
        relay = unit_relay(settings, SystemClock(), store)  # type: ignore[arg-type]
        session, token = await relay.sessions.create()
        events = await relay.streams.open(session.code, token, None, tab="tab1")
        lagging.replica.lag = 60.0  # the session is on the replica; what comes now reaches it a minute late
        delivered = asyncio.create_task(next_event(events, within=30))
        await asyncio.sleep(0.3)  # the stream polls on (its first poll read fresh)
        polled = lagging.replica.stale_reads
        record, _ = await relay.queue.submit(session.code, "get_codap_datasets", {})
        stored = time.monotonic()
        event = await delivered
        took = time.monotonic() - stored
        assert (event.event, event.data["id"]) == ("tool-request", record.id)
        assert took < 5, f"waited {took:.1f} s: for the replica (a minute behind), not for a fresh poll"
        assert polled > 0  # the polls before it read the replica, at half the price
        await events.aclose()
