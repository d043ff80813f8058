"""The push channel's relay side (relay/push.py, relay/push_out.py) through ``Relay``, with an in-memory publisher
that records every post: attach, resume, ping, supersede in each direction, what is published on submit, cancel and
close, a gone connection, the takeover race, refusals. tests/integration/test_relay_push_backends.py runs the key
scenarios on every store backend."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import boto3
import pytest
from moto import mock_aws

from codap_relay.errors import RequestNotFound, TokenInvalid
from codap_relay.records import DETACHED, SessionRecord, push_connection, push_consumer
from codap_relay.relay import Relay
from codap_relay.relay.publisher import PUSH_INLINE_BYTES, encode_message
from codap_relay.relay.push_out import PUBLISH_ATTEMPTS
from codap_relay.settings import Settings, SettingsError
from codap_relay.store.base import Store
from codap_relay.store.dynamodb import DynamoStore
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.dynamodb_local import CREDENTIALS, new_table
from codap_relay_tooling.testing.fake_publisher import FakePublisher
from codap_relay_tooling.testing.lagging_dynamodb import LaggingClient
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.store_backends import SerializedClient

TAB, TAB2 = "tab-aaaaaaaa", "tab-bbbbbbbb"
IP = "203.0.113.9"
TOOLS = [  # any arguments: the tests choose their sizes
    {"name": "get_codap_datasets", "description": "", "inputSchema": {"type": "object"}},
    {"name": "big_tool", "description": "", "inputSchema": {"type": "object"}},
]


class CountingStore(MemoryStore):
    """The memory store, counting ``deliver`` calls: the publish on submit may read only for a push consumer."""

    def __init__(self) -> None:
        super().__init__()
        self.delivers = 0

    def deliver(self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True) -> Any:
        self.delivers += 1
        return super().deliver(code, consumer, after_seq, now, fresh=fresh)


def relay_on(store: Store, publisher: FakePublisher, clock: FakeClock | None = None) -> Relay:
    return Relay(make_settings(), store, clock=clock or FakeClock(), ids=counting_ids(), publisher=publisher)


@pytest.fixture
def pub() -> FakePublisher:
    return FakePublisher()


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


@pytest.fixture
def relay(store: CountingStore, pub: FakePublisher, clock: FakeClock) -> Relay:
    return relay_on(store, pub, clock)


async def opened(relay: Relay) -> tuple[str, str]:
    session, token = await relay.sessions.create(TOOLS)
    return session.code, token


async def send(relay: Relay, conn: str, **message: Any) -> None:
    await relay.push.message(conn, json.dumps(message), client=IP)


async def attach(relay: Relay, conn: str, code: str, token: str, after: int | None = None, tab: str = TAB) -> None:
    await send(relay, conn, action="attach", code=code, token=token, tab=tab, after=after)


async def ask(relay: Relay, code: str, rid: str, args: dict[str, Any] | None = None) -> int:
    record, created = await relay.queue.submit(code, "get_codap_datasets", args or {}, rid, client=IP)
    assert created
    return record.seq


def session_of(relay: Relay, code: str) -> SessionRecord:
    found = relay.store.get_session(code)
    assert found is not None
    return found


def requests_in(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(m["seq"], m["id"]) for m in messages if m["event"] == "tool-request"]


# --- attach, resume, ping -------------------------------------------------------------------------------------


async def test_attach_takes_delivery_touches_presence_and_sends_what_after_calls_for(
    relay: Relay, pub: FakePublisher, clock: FakeClock
) -> None:
    code, token = await opened(relay)
    for rid in ("r1", "r2", "r3"):
        await ask(relay, code, rid)
    await attach(relay, "C1", code, token, after=1)
    stored = session_of(relay, code)
    assert stored.consumer == push_consumer(TAB, "C1") == f"{TAB}.push:C1" and stored.last_seen == clock.now()
    assert push_connection(stored.consumer) == "C1" and push_connection(f"{TAB}.uuid") is None
    assert (await relay.presence.status(code)).connected
    messages = pub.take("C1")
    assert requests_in(messages) == [(2, "r2"), (3, "r3")]
    assert messages[-1] == {"event": "resumed", "after": 1, "upTo": 3, "pingSeconds": relay.settings.push_ping_seconds}
    assert messages[0] == {"event": "tool-request", "seq": 2, "id": "r2", "tool": "get_codap_datasets", "args": {}}
    assert relay.store.get_request(code, "r2").status == "delivered"  # type: ignore[union-attr]
    assert pub.closed == []


async def test_resume_sends_every_unanswered_request_after_the_cursor(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    for rid in ("r1", "r2", "r3"):
        await ask(relay, code, rid)
    await relay.responses.respond(code, token, "r2", result={"ok": True})
    pub.take("C1")
    await send(relay, "C1", action="resume", after=0, code=code, token=token)
    messages = pub.take("C1")
    assert requests_in(messages) == [(1, "r1"), (3, "r3")]  # r2 answered: upTo says it will never come
    assert messages[-1] == {"event": "resumed", "after": 0, "upTo": 3}
    await send(relay, "C1", action="resume", after=9, code=code, token=token)  # more than the session issued
    reset = pub.take("C1")
    assert reset[0] == {"event": "cursor-reset", "lastEventId": 9, "lastSeq": 3}
    assert requests_in(reset) == [(1, "r1"), (3, "r3")] and reset[-1]["after"] == 0


async def test_ping_is_a_sign_of_life_and_resumes_when_it_missed_requests(
    relay: Relay, pub: FakePublisher, clock: FakeClock
) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.take("C1")
    clock.advance(relay.settings.push_ping_seconds)
    await send(relay, "C1", action="ping", after=0, code=code, token=token)
    assert pub.take("C1") == [{"event": "heartbeat"}]
    assert session_of(relay, code).last_seen == clock.now()  # touched: it was due
    relay.store.add_request(code, *_new("r1", clock))  # queued behind the relay's back: as if its post was lost
    await send(relay, "C1", action="ping", after=0, code=code, token=token)
    assert pub.take("C1") == [
        {"event": "heartbeat"},
        {"event": "tool-request", "seq": 1, "id": "r1", "tool": "get_codap_datasets", "args": {}},
        {"event": "resumed", "after": 0, "upTo": 1},
    ]
    await send(relay, "C1", action="ping", after=1, code=code, token=token)
    assert pub.take("C1") == [{"event": "heartbeat"}]


def _new(rid: str, clock: FakeClock) -> tuple[Any]:
    from codap_relay.records import NewRequest

    return (NewRequest(rid, "get_codap_datasets", {}, "f", clock.now(), clock.now() + 600),)


# --- supersede ------------------------------------------------------------------------------------------------


async def test_a_newer_push_connection_supersedes_the_older_one(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    await attach(relay, "C2", code, token, tab=TAB2)
    assert pub.events("C1")[-1] == "superseded" and pub.closed == ["C1"]
    assert session_of(relay, code).consumer == push_consumer(TAB2, "C2")
    await ask(relay, code, "r1")
    assert requests_in(pub.to("C2")) == [(1, "r1")] and requests_in(pub.to("C1")) == []
    pub.gone.discard("C1")  # the old socket, if it were still there, hears it once more on its ping
    await send(relay, "C1", action="ping", after=0, code=code, token=token)
    assert pub.events("C1")[-1] == "superseded" and pub.closed == ["C1", "C1"]


async def test_an_sse_stream_supersedes_a_push_connection(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    events = await relay.streams.open(code, token, None, tab=TAB2)
    assert pub.events("C1")[-1] == "superseded" and pub.closed == ["C1"]
    await events.aclose()


async def test_a_push_connection_supersedes_an_sse_stream(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    events = await relay.streams.open(code, token, None, tab=TAB2)
    assert (await anext(events)).event is None  # the retry preamble; the stream now waits
    await attach(relay, "C1", code, token)
    event = await asyncio.wait_for(anext(events), 5)
    assert event.event == "superseded"
    await events.aclose()


# --- publishing -------------------------------------------------------------------------------------------------


async def test_a_request_is_published_the_moment_it_is_stored_whatever_a_lagging_replica_says() -> None:
    """DynamoDB may answer a read that does not ask for consistency from a replica that has not seen the latest
    write yet. Right after an append the session's last seq is such a write: a publish decided on a stale read of it
    finds nothing new, and the request waits for the plugin's next ping (90 s), past the model's call. Here every
    read that may be stale misses the last three calls' writes (the store on moto, in process)."""
    with mock_aws():
        client = SerializedClient(boto3.client("dynamodb", **CREDENTIALS))
        store = DynamoStore(LaggingClient(client, 3, per_call=True), new_table(client))
        pub = FakePublisher()
        relay = relay_on(store, pub)
        code, token = await opened(relay)
        await attach(relay, "C1", code, token)
        pub.take("C1")
        for seq, rid in enumerate(("r1", "r2", "r3"), start=1):
            await ask(relay, code, rid)
            assert requests_in(pub.take("C1")) == [(seq, rid)], f"{rid} was not published when it was stored"


async def test_submit_publishes_inline_and_reads_nothing_more_without_a_push_consumer(
    relay: Relay, pub: FakePublisher, store: CountingStore
) -> None:
    code, token = await opened(relay)
    before = store.delivers
    await ask(relay, code, "r0")  # no consumer at all
    events = await relay.streams.open(code, token, 0, tab=TAB2)  # an SSE consumer
    await ask(relay, code, "r1")
    assert store.delivers == before and pub.posts == []  # the no-push path is untouched
    await events.aclose()
    await attach(relay, "C1", code, token, after=1)
    pub.take("C1")
    args = {"include": ["Mammals"]}
    seq = await ask(relay, code, "r2", args)
    assert pub.take("C1") == [
        {"event": "tool-request", "seq": seq, "id": "r2", "tool": "get_codap_datasets", "args": args}
    ]
    assert relay.store.get_request(code, "r2").status == "delivered"  # type: ignore[union-attr]


async def test_a_plugin_that_attached_after_the_submit_read_its_session_still_gets_the_request(
    relay: Relay, pub: FakePublisher, clock: FakeClock
) -> None:
    """The race the second read closes: the submit read the session (no consumer yet), the plugin attached and
    resumed, and only then was the request stored. Without the read it would wait for the next ping (90 s)."""
    code, token = await opened(relay)
    read_before_attach = session_of(relay, code)
    await attach(relay, "C1", code, token)
    pub.take("C1")
    record, _ = relay.store.add_request(code, *_new("r1", clock))
    await relay.push_out.new_request(read_before_attach, record)
    assert requests_in(pub.take("C1")) == [(1, "r1")]


async def test_a_request_over_the_inline_limit_travels_as_a_pointer(relay: Relay, pub: FakePublisher) -> None:
    session, token = await relay.sessions.create(TOOLS)
    await attach(relay, "C2", session.code, token)
    pub.take("C2")
    fits = {"text": "x" * (PUSH_INLINE_BYTES - 200)}
    big = {"text": "x" * PUSH_INLINE_BYTES}
    for rid, args in (("fits", fits), ("big", big)):
        await relay.queue.submit(session.code, "big_tool", args, rid, client=IP)
    inline, pointer = pub.take("C2")
    assert inline["args"] == fits and len(encode_message(inline)) <= PUSH_INLINE_BYTES
    assert pointer == {
        "event": "tool-request",
        "seq": 2,
        "id": "big",
        "tool": "big_tool",
        "pointer": f"/api/sessions/{session.code}/requests/big",
    }
    fetched = await relay.push.fetch(session.code, token, "big")
    assert (fetched.id, fetched.tool, fetched.args, fetched.seq) == ("big", "big_tool", big, 2)
    await relay.responses.respond(session.code, token, "big", result={"ok": True})
    assert (await relay.push.fetch(session.code, token, "big")).args == big  # a late fetch is harmless
    with pytest.raises(RequestNotFound):
        await relay.push.fetch(session.code, token, "nope")
    with pytest.raises(TokenInvalid):
        await relay.push.fetch(session.code, "wrong-token", "big")


async def test_cancel_tells_the_push_consumer_withdrawn(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await ask(relay, code, "r1", {"a": 1})  # queued while no tab is attached: withdrawable
    assert await relay.queue.cancel(code, ["r1"]) == ["r1"]
    await attach(relay, "C1", code, token, after=0)
    first = pub.take("C1")  # on attach, every withdrawn mark (as an opening SSE stream sends them)
    assert first[0] == {"event": "withdrawn", "id": "r1", "tool": "get_codap_datasets", "args": {"a": 1}}
    assert first[1:] == [{"event": "resumed", "after": 0, "upTo": 1, "pingSeconds": relay.settings.push_ping_seconds}]


async def test_cancel_posts_withdrawn_for_each_request_it_withdrew(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.gone.add("C1")  # the submit's posts are lost (and C1 detached): r1 and r2 stay queued
    await ask(relay, code, "r1", {"a": 1})
    await ask(relay, code, "r2")
    pub.gone.discard("C1")
    await attach(relay, "C2", code, token)  # delivers both
    relay.store.add_request(code, *_new("r3", clock=FakeClock(relay.clock.now())))  # queued, never delivered
    pub.take("C2")
    assert await relay.queue.cancel(code, ["r3", "r1"]) == ["r3"]  # r1 was delivered: it runs
    assert pub.take("C2") == [{"event": "withdrawn", "id": "r3", "tool": "get_codap_datasets", "args": {}}]
    # a resume from before r3 announces it again (the plugin shows each once, by id); from after it, not
    await send(relay, "C2", action="resume", after=2, code=code, token=token)
    assert pub.take("C2")[0]["event"] == "withdrawn"
    await send(relay, "C2", action="resume", after=3, code=code, token=token)
    assert pub.take("C2") == [{"event": "resumed", "after": 3, "upTo": 3}]


async def test_closing_the_session_tells_the_connection_and_closes_it(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    await relay.sessions.close(code, token)
    assert pub.events("C1")[-1] == "closed" and pub.closed == ["C1"]
    pub.gone.discard("C1")
    await attach(relay, "C1", code, token)  # an attach to an ended session hears so and is closed
    assert pub.events("C1")[-1] == "closed" and pub.closed == ["C1", "C1"]


async def test_a_gone_connection_is_detached_and_its_request_comes_on_the_next_attach(
    relay: Relay, pub: FakePublisher
) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.gone.add("C1")  # the tab went away without a word
    seq = await ask(relay, code, "r1")  # the 202 stands
    assert session_of(relay, code).consumer == DETACHED and not (await relay.presence.status(code)).connected
    assert relay.store.get_request(code, "r1").pending  # type: ignore[union-attr]
    await attach(relay, "C9", code, token, after=0)
    assert requests_in(pub.take("C9")) == [(seq, "r1")]


async def test_a_publish_fault_never_fails_the_submit(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.faulty.add("C1")
    seq = await ask(relay, code, "r1")
    assert session_of(relay, code).consumer == push_consumer(TAB, "C1")  # a fault is not a gone connection
    pub.faulty.clear()
    await send(relay, "C1", action="ping", after=0, code=code, token=token)  # the next ping catches up
    assert requests_in(pub.take("C1")) == [(seq, "r1")]


async def test_the_submits_own_post_is_tried_again_at_once_after_a_fault(relay: Relay, pub: FakePublisher) -> None:
    """A fault of the management API (a 5xx, a reset) on the post right after the append: tried again at once, so
    the request reaches the plugin now rather than at its next ping, 90 s later."""
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.take("C1")
    pub.fail_once(lambda conn, message: message.get("id") == "r1")
    seq = await ask(relay, code, "r1")
    assert requests_in(pub.take("C1")) == [(seq, "r1")]


async def test_a_post_that_keeps_failing_is_never_skipped(relay: Relay, pub: FakePublisher) -> None:
    """A post whose outcome stays unknown (a fault, not 410, each time it is tried) is not a post: ``resumed.upTo``
    stops short of it, so the plugin's next ping (from the cursor it set) gets the request again instead of only a
    heartbeat."""
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    pub.take("C1")
    pub.faulty.add("C1")  # the socket briefly unreachable: three requests queued meanwhile
    for rid in ("r1", "r2", "r3"):
        await ask(relay, code, rid)
    pub.faulty.clear()
    for _ in range(PUBLISH_ATTEMPTS):
        pub.fail_once(lambda conn, message: message.get("id") == "r2")
    await send(relay, "C1", action="resume", after=0, code=code, token=token)
    messages = pub.take("C1")
    sent = requests_in(messages)
    assert sent[0] == (1, "r1") and (2, "r2") not in sent
    up_to = messages[-1]["upTo"]
    assert messages[-1]["event"] == "resumed" and up_to < 2  # never past the last seq actually posted
    # the plugin's cursor is now upTo; its next ping catches up with r2 (and r3) in order
    await send(relay, "C1", action="ping", after=up_to, code=code, token=token)
    caught_up = pub.take("C1")
    assert requests_in(caught_up) == [(2, "r2"), (3, "r3")] and caught_up[-1]["upTo"] == 3


async def test_a_slow_publish_is_cut_short_and_counts_toward_the_calls_wait(clock: FakeClock) -> None:
    """A post gets PUSH_PUBLISH_SECONDS, with no retry, and the wait of a call runs from before its submit: a slow
    management API neither holds a ?wait call past its wait nor counts as sent."""
    slow = FakePublisher(blocking=True, delay=5)
    relay = Relay(
        make_settings(push_publish_seconds=0.6), MemoryStore(), clock=clock, ids=counting_ids(), publisher=slow
    )
    code, token = await opened(relay)
    started = time.monotonic()
    await attach(relay, "C1", code, token)  # its resumed post is unknown: no later message waits on it
    assert time.monotonic() - started < 2
    started = time.monotonic()
    record, answer = await relay.responses.call(code, "get_codap_datasets", {}, "r1", wait=0.3, client=IP)
    elapsed = time.monotonic() - started
    assert not answer.done and record.seq == 1
    assert 0.5 < elapsed < 0.85  # the publish's 0.6 s, then no more: the 0.3 s wait had already run out
    assert slow.posts == []


async def test_a_takeover_that_races_the_submit_gets_the_request(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    stale = session_of(relay, code)  # what the submit read, before the takeover
    await attach(relay, "C2", code, token, tab=TAB2)
    pub.take("C1")
    pub.take("C2")
    record, _ = await relay.queue.submit(code, "get_codap_datasets", {}, "r1", client=IP, session=stale)
    assert requests_in(pub.take("C2")) == [(record.seq, "r1")] and pub.take("C1") == []


# --- refusals --------------------------------------------------------------------------------------------------


async def test_a_wrong_token_or_an_unknown_code_is_told_and_closed(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, "not-the-token")
    assert pub.take("C1")[0]["code"] == "token_invalid" and pub.closed == ["C1"]
    await attach(relay, "C2", "ZZZZ2222", token)
    error = pub.take("C2")[0]
    assert (error["event"], error["code"]) == ("error", "session_not_found") and pub.closed == ["C1", "C2"]
    await send(relay, "C3", action="attach", code=code, tab=TAB)
    assert pub.take("C3")[0]["code"] == "token_required"
    assert session_of(relay, code).consumer is None  # none of them took delivery


async def test_a_malformed_message_gets_bad_input_and_closes_the_connection(relay: Relay, pub: FakePublisher) -> None:
    """The plugin never sends one: a client that does is told why and loses its socket (API Gateway then runs
    $disconnect), rather than holding a connection whose every message costs the stage."""
    code, token = await opened(relay)
    bodies: list[str | None] = [
        "not json",
        "[]",
        '{"action":"subscribe"}',
        json.dumps({"action": "ping", "after": -1}),
        None,
        json.dumps({"action": "attach", "code": code, "token": token, "tab": "short"}),
        json.dumps({"action": "resume", "after": "7", "code": code, "token": token}),
        json.dumps({"action": "ping", "after": 0}),  # no session named: the relay keeps nothing per connection
    ]
    for n, body in enumerate(bodies):
        await relay.push.message(f"B{n}", body)
    errors = [pub.take(f"B{n}") for n in range(len(bodies))]
    assert [[(m["event"], m["code"]) for m in e] for e in errors] == [[("error", "bad_input")]] * len(bodies)
    assert pub.closed == [f"B{n}" for n in range(len(bodies))]
    last = errors[-1][0]
    assert all(e[0]["message"] for e in errors) and last["field"] == "code" and '"token"' in last["message"]
    assert session_of(relay, code).consumer is None


async def test_a_connection_past_its_message_rate_is_closed(pub: FakePublisher, clock: FakeClock) -> None:
    relay = Relay(
        make_settings(rate_limit_push_messages_per_connection=5),
        MemoryStore(),
        clock=clock,
        ids=counting_ids(),
        publisher=pub,
    )
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    for _ in range(4):
        await send(relay, "C1", action="ping", after=0, code=code, token=token)
    assert pub.closed == [] and pub.events("C1")[-1] == "heartbeat"
    await send(relay, "C1", action="ping", after=0, code=code, token=token)  # the sixth in this minute
    last = pub.to("C1")[-1]
    assert (last["event"], last["code"]) == ("error", "rate_limited") and pub.closed == ["C1"]
    await attach(relay, "C2", code, token)  # another connection has a count of its own
    assert pub.events("C2")[-1] == "resumed"


async def test_a_connection_that_is_not_attached_is_told_and_closed(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await send(relay, "C1", action="resume", after=0, code=code, token=token)
    error = pub.take("C1")
    assert [(m["event"], m["code"]) for m in error] == [("error", "not_attached")] and pub.closed == ["C1"]
    await send(relay, "C2", action="ping", after=0, code=code, token=token)
    assert pub.events("C2") == ["error"] and pub.closed == ["C1", "C2"]
    assert session_of(relay, code).last_seen is None  # no sign of life from a stranger


def test_push_settings_go_together_and_name_their_schemes() -> None:
    good = Settings.from_env(
        {
            "RELAY_STORE": "memory:",
            "PUSH_URL": "wss://a.execute-api.us-east-1.amazonaws.com/v1/",
            "PUSH_ENDPOINT": "https://a.execute-api.us-east-1.amazonaws.com/v1",
        }
    )
    assert good.push_url == "wss://a.execute-api.us-east-1.amazonaws.com/v1"
    assert (
        Settings.from_env(
            {"RELAY_STORE": "memory:", "PUSH_URL": "ws://127.0.0.1:9/v1", "PUSH_ENDPOINT": "http://127.0.0.1:9/v1"}
        ).push_endpoint
        == "http://127.0.0.1:9/v1"
    )
    for env in (
        {"PUSH_URL": "wss://a.example/v1"},
        {"PUSH_ENDPOINT": "https://a.example/v1"},
        {"PUSH_URL": "ws://a.example/v1", "PUSH_ENDPOINT": "https://a.example/v1"},
        {"PUSH_URL": "wss://a.example/v1", "PUSH_ENDPOINT": "http://a.example/v1"},
    ):
        with pytest.raises(SettingsError, match="PUSH"):
            Settings.from_env({"RELAY_STORE": "memory:", **env})


async def test_pagehide_detaches_the_tabs_push_connection_too(relay: Relay, pub: FakePublisher) -> None:
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    assert await relay.streams.detach(code, token, TAB)  # records.owns covers f"{tab}.push:{connection}"
    assert session_of(relay, code).consumer == DETACHED and not (await relay.presence.status(code)).connected
    await send(relay, "C1", action="ping", after=0, code=code, token=token)
    assert pub.to("C1")[-1]["code"] == "not_attached" and pub.closed == ["C1"]


async def test_disconnect_detaches_the_connection_at_once_and_never_a_newer_one(
    relay: Relay, pub: FakePublisher
) -> None:
    """$disconnect names only the connection: the attach stored which session and consumer it took."""
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    assert await relay.push.disconnected("C1")
    assert session_of(relay, code).consumer == DETACHED and not (await relay.presence.status(code)).connected
    assert not await relay.push.disconnected("C1")  # a second $disconnect finds nothing to do
    await attach(relay, "C2", code, token)
    await attach(relay, "C3", code, token, tab=TAB2)  # C3 took over; C2's socket closes after
    assert not await relay.push.disconnected("C2")
    assert session_of(relay, code).consumer == push_consumer(TAB2, "C3")
    assert not await relay.push.disconnected("never-attached")


async def test_a_push_plugin_counts_as_connected_for_two_and_a_half_pings(pub: FakePublisher, clock: FakeClock) -> None:
    """It is seen only when it pings (PUSH_PING_SECONDS): the LLM must not see it drop between two pings, and must
    see it gone once pings stopped; a streaming plugin keeps the shorter CONNECTED_GRACE_SECONDS. (At pings 90 s
    apart: at the default 480 s the code's own SESSION_TTL_SECONDS, 600, ends it first.)"""
    relay = Relay(make_settings(push_ping_seconds=90), MemoryStore(), clock=clock, ids=counting_ids(), publisher=pub)
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    ping, grace = relay.settings.push_ping_seconds, relay.settings.push_grace_seconds
    assert grace == 2.5 * ping > relay.settings.connected_grace_seconds
    clock.advance(ping * 2)
    assert (await relay.presence.status(code)).connected
    assert not relay.presence.touch_due(session_of(relay, code).with_(last_seen=clock.now() - ping / 2 + 1))
    clock.advance(ping * 0.5 + 1)
    assert not (await relay.presence.status(code)).connected
    await send(relay, "C1", action="ping", after=0, code=code, token=token)  # a ping brings it back
    assert (await relay.presence.status(code)).connected


# --- the plugin's answers over its socket ------------------------------------------------------------------------


async def test_an_answer_over_the_socket_is_stored_as_post_response_stores_it_and_said_taken(
    relay: Relay, pub: FakePublisher
) -> None:
    """A message costs the relay less than a REST request: the plugin answers over its socket when it can. The
    same checks (token, first answer wins) and the same write; the relay says ``answered``, or refuses with the
    status ``POST /response`` would give, and the connection stays either way."""
    code, token = await opened(relay)
    await attach(relay, "C1", code, token)
    await ask(relay, code, "r1")
    pub.take("C1")
    await send(relay, "C1", action="answer", code=code, token=token, id="r1", result={"datasets": []})
    assert pub.take("C1") == [{"event": "answered", "id": "r1"}]
    stored = relay.store.get_response(code, "r1")
    assert stored is not None and stored.body == {"result": {"datasets": []}}
    await send(relay, "C1", action="answer", code=code, token=token, id="r1", result={"other": 1})
    [refused] = pub.take("C1")
    assert (refused["event"], refused["id"], refused["status"], refused["code"]) == (
        "answer-refused",
        "r1",
        409,
        "already_answered",
    )
    await send(relay, "C1", action="answer", code=code, token="not-the-token", id="r1", result=1)
    assert [(m["event"], m["status"]) for m in pub.take("C1")] == [("answer-refused", 403)]
    await send(relay, "C1", action="answer", code=code, token=token, id="r1")  # neither result nor error
    assert [(m["event"], m["status"]) for m in pub.take("C1")] == [("answer-refused", 400)]
    assert "C1" not in pub.closed
