"""Requests: the session's queue (appended with the session's seq in one transaction), its reads, and delivery to
the stream that owns the session."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import SessionNotFound
from ...jsonvalues import dumps
from ...records import Lookup, NewRequest, RequestRecord, RequestStatus, SessionRecord
from ..base import Charge, ChargeRefused, PendingRef, PendingTotals
from .database import SESSION_COLUMNS
from .rows import request_of, response_of, session_of
from .sessions import SessionOps


class RequestOps(SessionOps):
    """Over the session operations: delivery reads the session before it takes the writer's lock."""

    def add_request(
        self, code: str, new: NewRequest, *, last_seq: int | None = None, charges: Sequence[Charge] = ()
    ) -> tuple[RequestRecord, bool]:
        with self._tx() as db:
            row = db.execute("SELECT last_seq, closed_at, consumer FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                raise SessionNotFound("session not found", reason="unknown")
            existing = db.execute("SELECT * FROM requests WHERE code = ? AND id = ?", (code, new.id)).fetchone()
            if existing is not None:
                return request_of(existing), False
            if row["closed_at"] is not None:
                raise SessionNotFound("session closed", reason="closed")
            for charge in charges:  # in the same transaction: a refusal rolls back every count before it
                found = db.execute("SELECT count, expires_at FROM counters WHERE key = ?", (charge.counter,)).fetchone()
                this_window = found is not None and found["expires_at"] >= charge.window_end
                total = (found["count"] if this_window else 0) + charge.amount
                if total > charge.limit:
                    raise ChargeRefused(charge, total)
                db.execute(
                    "INSERT INTO counters (key, count, expires_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                    "count = excluded.count, expires_at = excluded.expires_at",
                    (charge.counter, total, charge.window_end),
                )
            seq = row["last_seq"] + 1
            db.execute("UPDATE sessions SET last_seq = ? WHERE code = ?", (seq, code))
            args = dumps(new.args)
            delivered = new.created_at if new.deliver_to is not None and row["consumer"] == new.deliver_to else None
            status: RequestStatus = "queued" if delivered is None else "delivered"
            row_values = (code, seq, new.id, new.tool, args, new.fingerprint, new.created_at, new.expires_at)
            db.execute(
                "INSERT INTO requests (code, seq, id, tool, args, fingerprint, created_at, expires_at, status, "
                "delivered_at, arg_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row_values, status, delivered, len(args)),
            )
        return (
            RequestRecord(
                code=code,
                seq=seq,
                id=new.id,
                tool=new.tool,
                args=new.args,
                fingerprint=new.fingerprint,
                created_at=new.created_at,
                expires_at=new.expires_at,
                status=status,
                delivered_at=delivered,
            ),
            True,
        )

    def get_request(self, code: str, request_id: str) -> RequestRecord | None:
        row = self._one("SELECT * FROM requests WHERE code = ? AND id = ?", (code, request_id))
        return None if row is None else request_of(row)

    def lookup(self, code: str, request_id: str) -> Lookup:
        with self._reading() as db:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                return Lookup(None, None, None)
            answer = db.execute("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id)).fetchone()
            if answer is not None:
                return Lookup(session_of(row), None, response_of(answer))
            request = db.execute("SELECT * FROM requests WHERE code = ? AND id = ?", (code, request_id)).fetchone()
            return Lookup(session_of(row), None if request is None else request_of(request), None)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        rows = self._all(
            "SELECT * FROM requests WHERE code = ? AND seq > ? AND status IN ('queued', 'delivered') "
            "AND expires_at > ? ORDER BY seq",
            (code, after_seq, now),
        )
        return [request_of(r) for r in rows]

    def pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
        # A range over the (code, id) index; the arguments, in overflow pages, are never read.
        rows = self._all(
            "SELECT id, tool, status FROM requests WHERE code = ? AND id >= ? AND id < ? "
            "AND status IN ('queued', 'delivered') AND expires_at > ? ORDER BY seq",
            (code, prefix, prefix + "\U0010ffff", now),
        )
        return [PendingRef(r["id"], r["tool"], r["status"]) for r in rows if r["id"].startswith(prefix)]

    def count_pending(self, code: str, now: float) -> PendingTotals:
        row = self._one(
            "SELECT COUNT(*) AS n, COALESCE(SUM(arg_bytes), 0) AS b FROM requests INDEXED BY requests_pending "
            "WHERE code = ? AND status IN ('queued', 'delivered') AND expires_at > ?",
            (code, now),
        )
        assert row is not None
        return PendingTotals(int(row["n"]), int(row["b"]))

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        session = self.get_session(code)  # every read here is fresh
        if session is None:
            return None, []
        live = session.closed_at is None and session.expires_at > now and session.consumer == consumer
        if not live or session.last_seq <= after_seq:
            return session, []
        with self._tx(durable=False) as db:
            # Checked again inside the transaction: the session may have been ended or taken over meanwhile.
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                return None, []
            session = session_of(row)
            if session.closed_at is not None or session.expires_at <= now or session.consumer != consumer:
                return session, []
            db.execute(
                "UPDATE requests SET status = 'delivered', delivered_at = ? "
                "WHERE code = ? AND seq > ? AND status = 'queued' AND expires_at > ?",
                (now, code, after_seq, now),
            )
            rows = db.execute(
                "SELECT * FROM requests WHERE code = ? AND seq > ? AND status IN ('queued', 'delivered') "
                "AND expires_at > ? ORDER BY seq",
                (code, after_seq, now),
            ).fetchall()
        return session, [request_of(r) for r in rows]

    def list_requests(self, code: str) -> list[RequestRecord]:
        return [request_of(r) for r in self._all("SELECT * FROM requests WHERE code = ? ORDER BY seq", (code,))]
