"""Responses on its own, on the memory store and a fake clock: the plugin's answers, the LLM's reads and waits,
and a call that queues and waits. Also the response record every answer is stored as (outcomes.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from codap_relay.errors import AlreadyAnswered, BadInput, RequestExpired, RequestNotFound, SessionNotFound
from codap_relay.records import RequestRecord, fingerprint
from codap_relay.relay.outcomes import new_response
from codap_relay.relay.queue import RequestQueue
from codap_relay.relay.responses import Answer, Responses
from codap_relay.relay.sessions import Sessions
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay


@dataclass
class Seen:
    """An observer that keeps the responses it was told of."""

    completed: list[tuple[str, float | None]] = field(default_factory=list)

    def session_created(self) -> None: ...
    def request_queued(self, tool: str) -> None: ...
    def rate_limited(self, scope: str) -> None: ...

    def response_completed(self, status: str, latency_ms: float | None) -> None:
        self.completed.append((status, latency_ms))


@dataclass
class World:
    responses: Responses
    queue: RequestQueue
    sessions: Sessions
    store: MemoryStore
    seen: Seen


def world(settings: Settings, clock: FakeClock) -> World:
    store, seen = MemoryStore(), Seen()
    relay = unit_relay(settings, clock, store, observer=seen)
    return World(relay.responses, relay.queue, relay.sessions, store, seen)


def test_a_response_record_says_completed_or_failed_with_an_error_code() -> None:
    done = new_response("CODE0001", "r1", 100.0, 60, result={"rows": 3})
    assert (done.status, done.body, done.error_code, done.timestamp, done.expires_at) == (
        "completed",
        {"result": {"rows": 3}},
        None,
        100.0,
        160.0,
    )
    assert done.fingerprint == fingerprint({"result": {"rows": 3}})
    failed = new_response("CODE0001", "r1", 100.0, 60, error={"code": "cancelled", "message": "m"})
    assert (failed.status, failed.error_code) == ("failed", "cancelled")
    for raw in ({"message": "m"}, {"code": ""}, {"code": 7}):
        assert new_response("C", "r", 0, 60, error=raw).error_code == "plugin_error"


async def test_an_answer_is_stored_once_and_read_back(settings: Settings, clock: FakeClock) -> None:
    w = world(settings, clock)
    session, token = await w.sessions.create()
    code = session.code
    record, _ = await w.queue.submit(code, "get_codap_datasets", {}, "r1")
    assert await w.responses.answer(code, "r1") == Answer(record, None)
    clock.advance(2)
    stored = await w.responses.respond(code, token, "r1", result={"datasets": []})
    assert (stored.status, w.seen.completed) == ("completed", [("completed", 2000.0)])
    assert await w.responses.respond(code, token, "r1", result={"datasets": []}) == stored  # a retry: the same
    with pytest.raises(AlreadyAnswered):
        await w.responses.respond(code, token, "r1", result={"datasets": ["other"]})
    assert len(w.seen.completed) == 1
    found = await w.responses.answer(code, "r1")
    assert found.done and found.response == stored
    seen_at = w.store.get_session(code)
    assert seen_at is not None and seen_at.last_seen == clock.now()  # an answer is a sign of life too
    with pytest.raises(RequestNotFound):
        await w.responses.respond(code, token, "never-sent", result={})
    with pytest.raises(BadInput):
        await w.responses.respond(code, token, "bad id", result={})


async def test_what_the_llm_learns_of_a_request_that_will_never_run(settings: Settings, clock: FakeClock) -> None:
    w = world(settings, clock)
    session, token = await w.sessions.create()
    code = session.code
    with pytest.raises(RequestNotFound):
        await w.responses.answer(code, "nosuch")
    await w.queue.submit(code, "get_codap_datasets", {}, "late")
    w.store.update_session(code, expires_at=clock.now() + 2 * settings.request_ttl_seconds)  # the plugin stays
    clock.advance(settings.request_ttl_seconds)
    with pytest.raises(RequestExpired):
        await w.responses.answer(code, "late")
    with pytest.raises(RequestExpired):
        await w.responses.respond(code, token, "late", result={})
    other, _ = await w.sessions.create()
    await w.queue.submit(other.code, "get_codap_datasets", {}, "orphan")
    clock.advance(settings.session_ttl_seconds)
    with pytest.raises(SessionNotFound):
        await w.responses.answer(other.code, "orphan")


async def test_a_wait_ends_when_the_answer_lands(settings: Settings, clock: FakeClock) -> None:
    w = world(settings, clock)
    session, token = await w.sessions.create()
    code = session.code
    await w.queue.submit(code, "get_codap_datasets", {}, "r1")
    assert not (await w.responses.wait_answer(code, "r1", 0)).done  # no wait: the state now
    waiting = asyncio.create_task(w.responses.wait_answer(code, "r1", 10))
    await asyncio.sleep(0)
    await w.responses.respond(code, token, "r1", result={"datasets": []})
    answer = await asyncio.wait_for(waiting, 2)  # woken by the answer, long before the 10 s
    assert answer.done and answer.response is not None and answer.response.body == {"result": {"datasets": []}}


async def test_a_call_queues_and_tells_how_the_request_stands_while_it_waits(
    settings: Settings, clock: FakeClock
) -> None:
    w = world(settings, clock)
    session, token = await w.sessions.create()
    code = session.code
    told: list[RequestRecord] = []

    async def on_wait(request: RequestRecord) -> None:
        told.append(request)

    record, answer = await w.responses.call(code, "get_codap_datasets", {}, "c1", wait=0, on_wait=on_wait)
    assert (record.id, answer.done, [r.status for r in told]) == ("c1", False, ["queued"])
    waiting = asyncio.create_task(w.responses.call(code, "get_codap_datasets", {}, "c1", wait=10))
    await asyncio.sleep(0)
    await w.responses.respond(code, token, "c1", result={"ok": True})
    again, answer = await asyncio.wait_for(waiting, 2)
    assert again == record and answer.done
