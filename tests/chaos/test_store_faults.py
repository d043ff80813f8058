"""Case 9: store faults at every step of every endpoint -> 503 + Retry-After, no partial writes, and recovery.

For each operation we first run it cleanly and record the store calls it makes. Then, for every one of those
calls, we replay the operation on a fresh store with a fault injected at exactly that call, and check:

* the caller gets 503 ``store_unavailable`` with ``Retry-After`` (never a 500, never a half-answer);
* if the fault struck before the store saw the call, the durable state is either untouched or the retry
  completes the operation (no stranded half-writes);
* a retry once the store is back succeeds and leaves exactly the state of the clean run.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.base import Store
from codap_relay.store.sqlite import SqliteStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.faulty_store import (
    FaultyClient,
    FaultyStore,
    Mode,
    read_timeout,
    server_error,
    throttled,
    transaction_throttled,
)
from codap_relay_tooling.testing.relays import EMBEDDED, make_relay, open_embedded
from codap_relay_tooling.testing.servers import bearer
from codap_relay_tooling.testing.sse_client import SSEDecoder

pytestmark = pytest.mark.chaos

ERRORS: dict[str, Callable[[], BaseException]] = {
    "timeout": lambda: TimeoutError("read timed out"),
    "throttled": lambda: sqlite3.OperationalError("database is locked"),
    "5xx": lambda: ConnectionResetError("connection reset by peer"),
}


DYNAMO_ERRORS: dict[str, Callable[[], BaseException]] = {
    "timeout": read_timeout,
    "throttled": throttled,
    "5xx": server_error,
    "transaction throttled": transaction_throttled,
}
BACKENDS = [*EMBEDDED, pytest.param("dynamodb_local", marks=[pytest.mark.dynamodb_local, pytest.mark.slow])]


@dataclass
class World:
    relay: Relay
    store: Faults
    view: Store  # the same data, read without faults
    client: httpx.AsyncClient
    code: str
    token: str
    errors: dict[str, Callable[[], BaseException]]


class Faults(Protocol):
    calls: list[str]
    fired: int
    down: bool

    def arm(self, at: int, mode: Mode, make: Callable[[], BaseException]) -> None: ...


@contextlib.contextmanager
def backend(kind: str, tmp: Path) -> Iterator[Callable[[], tuple[Store, Faults, Store, dict[str, Any]]]]:
    """Yields a factory of (store for the relay, its fault injector, an unfaulted view, error makers)."""
    if kind != "dynamodb_local":

        def embedded() -> tuple[Store, Faults, Store, dict[str, Any]]:
            faulty = FaultyStore(open_embedded(kind, tmp))
            return faulty, faulty, faulty.inner, ERRORS  # type: ignore[return-value]

        yield embedded
        return
    from codap_relay.store.dynamodb import DynamoStore
    from codap_relay_tooling.testing.dynamodb_shared import fresh_table

    with fresh_table() as (local, table):
        raw = local.client()

        def dynamo() -> tuple[Store, Faults, Store, dict[str, Any]]:
            faulty = FaultyClient(raw)
            return DynamoStore(faulty, table), faulty, DynamoStore(raw, table), DYNAMO_ERRORS

        yield dynamo


def dynamo_items_consistent(w: World) -> None:
    """Item level, DynamoDB only: the session's seqs are its requests' (gapless, each once), every unanswered
    request is on the session's pending list, and an answer is stored exactly with the requests marked answered. A
    half-applied append or answer would break one. (An answered request may stay listed: the answer's second write,
    which takes it off, can fail without failing the answer; delivery finds it answered and the next append drops
    it.)"""
    store: Any = w.view
    items = store._client.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"SESSION#{w.code}"}},
        ConsistentRead=True,
    )["Items"]
    sks = {i["sk"]["S"]: i for i in items}
    meta = sks["META"]
    requests = {sk[4:]: i for sk, i in sks.items() if sk.startswith("RID#")}
    seqs = sorted(int(i["seq"]["N"]) for i in requests.values())
    assert seqs == list(range(1, int(meta["seq"]["N"]) + 1)), "the session's counter and its requests disagree"
    listed = {name[2:] for name in meta if name.startswith("q#")}
    unanswered = {rid for rid, i in requests.items() if i["status"]["S"] in ("queued", "delivered")}
    assert unanswered <= listed, "an unanswered request is missing from its session's pending list"
    answered = {rid for rid, i in requests.items() if i["status"]["S"] in ("completed", "failed")}
    assert answered == {rid for rid, i in requests.items() if "r_timestamp" in i}, "answers and statuses disagree"


def durable(w: World) -> dict[str, Any]:
    """What must never be half-written: session identity/closure, requests, answers (not liveness fields)."""
    if w.errors is DYNAMO_ERRORS:
        dynamo_items_consistent(w)
    inner, code = w.view, w.code
    session = inner.get_session(code)
    assert session is not None
    requests = [
        (r.seq, r.id, r.tool, r.args, r.status == "completed" or r.status == "failed")
        for r in inner.list_requests(code)
    ]
    responses = {
        r[1]: (lambda x: None if x is None else (x.status, x.body))(inner.get_response(code, r[1])) for r in requests
    }
    return {
        "closed": session.closed_at is not None,
        "last_seq": session.last_seq,
        "requests": requests,
        "responses": responses,
    }


_worlds = itertools.count(1)


async def build_world(make: Callable[[], tuple[Store, Faults, Store, dict[str, Any]]]) -> World:
    store, faults, view, errors = make()
    # A distinct code per world: DynamoDB worlds share one table.
    n, k = next(_worlds), itertools.count()
    relay = make_relay(store, FakeClock(), codes=lambda: f"{n:05o}{next(k):03o}".replace("0", "A").replace("1", "B"))
    transport = httpx.ASGITransport(app=build_app(relay), client=("198.51.100.9", 4000))
    client = web.AsyncClient(transport=transport, base_url="http://relay.test")
    s = (await client.post("/api/sessions", json={})).json()
    code, token = s["code"], s["browserToken"]
    for rid in ("r1", "r2", "r3"):
        r = await client.post("/request", json={"code": code, "id": rid, "tool": "get_codap_datasets"})
        assert r.status_code == 202
    r = await client.post("/response", json={"code": code, "id": "r1", "result": {"n": 1}}, headers=bearer(token))
    assert r.status_code == 202
    return World(relay, faults, view, client, code, token, errors)


Op = Callable[[World], Awaitable[httpx.Response]]

OPS: dict[str, tuple[Op, int]] = {
    "create_session": (lambda w: w.client.post("/api/sessions", json={}), 201),
    "submit": (
        lambda w: w.client.post("/request", json={"code": w.code, "id": "r4", "tool": "get_codap_status"}),
        202,
    ),
    "submit_retry": (
        lambda w: w.client.post("/request", json={"code": w.code, "id": "r3", "tool": "get_codap_datasets"}),
        202,
    ),
    "read_answer": (lambda w: w.client.get("/response", params={"code": w.code, "id": "r1"}), 200),
    "answer": (
        lambda w: w.client.post(
            "/response", json={"code": w.code, "id": "r2", "result": {"n": 2}}, headers=bearer(w.token)
        ),
        202,
    ),
    "status": (lambda w: w.client.get(f"/api/sessions/{w.code}"), 200),
    "metadata": (lambda w: w.client.get("/metadata", params={"code": w.code}), 200),
    "log": (lambda w: w.client.get(f"/api/sessions/{w.code}/log", headers=bearer(w.token)), 200),
    "close": (lambda w: w.client.delete(f"/api/sessions/{w.code}", headers=bearer(w.token)), 200),
}


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("mode", ["before", "after"])
@pytest.mark.parametrize("op_name", list(OPS))
async def test_fault_at_every_step_is_503_and_a_retry_converges(
    kind: str, mode: Mode, op_name: str, tmp_path: Path
) -> None:
    with backend(kind, tmp_path) as make:
        await fault_every_step(make, mode, op_name)


async def fault_every_step(make: Any, mode: Mode, op_name: str) -> None:
    op, ok = OPS[op_name]
    clean = await build_world(make)
    clean.store.calls.clear()
    assert (await op(clean)).status_code == ok
    steps = list(clean.store.calls)
    want = durable(clean)
    await clean.client.aclose()
    assert steps, "the operation made no store calls"
    for i, step in enumerate(steps):
        w = await build_world(make)
        error = list(w.errors)[i % len(w.errors)]
        before = durable(w)
        w.store.arm(i, mode, w.errors[error])
        r = await op(w)
        where = f"{op_name}: {mode} fault ({error}) at store call {i} ({step})"
        assert w.store.fired == 1, where
        if r.status_code == ok:
            # Only a liveness write (touch) may fail without failing the call, or, on DynamoDB, the write that takes
            # an answered request off its session's pending list (the answer is stored: the list only counts one
            # too many until the next append); the durable state is complete.
            liveness = step in ("update_session", "update_item") and op_name != "close"
            unlisted = step == "update_item" and op_name in ("answer", "close")
            assert liveness or unlisted, where
        else:
            assert r.status_code == 503, f"{where}: {r.status_code} {r.text}"
            body = r.json()
            assert body["error"] == "store_unavailable" and body["message"], where
            assert int(r.headers["retry-after"]) >= 1, where
            if mode == "before" and op_name != "close":
                # A single-write operation whose write never reached the store changed nothing.
                assert durable(w) == before, where
        retry = await op(w)
        assert retry.status_code == ok, f"{where}: retry got {retry.status_code} {retry.text}"
        if op_name != "create_session":  # a lost 201 leaves an orphan session; nothing else to converge
            assert durable(w) == want, where
        await w.client.aclose()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_outage_then_recovery_full_flow(kind: str, tmp_path: Path) -> None:
    """A whole outage (every call fails) -> 503 everywhere; when the store is back everything works again."""
    with backend(kind, tmp_path) as make:
        await outage_then_recovery(make)


async def outage_then_recovery(make: Any) -> None:
    w = await build_world(make)
    w.store.down = True
    for name, (op, _) in OPS.items():
        r = await op(w)
        assert r.status_code == 503, f"{name}: {r.status_code} {r.text}"
        assert int(r.headers["retry-after"]) >= 1
    r = await w.client.get("/stream", params={"code": w.code, "mode": "poll"}, headers=bearer(w.token))
    assert r.status_code == 503
    w.store.down = False
    for name, (op, ok) in OPS.items():
        assert (await op(w)).status_code == ok, name
    await w.client.aclose()


def _events(text: str) -> list[tuple[str, str | None, str]]:
    decoder = SSEDecoder()
    out = []
    for line in text.split("\n"):
        event = decoder.feed(line)
        if event is not None:
            out.append((event.event, event.id, event.data))
    return out


@pytest.mark.parametrize("kind", BACKENDS)
async def test_fault_inside_an_open_stream_ends_it_cleanly_and_loses_nothing(kind: str, tmp_path: Path) -> None:
    """A fault after the stream has started cannot be a 503 any more: the stream must end with an event the
    plugin understands (reconnect), and reconnecting with the cursor must still deliver every request."""
    with backend(kind, tmp_path) as make:
        await fault_inside_stream(make)


async def fault_inside_stream(make: Any) -> None:
    probe = await build_world(make)
    probe.store.calls.clear()
    await probe.client.get("/stream", params={"code": probe.code, "mode": "poll"}, headers=bearer(probe.token))
    steps = list(probe.store.calls)
    await probe.client.aclose()
    for i, step in enumerate(steps):
        w = await build_world(make)
        w.store.arm(i, "before", w.errors["timeout"])
        params = {"code": w.code, "mode": "poll"}
        r = await w.client.get("/stream", params=params, headers=bearer(w.token))
        where = f"fault at stream call {i} ({step})"
        delivered: set[str] = set()
        cursor = None
        if r.status_code == 503:
            assert r.headers["retry-after"], where
        else:
            assert r.status_code == 200, where
            events = _events(r.text)
            kinds = [e[0] for e in events]
            assert kinds[-1] in ("reconnect", "tool-request"), f"{where}: {kinds}"
            for kind_, eid, data in events:
                if kind_ == "tool-request":
                    delivered.add(httpx.Response(200, content=data).json()["id"])
                    cursor = eid
        headers = bearer(w.token) | ({"Last-Event-ID": cursor} if cursor else {})
        again = await w.client.get("/stream", params=params, headers=headers)
        assert again.status_code == 200, where
        for kind_, _, data in _events(again.text):
            if kind_ == "tool-request":
                delivered.add(httpx.Response(200, content=data).json()["id"])
        assert delivered == {"r2", "r3"}, where
        await w.client.aclose()


class _FlakyCommit:
    """Wraps the SQLite connection: the next COMMIT fails as a full disk or an I/O error would."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.fail_next_commit = False

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.fail_next_commit:
            self.fail_next_commit = False
            raise sqlite3.OperationalError("disk I/O error")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def test_sqlite_failed_commit_rolls_back_and_the_store_keeps_serving(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "relay.db")
    flaky = _FlakyCommit(store._db)
    store._db = flaky  # type: ignore[assignment]
    relay = make_relay(store)
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(relay)), base_url="http://t") as c:
        s = (await c.post("/api/sessions", json={})).json()
        flaky.fail_next_commit = True
        r = await c.post("/request", json={"code": s["code"], "id": "a", "tool": "get_codap_datasets"})
        assert r.status_code == 503 and r.headers["retry-after"]
        assert store.get_request(s["code"], "a") is None, "a failed commit left a visible write"
        r = await c.post("/request", json={"code": s["code"], "id": "a", "tool": "get_codap_datasets"})
        assert r.status_code == 202, r.text
        assert r.json()["seq"] == 1
    store.close()
