"""One contract, every backend: what the service relies on from a store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from codap_relay.errors import CodeCollision, RequestExpired, RequestNotFound, SessionNotFound
from codap_relay.records import (
    DETACHED,
    AuthItem,
    ConnectionRecord,
    Lookup,
    NewRequest,
    ResponseRecord,
    SessionRecord,
    fingerprint,
    manifest_id,
)
from codap_relay.settings import Settings
from codap_relay.store.base import (
    MAX_CHANGE_MARKS,
    PURGE_GRACE_SECONDS,
    Charge,
    ChargeRefused,
    PendingRef,
    PendingTotals,
    Store,
    args_bytes,
    pending_totals,
)
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.store_backends import BACKENDS, sweep_expired

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


TOOLS = [{"name": "t", "description": "", "inputSchema": {"type": "object"}}]


def test_session_roundtrip_and_collision(store: Store) -> None:
    store.create_session(session(manifest=manifest_id(TOOLS)), TOOLS)
    got = store.get_session("ABCDEFGH")
    assert got is not None
    assert (got.code, got.expires_at, got.manifest, got.last_seq, got.consumer, got.closed_at) == (
        "ABCDEFGH",
        T0 + 600,
        manifest_id(TOOLS),
        0,
        None,
        None,
    )
    with pytest.raises(CodeCollision):
        store.create_session(session())
    assert store.get_session("ZZZZZZZZ") is None


def test_sessions_share_one_stored_manifest_by_its_content(store: Store) -> None:
    other = [{**TOOLS[0], "description": "another"}]
    store.create_session(session("AAAAAAAA", manifest=manifest_id(TOOLS)), TOOLS)
    store.create_session(session("BBBBBBBB", manifest=manifest_id(list(TOOLS))), list(TOOLS))
    store.create_session(session("CCCCCCCC", manifest=manifest_id(other)), other)
    store.create_session(session("DDDDDDDD"))  # the default manifest: nothing stored
    found = {code: store.get_session(code) for code in ("AAAAAAAA", "BBBBBBBB", "CCCCCCCC", "DDDDDDDD")}
    addresses = {code: s.manifest if s else "missing" for code, s in found.items()}
    assert addresses == {
        "AAAAAAAA": manifest_id(TOOLS),
        "BBBBBBBB": manifest_id(TOOLS),
        "CCCCCCCC": manifest_id(other),
        "DDDDDDDD": None,
    }
    assert store.get_manifest(manifest_id(TOOLS)) == TOOLS
    assert store.get_manifest(manifest_id(other)) == other
    assert store.get_manifest("0" * 64) is None


def test_a_manifest_is_kept_as_long_as_a_session_that_refers_to_it(store: Store) -> None:
    """The manifest is stored once, but a session whose expiry slides far past the one that stored it keeps it
    readable: each store's housekeeping (the SQLite purge, DynamoDB's TTL) removes it only after its last session."""
    store.create_session(session("AAAAAAAA", manifest=manifest_id(TOOLS)), TOOLS)
    store.create_session(session("BBBBBBBB", manifest=manifest_id(TOOLS)), TOOLS)
    week = 7 * 86_400
    for day in range(1, 15):  # B's tab stays open a fortnight, its expiry sliding every day
        store.update_session("BBBBBBBB", expires_at=T0 + 600 + day * 86_400, last_seen=T0 + day * 86_400)
    sweep_expired(store, T0 + 600 + PURGE_GRACE_SECONDS + week + 1)  # long past A's end: A is gone
    assert store.get_session("AAAAAAAA") is None or isinstance(store, MemoryStore)
    assert store.get_manifest(manifest_id(TOOLS)) == TOOLS
    sweep_expired(store, T0 + 600 + 14 * 86_400 + PURGE_GRACE_SECONDS - 1)  # B is still kept
    assert store.get_session("BBBBBBBB") is not None
    assert store.get_manifest(manifest_id(TOOLS)) == TOOLS


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


def test_pending_refs_find_requests_by_id_or_prefix_without_their_arguments(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("mcp-aa-1", args={"big": "x" * 5000}))
    store.add_request("ABCDEFGH", new("mcp-aa-2", "create_codap_graph"))
    store.add_request("ABCDEFGH", new("mcp-aa-3", ttl=100))
    store.add_request("ABCDEFGH", new("mcp-b-1"))
    store.add_request("ABCDEFGH", new("mcp-aa"))
    store.update_session("ABCDEFGH", consumer="c1")
    store.complete_request(response("mcp-aa"))
    store.deliver("ABCDEFGH", "c1", 1, T0)  # all but the first delivered
    refs = store.pending_refs("ABCDEFGH", "mcp-aa-", T0)
    assert refs == [
        PendingRef("mcp-aa-1", "get_codap_datasets", "queued"),
        PendingRef("mcp-aa-2", "create_codap_graph", "delivered"),
        PendingRef("mcp-aa-3", "get_codap_datasets", "delivered"),
    ]
    assert [r.id for r in store.pending_refs("ABCDEFGH", "mcp-aa-", T0 + 100)] == ["mcp-aa-1", "mcp-aa-2"]
    assert store.pending_refs("ABCDEFGH", "mcp-aa-2", T0) == [refs[1]]  # a whole id
    assert store.pending_refs("ABCDEFGH", "mcp-aa", T0)[0].id == "mcp-aa-1"  # answered: not pending
    assert store.pending_refs("ABCDEFGH", "mcp-c", T0) == []
    assert store.pending_refs("ZZZZZZZZ", "mcp-", T0) == []


def test_pending_filters_cursor_answered_and_expired(store: Store) -> None:
    store.create_session(session())
    for rid in "abcd":
        store.add_request("ABCDEFGH", new(rid, ttl=100 if rid == "d" else 3600))
    store.complete_request(response("b", result={"ok": True}))
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0)] == ["a", "c", "d"]
    assert [r.id for r in store.pending_requests("ABCDEFGH", 1, T0)] == ["c", "d"]
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0 + 100)] == ["a", "c"]
    assert [r.seq for r in store.list_requests("ABCDEFGH")] == [1, 2, 3, 4]


def test_count_pending_counts_what_pending_requests_would_return_and_its_bytes(store: Store) -> None:
    store.create_session(session())
    args: dict[str, dict[str, Any]] = {
        "a": {"text": "x" * 5000},
        "b": {},
        "c": {"n": [1, 2.5, None], "s": "é"},
        "d": {"k": "v"},
    }
    for rid, a in args.items():
        store.add_request("ABCDEFGH", new(rid, args=a, ttl=100 if rid == "d" else 3600))
    store.complete_request(response("b", result={"ok": True}))
    assert args_bytes(args["c"]) == len('{"n": [1, 2.5, null], "s": "\\u00e9"}')
    want = PendingTotals(3, sum(args_bytes(args[r]) for r in "acd"))
    assert store.count_pending("ABCDEFGH", T0) == want
    assert store.count_pending("ABCDEFGH", T0 + 100) == PendingTotals(2, want.bytes - args_bytes(args["d"]))
    assert store.count_pending("ABCDEFGH", T0 + 3600) == PendingTotals(0, 0)
    assert store.count_pending("ZZZZZZZZ", T0) == PendingTotals(0, 0)
    assert len(store.pending_requests("ABCDEFGH", 0, T0)) == 3


def test_deliver_marks_what_it_hands_out_once_and_keeps_the_first_time(store: Store) -> None:
    store.create_session(session())
    store.update_session("ABCDEFGH", consumer="tab-1")
    for rid in "abc":
        store.add_request("ABCDEFGH", new(rid))
    store.complete_request(response("b", result=1))
    current, out = store.deliver("ABCDEFGH", "tab-1", 0, T0 + 1)
    assert current is not None and (current.last_seq, current.consumer) == (3, "tab-1")
    assert [(r.id, r.status, r.delivered_at) for r in out] == [("a", "delivered", T0 + 1), ("c", "delivered", T0 + 1)]
    a = store.get_request("ABCDEFGH", "a")
    assert a is not None and (a.status, a.delivered_at) == ("delivered", T0 + 1)
    b = store.get_request("ABCDEFGH", "b")
    assert b is not None and (b.status, b.delivered_at) == ("completed", None)  # answered: left alone
    # Again from the start (a reconnect without a cursor): still pending, still the first delivery time.
    _, again = store.deliver("ABCDEFGH", "tab-1", 0, T0 + 2)
    assert [(r.id, r.delivered_at) for r in again] == [("a", T0 + 1), ("c", T0 + 1)]
    _, after = store.deliver("ABCDEFGH", "tab-1", 1, T0 + 3)
    assert [r.id for r in after] == ["c"]
    assert store.deliver("ABCDEFGH", "tab-1", 3, T0 + 3)[1] == []  # nothing after the cursor


def test_deliver_sees_every_earlier_write_and_a_stale_poll_only_puts_it_off(store: Store) -> None:
    """What the push channel does right after an append (and a stream's fresh poll): the request just stored is
    there, whatever a replica says. A poll that allows a stale read (``fresh=False``) may find nothing new for a
    moment; a fresh one after it finds it, marked delivered once."""
    store.create_session(session())
    store.update_session("ABCDEFGH", consumer="tab-1")
    store.add_request("ABCDEFGH", new("a"))
    assert [r.id for r in store.deliver("ABCDEFGH", "tab-1", 0, T0)[1]] == ["a"]
    for rid, cursor in (("b", 1), ("c", 2)):
        record, _ = store.add_request("ABCDEFGH", new(rid))
        current, maybe = store.deliver("ABCDEFGH", "tab-1", cursor, T0 + cursor, fresh=False)
        assert current is not None and [r.id for r in maybe] in ([], [rid])
        current, out = store.deliver("ABCDEFGH", "tab-1", cursor, T0 + cursor + 0.5)
        assert current is not None and current.last_seq == record.seq == cursor + 1
        assert [(r.id, r.status) for r in out] == [(rid, "delivered")]
        assert out[0].delivered_at == (T0 + cursor if maybe else T0 + cursor + 0.5)


def test_deliver_hands_out_nothing_unless_the_session_is_live_and_this_consumers(store: Store) -> None:
    assert store.deliver("NOSUCHCD", "tab-1", 0, T0) == (None, [])
    store.create_session(session())
    store.update_session("ABCDEFGH", consumer="tab-1")
    store.add_request("ABCDEFGH", new("a"))
    current, out = store.deliver("ABCDEFGH", "tab-2", 0, T0)  # another tab took over
    assert current is not None and current.consumer == "tab-1" and out == []
    assert store.deliver("ABCDEFGH", "tab-1", 0, T0 + 600)[1] == []  # expired at that time
    a = store.get_request("ABCDEFGH", "a")
    assert a is not None and a.status == "queued"
    store.update_session("ABCDEFGH", closed_at=T0 + 1)
    current, out = store.deliver("ABCDEFGH", "tab-1", 0, T0 + 2)
    assert current is not None and current.closed_at == T0 + 1 and out == []


def test_detach_releases_only_the_owners_streams_and_stops_their_delivery(store: Store) -> None:
    """A tab that leaves detaches its own stream: the consumer becomes DETACHED, so that stream delivers nothing
    more (it ends at its next poll); a stream of another tab, or a tab id that is only a prefix, is left alone."""
    assert store.detach("NOSUCHCD", "tab_1") is False
    store.create_session(session())
    assert store.detach("ABCDEFGH", "tab_1") is False  # no stream yet
    store.update_session("ABCDEFGH", consumer="tab_1.c1", last_seen=T0)
    store.add_request("ABCDEFGH", new("a"))
    assert store.detach("ABCDEFGH", "tab_") is False  # "_" is no wildcard, and a prefix of the id is not it
    assert store.detach("ABCDEFGH", "tab_2") is False  # another tab
    got = store.get_session("ABCDEFGH")
    assert got is not None and got.consumer == "tab_1.c1"
    assert store.detach("ABCDEFGH", "tab_1") is True
    got = store.get_session("ABCDEFGH")
    assert got is not None and (got.consumer, got.last_seen) == (DETACHED, T0)
    assert store.deliver("ABCDEFGH", "tab_1.c1", 0, T0)[1] == []  # the detached stream gets nothing more
    assert store.detach("ABCDEFGH", "tab_1") is False  # once
    store.update_session("ABCDEFGH", consumer="tab_2.c2")  # a newer tab attaches; the old one's detach misses it
    assert store.detach("ABCDEFGH", "tab_1") is False
    assert [r.id for r in store.deliver("ABCDEFGH", "tab_2.c2", 0, T0)[1]] == ["a"]
    store.update_session("ABCDEFGH", consumer="plain")  # a stream opened without a tab id is its own owner
    assert store.detach("ABCDEFGH", "plain") is True


def test_deliver_leaves_out_expired_requests(store: Store) -> None:
    store.create_session(session(expires_at=T0 + 9000))
    store.update_session("ABCDEFGH", consumer="tab-1")
    store.add_request("ABCDEFGH", new("short", ttl=100))
    store.add_request("ABCDEFGH", new("long"))
    _, out = store.deliver("ABCDEFGH", "tab-1", 0, T0 + 100)
    assert [r.id for r in out] == ["long"]
    short = store.get_request("ABCDEFGH", "short")
    assert short is not None and short.status == "queued"


def test_lookup_reads_session_request_and_response_together(store: Store) -> None:
    assert store.lookup("NOSUCHCD", "a") == Lookup(None, None, None)
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    found = store.lookup("ABCDEFGH", "a")
    assert found.session is not None and found.session.last_seq == 1
    assert found.request is not None and (found.request.id, found.request.status) == ("a", "queued")
    assert found.response is None
    missing = store.lookup("ABCDEFGH", "zzz")
    assert missing.session is not None and (missing.request, missing.response) == (None, None)
    store.complete_request(response("a", result={"n": 1}))
    answered = store.lookup("ABCDEFGH", "a")
    assert answered.request is None and answered.response is not None
    assert answered.response.body == {"result": {"n": 1}}


def test_an_answer_needs_its_request_and_an_expired_one_takes_none(store: Store) -> None:
    store.create_session(session())
    with pytest.raises(RequestNotFound):
        store.complete_request(response("never-asked", result=1), now=T0)
    store.add_request("ABCDEFGH", new("late", ttl=100))
    with pytest.raises(RequestExpired):
        store.complete_request(response("late", result=1), now=T0 + 100)
    late = store.get_request("ABCDEFGH", "late")
    assert late is not None and late.status == "queued" and store.get_response("ABCDEFGH", "late") is None
    store.add_request("ABCDEFGH", new("kept", ttl=100))
    done = store.complete_request(response("kept", result=1), now=T0 + 99)
    assert done.fresh and done.queued_at == T0
    # Answered in time, asked again after the expiry: the first answer stands, and is said so.
    again = store.complete_request(response("kept", result=2), now=T0 + 500)
    assert not again.fresh and again.response.body == {"result": 1}


def test_a_stale_last_seq_hint_still_appends_gapless(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"), last_seq=0)
    store.add_request("ABCDEFGH", new("b"))
    third, created = store.add_request("ABCDEFGH", new("c"), last_seq=0)  # read before a and b were added
    assert created and third.seq == 3
    again, created = store.add_request("ABCDEFGH", new("b"), last_seq=0)
    assert (again.seq, created) == (2, False)
    assert [r.seq for r in store.list_requests("ABCDEFGH")] == [1, 2, 3]
    store.update_session("ABCDEFGH", closed_at=T0 + 1)
    with pytest.raises(SessionNotFound) as info:
        store.add_request("ABCDEFGH", new("d"), last_seq=3)  # a fresh hint does not get past the end
    assert info.value.reason == "closed"


def test_first_answer_wins(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    done = store.complete_request(response("a", error={"message": "boom", "code": "codap_error"}))
    assert done.fresh and done.response.status == "failed"
    again = store.complete_request(response("a", result={"late": True}))
    assert not again.fresh and again.response.body == {"error": {"message": "boom", "code": "codap_error"}}
    got = store.get_response("ABCDEFGH", "a")
    assert got is not None and got.fingerprint == done.response.fingerprint and got.timestamp == T0 + 1
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
    # By an amount (bytes), and back (a refund)
    assert store.incr_counter("bytes", T0 + 60, T0, 1000) == 1000
    assert store.incr_counter("bytes", T0 + 60, T0, 250) == 1250
    assert store.incr_counter("bytes", T0 + 60, T0, -1000) == 250
    assert store.incr_counter("bytes", T0 + 120, T0 + 60, 70) == 70  # a new window starts from the amount


def test_several_counts_of_one_window_move_together_and_restart_after_expiry(store: Store) -> None:
    """An OAuth call's plugin and grant windows, in one write: each name its own count."""
    assert store.incr_counters("w", ["all", "g1"], T0 + 60, T0) == [1, 1]
    assert store.incr_counters("w", ["all", "g2"], T0 + 60, T0) == [2, 1]
    assert store.incr_counters("w", ["all", "g1"], T0 + 60, T0) == [3, 2]
    assert store.incr_counters("other", ["all"], T0 + 60, T0) == [1]
    assert store.incr_counters("w", ["all", "g1"], T0 + 120, T0 + 60) == [1, 1]  # the old window has ended
    assert store.incr_counter("w", T0 + 60, T0) == 1  # a plain counter of the same key is another count


def test_several_counts_at_once_lose_nothing(store: Store) -> None:
    threads = [threading.Thread(target=store.incr_counters, args=("w", ["all", "g"], T0 + 60, T0)) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.incr_counters("w", ["all", "g"], T0 + 60, T0) == [13, 13]


def test_a_connection_record_is_taken_once_and_not_after_it_expired(store: Store) -> None:
    first = ConnectionRecord("C1=", "ABCDEFGH", "tab-aaaaaaaa.push:C1=", T0 + 7200)
    store.put_connection(first)
    store.put_connection(ConnectionRecord("C2=", "ABCDEFGH", "tab-bbbbbbbb.push:C2=", T0 + 60))
    again = ConnectionRecord("C1=", "ZZZZ2222", "tab-cccccccc.push:C1=", T0 + 7300)
    store.put_connection(again)  # a second attach on the same connection replaces the first record
    assert store.take_connection("C1=", T0) == again
    assert store.take_connection("C1=", T0) is None  # taken: a second $disconnect finds nothing
    assert store.take_connection("C2=", T0 + 60) is None  # expired
    assert store.take_connection("nope", T0) is None


def in_threads(worker: Callable[[int], None], count: int = 4) -> None:
    """``worker(0)`` … ``worker(count - 1)`` at once, each on a thread; the first error any of them raised, raised."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            worker(n)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_concurrent_appends_stay_gapless(store: Store) -> None:
    store.create_session(session())

    def worker(n: int) -> None:
        for i in range(10):
            store.add_request("ABCDEFGH", new(f"w{n}-{i}"))

    in_threads(worker)
    seqs = [r.seq for r in store.list_requests("ABCDEFGH")]
    assert seqs == list(range(1, 41))


def test_the_pending_count_stays_exact_through_a_requests_life(store: Store) -> None:
    """Queued, delivered (still pending), answered, cancelled (an answer too), expired, retried by id: the count
    follows every step, and requests appended after some expired are counted as they should be."""
    store.create_session(session())
    size = args_bytes({"k": 1})

    def count(at: float = T0) -> tuple[int, int]:
        totals = store.count_pending("ABCDEFGH", at)
        return totals.requests, totals.bytes

    for rid in ("a", "b", "c"):
        store.add_request("ABCDEFGH", new(rid, args={"k": 1}))
    store.add_request("ABCDEFGH", new("short", args={"k": 1}, ttl=100))
    assert count() == (4, 4 * size)
    store.add_request("ABCDEFGH", new("a", args={"k": 1}))  # a retry stores nothing
    store.update_session("ABCDEFGH", consumer="c1")
    store.deliver("ABCDEFGH", "c1", 0, T0)
    assert count() == (4, 4 * size)
    store.complete_request(response("a", result=1))
    store.complete_request(response("b", error={"code": "cancelled", "message": "withdrawn"}))
    store.complete_request(response("a", result=2))  # a second answer changes nothing
    assert count() == (2, 2 * size)
    assert count(T0 + 100) == (1, size)  # "short" expired
    store.add_request("ABCDEFGH", new("d", args={"k": 22}))
    assert count(T0 + 100) == (2, size + args_bytes({"k": 22}))
    assert count(T0 + 3600) == (0, 0)
    with pytest.raises(RequestExpired):
        store.complete_request(response("short", result=1), now=T0 + 100)
    assert count(T0 + 100) == (2, size + args_bytes({"k": 22}))
    assert [r.id for r in store.pending_requests("ABCDEFGH", 0, T0 + 100)] == ["c", "d"]


def test_the_pending_count_cannot_drift_under_concurrent_appends_and_answers(store: Store) -> None:
    store.create_session(session())

    def worker(n: int) -> None:
        for i in range(8):
            store.add_request("ABCDEFGH", new(f"w{n}-{i}", args={"n": n}))
            if i % 2:
                store.complete_request(response(f"w{n}-{i - 1}", result=i))

    in_threads(worker)
    pending = store.pending_requests("ABCDEFGH", 0, T0)
    assert len(pending) == 16
    assert store.count_pending("ABCDEFGH", T0) == PendingTotals(16, sum(args_bytes(r.args) for r in pending))


def test_concurrent_answers_one_winner(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a"))
    fresh: list[bool] = []
    lock = threading.Lock()

    def answer(n: int) -> None:
        done = store.complete_request(response("a", result=n))
        with lock:
            fresh.append(done.fresh)

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


# --- what only the SQLite store promises --------------------------------------------------------------------


def test_sqlite_reads_do_not_wait_for_a_writer(tmp_path: Any) -> None:
    """A read must never wait for a write in progress (a commit's fsync), or every request would stall behind it.
    The relay reads SQLite in worker threads (blocking_reads), never on its event loop."""
    from codap_relay.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "relay.db")
    store.create_session(session())
    writing, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        with store._tx() as db:  # holds the write transaction and the store's lock
            db.execute("UPDATE sessions SET last_seen = 1 WHERE code = 'ABCDEFGH'")
            writing.set()
            release.wait(10)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    try:
        assert writing.wait(10)
        read: list[Any] = []
        reader = threading.Thread(target=lambda: read.append(store.lookup("ABCDEFGH", "none")))
        reader.start()
        reader.join(5)
        assert not reader.is_alive(), "a read waited for the writer"
        assert read[0].session is not None and read[0].session.last_seen is None  # the last committed state
    finally:
        release.set()
        writer.join(10)
        store.close()
    assert store.blocking_reads is True


def test_sqlite_counts_pending_from_an_index_and_upgrades_an_older_database(tmp_path: Any) -> None:
    """The count never reads a request's row (its arguments sit in overflow pages); a database made before
    requests had ``arg_bytes`` gets the column, filled in, and the index."""
    import sqlite3

    from codap_relay.store.sqlite import SCHEMA, SqliteStore

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.replace(" arg_bytes INTEGER,", ""))
    db.execute(
        "INSERT INTO sessions (code, token_hash, created_at, expires_at, last_seq) VALUES ('ABCDEFGH', 'h', ?, ?, 1)",
        (T0, T0 + 600),
    )
    db.execute(
        "INSERT INTO requests (code, seq, id, tool, args, fingerprint, created_at, expires_at, status) "
        "VALUES ('ABCDEFGH', 1, 'old', 't', ?, 'f', ?, ?, 'queued')",
        ('{"a": "xyz"}', T0, T0 + 3600),
    )
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        store.add_request("ABCDEFGH", new("new", args={"b": 1}))
        assert store.count_pending("ABCDEFGH", T0) == PendingTotals(2, len('{"a": "xyz"}') + len('{"b": 1}'))
        with store._reading() as reader:
            plan = " ".join(
                str(row[-1])
                for row in reader.execute(
                    "EXPLAIN QUERY PLAN SELECT COUNT(*), SUM(arg_bytes) FROM requests WHERE code = ? "
                    "AND status IN ('queued', 'delivered') AND expires_at > ?",
                    ("ABCDEFGH", T0),
                )
            )
        assert "COVERING INDEX requests_pending" in plan, plan
    finally:
        store.close()


def test_sqlite_moves_the_manifests_of_an_older_database_out_of_its_sessions(tmp_path: Any) -> None:
    """A database made when each session row held its own manifest (``tools``): opened by this version, each
    distinct manifest is stored once, the sessions refer to it, and their rows no longer carry it."""
    import json
    import sqlite3

    from codap_relay.store.sqlite import SCHEMA, SqliteStore

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.replace("  manifest TEXT, last_seq", "  tools TEXT, last_seq"))
    for code, tools in (("AAAAAAAA", TOOLS), ("BBBBBBBB", TOOLS), ("CCCCCCCC", None)):
        db.execute(
            "INSERT INTO sessions (code, token_hash, created_at, expires_at, tools) VALUES (?, 'h', ?, ?, ?)",
            (code, T0, T0 + 600, None if tools is None else json.dumps(tools)),
        )
    db.commit()
    db.close()
    for _ in range(2):  # and opening it again changes nothing more
        store = SqliteStore(path)
        try:
            found = [store.get_session(code) for code in ("AAAAAAAA", "BBBBBBBB", "CCCCCCCC")]
            assert [s.manifest if s else "missing" for s in found] == [manifest_id(TOOLS), manifest_id(TOOLS), None]
            assert store.get_manifest(manifest_id(TOOLS)) == TOOLS
            with store._reading() as reader:
                assert reader.execute("SELECT COUNT(*) FROM sessions WHERE tools IS NOT NULL").fetchone()[0] == 0
                assert reader.execute("SELECT COUNT(*) FROM manifests").fetchone()[0] == 1
        finally:
            store.close()


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


# --- change marks (what the plugin said changed in the document; subscriptions watch them) -----------------


def test_change_marks_count_notes_and_name_what_each_changed(store: Store) -> None:
    store.create_session(session())
    assert store.get_changes("ABCDEFGH") is None
    first = store.note_changes("ABCDEFGH", ["dataset:Mammals"], T0 + 600)
    assert (first.seq, first.marks) == (1, {"dataset:Mammals": 1})
    second = store.note_changes("ABCDEFGH", ["list", "dataset:Birds"], T0 + 600)
    assert (second.seq, second.marks) == (2, {"dataset:Mammals": 1, "list": 2, "dataset:Birds": 2})
    third = store.note_changes("ABCDEFGH", ["dataset:Mammals"], T0 + 600)
    assert store.get_changes("ABCDEFGH") == third
    assert third.marks == {"dataset:Mammals": 3, "list": 2, "dataset:Birds": 2}
    assert store.get_changes("OTHERCDE") is None  # per session


def test_change_marks_keep_the_newest_names(store: Store) -> None:
    store.create_session(session())
    for n in range(MAX_CHANGE_MARKS + 5):
        store.note_changes("ABCDEFGH", [f"dataset:d{n}"], T0 + 600)
    marks = store.get_changes("ABCDEFGH")
    assert marks is not None and marks.seq == MAX_CHANGE_MARKS + 5
    assert len(marks.marks) == MAX_CHANGE_MARKS
    assert "dataset:d4" not in marks.marks and marks.marks[f"dataset:d{MAX_CHANGE_MARKS + 4}"] == marks.seq


def test_concurrent_change_notes_each_get_their_own_seq(store: Store) -> None:
    store.create_session(session())
    seqs: list[int] = []
    lock = threading.Lock()

    def note(n: int) -> None:
        for i in range(5):
            got = store.note_changes("ABCDEFGH", [f"dataset:t{n}-{i}"], T0 + 600)
            with lock:
                seqs.append(got.seq)

    threads = [threading.Thread(target=note, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seqs) == list(range(1, 21))
    final = store.get_changes("ABCDEFGH")
    assert final is not None and final.seq == 20 and len(final.marks) == 20


# --- the OAuth server's items --------------------------------------------------------------------------------


def auth_item(kind: str = "grant", key: str = "g1", owner: str | None = "id-1", **data: Any) -> AuthItem:
    return AuthItem(kind=kind, key=key, owner=owner, data=data or {"client": "c1"}, expires_at=T0 + 600)


def test_auth_items_put_get_replace_and_delete(store: Store) -> None:
    store.put_auth(auth_item())
    assert store.get_auth("grant", "g1") == auth_item()
    assert store.get_auth("token", "g1") is None  # kinds are apart
    store.put_auth(auth_item(client="c2"))
    got = store.get_auth("grant", "g1")
    assert got is not None and got.data == {"client": "c2"} and got.expires_at == T0 + 600
    store.put_auth(auth_item(kind="client", key="k", owner=None, name="Claude", uris=["https://a/cb"]))
    assert store.get_auth("client", "k") == auth_item(
        kind="client", key="k", owner=None, name="Claude", uris=["https://a/cb"]
    )
    assert store.delete_auth("grant", "g1") is True
    assert store.delete_auth("grant", "g1") is False
    assert store.get_auth("grant", "g1") is None


def test_auth_items_listed_by_owner(store: Store) -> None:
    store.put_auth(auth_item(key="g1", owner="id-1"))
    store.put_auth(auth_item(key="g2", owner="id-1"))
    store.put_auth(auth_item(key="g3", owner="id-2"))
    store.put_auth(auth_item(kind="access", key="g4", owner="id-1"))
    assert sorted(i.key for i in store.list_auth("grant", "id-1")) == ["g1", "g2"]
    assert [i.key for i in store.list_auth("grant", "id-2")] == ["g3"]
    store.delete_auth("grant", "g1")
    assert [i.key for i in store.list_auth("grant", "id-1")] == ["g2"]
    assert store.list_auth("grant", "nobody") == []


def test_auth_items_read_several_at_once(store: Store) -> None:
    """A token, its grant and its plugin in one read, each as get_auth gives it (None where there is none)."""
    store.put_auth(auth_item(kind="access", key="t1", owner="g1"))
    store.put_auth(auth_item(kind="grant", key="g1", owner="id-1"))
    store.put_auth(auth_item(kind="grant", key="g2", owner="id-1"))
    got = store.get_auths([("access", "t1"), ("grant", "g1"), ("plugin", "id-1"), ("access", "t1")])
    assert got == [
        auth_item(kind="access", key="t1", owner="g1"),
        auth_item(kind="grant", key="g1", owner="id-1"),
        None,
        auth_item(kind="access", key="t1", owner="g1"),
    ]
    assert store.get_auths([]) == []


def test_auth_take_is_once(store: Store) -> None:
    """An authorization code is used once, a refresh token rotated once: of many takes at once, one wins."""
    store.put_auth(auth_item(kind="code", key="c", owner="g"))
    results: list[AuthItem | None] = []
    lock = threading.Lock()

    def take() -> None:
        got = store.take_auth("code", "c")
        with lock:
            results.append(got)

    threads = [threading.Thread(target=take) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r for r in results if r is not None] == [auth_item(kind="code", key="c", owner="g")]
    assert store.get_auth("code", "c") is None and store.list_auth("code", "g") == []
    assert store.take_auth("code", "c") is None


# --- what an append counts, where it goes, who may answer -------------------------------------------------------


def test_charges_count_with_the_append_and_a_refused_one_stores_and_counts_nothing(store: Store) -> None:
    store.create_session(session())
    budget = Charge("bytes:203.0.113.9:0", 8, 25, T0 + 3600)  # an address's budget, across its sessions
    window = Charge("request:203.0.113.9:0", 1, 2, T0 + 60, session=True)  # the session's own window
    for rid in ("a", "b"):
        assert store.add_request("ABCDEFGH", new(rid), charges=[budget, window])[1]
    with pytest.raises(ChargeRefused) as refused:
        store.add_request("ABCDEFGH", new("c"), charges=[budget, window])
    assert (refused.value.charge, refused.value.total) == (window, 3)
    assert store.get_request("ABCDEFGH", "c") is None and store.get_session("ABCDEFGH").last_seq == 2  # type: ignore[union-attr]
    existing, created = store.add_request("ABCDEFGH", new("a"), charges=[budget, window])  # a retry: nothing counted
    assert existing.id == "a" and not created
    nine = Charge(budget.key, 9, 25, budget.window_end)
    assert store.add_request("ABCDEFGH", new("d"), charges=[nine])[1]  # 25: the refused one took nothing
    with pytest.raises(ChargeRefused) as refused:
        store.add_request("ABCDEFGH", new("e"), charges=[Charge(budget.key, 1, 25, budget.window_end)])
    assert refused.value.total == 26
    later = Charge("request:203.0.113.9:1", 1, 2, T0 + 120, session=True)  # the next window counts anew
    assert store.add_request("ABCDEFGH", new("f"), charges=[later])[1]
    assert [r.id for r in store.list_requests("ABCDEFGH")] == ["a", "b", "d", "f"]


def test_a_request_for_a_push_consumer_is_stored_delivered_only_while_that_consumer_has_the_session(
    store: Store,
) -> None:
    store.create_session(session())
    store.update_session("ABCDEFGH", consumer="tab.push:C1")
    pushed = NewRequest("a", "get_codap_datasets", {}, fingerprint({}), T0, T0 + 3600, deliver_to="tab.push:C1")
    record, _ = store.add_request("ABCDEFGH", pushed)
    assert (record.status, record.delivered_at) == ("delivered", T0)
    stored = store.get_request("ABCDEFGH", "a")
    assert stored is not None and (stored.status, stored.delivered_at) == ("delivered", T0)
    store.update_session("ABCDEFGH", consumer="tab2.push:C2")  # another tab took over before the append
    late = NewRequest("b", "get_codap_datasets", {}, fingerprint({}), T0, T0 + 3600, deliver_to="tab.push:C1")
    record, _ = store.add_request("ABCDEFGH", late, last_seq=1)
    assert (record.status, record.delivered_at) == ("queued", None)
    assert [r.id for r in store.deliver("ABCDEFGH", "tab2.push:C2", 0, T0 + 1)[1]] == ["a", "b"]


def test_an_answer_checked_by_token_is_taken_only_with_the_sessions_own(store: Store) -> None:
    store.create_session(session())
    store.create_session(session("ZZZZZZZZ", token_hash="z" * 64))
    for code, token_hash in (("ABCDEFGH", "h" * 64), ("ZZZZZZZZ", None)):  # stored with the hash, and without
        ask = NewRequest("a", "get_codap_datasets", {}, fingerprint({}), T0, T0 + 3600, token_hash=token_hash)
        store.add_request(code, ask)
    with pytest.raises(RequestNotFound):
        store.complete_request(response("a", result=1), now=T0 + 1, token_hash="x" * 64)
    with pytest.raises(RequestNotFound):
        store.complete_request(response("a", "ZZZZZZZZ", result=1), now=T0 + 1, token_hash="h" * 64)
    assert store.get_response("ABCDEFGH", "a") is None and store.get_response("ZZZZZZZZ", "a") is None
    assert store.complete_request(response("a", result=1), now=T0 + 1, token_hash="h" * 64).fresh
    assert store.complete_request(response("a", "ZZZZZZZZ", result=2), now=T0 + 1, token_hash="z" * 64).fresh
    again = store.complete_request(response("a", result=1), now=T0 + 2, token_hash="h" * 64)
    assert not again.fresh and again.response.body == {"result": 1}


def test_a_session_read_that_lists_pending_requests_agrees_with_the_count(store: Store) -> None:
    store.create_session(session())
    store.add_request("ABCDEFGH", new("a", args={"n": 1}))
    store.add_request("ABCDEFGH", new("b", args={"n": [1, 2, 3]}, ttl=100))
    store.add_request("ABCDEFGH", new("c"))
    store.complete_request(response("c", result=1))
    read = store.get_session("ABCDEFGH")
    assert read is not None
    for now in (T0, T0 + 100):
        if read.pending is not None:  # where a store reads them with the session (DynamoDB)
            assert pending_totals(read.pending, now) == store.count_pending("ABCDEFGH", now)
    assert store.count_pending("ABCDEFGH", T0) == PendingTotals(2, args_bytes({"n": 1}) + args_bytes({"n": [1, 2, 3]}))


def test_the_plugins_answer_is_taken_only_from_a_live_session_and_is_its_sign_of_life(store: Store) -> None:
    store.create_session(session())
    for rid in ("a", "b"):
        store.add_request("ABCDEFGH", new(rid))
    done = store.complete_request(response("a", result=1), now=T0 + 10, alive_until=T0 + 610)
    seen = store.get_session("ABCDEFGH")
    assert done.fresh and seen is not None and (seen.last_seen, seen.expires_at) == (T0 + 10, T0 + 610)
    with pytest.raises(SessionNotFound) as ended:  # unseen for its whole lifetime: expired, takes nothing
        store.complete_request(response("b", result=2), now=T0 + 610, alive_until=T0 + 1210)
    assert ended.value.reason == "expired" and store.get_response("ABCDEFGH", "b") is None
    b = store.get_request("ABCDEFGH", "b")
    assert b is not None and b.status == "queued"
    store.update_session("ABCDEFGH", closed_at=T0 + 20)
    with pytest.raises(SessionNotFound) as closed:
        store.complete_request(response("b", result=2), now=T0 + 30, alive_until=T0 + 630)
    assert closed.value.reason == "closed" and store.get_response("ABCDEFGH", "b") is None
    assert store.complete_request(response("b", error={"code": "session_closed"})).fresh  # the relay's own, on close


def test_a_charge_counted_ahead_in_blocks_refuses_exactly_what_does_not_fit(store: Store) -> None:
    """``Charge.block``: a store may charge the counter a block ahead for the session (DynamoDB does: most appends then
    write no counter); the counter never refuses a request that fits exactly, and refuses the one that does not."""
    store.create_session(session())
    window_end = T0 + 3600

    def budget(amount: int) -> list[Charge]:
        return [Charge("bytes:203.0.113.9:9", amount, 25, window_end, block=16)]

    for rid in "abc":  # 8 + 8 + 8 = 24 of 25: the third does not fit a whole block, and is counted alone
        assert store.add_request("ABCDEFGH", new(rid), charges=budget(8))[1]
    with pytest.raises(ChargeRefused) as refused:
        store.add_request("ABCDEFGH", new("d"), charges=budget(2))
    assert refused.value.total == 26 and refused.value.charge.amount == 2
    assert store.add_request("ABCDEFGH", new("e"), charges=budget(1))[1]  # 25: fits
    assert [r.id for r in store.list_requests("ABCDEFGH")] == ["a", "b", "c", "e"]
