"""Cases 2-5, 7, 8 and 10 of the reliability issue, on a live server over each embedded store."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.sqlite import SqliteStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.relays import ALL_STORES, any_store, make_relay, open_session
from codap_relay_tooling.testing.servers import bearer, serve_app
from codap_relay_tooling.testing.sse_client import Event, iter_events

pytestmark = pytest.mark.chaos


@pytest.fixture(params=ALL_STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def relay(kind: str, tmp_path: Path, clock: FakeClock) -> Iterator[Relay]:
    with any_store(kind, tmp_path) as store:
        yield make_relay(store, clock)


@pytest.fixture
def base(relay: Relay) -> Iterator[str]:
    with serve_app(build_app(relay)) as url:
        yield url


@pytest.fixture
async def llm(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with web.AsyncClient(base_url=base, timeout=30) as c:
        yield c


async def post(
    c: httpx.AsyncClient, code: str, rid: str, tool: str = "get_codap_datasets", **kw: Any
) -> httpx.Response:
    return await c.post("/request", json={"code": code, "id": rid, "tool": tool, **kw})


async def read_events(
    c: httpx.AsyncClient, s: dict[str, Any], cursor: str | None, until: Any, on_event: Any = None
) -> list[Event]:
    """Read the stream until ``until(events)`` holds; ``on_event`` may act (e.g. post more) as events come."""
    headers = bearer(s["browserToken"]) | ({"Last-Event-ID": cursor} if cursor else {})
    seen: list[Event] = []
    try:
        async with asyncio.timeout(30):  # a deadline, so a relay that never sends the event fails, not hangs
            async with c.stream("GET", "/stream", params={"code": s["code"]}, headers=headers) as r:
                assert r.status_code == 200
                async for event in iter_events(r):
                    seen.append(event)
                    if on_event is not None:
                        await on_event(event, seen)
                    if until(seen):
                        return seen
    except TimeoutError:
        raise AssertionError(f"gave up waiting; got {[(e.event, e.id) for e in seen]}") from None
    raise AssertionError("stream ended early")


def tool_requests(events: list[Event]) -> list[tuple[str | None, str]]:
    return [(e.id, e.json()["id"]) for e in events if e.event == "tool-request"]


# --- 2. history then live ----------------------------------------------------------------------------------


async def test_history_then_live_resumes_exactly_after_the_cursor(llm: httpx.AsyncClient) -> None:
    s = await open_session(llm)
    for n in range(1, 11):
        assert (await post(llm, s["code"], f"h{n}")).json()["seq"] == n
    posted = False

    async def post_eleven_once_history_is_out(event: Event, seen: list[Event]) -> None:
        nonlocal posted
        if not posted and len(tool_requests(seen)) == 2:
            posted = True
            assert (await post(llm, s["code"], "h11")).json()["seq"] == 11

    def done(seen: list[Event]) -> bool:
        # Stop at the first heartbeat after 11 arrived: anything else queued would have come before it.
        got = tool_requests(seen)
        return bool(got) and got[-1][1] == "h11" and seen[-1].event == "heartbeat"

    events = await read_events(llm, s, "8", done, post_eleven_once_history_is_out)
    assert tool_requests(events) == [("9", "h9"), ("10", "h10"), ("11", "h11")]


# --- 3. an unknown cursor is reported, and everything unanswered is sent ---------------------------------


async def test_cursor_beyond_the_last_seq_is_reported_and_all_unanswered_are_sent(llm: httpx.AsyncClient) -> None:
    s = await open_session(llm)
    for rid in ("u1", "u2", "u3"):
        await post(llm, s["code"], rid)
    r = await llm.post(
        "/response", json={"code": s["code"], "id": "u2", "result": 1}, headers=bearer(s["browserToken"])
    )
    assert r.status_code == 202
    events = await read_events(llm, s, "50", lambda seen: seen[-1].event == "heartbeat")
    kinds = [e.event for e in events]
    assert kinds[:2] == ["message", "cursor-reset"], kinds  # "message": the bare retry preamble
    assert events[1].json() == {"lastEventId": 50, "lastSeq": 3}
    assert tool_requests(events) == [("1", "u1"), ("3", "u3")]


async def test_after_a_store_restored_from_backup_the_plugin_is_told_and_new_requests_are_not_skipped(
    tmp_path: Path,
) -> None:
    live, backup = tmp_path / "live.db", tmp_path / "backup.db"
    store = SqliteStore(live)
    relay = make_relay(store)
    with serve_app(build_app(relay)) as url:
        async with web.AsyncClient(base_url=url, timeout=30) as c:
            s = await open_session(c)
            for n in range(1, 4):
                await post(c, s["code"], f"b{n}")
            with sqlite3.connect(backup) as dst:  # an online backup, as an operator would take one
                store._db.backup(dst)
            for n in range(4, 9):
                await post(c, s["code"], f"b{n}")
            async with FakePlugin.for_session(url, s) as plugin:
                r = await c.get("/response", params={"code": s["code"], "id": "b8", "wait": 10})
                assert r.status_code == 200
                await plugin.wait_cursor("8")
                cursor = plugin.cursor
    store.close()
    assert cursor == "8"
    shutil.copy(backup, live)  # the restore: the store forgets seqs 4-8 and every answer
    store = SqliteStore(live)
    with serve_app(build_app(make_relay(store))) as url:
        async with web.AsyncClient(base_url=url, timeout=30) as c:
            queued = False

            async def post_new(event: Event, seen: list[Event]) -> None:
                nonlocal queued
                if not queued and len(tool_requests(seen)) == 3:
                    queued = True
                    assert (await post(c, s["code"], "after-restore")).json()["seq"] == 4

            events = await read_events(c, s, cursor, lambda seen: len(tool_requests(seen)) == 4, post_new)
    store.close()
    assert [e.event for e in events][1] == "cursor-reset"
    assert [rid for _, rid in tool_requests(events)] == ["b1", "b2", "b3", "after-restore"]


# --- 4. idempotent publish ------------------------------------------------------------------------------------


async def test_fifty_concurrent_publishes_of_one_id_store_one_request(llm: httpx.AsyncClient, relay: Relay) -> None:
    s = await open_session(llm)
    await post(llm, s["code"], "before")
    answers = await asyncio.gather(*(post(llm, s["code"], "same") for _ in range(50)))
    assert {r.status_code for r in answers} == {202}
    assert {json.dumps(r.json(), sort_keys=True) for r in answers} == {'{"id": "same", "seq": 2, "status": "queued"}'}
    assert [r.id for r in relay.store.list_requests(s["code"])] == ["before", "same"]


async def test_fifty_concurrent_waiting_publishes_get_one_execution_and_agreeing_results(
    llm: httpx.AsyncClient, base: str, relay: Relay
) -> None:
    s = await open_session(llm)
    async with FakePlugin.for_session(base, s) as plugin:
        answers = await asyncio.gather(
            *(
                llm.post("/request?wait=15", json={"code": s["code"], "id": "w", "tool": "get_codap_status"})
                for _ in range(50)
            )
        )
    assert {r.status_code for r in answers} == {200}, {r.status_code for r in answers}
    assert len({r.text for r in answers}) == 1 and answers[0].json()["result"]["tool"] == "get_codap_status"
    assert plugin.executed == ["w"]
    assert len(relay.store.list_requests(s["code"])) == 1


# --- 5. replies ---------------------------------------------------------------------------------------------------


class CountingObserver:
    def __init__(self) -> None:
        self.completed = 0

    def session_created(self) -> None: ...
    def request_queued(self, tool: str) -> None: ...
    def rate_limited(self, scope: str) -> None: ...

    def response_completed(self, status: str, latency_ms: float | None) -> None:
        self.completed += 1


async def test_the_same_answer_many_times_at_once_is_seen_once(llm: httpx.AsyncClient, relay: Relay) -> None:
    relay.reconfigure(observer=(counting := CountingObserver()))
    s = await open_session(llm)
    await post(llm, s["code"], "dup")
    answer = {"code": s["code"], "id": "dup", "result": {"rows": [1, 2, 3]}}
    replies = await asyncio.gather(
        *(llm.post("/response", json=answer, headers=bearer(s["browserToken"])) for _ in range(20))
    )
    assert {r.status_code for r in replies} == {202}
    assert counting.completed == 1
    r = await llm.get("/response", params={"code": s["code"], "id": "dup"})
    assert r.status_code == 200 and r.json()["result"] == {"rows": [1, 2, 3]}
    log = (await llm.get(f"/api/sessions/{s['code']}/log", headers=bearer(s["browserToken"]))).json()
    assert [(e["id"], e["status"]) for e in log["entries"]] == [("dup", "completed")]
    # A different second answer is refused and the first stands.
    answer["result"] = {"rows": []}
    r = await llm.post("/response", json=answer, headers=bearer(s["browserToken"]))
    assert r.status_code == 409
    assert (await llm.get("/response", params={"code": s["code"], "id": "dup"})).json()["result"] == {"rows": [1, 2, 3]}


async def test_answers_for_another_sessions_request_or_after_expiry_are_404(
    llm: httpx.AsyncClient, relay: Relay, clock: FakeClock
) -> None:
    a, b = await open_session(llm), await open_session(llm)
    await post(llm, b["code"], "theirs")
    r = await llm.post(
        "/response", json={"code": a["code"], "id": "theirs", "result": 1}, headers=bearer(a["browserToken"])
    )
    assert r.status_code == 404 and r.json()["error"] == "request_not_found"
    assert relay.store.get_response(b["code"], "theirs") is None
    # After the request expired (the plugin keeps the session alive meanwhile):
    await post(llm, a["code"], "late")
    for _ in range(13):  # a step under the session's TTL: a sign of life never revives an expired code
        clock.advance(relay.settings.request_ttl_seconds / 12)
        await relay.presence.touch(relay.store.get_session(a["code"]))  # type: ignore[arg-type]
    r = await llm.post(
        "/response", json={"code": a["code"], "id": "late", "result": 1}, headers=bearer(a["browserToken"])
    )
    assert r.status_code == 404 and r.json()["error"] == "request_expired"
    assert relay.store.get_response(a["code"], "late") is None
    r = await llm.get("/response", params={"code": a["code"], "id": "late"})
    assert r.status_code == 404 and "expired" in r.json()["message"]


# --- 7. size limits -----------------------------------------------------------------------------------------------


def padded(head: dict[str, Any], slot: list[str], target: int) -> bytes:
    """``head`` as JSON, with the string at ``slot`` padded so the whole body is exactly ``target`` bytes."""

    def render(fill: int) -> bytes:
        body = json.loads(json.dumps(head))
        node = body
        for key in slot[:-1]:
            node = node[key]
        node[slot[-1]] = "x" * fill
        return json.dumps(body).encode()

    out = render(target - len(render(0)))
    assert len(out) == target
    return out


async def chunked(data: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(data), 65536):
        yield data[i : i + 65536]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_exactly_the_limit_passes_and_one_byte_more_is_413_with_nothing_stored(
    llm: httpx.AsyncClient, relay: Relay, framing: str
) -> None:
    s = await open_session(llm)
    code, auth = s["code"], bearer(s["browserToken"])
    limit_in, limit_out = relay.settings.max_request_bytes, relay.settings.max_response_bytes
    headers = {"content-type": "application/json"}

    def send(path: str, data: bytes, extra: dict[str, str] | None = None) -> Any:
        content: Any = chunked(data) if framing == "chunked" else data
        return llm.post(path, content=content, headers={**headers, **(extra or {})})

    req = {"code": code, "id": "big", "tool": "add_codap_cases", "args": {"datasetName": "d", "cases": [{"t": ""}]}}
    r = await send("/request", padded(req, ["args", "cases", 0, "t"], limit_in + 1))  # type: ignore[list-item]
    assert r.status_code == 413 and r.json()["limit"] == limit_in
    assert relay.store.get_request(code, "big") is None and relay.store.list_requests(code) == []
    r = await send("/request", padded(req, ["args", "cases", 0, "t"], limit_in))  # type: ignore[list-item]
    assert r.status_code == 202, r.text
    stored = relay.store.get_request(code, "big")
    assert stored is not None and len(stored.args["cases"][0]["t"]) > limit_in - 200

    ans = {"code": code, "id": "big", "result": {"t": ""}}
    r = await send(f"/response?code={code}", padded(ans, ["result", "t"], limit_out + 1), auth)
    assert r.status_code == 413 and relay.store.get_response(code, "big") is None
    assert (await llm.get("/response", params={"code": code, "id": "big"})).status_code == 202
    r = await send(f"/response?code={code}", padded(ans, ["result", "t"], limit_out), auth)
    assert r.status_code == 202, r.text
    r = await llm.get("/response", params={"code": code, "id": "big"})
    assert r.status_code == 200 and len(r.json()["result"]["t"]) > limit_out - 200

    manifest = {"tools": [{"name": "t", "description": "", "inputSchema": {"type": "object"}}]}
    before = relay.store.incr_counter("probe", 1e18, 0)
    r = await send("/api/sessions", padded(manifest, ["tools", 0, "description"], limit_in + 1))  # type: ignore[list-item]
    assert r.status_code == 413
    r = await send("/api/sessions", padded(manifest, ["tools", 0, "description"], limit_in))  # type: ignore[list-item]
    assert r.status_code == 201
    assert before >= 1


# --- 8. expiry with the injected clock ---------------------------------------------------------------------------


async def test_expired_requests_are_never_delivered_or_answered_and_the_llm_learns_why(
    llm: httpx.AsyncClient, relay: Relay, clock: FakeClock
) -> None:
    s = await open_session(llm)
    code, auth = s["code"], bearer(s["browserToken"])
    ttl = relay.settings.request_ttl_seconds

    async def keep_alive(seconds: float) -> None:  # the plugin is there, only the requests age
        step = relay.settings.session_ttl_seconds / 2
        while seconds > 0:
            clock.advance(min(step, seconds))
            seconds -= step
            await relay.presence.touch(relay.store.get_session(code))  # type: ignore[arg-type]

    await post(llm, code, "old")
    await post(llm, code, "delivered-old")
    r = await llm.get("/stream", params={"code": code, "mode": "poll"}, headers=auth)
    assert '"id":"old"' in r.text  # both delivered once while fresh
    await keep_alive(ttl - 100)
    await post(llm, code, "fresh")
    await keep_alive(101)
    # Never delivered again, whatever cursor the plugin brings.
    for cursor in (None, "0"):
        headers = auth | ({"Last-Event-ID": cursor} if cursor else {})
        r = await llm.get("/stream", params={"code": code, "mode": "poll"}, headers=headers)
        assert '"id":"fresh"' in r.text and '"id":"old"' not in r.text and "delivered-old" not in r.text
    assert (await llm.get(f"/api/sessions/{code}")).json()["pending"] == 1
    # Never answered, and the LLM is told why.
    for rid in ("old", "delivered-old"):
        r = await llm.post("/response", json={"code": code, "id": rid, "result": 1}, headers=auth)
        assert r.status_code == 404 and r.json()["error"] == "request_expired"
        assert relay.store.get_response(code, rid) is None
        r = await llm.get("/response", params={"code": code, "id": rid})
        assert r.status_code == 404 and r.json()["error"] == "request_expired" and "expired" in r.json()["message"]
    log = (await llm.get(f"/api/sessions/{code}/log", headers=auth)).json()
    assert {e["id"]: e["status"] for e in log["entries"]}["old"] == "expired"


async def test_an_expired_session_delivers_and_accepts_nothing_and_the_llm_learns_why(
    llm: httpx.AsyncClient, relay: Relay, clock: FakeClock
) -> None:
    s = await open_session(llm)
    code, auth = s["code"], bearer(s["browserToken"])
    await post(llm, code, "stranded")
    clock.advance(relay.settings.session_ttl_seconds)
    for r in (
        await post(llm, code, "too-late"),
        await llm.get("/metadata", params={"code": code}),
        await llm.get("/stream", params={"code": code, "mode": "poll"}, headers=auth),
        await llm.post("/response", json={"code": code, "id": "stranded", "result": 1}, headers=auth),
    ):
        assert r.status_code == 404 and r.json()["reason"] == "expired", r.text
        assert "new code" in r.json()["message"] or "share the new code" in r.json()["message"]
    assert relay.store.get_request(code, "too-late") is None
    assert relay.store.get_response(code, "stranded") is None
    # The LLM waiting on a request of the dead session learns why now, not after the request's TTL.
    r = await llm.get("/response", params={"code": code, "id": "stranded", "wait": 1})
    assert r.status_code == 404 and r.json()["reason"] == "expired", r.text


async def test_a_clock_jump_past_expiry_ends_an_open_stream_with_expired(
    llm: httpx.AsyncClient, relay: Relay, clock: FakeClock
) -> None:
    s = await open_session(llm)
    jumped = False

    async def jump(event: Event, seen: list[Event]) -> None:
        nonlocal jumped
        if event.event == "heartbeat" and not jumped:
            jumped = True
            clock.advance(relay.settings.session_ttl_seconds + 1)
            await post(llm, s["code"], "x")  # refused (expired); also wakes the stream

    events = await read_events(llm, s, None, lambda seen: seen[-1].event in ("expired", "tool-request"), jump)
    assert events[-1].event == "expired"


# --- 10. rate limits under concurrency ------------------------------------------------------------------------


async def test_exactly_the_limit_is_admitted_per_window_under_concurrency(kind: str, tmp_path: Path) -> None:
    clock = FakeClock(1_800_000_010.0)  # 50 s left in this window, so the window cannot roll mid-test
    with any_store(kind, tmp_path) as store:
        relay = make_relay(store, clock, rate_limit_session_per_ip=30, rate_limit_request_per_code=25)
        with serve_app(build_app(relay)) as url:
            async with web.AsyncClient(base_url=url, timeout=30) as c:
                made = await asyncio.gather(*(c.post("/api/sessions", json={}) for _ in range(100)))
                assert sorted(r.status_code for r in made).count(201) == 30
                refused = [r for r in made if r.status_code == 429]
                assert len(refused) == 70
                assert all(r.headers["retry-after"] == "50" and r.json()["error"] == "rate_limited" for r in refused)
                code = next(r for r in made if r.status_code == 201).json()["code"]
                sent = await asyncio.gather(*(post(c, code, f"q{i}") for i in range(80)))
                assert [r.status_code for r in sent].count(202) == 25
                assert {r.status_code for r in sent} == {202, 429}
                assert len(relay.store.list_requests(code)) == 25  # refused ones stored nothing
                clock.advance(50)  # the next window
                again = await asyncio.gather(*(c.post("/api/sessions", json={}) for _ in range(31)))
                assert [r.status_code for r in again].count(201) == 30
