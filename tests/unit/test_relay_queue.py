"""RequestQueue on its own, on the memory store and a fake clock: submitting, its bounds, pending ids, cancel."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from codap_relay.delivery import withdrawn_mark
from codap_relay.errors import (
    BadInput,
    ByteBudgetExceeded,
    DuplicateRequestId,
    PayloadTooLarge,
    PendingLimit,
    RateLimited,
    SessionNotFound,
    UnknownTool,
)
from codap_relay.notify import Notifier, answers_key, stream_key
from codap_relay.relay.queue import REQUEST_ID_RE, RequestQueue, checked_request_id
from codap_relay.relay.sessions import Sessions
from codap_relay.settings import Settings
from codap_relay.store.base import args_bytes
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay

CASES = {"datasetName": "s", "cases": [{"x": 1}]}


@dataclass
class Seen:
    """An observer that keeps what it was told."""

    queued: list[str] = field(default_factory=list)
    limited: list[str] = field(default_factory=list)

    def session_created(self) -> None: ...
    def response_completed(self, status: str, latency_ms: float | None) -> None: ...

    def request_queued(self, tool: str) -> None:
        self.queued.append(tool)

    def rate_limited(self, scope: str) -> None:
        self.limited.append(scope)


@dataclass
class World:
    queue: RequestQueue
    sessions: Sessions
    store: MemoryStore
    notifier: Notifier
    seen: Seen


def world(settings: Settings, clock: FakeClock) -> World:
    store, seen = MemoryStore(), Seen()
    relay = unit_relay(settings, clock, store, observer=seen)
    return World(relay.queue, relay.sessions, store, relay.notifier, seen)


def test_request_ids_are_short_plain_and_end_where_they_seem_to() -> None:
    assert checked_request_id("req_1-A", "m") == "req_1-A" and REQUEST_ID_RE.match("x" * 64)
    for bad in ("", "x" * 65, "a b", "a\n", "ü", 7, None):
        with pytest.raises(BadInput) as raised:
            checked_request_id(bad, "the message")
        assert raised.value.data == {"field": "id"} and raised.value.message == "the message"


async def test_a_request_is_queued_once_in_order_a_retry_is_no_new_one(settings: Settings, clock: FakeClock) -> None:
    w = world(settings, clock)
    session, _ = await w.sessions.create()
    with w.notifier.listen(stream_key(session.code)) as stream:
        first, created = await w.queue.submit(session.code, "get_codap_datasets", {})
        assert created and (first.id, first.seq) == ("req-1", 1) and await stream.wait(0)
        second, _ = await w.queue.submit(session.code, "add_codap_cases", CASES, "mine")
        assert await stream.wait(0)
        again, created = await w.queue.submit(session.code, "add_codap_cases", CASES, "mine")
        assert (second.seq, again, created) == (2, second, False) and not await stream.wait(0)  # nothing new
    assert first.expires_at == clock.now() + settings.request_ttl_seconds
    assert w.seen.queued == ["get_codap_datasets", "add_codap_cases"]
    with pytest.raises(DuplicateRequestId):
        await w.queue.submit(session.code, "get_codap_datasets", {}, "mine")
    with pytest.raises(UnknownTool):
        await w.queue.submit(session.code, "no_such_tool", {})
    with pytest.raises(BadInput):
        await w.queue.submit(session.code, "get_codap_datasets", {}, "no spaces")
    w.store.update_session(session.code, closed_at=clock.now())
    with pytest.raises(SessionNotFound) as raised:
        await w.queue.submit(session.code, "get_codap_datasets", {})
    assert raised.value.reason == "closed"


async def test_a_session_holds_a_bounded_queue_and_a_retry_still_passes(settings: Settings, clock: FakeClock) -> None:
    w = world(settings.model_copy(update={"max_pending_requests_per_session": 2}), clock)
    session, _ = await w.sessions.create()
    await w.queue.submit(session.code, "get_codap_datasets", {}, "a")
    await w.queue.submit(session.code, "get_codap_datasets", {}, "b")
    with pytest.raises(PendingLimit) as raised:
        await w.queue.submit(session.code, "get_codap_datasets", {}, "c")
    assert (raised.value.scope, raised.value.retry_after) == ("pending_requests", 60)  # nobody runs them
    assert "not connected" in str(raised.value) and w.seen.limited == ["pending_requests"]
    assert not (await w.queue.submit(session.code, "get_codap_datasets", {}, "b"))[1]  # a retry passes
    w.store.update_session(session.code, last_seen=clock.now(), consumer="tab.1")
    with pytest.raises(PendingLimit) as connected:
        await w.queue.submit(session.code, "get_codap_datasets", {})
    assert connected.value.retry_after == 5  # the plugin is there: answers come soon


async def test_an_address_has_an_hourly_byte_budget_and_what_is_not_stored_is_refunded(
    settings: Settings, clock: FakeClock
) -> None:
    size = args_bytes(CASES)
    w = world(settings.model_copy(update={"request_bytes_per_ip_per_hour": 2 * size + 1}), clock)
    session, _ = await w.sessions.create()
    code = session.code
    await w.queue.submit(code, "add_codap_cases", CASES, "a", client="1.2.3.4")
    await w.queue.submit(code, "add_codap_cases", CASES, "a", client="1.2.3.4")  # a retry: charged, then refunded
    await w.queue.submit(code, "add_codap_cases", CASES, "b", client="1.2.3.4")
    with pytest.raises(ByteBudgetExceeded):
        await w.queue.submit(code, "add_codap_cases", CASES, "c", client="1.2.3.4")
    await w.queue.submit(code, "add_codap_cases", CASES, "c", client="5.6.7.8")  # each address its own budget
    with pytest.raises(PayloadTooLarge):  # larger than the whole budget: it never fits
        await w.queue.submit(code, "add_codap_cases", {**CASES, "cases": [{"x": 1}] * 100}, client="1.2.3.4")


async def test_each_address_gets_a_number_of_requests_per_code_a_minute(settings: Settings, clock: FakeClock) -> None:
    w = world(settings.model_copy(update={"rate_limit_request_per_code": 1}), clock)
    session, _ = await w.sessions.create()
    await w.queue.submit(session.code, "get_codap_datasets", {}, client="1.2.3.4")
    with pytest.raises(RateLimited):
        await w.queue.submit(session.code, "get_codap_datasets", {}, client="1.2.3.4")
    w.store.blocking_reads = True  # the session and the limit read side by side: the session's error wins
    with pytest.raises(SessionNotFound):
        await w.queue.submit("NOSUCHCO", "get_codap_datasets", {}, client="1.2.3.4")
    with pytest.raises(RateLimited):
        await w.queue.submit(session.code, "get_codap_datasets", {}, client="1.2.3.4")


async def test_cancel_withdraws_only_what_the_plugin_has_not_received(settings: Settings, clock: FakeClock) -> None:
    w = world(settings, clock)
    session, _ = await w.sessions.create()
    code = session.code
    for rid in ("mcp-1", "mcp-2", "other"):
        await w.queue.submit(code, "get_codap_datasets", {}, rid)
    w.store.update_session(code, consumer="tab.1")
    w.store.deliver(code, "tab.1", 0, clock.now())  # all three delivered …
    await w.queue.submit(code, "get_codap_datasets", {}, "mcp-3")  # … but this one
    assert await w.queue.pending_ids(code, "mcp-") == ["mcp-1", "mcp-2", "mcp-3"]
    with w.notifier.listen(stream_key(code)) as stream, w.notifier.listen(answers_key(code)) as answers:
        assert await w.queue.cancel(code, ["mcp-1", "mcp-3", "nosuch"]) == ["mcp-3"]
        assert await stream.wait(0) and await answers.wait(0)
        assert await w.queue.cancel(code, ["mcp-3"]) == []  # once
        assert not await stream.wait(0)
    response = w.store.get_response(code, "mcp-3")
    assert response is not None and response.error_code == "cancelled"
    changes = w.store.get_changes(code)
    assert changes is not None and withdrawn_mark("get_codap_datasets", "mcp-3") in changes.marks
    assert await w.queue.pending_ids(code, "mcp-") == ["mcp-1", "mcp-2"]


async def test_a_clients_cancels_are_rate_limited_per_code(settings: Settings, clock: FakeClock) -> None:
    """A cancel costs a lookup and maybe a write: a client gets RATE_LIMIT_REQUEST_PER_CODE of them a minute, in a
    window of their own (its requests keep theirs), and the relay's own withdrawals (client None) are not counted."""
    w = world(settings.model_copy(update={"rate_limit_request_per_code": 2}), clock)
    session, _ = await w.sessions.create()
    code = session.code
    await w.queue.submit(code, "get_codap_datasets", {}, "mcp-1", client="1.2.3.4")
    for _ in range(2):
        assert await w.queue.cancel(code, ["nosuch"], client="1.2.3.4") == []
    with pytest.raises(RateLimited):
        await w.queue.cancel(code, ["mcp-1"], client="1.2.3.4")
    assert w.seen.limited == ["cancel"]
    assert await w.queue.cancel(code, ["mcp-1"], client="5.6.7.8") == ["mcp-1"]  # another address: its own window
    await w.queue.submit(code, "get_codap_datasets", {}, "mcp-2", client="1.2.3.4")  # requests: not used up
    assert await w.queue.cancel(code, ["mcp-2"]) == ["mcp-2"]
    clock.advance(60)
    assert await w.queue.cancel(code, ["nosuch"], client="1.2.3.4") == []  # the next minute
