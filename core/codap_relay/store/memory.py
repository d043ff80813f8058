"""In-memory store: for tests and throwaway local runs. Lost when the process ends."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CodeCollision, RequestExpired, RequestNotFound, SessionNotFound
from ..records import (
    CONNECTION_RECORD_SECONDS,
    DETACHED,
    AuthItem,
    ChangeMarks,
    Completion,
    ConnectionRecord,
    Lookup,
    NewRequest,
    RequestRecord,
    ResponseRecord,
    SessionRecord,
    owns,
)
from .base import Charge, ChargeRefused, PendingRef, PendingTotals, args_bytes, merged_marks

PURGE_EVERY_N_AUTH_PUTS = 200  # then the OAuth items that ended go (SQLite's rule too)


@dataclass
class _SessionData:
    session: SessionRecord
    requests: dict[str, RequestRecord] = field(default_factory=dict)  # by id, insertion = seq order
    by_seq: list[str] = field(default_factory=list)  # ids; seq n at index n - 1 (seqs are gapless)
    responses: dict[str, ResponseRecord] = field(default_factory=dict)
    # id -> (expires_at, args_bytes) of each unanswered request: the count reads these, not the history.
    unanswered: dict[str, tuple[float, int]] = field(default_factory=dict)


class MemoryStore:
    pushes = True
    blocking = False
    blocking_reads = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _SessionData] = {}
        self._counters: dict[str, tuple[int, float]] = {}
        self._changes: dict[str, ChangeMarks] = {}
        self._auth: dict[tuple[str, str], AuthItem] = {}
        self._auth_puts = 0
        self._connections: dict[str, ConnectionRecord] = {}
        # Manifests by content address, kept while the process lives (as the sessions that refer to them are).
        self._manifests: dict[str, list[dict[str, Any]]] = {}

    def create_session(self, session: SessionRecord, tools: list[dict[str, Any]] | None = None) -> None:
        with self._lock:
            if session.code in self._sessions:
                raise CodeCollision("pairing code already in use", code=session.code)
            if session.manifest is not None and tools is not None:
                self._manifests.setdefault(session.manifest, tools)
            self._sessions[session.code] = _SessionData(session)

    def get_manifest(self, manifest: str) -> list[dict[str, Any]] | None:
        return self._manifests.get(manifest)

    def get_session(self, code: str) -> SessionRecord | None:
        data = self._sessions.get(code)
        return data.session if data else None

    def update_session(
        self,
        code: str,
        *,
        expires_at: float | None = None,
        last_seen: float | None = None,
        consumer: str | None = None,
        closed_at: float | None = None,
    ) -> None:
        with self._lock:
            data = self._sessions.get(code)
            if data is None:
                return
            s = data.session
            changes: dict[str, object] = {}
            if expires_at is not None and expires_at > s.expires_at:
                changes["expires_at"] = expires_at
            if last_seen is not None:
                changes["last_seen"] = last_seen
            if consumer is not None:
                changes["consumer"] = consumer
            if closed_at is not None:
                changes["closed_at"] = closed_at
            data.session = s.with_(**changes)

    def detach(self, code: str, owner: str) -> bool:
        with self._lock:
            data = self._sessions.get(code)
            if data is None or not owns(data.session.consumer, owner):
                return False
            data.session = data.session.with_(consumer=DETACHED)
            return True

    def add_request(
        self, code: str, new: NewRequest, *, last_seq: int | None = None, charges: Sequence[Charge] = ()
    ) -> tuple[RequestRecord, bool]:
        with self._lock:
            data = self._sessions.get(code)
            if data is None:
                raise SessionNotFound("session not found", reason="unknown")
            existing = data.requests.get(new.id)
            if existing is not None:
                return existing, False
            if data.session.closed_at is not None:
                raise SessionNotFound("session closed", reason="closed")
            counted = []
            for charge in charges:
                count, window_end = self._counters.get(charge.counter, (0, charge.window_end))
                count = count if window_end >= charge.window_end else 0  # an earlier window of the same name
                if count + charge.amount > charge.limit:
                    raise ChargeRefused(charge, count + charge.amount)
                counted.append((charge.counter, (count + charge.amount, charge.window_end)))
            self._counters.update(counted)
            seq = data.session.last_seq + 1
            delivered = new.deliver_to is not None and data.session.consumer == new.deliver_to
            record = RequestRecord(
                code=code,
                seq=seq,
                id=new.id,
                tool=new.tool,
                args=new.args,
                fingerprint=new.fingerprint,
                created_at=new.created_at,
                expires_at=new.expires_at,
                status="delivered" if delivered else "queued",
                delivered_at=new.created_at if delivered else None,
            )
            data.requests[new.id] = record
            data.by_seq.append(new.id)
            data.unanswered[new.id] = (new.expires_at, args_bytes(new.args))
            data.session = data.session.with_(last_seq=seq)
            return record, True

    def get_request(self, code: str, request_id: str) -> RequestRecord | None:
        data = self._sessions.get(code)
        return data.requests.get(request_id) if data else None

    def lookup(self, code: str, request_id: str) -> Lookup:
        with self._lock:
            data = self._sessions.get(code)
            if data is None:
                return Lookup(None, None, None)
            response = data.responses.get(request_id)
            request = None if response is not None else data.requests.get(request_id)
            return Lookup(data.session, request, response)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        return self._pending(code, after_seq, now)

    def _pending(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        data = self._sessions.get(code)
        if data is None:
            return []
        with self._lock:
            items = [data.requests[rid] for rid in data.by_seq[max(0, after_seq) :]]
        return [r for r in items if r.pending and r.expires_at > now]

    def pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
        return [PendingRef(r.id, r.tool, r.status) for r in self._pending(code, 0, now) if r.id.startswith(prefix)]

    def count_pending(self, code: str, now: float) -> PendingTotals:
        data = self._sessions.get(code)
        if data is None:
            return PendingTotals(0, 0)
        with self._lock:
            live = [size for expires_at, size in data.unanswered.values() if expires_at > now]
        return PendingTotals(len(live), sum(live))

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        with self._lock:  # every read here is fresh
            data = self._sessions.get(code)
            if data is None:
                return None, []
            s = data.session
            if s.closed_at is not None or s.expires_at <= now or s.consumer != consumer or s.last_seq <= after_seq:
                return s, []
            out = []
            for r in [data.requests[rid] for rid in data.by_seq[max(0, after_seq) :]]:
                if r.pending and r.expires_at > now:
                    if r.status == "queued":
                        r = data.requests[r.id] = r.with_(status="delivered", delivered_at=now)
                    out.append(r)
            return s, out

    def list_requests(self, code: str) -> list[RequestRecord]:
        data = self._sessions.get(code)
        if data is None:
            return []
        with self._lock:
            return list(data.requests.values())

    def complete_request(
        self,
        response: ResponseRecord,
        *,
        now: float | None = None,
        token_hash: str | None = None,
        alive_until: float | None = None,
    ) -> Completion:
        with self._lock:
            data = self._sessions.get(response.code)
            r = data.requests.get(response.id) if data else None
            if data is None or r is None or token_hash not in (None, data.session.token_hash):
                raise RequestNotFound("no such request", request_id=response.id)
            earlier = data.responses.get(response.id)
            if alive_until is not None and now is not None:
                if data.session.closed_at is not None:
                    raise SessionNotFound("session closed", reason="closed")
                if data.session.expires_at <= now:
                    raise SessionNotFound("session expired", reason="expired")
            if earlier is not None:
                return Completion(earlier, False, r.created_at)
            if now is not None and r.pending and r.expires_at <= now:
                raise RequestExpired("request expired unanswered", request_id=response.id)
            data.responses[response.id] = response
            data.unanswered.pop(response.id, None)
            data.requests[response.id] = r.with_(
                status=response.status, completed_at=response.timestamp, error_code=response.error_code
            )
            s = data.session
            if alive_until is not None and now is not None:
                data.session = s.with_(last_seen=now, expires_at=max(s.expires_at, alive_until))
            return Completion(response, True, r.created_at)

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        data = self._sessions.get(code)
        return data.responses.get(request_id) if data else None

    def put_connection(self, record: ConnectionRecord) -> None:
        with self._lock:
            if len(self._connections) > 10_000:  # drop expired records so the dict cannot grow without bound
                now = record.expires_at - CONNECTION_RECORD_SECONDS  # when this one was written
                self._connections = {k: v for k, v in self._connections.items() if v.expires_at > now}
            self._connections[record.connection_id] = record

    def take_connection(self, connection_id: str, now: float) -> ConnectionRecord | None:
        with self._lock:
            found = self._connections.pop(connection_id, None)
        return found if found is not None and found.expires_at > now else None

    def incr_counter(self, key: str, expires_at: float, now: float, amount: int = 1) -> int:
        with self._lock:
            count, exp = self._counters.get(key, (0, expires_at))
            if exp <= now:
                count, exp = 0, expires_at
            count += amount
            self._counters[key] = (count, exp)
            if len(self._counters) > 10_000:  # drop dead windows so the dict cannot grow without bound
                self._counters = {k: v for k, v in self._counters.items() if v[1] > now}
            return count

    def incr_counters(self, key: str, names: list[str], expires_at: float, now: float) -> list[int]:
        with self._lock:
            counts = []
            for name in names:
                count, exp = self._counters.get(f"{key}#{name}", (0, expires_at))
                if exp <= now:
                    count, exp = 0, expires_at
                self._counters[f"{key}#{name}"] = (count + 1, exp)
                counts.append(count + 1)
            return counts

    def note_changes(self, code: str, marks: list[str], expires_at: float) -> ChangeMarks:
        with self._lock:
            old = self._changes.get(code)
            seq = (old.seq if old else 0) + 1
            noted = ChangeMarks(code=code, seq=seq, marks=merged_marks(old.marks if old else {}, marks, seq))
            self._changes[code] = noted
            return noted

    def get_changes(self, code: str) -> ChangeMarks | None:
        return self._changes.get(code)

    def put_auth(self, item: AuthItem, *, now: float | None = None) -> None:
        with self._lock:
            self._auth[(item.kind, item.key)] = item
            self._auth_puts += 1
            if now is not None and self._auth_puts % PURGE_EVERY_N_AUTH_PUTS == 0:
                self._auth = {k: v for k, v in self._auth.items() if v.expires_at > now}

    def get_auth(self, kind: str, key: str) -> AuthItem | None:
        return self._auth.get((kind, key))

    def get_auths(self, keys: list[tuple[str, str]]) -> list[AuthItem | None]:
        with self._lock:
            return [self._auth.get(k) for k in keys]

    def take_auth(self, kind: str, key: str) -> AuthItem | None:
        with self._lock:
            return self._auth.pop((kind, key), None)

    def delete_auth(self, kind: str, key: str) -> bool:
        return self.take_auth(kind, key) is not None

    def list_auth(self, kind: str, owner: str) -> list[AuthItem]:
        with self._lock:
            return [i for i in self._auth.values() if i.kind == kind and i.owner == owner]

    def close(self) -> None:
        pass
