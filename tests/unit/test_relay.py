"""The service on the memory store with an injected clock: exact TTLs, no sockets, no sleeps for state."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from codap_relay import errors as e
from codap_relay.catalog import plugin_tools
from codap_relay.delivery import StreamEvent
from codap_relay.errors import RequestExpired
from codap_relay.http.schemas import entry_size, full_entry, log_entry, trace_entry
from codap_relay.manifest import check_manifest
from codap_relay.notify import Notifier
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.relay_settings import make_settings

DATASET = {"datasetName": "s", "dataType": "random_numbers", "recordCount": 5}


async def log_of(relay: Relay, code: str, token: str | None) -> list[dict[str, Any]]:
    """The activity log as GET /api/sessions/{code}/log shows it."""
    return [log_entry(item) for item in await relay.log.items(code, token)]


async def trace_of(
    relay: Relay, code: str, token: str | None, *, after: int = 0
) -> tuple[list[dict[str, Any]], int | None]:
    """A trace page as GET /api/sessions/{code}/log?view=trace shows it."""
    items, following = await relay.log.page(code, token, size_of=entry_size(trace_entry), after=after)
    return [trace_entry(item) for item in items], following


def make_relay(clock: FakeClock, **settings: Any) -> Relay:
    return Relay(make_settings(**settings), MemoryStore(), clock=clock, ids=counting_ids())


async def next_event(
    events: AsyncIterator[StreamEvent], skip: tuple[str | None, ...] = (None, "heartbeat")
) -> StreamEvent:
    async def first() -> StreamEvent:
        async for ev in events:
            if ev.event not in skip:
                return ev
        raise AssertionError("stream ended")

    return await asyncio.wait_for(first(), 5)


async def test_create_session_stores_only_a_hash_of_the_token(relay: Relay) -> None:
    session, token = await relay.sessions.create()
    assert len(session.code) == 8 and token not in repr(relay.store.get_session(session.code))
    assert session.expires_at - session.created_at == 600


async def test_code_collision_retries_with_a_new_code(clock: FakeClock) -> None:
    codes = iter(["AAAAAAAA", "AAAAAAAA", "BBBBBBBB"])
    relay = Relay(make_settings(), MemoryStore(), clock=clock, codes=lambda: next(codes))
    first, _ = await relay.sessions.create()
    second, _ = await relay.sessions.create()
    assert (first.code, second.code) == ("AAAAAAAA", "BBBBBBBB")


async def test_code_space_exhausted_is_a_503_not_a_loop(clock: FakeClock) -> None:
    relay = Relay(make_settings(), MemoryStore(), clock=clock, codes=itertools.repeat("AAAAAAAA").__next__)
    await relay.sessions.create()
    with pytest.raises(e.StoreUnavailable):
        await relay.sessions.create()


async def test_plugin_manifest_is_validated(relay: Relay) -> None:
    with pytest.raises(e.InvalidManifest, match="inputSchema"):
        await relay.sessions.create([{"name": "x", "inputSchema": {"type": "string"}}])
    with pytest.raises(e.InvalidManifest, match="twice"):
        tool = {"name": "x", "inputSchema": {"type": "object"}}
        await relay.sessions.create([tool, tool])
    with pytest.raises(e.InvalidManifest, match="not a valid JSON Schema"):
        await relay.sessions.create([{"name": "x", "inputSchema": {"type": "object", "properties": 3}}])
    session, _ = await relay.sessions.create([{"name": "only_tool", "inputSchema": {"type": "object"}}])
    assert [t["name"] for t in (await relay.sessions.metadata(session.code)).tools] == ["only_tool"]


async def test_an_invalid_schema_is_refused_each_time_and_a_valid_one_is_checked_once(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every tab of a class registers the same manifest: its schemas are checked against the metaschema once per
    process (0.6 s of CPU for the plugin's), and a schema found invalid stays refused."""
    from jsonschema import Draft202012Validator

    checked: list[object] = []
    check = Draft202012Validator.check_schema

    def counted(schema: object) -> None:
        checked.append(schema)
        check(schema)

    monkeypatch.setattr(Draft202012Validator, "check_schema", counted)
    valid = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 7919}}}  # a schema no test has
    invalid = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "7919"}}}
    for _ in range(3):
        await relay.sessions.create([{"name": "counted", "inputSchema": valid, "outputSchema": valid}])
        with pytest.raises(e.InvalidManifest, match="not a valid JSON Schema"):
            await relay.sessions.create([{"name": "counted", "inputSchema": invalid}])
        # The plugin's own manifest, exactly as the relay ships it, is known valid: never checked again
        await relay.sessions.create([dict(tool) for tool in plugin_tools()])
    assert checked == [valid, invalid]


def test_the_manifest_the_relay_ships_for_the_plugin_is_valid() -> None:
    """What lets the relay take the plugin's manifest unchecked: a change to a tool's definitions that broke its
    schema fails here, whatever a cache remembers."""
    from jsonschema import Draft202012Validator

    tools = [dict(tool) for tool in plugin_tools()]
    assert check_manifest(tools) == tools
    for tool in tools:
        for key in ("inputSchema", "outputSchema"):
            if key in tool:
                Draft202012Validator.check_schema(tool[key])


async def test_submit_validates_tool_and_args(relay: Relay) -> None:
    s, _ = await relay.sessions.create()
    with pytest.raises(e.UnknownTool) as unknown:
        await relay.queue.submit(s.code, "delete_everything", {})
    assert "create_codap_dataset" in unknown.value.available
    with pytest.raises(e.InvalidArguments) as bad:
        await relay.queue.submit(s.code, "create_codap_dataset", {**DATASET, "recordCount": 5000})
    assert bad.value.path == "args.recordCount"
    with pytest.raises(e.InvalidArguments) as extra:
        await relay.queue.submit(s.code, "get_codap_datasets", {"x": 1})
    assert "'x' is not an argument it takes" in extra.value.message and "It takes none: send {}" in extra.value.message
    assert extra.value.available == []
    with pytest.raises(e.BadInput):
        await relay.queue.submit(s.code, "get_codap_datasets", {}, "bad id with spaces")
    assert relay.store.list_requests(s.code) == []


async def test_idempotent_retry_and_conflicting_reuse(relay: Relay) -> None:
    s, _ = await relay.sessions.create()
    first, created = await relay.queue.submit(s.code, "create_codap_dataset", DATASET, "r-1")
    again, created_again = await relay.queue.submit(s.code, "create_codap_dataset", dict(DATASET), "r-1")
    assert (created, created_again, again.seq) == (True, False, first.seq)
    with pytest.raises(e.DuplicateRequestId):
        await relay.queue.submit(s.code, "create_codap_dataset", {**DATASET, "recordCount": 6}, "r-1")
    assert len(relay.store.list_requests(s.code)) == 1


async def test_generated_ids_and_gapless_seq(relay: Relay) -> None:
    s, _ = await relay.sessions.create()
    records = [(await relay.queue.submit(s.code, "get_codap_datasets", {}))[0] for _ in range(3)]
    assert [(r.id, r.seq) for r in records] == [("req-1", 1), ("req-2", 2), ("req-3", 3)]


async def test_session_expiry_is_exact_and_slides_while_plugin_is_seen(relay: Relay, clock: FakeClock) -> None:
    s, token = await relay.sessions.create()
    clock.advance(599)
    await relay.sessions.for_plugin(s.code, token)
    await relay.presence.touch(s)  # what an open stream does
    clock.advance(599)
    assert (await relay.sessions.for_llm(s.code)).code == s.code
    clock.advance(1)
    with pytest.raises(e.SessionNotFound) as info:
        await relay.sessions.for_llm(s.code)
    assert info.value.reason == "expired" and "new code" in info.value.message


async def test_connected_means_seen_within_grace(relay: Relay, clock: FakeClock) -> None:
    s, token = await relay.sessions.create()
    assert (await relay.presence.status(s.code)).connected is False
    events = await relay.streams.open(s.code, token, None)
    await events.aclose()
    assert (await relay.presence.status(s.code)).connected is True
    clock.advance(31)
    assert (await relay.presence.status(s.code)).connected is False


async def test_tokens_guard_the_plugin_role(relay: Relay) -> None:
    a, token_a = await relay.sessions.create()
    b, token_b = await relay.sessions.create()
    with pytest.raises(e.TokenMissing):
        await relay.streams.open(a.code, None, None)
    with pytest.raises(e.TokenInvalid):
        await relay.streams.open(a.code, token_b, None)
    with pytest.raises(e.TokenInvalid):
        await log_of(relay, a.code, token_b)
    with pytest.raises(e.TokenInvalid):
        await relay.sessions.close(b.code, token_a)


async def test_compatibility_mode_accepts_code_only(clock: FakeClock) -> None:
    relay = make_relay(clock, require_browser_token=False)
    s, _token = await relay.sessions.create()
    events = await relay.streams.open(s.code, None, None)
    await events.aclose()
    with pytest.raises(e.TokenInvalid):  # a wrong token is still wrong
        await relay.streams.open(s.code, "nope", None)


async def test_answer_lifecycle(relay: Relay, clock: FakeClock) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    assert (await relay.responses.answer(s.code, r.id)).request.status == "queued"  # type: ignore[union-attr]
    events = await relay.streams.open(s.code, token, None)
    ev = await next_event(events)
    assert (
        ev.event == "tool-request"
        and ev.id == "1"
        and ev.data == {"id": r.id, "tool": "get_codap_datasets", "args": {}}
    )
    await next_event(events, skip=(None,))  # the generator marks delivery after the yield
    assert (await relay.responses.answer(s.code, r.id)).request.status == "delivered"  # type: ignore[union-attr]
    stored = await relay.responses.respond(s.code, token, r.id, result={"datasets": []})
    assert stored.status == "completed"
    done = await relay.responses.answer(s.code, r.id)
    assert done.done and done.response is not None and done.response.body == {"result": {"datasets": []}}
    await events.aclose()


async def test_responses_first_answer_wins_and_identical_repeat_is_fine(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    await relay.responses.respond(s.code, token, r.id, error={"message": "No dataset", "code": "codap_error"})
    again = await relay.responses.respond(s.code, token, r.id, error={"message": "No dataset", "code": "codap_error"})
    assert again.status == "failed"
    with pytest.raises(e.AlreadyAnswered):
        await relay.responses.respond(s.code, token, r.id, result={"ok": True})


async def test_answer_for_another_sessions_request_is_404(relay: Relay) -> None:
    a, _token_a = await relay.sessions.create()
    b, token_b = await relay.sessions.create()
    r, _ = await relay.queue.submit(a.code, "get_codap_datasets", {})
    with pytest.raises(e.RequestNotFound):
        await relay.responses.respond(b.code, token_b, r.id, result=1)
    with pytest.raises(e.RequestNotFound):
        await relay.responses.answer(b.code, r.id)
    assert relay.store.get_request(a.code, r.id).status == "queued"  # type: ignore[union-attr]


async def test_expired_requests_are_not_delivered_and_the_llm_learns_why(relay: Relay, clock: FakeClock) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    for _ in range(12):  # an hour, the plugin keeping the session itself alive meanwhile
        clock.advance(300)
        await relay.presence.touch(await relay.sessions.for_llm(s.code))
    with pytest.raises(RequestExpired) as info:
        await relay.responses.answer(s.code, r.id)
    assert "expired" in info.value.message
    with pytest.raises(RequestExpired):
        await relay.responses.respond(s.code, token, r.id, result=1)
    events = await relay.streams.open(s.code, token, None)
    assert (await next_event(events, skip=(None,))).event == "heartbeat"
    await events.aclose()
    assert [x["status"] for x in await log_of(relay, s.code, token)] == ["expired"]


async def test_results_outlive_the_pairing_code(relay: Relay, clock: FakeClock) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    await relay.responses.respond(s.code, token, r.id, result={"n": 1})
    clock.advance(1000)  # session (600 s) gone, response (3600 s) kept
    assert (await relay.responses.answer(s.code, r.id)).done
    clock.advance(3000)
    with pytest.raises(e.RequestNotFound):
        await relay.responses.answer(s.code, r.id)


async def test_stream_cursor_resumes_and_unknown_cursor_is_reported(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    ids = [(await relay.queue.submit(s.code, "get_codap_datasets", {}, f"r{i}"))[0].id for i in range(1, 11)]
    events = await relay.streams.open(s.code, token, 8)
    got = [(await next_event(events)).data["id"] for _ in range(2)]
    assert got == ids[8:]
    r11, _ = await relay.queue.submit(s.code, "get_codap_datasets", {}, "r11")
    assert (await next_event(events)).data["id"] == r11.id
    await events.aclose()
    events = await relay.streams.open(s.code, token, 99)
    reset = await next_event(events)
    assert reset.event == "cursor-reset" and reset.data == {"lastEventId": 99, "lastSeq": 11}
    assert (await next_event(events)).data["id"] == "r1"
    await events.aclose()


async def test_without_cursor_every_unanswered_request_is_resent(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    for i in range(3):
        await relay.queue.submit(s.code, "get_codap_datasets", {}, f"r{i}")
    await relay.responses.respond(s.code, token, "r1", result=1)
    events = await relay.streams.open(s.code, token, None)
    assert [(await next_event(events)).data["id"] for _ in range(2)] == ["r0", "r2"]
    await events.aclose()


async def test_new_stream_supersedes_old(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    old = await relay.streams.open(s.code, token, None)
    assert (await next_event(old, skip=())).event is None  # retry preamble
    new = await relay.streams.open(s.code, token, None)
    assert (await next_event(old)).event == "superseded"
    await relay.queue.submit(s.code, "get_codap_datasets", {}, "only-new")
    assert (await next_event(new)).data["id"] == "only-new"
    await new.aclose()


async def test_a_tab_that_detaches_ends_its_stream_silently_and_shows_as_not_connected(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    stream = await relay.streams.open(s.code, token, None, tab="tab-aaaaaaaa")
    assert (await next_event(stream, skip=())).event is None  # retry preamble: the stream is attached
    assert (await relay.presence.status(s.code)).connected
    assert not await relay.streams.detach(s.code, token, "tab-bbbbbbbb")  # another tab's detach leaves it alone
    assert await relay.streams.detach(s.code, token, "tab-aaaaaaaa")
    with pytest.raises(AssertionError, match="stream ended"):  # no "superseded": the page is gone (or comes back)
        await next_event(stream)
    assert not (await relay.presence.status(s.code)).connected  # at once, although it was seen just now
    with pytest.raises(e.TokenInvalid):
        await relay.streams.detach(s.code, "nope", "tab-aaaaaaaa")
    again = await relay.streams.open(s.code, token, None, tab="tab-aaaaaaaa")  # back (bfcache): attached again
    assert (await next_event(again, skip=())).event is None
    assert (await relay.presence.status(s.code)).connected
    await again.aclose()


async def test_close_session_fails_pending_and_ends_stream(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    events = await relay.streams.open(s.code, token, None)
    assert (await next_event(events)).event == "tool-request"
    assert await relay.sessions.close(s.code, token) == 1
    assert (await next_event(events)).event == "closed"
    answer = await relay.responses.answer(s.code, r.id)
    assert answer.response is not None and answer.response.body["error"]["code"] == "session_closed"
    with pytest.raises(e.SessionNotFound) as info:
        await relay.queue.submit(s.code, "get_codap_datasets", {})
    assert info.value.reason == "closed"


async def test_wait_answer_returns_when_answer_lands(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    waiter = asyncio.create_task(relay.responses.wait_answer(s.code, r.id, 20))
    await asyncio.sleep(0)
    assert not waiter.done()
    await relay.responses.respond(s.code, token, r.id, result={"ok": 1})
    answer = await asyncio.wait_for(waiter, 5)
    assert answer.done


async def test_wait_answer_gives_up_with_current_state(relay: Relay) -> None:
    s, _ = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    answer = await relay.responses.wait_answer(s.code, r.id, 0.05)
    assert not answer.done and answer.request is not None and answer.request.status == "queued"


async def test_rate_limits_admit_exactly_the_limit_per_window(clock: FakeClock) -> None:
    relay = make_relay(clock, rate_limit_session_per_ip=3, rate_limit_request_per_code=2)
    clock.set(1_800_000_000.0)  # start of a window
    for _ in range(3):
        await relay.sessions.create(client="1.2.3.4")
    with pytest.raises(e.RateLimited) as info:
        await relay.sessions.create(client="1.2.3.4")
    assert info.value.retry_after == 60
    await relay.sessions.create(client="5.6.7.8")  # other clients are not affected
    clock.advance(60)
    s, _ = await relay.sessions.create(client="1.2.3.4")
    await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    with pytest.raises(e.RateLimited):
        await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    assert len(relay.store.list_requests(s.code)) == 2


async def test_guessing_guard_blocks_all_lookups_after_too_many_unknown_codes(clock: FakeClock) -> None:
    relay = make_relay(clock, guess_limit_per_ip=3)
    clock.set(1_800_000_000.0)
    s, _ = await relay.sessions.create()
    for guess in ["AAAAAAAA", "BBBBBBBB", "CCCCCCCC"]:
        with pytest.raises(e.SessionNotFound):
            await relay.sessions.metadata(guess, client="6.6.6.6")
    with pytest.raises(e.RateLimited):
        await relay.sessions.metadata("DDDDDDDD", client="6.6.6.6")
    with pytest.raises(e.RateLimited):  # a real code is refused too: no oracle
        await relay.sessions.metadata(s.code, client="6.6.6.6")
    assert (await relay.sessions.metadata(s.code, client="7.7.7.7")).version == "1.0.0"
    clock.advance(60)
    assert (await relay.sessions.metadata(s.code, client="6.6.6.6")).version == "1.0.0"


async def test_a_plugin_with_its_own_token_passes_the_guard_a_wrong_token_does_not(clock: FakeClock) -> None:
    """Security finding: 21 unknown-code lookups from a school's address cut off every live plugin there. The
    plugin's calls carry their session's token and pass; a guesser's wrong token or unknown code does not."""
    relay = make_relay(clock, guess_limit_per_ip=3)
    clock.set(1_800_000_000.0)
    s, token = await relay.sessions.create()
    for guess in ["AAAAAAAA", "BBBBBBBB", "CCCCCCCC"]:
        with pytest.raises(e.SessionNotFound):
            await relay.sessions.metadata(guess, client="6.6.6.6")
    with pytest.raises(e.RateLimited):  # the address is cut off now
        await relay.sessions.metadata("DDDDDDDD", client="6.6.6.6")
    assert (await relay.sessions.for_plugin(s.code, token, client="6.6.6.6")).code == s.code
    with pytest.raises(e.RateLimited):
        await relay.sessions.for_plugin(s.code, token + "x", client="6.6.6.6")
    with pytest.raises(e.RateLimited):
        await relay.sessions.for_plugin("EEEEEEEE", token, client="6.6.6.6")
    with pytest.raises(e.RateLimited):  # the LLM's role has no token: the code alone stays guarded
        await relay.sessions.metadata(s.code, client="6.6.6.6")


async def test_activity_log_hides_arguments_unless_asked(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "create_codap_dataset", DATASET)
    await relay.responses.respond(s.code, token, r.id, result={"made": True})
    [entry] = await log_of(relay, s.code, token)
    assert "args" not in entry and entry["status"] == "completed" and entry["latencyMs"] == 0
    [item], following = await relay.log.page(s.code, token, size_of=entry_size(full_entry))
    full = full_entry(item)
    assert following is None
    assert full["args"] == DATASET and full["result"] == {"made": True}


async def test_an_ended_sessions_log_stays_readable_for_the_grace_and_no_longer(clock: FakeClock) -> None:
    relay = make_relay(clock, log_grace_seconds=300)
    closed, closed_token = await relay.sessions.create()
    await relay.queue.submit(closed.code, "get_codap_datasets", {}, "kept")
    await relay.sessions.close(closed.code, closed_token)
    expired, expired_token = await relay.sessions.create()  # its code expires 600 s from now, unseen
    clock.advance(299)
    assert [x["id"] for x in await log_of(relay, closed.code, closed_token)] == ["kept"]
    assert [x["id"] for x in (await trace_of(relay, closed.code, closed_token))[0]] == ["kept"]
    with pytest.raises(e.TokenInvalid):  # the grace is the plugin's: its token is still needed
        await log_of(relay, closed.code, expired_token)
    with pytest.raises(e.SessionNotFound):  # the session itself stays ended
        await relay.queue.submit(closed.code, "get_codap_datasets", {})
    clock.advance(2)
    with pytest.raises(e.SessionNotFound):
        await log_of(relay, closed.code, closed_token)
    clock.advance(300)  # 601 s: the other code expired 1 s ago
    assert await log_of(relay, expired.code, expired_token) == []
    with pytest.raises(e.SessionNotFound) as info:
        await relay.sessions.metadata(expired.code)
    assert info.value.reason == "expired"
    clock.advance(300)
    with pytest.raises(e.SessionNotFound):
        await trace_of(relay, expired.code, expired_token)


async def test_without_a_grace_an_ended_sessions_log_is_gone(clock: FakeClock) -> None:
    relay = make_relay(clock, log_grace_seconds=0)
    s, token = await relay.sessions.create()
    await relay.sessions.close(s.code, token)
    with pytest.raises(e.SessionNotFound) as info:
        await log_of(relay, s.code, token)
    assert info.value.reason == "closed"


async def test_trace_pages_carry_arguments_and_summaries_in_seq_order(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, token = await relay.sessions.create()
    for n in range(5):
        args = {"datasetName": "d", "cases": [{"n": n, "pad": "x" * 400}]}
        r, _ = await relay.queue.submit(s.code, "add_codap_cases", args)
        if n < 3:
            text = f"Added case {n}.\nMore detail."
            await relay.responses.respond(s.code, token, r.id, result={"content": [{"type": "text", "text": text}]})
    await relay.responses.respond(s.code, token, "req-4", error={"message": "CODAP refused it", "code": "codap_error"})
    monkeypatch.setattr("codap_relay.relay.log.LOG_PAGE_BYTES", 1000)  # about two entries a page
    pages: list[list[dict[str, Any]]] = []
    after: int | None = 0
    while after is not None:
        entries, after = await trace_of(relay, s.code, token, after=after)
        pages.append(entries)
    assert [len(p) for p in pages] == [2, 2, 1]
    entries = [x for p in pages for x in p]
    assert [x["seq"] for x in entries] == [1, 2, 3, 4, 5]
    assert [x["args"]["cases"][0]["n"] for x in entries] == [0, 1, 2, 3, 4]
    summaries = [x["summary"] for x in entries]
    assert summaries == ["Added case 0.", "Added case 1.", "Added case 2.", "CODAP refused it", None]
    assert [x["status"] for x in entries] == ["completed"] * 3 + ["failed", "queued"]


async def test_respond_refuses_a_result_with_a_bad_image_and_stores_nothing(relay: Relay) -> None:
    s, token = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    fake = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(b"<svg onload=x>").decode()}
    with pytest.raises(e.InvalidResult) as info:
        await relay.responses.respond(s.code, token, r.id, result={"content": [{"type": "text", "text": "x"}, fake]})
    assert info.value.data["field"] == "result.content[1].data"
    assert not (await relay.responses.answer(s.code, r.id)).done
    await relay.responses.respond(
        s.code, token, r.id, error={"message": "the picture failed", "code": "result_invalid"}
    )
    assert (await relay.responses.answer(s.code, r.id)).done


class BrokenStore(MemoryStore):
    def add_request(self, *a: Any, **k: Any) -> Any:
        raise ConnectionError("store down")


async def test_unexpected_store_failure_is_store_unavailable(clock: FakeClock) -> None:
    relay = Relay(make_settings(), BrokenStore(), clock=clock)
    s, _ = await relay.sessions.create()
    with pytest.raises(e.StoreUnavailable) as info:
        await relay.queue.submit(s.code, "get_codap_datasets", {})
    assert info.value.retry_after >= 1


class ClosesDuringSubmit(MemoryStore):
    """The plugin ends the session between the relay's session check and its append."""

    def add_request(self, code: str, new: Any, *, last_seq: int | None = None, charges: Any = ()) -> Any:
        self.update_session(code, closed_at=1.0)
        return super().add_request(code, new, last_seq=last_seq, charges=charges)


async def test_a_session_ended_during_submit_takes_nothing_and_says_why(clock: FakeClock) -> None:
    relay = Relay(make_settings(), ClosesDuringSubmit(), clock=clock)
    s, _ = await relay.sessions.create()
    with pytest.raises(e.SessionNotFound) as info:
        await relay.queue.submit(s.code, "get_codap_datasets", {}, "late")
    assert info.value.reason == "closed" and "new code" in info.value.message
    assert relay.store.get_request(s.code, "late") is None


# --- doing less: what the relay reads and writes, and when ---------------------------------------------------


class Counted(MemoryStore):
    """The memory store, counting calls by method; ``pushes`` False makes every wait poll (as on DynamoDB)."""

    def __init__(self, *, pushes: bool = True, blocking: bool = False) -> None:
        super().__init__()
        self.pushes, self.blocking = pushes, blocking
        self.calls: list[str] = []

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if callable(attr) and not name.startswith("_") and name in type(self).__mro__[1].__dict__:
            self_calls = super().__getattribute__("calls")

            def counted(*args: Any, **kwargs: Any) -> Any:
                self_calls.append(name)
                return attr(*args, **kwargs)

            return counted
        return attr


class Silent(Notifier):
    """No in-process wake-ups, as between Lambda instances: waits end by polling alone."""

    def notify(self, key: str) -> None:
        pass


async def test_an_answer_stored_while_the_request_is_queued_still_wakes_the_caller(clock: FakeClock) -> None:
    """call() listens before it queues: an answer that lands before it starts waiting is not missed."""
    loop = asyncio.get_running_loop()
    relay: Relay

    class AnsweredAtOnce(MemoryStore):
        blocking = True  # calls run in worker threads, as SQLite's and DynamoDB's do

        def add_request(self, code: str, new: Any, *, last_seq: int | None = None, charges: Any = ()) -> Any:
            added = super().add_request(code, new, last_seq=last_seq, charges=charges)
            answer = relay.responses.respond(code, token, new.id, result={"fast": True})
            asyncio.run_coroutine_threadsafe(answer, loop).result(5)  # the plugin answers before add_request returns
            return added

    relay = Relay(make_settings(), AnsweredAtOnce(), clock=clock)
    s, token = await relay.sessions.create()
    _, answer = await asyncio.wait_for(relay.responses.call(s.code, "get_codap_datasets", {}, wait=15), 5)
    assert answer.done and answer.response is not None and answer.response.body == {"result": {"fast": True}}


async def test_a_wait_reads_everything_first_and_last_and_only_the_response_between(clock: FakeClock) -> None:
    store = Counted(pushes=False)
    relay = Relay(make_settings(poll_interval_seconds=0.01, idle_poll_interval_seconds=0.01), store, clock=clock)
    s, _ = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    store.calls.clear()
    answer = await relay.responses.wait_answer(s.code, r.id, 0.2)
    assert not answer.done and answer.request is not None
    assert store.calls[0] == store.calls[-1] == "lookup" and store.calls.count("lookup") == 2
    assert set(store.calls[1:-1]) == {"get_response"} and len(store.calls) > 4
    store.calls.clear()
    await relay.responses.call(s.code, "get_codap_datasets", {}, wait=0.05)
    # a new request: no first read (the pending count is the limits' check)
    assert store.calls[:4] == ["get_session", "count_pending", "add_request", "get_response"]


async def test_a_long_wait_reads_less_and_less_often_never_every_poll_interval(clock: FakeClock) -> None:
    """A wait on a store written by other processes (DynamoDB) polls for its answer, but not every poll interval:
    twice that at first, then a quarter of the time waited so far, so that an answer is seen at most a quarter
    later than it came. A 1.5 s wait at a 0.05 s interval reads about ten times, not thirty (a loaded machine only
    sleeps longer, so the count is a bound)."""
    store = Counted(pushes=False)
    relay = Relay(make_settings(poll_interval_seconds=0.05), store, clock=clock, notifier=Silent())
    s, _ = await relay.sessions.create()
    r, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    store.calls.clear()
    started = time.monotonic()
    answer = await relay.responses.wait_answer(s.code, r.id, 1.5)
    assert not answer.done and time.monotonic() - started >= 1.5
    reads = store.calls.count("get_response")
    assert 5 <= reads <= 11, store.calls  # 0.1, 0.2, 0.3, 0.4, 0.5, 0.63, 0.78, 0.98, 1.22, (1.5: the last look)
    assert relay.store_io.answer_slice(10.0, waited=0.0) == 0.1
    assert relay.store_io.answer_slice(10.0, waited=2.0) == 0.5 and relay.store_io.answer_slice(10.0, waited=9.0) == 1


async def test_the_plugins_answer_is_a_sign_of_life_in_the_write_that_stores_it(clock: FakeClock) -> None:
    """An answer slides the code's expiry and marks the plugin seen in the same step as it is stored: no read of
    the session and no write of its own (on DynamoDB the session's item is written for the answer anyway)."""
    store = Counted()
    relay = Relay(make_settings(heartbeat_seconds=15, connected_grace_seconds=30), store, clock=clock)
    s, token = await relay.sessions.create()
    first, _ = await relay.queue.submit(s.code, "get_codap_datasets", {})
    clock.advance(100)
    store.calls.clear()
    await relay.responses.respond(s.code, token, first.id, result=1)
    assert store.calls == ["complete_request"]
    got = relay.store.get_session(s.code)
    assert got is not None and got.last_seen == clock.now()
    assert got.expires_at == clock.now() + relay.settings.session_ttl_seconds
    await relay.sessions.close(s.code, token)
    second = relay.store.get_session(s.code)
    clock.advance(10)
    with pytest.raises(e.SessionNotFound) as ended:  # refused, and said why; an ended code never slides
        await relay.responses.respond(s.code, token, "never-sent", result=2)
    assert ended.value.reason == "closed"
    assert relay.store.get_session(s.code) == second


async def test_a_quiet_stream_polls_slowly_and_a_request_makes_it_quick_again(clock: FakeClock) -> None:
    store = Counted(pushes=False)
    settings = make_settings(
        heartbeat_seconds=60, poll_interval_seconds=0.02, idle_poll_interval_seconds=0.3, poll_active_seconds=0.4
    )
    relay = Relay(settings, store, clock=clock, notifier=Silent())
    s, token = await relay.sessions.create()
    events = await relay.streams.open(s.code, token, None)
    reader = asyncio.create_task(next_event(events))
    await asyncio.sleep(0.6)  # the active window (0.4 s) after the stream opened has passed
    store.calls.clear()
    await asyncio.sleep(0.9)
    idle_polls = store.calls.count("deliver")
    assert 1 <= idle_polls <= 6  # every 0.3 s: about 3 (at the busy rate it would be about 45)
    await relay.queue.submit(s.code, "get_codap_datasets", {})
    delivered = await asyncio.wait_for(reader, 5)  # found by the next slow poll
    assert delivered.event == "tool-request"
    store.calls.clear()
    reader = asyncio.create_task(next_event(events))
    await asyncio.sleep(0.3)
    assert store.calls.count("deliver") >= 6  # busy again: every 0.02 s, about 15
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    await events.aclose()


async def test_a_request_reads_its_session_once_and_counts_its_limits_in_its_append(clock: FakeClock) -> None:
    """The per-code window and the address's byte budget are counted with the append, in the store's own step: a
    submit reads the session and appends, nothing else (no counter of its own, no count of the pending requests
    where the session read lists them)."""
    store = Counted()
    relay = Relay(make_settings(rate_limit_request_per_code=2), store, clock=clock)
    s, _ = await relay.sessions.create()
    store.calls.clear()
    record, created = await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    assert created and record.seq == 1
    assert store.calls == ["get_session", "count_pending", "add_request"]  # the memory store lists none with it
    await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    with pytest.raises(e.RateLimited) as refused:
        await relay.queue.submit(s.code, "get_codap_datasets", {}, client="1.2.3.4")
    assert refused.value.scope == "request" and relay.store.get_session(s.code).last_seq == 2  # type: ignore[union-attr]


# --- bounded work (security issue 24, medium 1 and 2) ---------------------------------------------------------

FREE_TOOLS = [{"name": "t", "description": "any arguments", "inputSchema": {"type": "object"}}]


class CountOnly(MemoryStore):
    """A store whose pending requests cannot be read in bulk: what a status read may not do."""

    def pending_requests(self, code: str, after_seq: int, now: float) -> Any:
        raise AssertionError("a status read loaded the pending requests")


async def test_status_counts_pending_requests_without_reading_them(clock: FakeClock) -> None:
    relay = Relay(make_settings(), CountOnly(), clock=clock)
    s, _ = await relay.sessions.create()
    for _ in range(3):
        await relay.queue.submit(s.code, "get_codap_datasets", {})
    assert (await relay.presence.status(s.code, client="198.51.100.9")).pending == 3


async def test_sqlite_reads_run_off_the_event_loop(tmp_path: Any, clock: FakeClock) -> None:
    import threading

    from codap_relay.store.sqlite import SqliteStore

    threads: list[threading.Thread] = []

    class Watched(SqliteStore):
        def count_pending(self, code: str, now: float) -> Any:
            threads.append(threading.current_thread())
            return super().count_pending(code, now)

    store = Watched(tmp_path / "relay.db")
    try:
        relay = Relay(make_settings(), store, clock=clock)
        s, _ = await relay.sessions.create()
        await relay.presence.status(s.code)
        assert threads and threads[0] is not threading.main_thread()
    finally:
        store.close()


async def test_status_reads_are_rate_limited_per_address(clock: FakeClock) -> None:
    relay = make_relay(clock, rate_limit_status_per_ip=2)
    s, _ = await relay.sessions.create()
    for _ in range(2):
        await relay.presence.status(s.code, client="198.51.100.1")
    with pytest.raises(e.RateLimited) as info:
        await relay.presence.status(s.code, client="198.51.100.1")
    assert info.value.scope == "status" and 1 <= info.value.retry_after <= 60
    assert "2 per minute" in info.value.message
    await relay.presence.status(s.code, client="198.51.100.2")  # another address has its own
    clock.advance(60)
    await relay.presence.status(s.code, client="198.51.100.1")  # the next window


async def test_a_session_holds_at_most_so_many_pending_requests(clock: FakeClock) -> None:
    relay = make_relay(clock, max_pending_requests_per_session=3)
    s, token = await relay.sessions.create()
    for i in range(3):
        await relay.queue.submit(s.code, "get_codap_datasets", {}, f"r{i}", client="198.51.100.1")
    with pytest.raises(e.PendingLimit) as info:
        await relay.queue.submit(s.code, "get_codap_datasets", {}, client="198.51.100.1")
    exc = info.value
    assert isinstance(exc, e.RateLimited) and exc.error == "too_many_pending" and exc.limit == 3
    assert exc.retry_after == 60 and "MAX_PENDING_REQUESTS_PER_SESSION" in exc.message
    assert "not connected" in exc.message and "open the codap-relay plugin" in exc.message
    again, created = await relay.queue.submit(s.code, "get_codap_datasets", {}, "r0", client="198.51.100.1")
    assert (again.id, created) == ("r0", False)  # a retry of a stored request still gets it
    await relay.responses.respond(s.code, token, "r0", result={"ok": True})
    await relay.queue.submit(s.code, "get_codap_datasets", {}, client="198.51.100.1")  # room again
    other, _ = await relay.sessions.create()
    await relay.queue.submit(other.code, "get_codap_datasets", {})  # each session has its own


async def test_a_session_holds_at_most_so_many_pending_bytes(clock: FakeClock) -> None:
    relay = make_relay(clock, max_pending_bytes_per_session=4096)
    s, _ = await relay.sessions.create(FREE_TOOLS)
    await relay.presence.touch(s)  # connected: waiting helps, soon
    await relay.queue.submit(s.code, "t", {"x": "a" * 3000})
    with pytest.raises(e.PendingLimit) as info:
        await relay.queue.submit(s.code, "t", {"x": "a" * 1500})
    exc = info.value
    assert exc.limit == 4096 and exc.retry_after == 5 and "MAX_PENDING_BYTES_PER_SESSION" in exc.message
    await relay.queue.submit(s.code, "t", {"x": "a" * 1000})  # what fits, fits
    with pytest.raises(e.PayloadTooLarge) as too_big:  # more than a session ever holds: 413, no Retry-After
        await relay.queue.submit(s.code, "t", {"x": "a" * 5000})
    assert too_big.value.limit == 4096 and "never be queued" in too_big.value.message


async def test_an_address_has_a_byte_budget_across_its_sessions(clock: FakeClock) -> None:
    relay = make_relay(clock, request_bytes_per_ip_per_hour=10_000)
    clock.advance(3600 - clock.now() % 3600 + 3000)  # ten minutes before the hour ends
    me = "198.51.100.1"
    for _ in range(3):  # a fresh session brings no fresh budget
        s, _ = await relay.sessions.create(FREE_TOOLS)
        await relay.queue.submit(s.code, "t", {"x": "a" * 3000}, client=me)
    s, _ = await relay.sessions.create(FREE_TOOLS)
    with pytest.raises(e.ByteBudgetExceeded) as info:
        await relay.queue.submit(s.code, "t", {"x": "a" * 3000}, client=me)
    exc = info.value
    assert isinstance(exc, e.RateLimited) and exc.limit == 10_000 and exc.retry_after == 600
    assert "REQUEST_BYTES_PER_IP_PER_HOUR" in exc.message and exc.error == "request_bytes_exceeded"
    await relay.queue.submit(s.code, "t", {"x": "a" * 900}, client=me)  # the refused bytes were not counted
    await relay.queue.submit(s.code, "t", {"x": "a" * 3000}, client="198.51.100.2")  # another address
    clock.advance(300)
    s, _ = await relay.sessions.create(FREE_TOOLS)
    clock.advance(300)
    await relay.queue.submit(s.code, "t", {"x": "a" * 3000}, client=me)  # the next hour
    with pytest.raises(e.PayloadTooLarge):
        await relay.queue.submit(s.code, "t", {"x": "a" * 10_001}, client=me)


def test_the_new_limits_surface_in_mcp_as_rate_limits_and_invalid_params() -> None:
    from mcp import types

    from codap_relay.mcp.tools import RATE_LIMITED, error_data, surface_for

    for exc in (
        e.PendingLimit("full", retry_after=5, scope="pending_requests", limit=50),
        e.ByteBudgetExceeded("spent", retry_after=99, scope="request_bytes", limit=10),
    ):
        assert surface_for(exc).rpc_code == RATE_LIMITED and surface_for(exc).in_tool_result
        assert error_data(exc) == {"error": exc.error, "limit": exc.limit, "retryAfter": exc.retry_after}
    assert surface_for(e.PayloadTooLarge("big", limit=1)).rpc_code == types.INVALID_PARAMS


def test_defaults_leave_room_for_a_class() -> None:
    """30 students, each with 5 calls waiting of 10 KB, and 60 calls an hour each, all behind one address."""
    s = make_settings()
    assert s.max_pending_requests_per_session >= 5 * 4 and s.max_pending_bytes_per_session >= 5 * 10_000 * 4
    assert s.request_bytes_per_ip_per_hour >= 30 * 60 * 10_000
    assert s.max_pending_bytes_per_session >= s.max_request_bytes  # any body the relay accepts can be queued


class PollingMemoryStore(MemoryStore):
    """A store as DynamoDB is to the relay: written by other processes too, so nothing here is pushed."""

    pushes = False


@pytest.mark.parametrize("pushes", [True, False], ids=["pushing store", "polled store"])
async def test_the_stream_names_requests_the_model_withdrew_before_the_plugin_had_them(
    clock: FakeClock, pushes: bool
) -> None:
    relay = Relay(make_settings(), MemoryStore() if pushes else PollingMemoryStore(), clock=clock, ids=counting_ids())
    s, token = await relay.sessions.create()
    args = {"datasetName": "Never", "dataType": "random_numbers", "recordCount": 3}
    await relay.queue.submit(s.code, "get_codap_datasets", {}, request_id="kept")
    await relay.queue.submit(s.code, "create_codap_dataset", args, request_id="gone")
    assert await relay.queue.cancel(s.code, ["gone"]) == ["gone"]
    events = await relay.streams.open(s.code, token, None)
    try:
        seen = [await anext(events) for _ in range(3)]  # the retry preamble, the withdrawn one, the request
        assert [e.event for e in seen] == [None, "withdrawn", "tool-request"]
        assert seen[1].data == {"id": "gone", "tool": "create_codap_dataset", "args": args}
        assert seen[2].data["id"] == "kept"
    finally:
        await events.aclose()
