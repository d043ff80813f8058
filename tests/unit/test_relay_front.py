"""The Relay front: its units are wired from its dependencies, and one replaced on the front reaches them all."""

from __future__ import annotations

import itertools

from codap_relay.clock import FakeClock, counting_ids
from codap_relay.relay import Relay
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


async def test_a_dependency_replaced_on_the_front_reaches_every_unit(settings: Settings, clock: FakeClock) -> None:
    relay = Relay(settings, MemoryStore(), clock=clock, ids=counting_ids())
    guard = relay.guard
    relay.observer = observer = Counting()
    relay.codes = itertools.repeat("SWAPPED1").__next__
    relay.settings = settings.model_copy(update={"request_ttl_seconds": 42})
    session, _ = await relay.create_session()
    record, _ = await relay.submit(session.code, "get_codap_datasets", {})
    assert session.code == "SWAPPED1" and record.expires_at == clock.now() + 42
    assert (observer.created, observer.queued) == (1, 1)
    assert relay.guard is guard  # its refusals in this process are kept
    units = (relay.sessions, relay.presence, relay.queue, relay.responses, relay.log, relay.doc_changes, relay.streams)
    assert all(unit.settings is relay.settings for unit in units)
    assert relay.queue.sessions is relay.sessions and relay.responses.queue is relay.queue
