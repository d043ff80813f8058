"""One contract, every backend: what the service relies on from a store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay.errors import CodeCollision, SessionNotFound
from codap_relay.records import NewRequest, ResponseRecord, SessionRecord, fingerprint
from codap_relay.settings import Settings
from codap_relay.store.base import PURGE_GRACE_SECONDS, Store
from codap_relay.store.memory import MemoryStore
from store_backends import BACKENDS, sweep_expired

T0 = 1_800_000_000.0


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    with BACKENDS[request.param]() as s:
        yield s


def session(code: str = "ABCDEFGH", **kw: Any) -> SessionRecord:
    base: dict[str, Any] = {"code": code, "token_hash": "h" * 64, "created_at": T0, "expires_at": T0 + 600}
    base.update(kw)
    return SessionRecord(**base)


def new(
    rid: str, tool: str = "get_codap_datasets", args: dict[str, Any] | None = None, ttl: float = 3600
) -> NewRequest:
    args = args if args is not None else {}
    return NewRequest(
        id=rid,
        tool=tool,
        args=args,
        fingerprint=fingerprint({"tool": tool, "args": args}),
        created_at=T0,
        expires_at=T0 + ttl,
    )


def response(
    rid: str, code: str = "ABCDEFGH", result: Any = None, error: dict[str, Any] | None = None
) -> ResponseRecord:
    body = {"error": error} if error is not None else {"result": result}
    return ResponseRecord(
        code=code,
        id=rid,
        status="failed" if error else "completed",
        body=body,
        fingerprint=fingerprint(body),
        timestamp=T0 + 1,
        expires_at=T0 + 3600,
        error_code="plugin_error" if error else None,
    )


def test_session_roundtrip_and_collision(store: Store) -> None:
    tools = [{"name": "t", "description": "", "inputSchema": {"type": "object"}}]
    store.create_session(session(tools=tools))
    got = store.get_session("ABCDEFGH")
    assert got is not None
    assert (got.code, got.expires_at, got.tools, got.last_seq, got.consumer, got.closed_at) == (
        "ABCDEFGH",
        T0 + 600,
        tools,
        0,
        None,
        None,
    )
    with pytest.raises(CodeCollision):
        store.create_session(session())
    assert store.get_session("ZZZZZZZZ") is None


def test_update_session_sets_fields_and_never_shortens_expiry(store: Store) -> None:
    store.create_session(session())
    store.update_session("ABCDEFGH", expires_at=T0 + 900, last_seen=T0 + 5, consumer="c1")
    store.update_session("ABCDEFGH", expires_at=T0 + 700)  # older slide arriving late
    got = store.get_session("ABCDEFGH")
    assert got is not None
    assert (got.expires_at, got.last_seen, got.consumer) == (T0 + 900, T0 + 5, "c1")
    store.update_session("ABCDEFGH", consumer="c2", closed_at=T0 + 10)
    got = store.get_session("ABCDEFGH")
    assert got is not None and (got.consumer, got.closed_at, got.last_seen) == ("c2", T0 + 10, T0 + 5)
    store.update_session("NOSUCHCD", last_seen=T0)  # unknown session: no error, nothing created
    assert store.get_session("NOSUCHCD") is None


def test_seq_is_gapless_and_ids_are_idempotent(store: Store) -> None:
    store.create_session(session())
    first, created = store.add_request("ABCDEFGH", new("a"))
    assert (first.seq, created, first.status) == (1, True, "queued")
    second, created = store.add_request("ABCDEFGH", new("b", "create_codap_graph", {"x": [1, "é"]}))
    assert (second.seq, created, second.args) == (2, True, {"x": [1, "é"]})
    again, created = store.add_request("ABCDEFGH", new("a", "other_tool"))
    assert (again.seq, created, again.tool) == (1, False, "get_codap_datasets")
    session_now = store.get_session("ABCDEFGH")
    assert session_now is not None and session_now.last_seq == 2
    got = store.get_request("ABCDEFGH", "b")
    assert got is not None and got.seq == 2 and got.fingerprint == second.fingerprint
    assert store.get_request("ABCDEFGH", "zzz") is None


def test_add_request_to_unknown_session_raises(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        store.add_request("NOSUCHCD", new("a"))


def test_sessions_are_isolated(store: Store) -> None:
    store.create_session(session("AAAAAAAA"))
    store.create_session(session("BBBBBBBB"))
    store.add_request("AAAAAAAA", new("same"))
    r, created = store.add_request("BBBBBBBB", new("same"))
    assert created and r.seq == 1
    store.complete_request(response("same", code="AAAAAAAA", result=1))
    assert store.get_response("BBBBBBBB", "same") is None
    b = store.get_request("BBBBBBBB", "same")
    assert b is not None and b.status == "queued"
    assert [x.id for x in store.pending_requests("BBBBBBBB", 0, T0)] == ["same"]
    assert store.pending_requests("AAAAAAAA", 0, T0) == []


def test_pending_filters_cursor_answered_and_expired(store: Store) -> None:
    store.create_session(session())
    for rid in "abcd":
        store.add_request("ABCDEFGH", new(rid, ttl=100 if rid == "d" else 3600))
    store.complete_request(response("b", result={"ok": True}))
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0)] == ["a", "c", "d"]
    assert [r.id for r in store.pending_requests("ABCDEFGH", 1, T0)] == ["c", "d"]
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0 + 100)] == ["a", "c"]
    assert [r.seq for r in store.list_requests("ABCDEFGH")] == [1, 2, 3, 4]


def test_mark_delivered_keeps_first_time_and_leaves_answered_alone(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    store.add_request("ABCDEFGH", new("b"))
    store.mark_delivered("ABCDEFGH", "a", T0 + 1)
    store.mark_delivered("ABCDEFGH", "a", T0 + 2)
    a = store.get_request("ABCDEFGH", "a")
    assert a is not None and (a.status, a.delivered_at) == ("delivered", T0 + 1)
    store.complete_request(response("b", result=1))
    store.mark_delivered("ABCDEFGH", "b", T0 + 3)
    b = store.get_request("ABCDEFGH", "b")
    assert b is not None and b.status == "completed"
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0)] == ["a"]


def test_first_answer_wins(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    stored, fresh = store.complete_request(response("a", error={"message": "boom", "code": "codap_error"}))
    assert fresh and stored.status == "failed"
    again, fresh = store.complete_request(response("a", result={"late": True}))
    assert not fresh and again.body == {"error": {"message": "boom", "code": "codap_error"}}
    got = store.get_response("ABCDEFGH", "a")
    assert got is not None and got.fingerprint == stored.fingerprint and got.timestamp == T0 + 1
    req = store.get_request("ABCDEFGH", "a")
    assert req is not None and (req.status, req.completed_at, req.error_code) == ("failed", T0 + 1, "plugin_error")


def test_large_response_roundtrips(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("big"))
    blob = "x" * (4 * 1024 * 1024 - 100)
    store.complete_request(response("big", result={"text": blob, "n": [1.5, None, True]}))
    got = store.get_response("ABCDEFGH", "big")
    assert got is not None and got.body == {"result": {"text": blob, "n": [1.5, None, True]}}


def test_counters_count_and_restart_after_expiry(store: Store) -> None:
    assert [store.incr_counter("k", T0 + 60, T0) for _ in range(3)] == [1, 2, 3]
    assert store.incr_counter("other", T0 + 60, T0) == 1
    assert store.incr_counter("k", T0 + 120, T0 + 60) == 1  # the old window has ended


def test_concurrent_appends_stay_gapless(store: Store) -> None:
    store.create_session(session())
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                store.add_request("ABCDEFGH", new(f"w{n}-{i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seqs = [r.seq for r in store.list_requests("ABCDEFGH")]
    assert seqs == list(range(1, 41))


def test_concurrent_answers_one_winner(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    fresh: list[bool] = []
    lock = threading.Lock()

    def answer(n: int) -> None:
        _, f = store.complete_request(response("a", result=n))
        with lock:
            fresh.append(f)

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fresh.count(True) == 1


def test_a_closed_session_takes_no_new_requests_but_answers_retries(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("before"))
    store.update_session("ABCDEFGH", closed_at=T0 + 5)
    with pytest.raises(SessionNotFound) as info:
        store.add_request("ABCDEFGH", new("after"))
    assert info.value.reason == "closed"
    assert store.get_request("ABCDEFGH", "after") is None
    again, created = store.add_request("ABCDEFGH", new("before"))  # the retry of an accepted request
    assert (again.seq, created) == (1, False)
    got = store.get_session("ABCDEFGH")
    assert got is not None and got.last_seq == 1


@pytest.mark.parametrize("ended", ["closed", "expired"])
def test_an_ended_session_is_kept_through_the_longest_log_grace(store: Store, ended: str) -> None:
    """LOG_GRACE_SECONDS may be as long as PURGE_GRACE_SECONDS: whatever ends a session (closing it, or its expiry),
    each backend's housekeeping keeps the session that long, so the plugin can still save its trace, and with it
    the requests and answers still within their own retention (REQUEST_TTL_SECONDS + PURGE_GRACE_SECONDS from
    when each was made: all of them, unless the session lasted longer than that less the grace); then lets go."""
    longest = max(m.le for m in Settings.model_fields["log_grace_seconds"].metadata if hasattr(m, "le"))
    assert longest == PURGE_GRACE_SECONDS
    store.create_session(session())
    store.add_request("ABCDEFGH", new("asked"))  # made at T0, the session's start
    store.complete_request(response("asked"))
    store.update_session("ABCDEFGH", expires_at=T0 + 900)  # the plugin was seen: the code slides
    end = T0 + 300 if ended == "closed" else T0 + 900
    if ended == "closed":
        store.update_session("ABCDEFGH", closed_at=end)
    sweep_expired(store, end + longest - 1)
    assert store.get_session("ABCDEFGH") is not None
    assert [r.id for r in store.list_requests("ABCDEFGH")] == ["asked"]
    assert store.get_response("ABCDEFGH", "asked") is not None
    sweep_expired(store, T0 + 3600 + PURGE_GRACE_SECONDS + 1)  # long after everything expired
    if not isinstance(store, MemoryStore):  # the memory store keeps all for the life of its process
        assert store.get_session("ABCDEFGH") is None and store.list_requests("ABCDEFGH") == []
