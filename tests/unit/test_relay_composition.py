"""The relay's composition: every unit is wired from the one set of dependencies, a reconfiguration reaches them
all, and the dependencies cannot be swapped behind the units' backs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from codap_relay.errors import RateLimited
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock, counting_ids


class Counting:
    def __init__(self) -> None:
        self.created = self.queued = 0
        self.limited: list[str] = []

    def session_created(self) -> None:
        self.created += 1

    def request_queued(self, tool: str) -> None:
        self.queued += 1

    def response_completed(self, status: str, latency_ms: float | None) -> None: ...
    def rate_limited(self, scope: str) -> None:
        self.limited.append(scope)


def units_of(relay: Relay) -> tuple[Any, ...]:
    return (relay.sessions, relay.presence, relay.queue, relay.responses, relay.log, relay.doc_changes, relay.streams)


async def test_every_unit_is_wired_from_the_relays_dependencies(settings: Settings, clock: FakeClock) -> None:
    observer = Counting()
    store = MemoryStore()
    relay = Relay(
        settings.model_copy(update={"request_ttl_seconds": 42}),
        store,
        clock=clock,
        ids=counting_ids(),
        codes=itertools.repeat("SWAPPED1").__next__,
        observer=observer,
    )
    session, _ = await relay.sessions.create()
    record, _ = await relay.queue.submit(session.code, "get_codap_datasets", {})
    assert session.code == "SWAPPED1" and record.expires_at == clock.now() + 42
    assert (observer.created, observer.queued) == (1, 1)
    assert all(unit.settings is relay.settings for unit in units_of(relay))
    assert all(unit.store is store for unit in units_of(relay))
    assert relay.queue.sessions is relay.sessions and relay.responses.queue is relay.queue
    assert relay.sessions.guard is relay.guard is relay.responses.guard


async def test_reconfigure_reaches_every_unit_and_keeps_the_guard(settings: Settings, clock: FakeClock) -> None:
    relay = Relay(settings, MemoryStore(), clock=clock, ids=counting_ids())
    guard, store = relay.guard, relay.store
    observer = Counting()
    relay.reconfigure(settings=settings.model_copy(update={"request_ttl_seconds": 42}), observer=observer)
    session, _ = await relay.sessions.create()
    record, _ = await relay.queue.submit(session.code, "get_codap_datasets", {})
    assert record.expires_at == clock.now() + 42 and (observer.created, observer.queued) == (1, 1)
    assert relay.guard is guard and relay.store is store  # its refusals in this process are kept
    assert all(unit.settings is relay.settings for unit in units_of(relay))


async def test_the_guard_counts_through_the_rate_windows_as_wired_now(settings: Settings, clock: FakeClock) -> None:
    """The guard is built once, but its count goes to the relay's current limits: a reconfigured limit holds."""
    relay = Relay(settings.model_copy(update={"guess_limit_per_ip": 1}), MemoryStore(), clock=clock)
    relay.reconfigure(observer=(observer := Counting()))
    await relay.guard.count_unknown("1.2.3.4")
    with pytest.raises(RateLimited):
        await relay.guard.count_unknown("1.2.3.4")
    with pytest.raises(RateLimited):
        await relay.sessions.for_llm("AAAAAAAA", client="1.2.3.4")  # refused in this process, known code or not
    assert observer.limited == ["unknown-code"]  # counted by the limits wired with the new observer


def test_a_dependency_cannot_be_set_on_the_relay(settings: Settings) -> None:
    """No attribute set rewires the relay behind mypy's back: the dependencies are read-only properties."""
    relay = Relay(settings, MemoryStore())
    with pytest.raises(AttributeError):
        relay.settings = settings  # type: ignore[misc]
