"""The Relay front: its units are wired from one bundle of dependencies, and a reconfiguration reaches them all."""

from __future__ import annotations

import itertools

import pytest

from codap_relay.clock import FakeClock, counting_ids
from codap_relay.relay import Relay, RelayDeps
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore


class Counting:
    def __init__(self) -> None:
        self.created = self.queued = 0

    def session_created(self) -> None:
        self.created += 1

    def request_queued(self, tool: str) -> None:
        self.queued += 1

    def response_completed(self, status: str, latency_ms: float | None) -> None: ...
    def rate_limited(self, scope: str) -> None: ...


async def test_a_relay_built_from_its_bundle_wires_every_unit_from_it(settings: Settings, clock: FakeClock) -> None:
    observer = Counting()
    deps = RelayDeps(
        settings.model_copy(update={"request_ttl_seconds": 42}),
        MemoryStore(),
        clock,
        counting_ids(),
        itertools.repeat("SWAPPED1").__next__,
        observer=observer,
    )
    relay = Relay.from_deps(deps)
    assert relay.deps == deps
    session, _ = await relay.create_session()
    record, _ = await relay.submit(session.code, "get_codap_datasets", {})
    assert session.code == "SWAPPED1" and record.expires_at == clock.now() + 42
    assert (observer.created, observer.queued) == (1, 1)
    units = (relay.sessions, relay.presence, relay.queue, relay.responses, relay.log, relay.doc_changes, relay.streams)
    assert all(unit.settings is relay.settings for unit in units)
    assert relay.queue.sessions is relay.sessions and relay.responses.queue is relay.queue


async def test_reconfigure_reaches_every_unit_and_keeps_the_guard(settings: Settings, clock: FakeClock) -> None:
    relay = Relay(settings, MemoryStore(), clock=clock, ids=counting_ids())
    guard, store = relay.guard, relay.store
    observer = Counting()
    relay.reconfigure(settings=settings.model_copy(update={"request_ttl_seconds": 42}), observer=observer)
    session, _ = await relay.create_session()
    record, _ = await relay.submit(session.code, "get_codap_datasets", {})
    assert record.expires_at == clock.now() + 42 and (observer.created, observer.queued) == (1, 1)
    assert relay.guard is guard and relay.store is store  # its refusals in this process are kept
    units = (relay.sessions, relay.presence, relay.queue, relay.responses, relay.log, relay.doc_changes, relay.streams)
    assert all(unit.settings is relay.settings for unit in units)


def test_a_dependency_cannot_be_set_on_the_front(settings: Settings) -> None:
    """No attribute set rewires the relay behind mypy's back: the dependencies are read-only properties."""
    relay = Relay(settings, MemoryStore())
    with pytest.raises(AttributeError):
        relay.settings = settings  # type: ignore[misc]
