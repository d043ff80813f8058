"""ActivityLog on its own, on the memory store and a fake clock: the plugin's log and its pages."""

from __future__ import annotations

import pytest

from codap_relay.errors import SessionNotFound, TokenMissing
from codap_relay.records import NewRequest
from codap_relay.relay.log import LOG_PAGE_BYTES, ActivityLog, LogItem
from codap_relay.relay.outcomes import new_response
from codap_relay.relay.sessions import Sessions
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay


def log_of(settings: Settings, clock: FakeClock) -> tuple[ActivityLog, Sessions, MemoryStore]:
    store = MemoryStore()
    relay = unit_relay(settings, clock, store)
    return relay.log, relay.sessions, store


def add(store: MemoryStore, code: str, rid: str, now: float, ttl: float = 3600) -> None:
    store.add_request(code, NewRequest(rid, "get_codap_datasets", {}, "f", now, now + ttl))


def one_unit(item: LogItem) -> int:
    return 1


async def test_the_log_shows_each_request_and_calls_one_that_will_never_run_expired(
    settings: Settings, clock: FakeClock
) -> None:
    log, sessions, store = log_of(settings, clock)
    session, token = await sessions.create()
    code = session.code
    add(store, code, "answered", clock.now())
    add(store, code, "waiting", clock.now())
    add(store, code, "short", clock.now(), ttl=5)
    store.complete_request(new_response(code, "answered", clock.now(), 60, result={"n": 1}))
    clock.advance(5)
    items = await log.items(code, token)
    assert [(i.request.id, i.status, i.answer) for i in items] == [
        ("answered", "completed", None),  # never the answer in this view
        ("waiting", "queued", None),
        ("short", "expired", None),
    ]
    with pytest.raises(TokenMissing):
        await log.items(code, None)


async def test_pages_hold_about_page_bytes_and_carry_the_answers(settings: Settings, clock: FakeClock) -> None:
    log, sessions, store = log_of(settings, clock)
    session, token = await sessions.create()
    code = session.code
    for n in range(5):
        add(store, code, f"r{n}", clock.now())
    store.complete_request(new_response(code, "r1", clock.now(), 60, result={"n": 1}))
    pages, after = [], 0
    while True:
        items, following = await log.page(code, token, size_of=one_unit, after=after, page_bytes=2)
        pages.append([i.request.id for i in items])
        if following is None:
            break
        after = following
    assert pages == [["r0", "r1"], ["r2", "r3"], ["r4"]]
    items, following = await log.page(code, token, size_of=one_unit)  # LOG_PAGE_BYTES: all of it here
    assert following is None and len(items) == 5 and LOG_PAGE_BYTES == 1_000_000
    assert items[1].answer == {"result": {"n": 1}} and items[0].answer is None


async def test_the_plugin_reads_its_log_for_a_while_after_the_session_ended(
    settings: Settings, clock: FakeClock
) -> None:
    log, sessions, store = log_of(settings.model_copy(update={"log_grace_seconds": 100}), clock)
    session, token = await sessions.create()
    add(store, session.code, "r0", clock.now())
    await sessions.close(session.code, token)
    clock.advance(99)
    assert [i.status for i in await log.items(session.code, token)] == ["failed"]
    clock.advance(1)
    with pytest.raises(SessionNotFound):
        await log.page(session.code, token, size_of=one_unit)
