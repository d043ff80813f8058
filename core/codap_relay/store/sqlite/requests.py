"""Requests: the session's queue (appended with the session's seq in one transaction), its reads, and delivery to
the stream that owns the session."""

from __future__ import annotations

from ...errors import SessionNotFound
from ...jsonvalues import dumps
from ...records import Lookup, NewRequest, RequestRecord, SessionRecord
from ..base import PendingRef, PendingTotals
from .database import SESSION_COLUMNS
from .rows import request_of, response_of, session_of
from .sessions import SessionOps


class RequestOps(SessionOps):
    """Over the session operations: delivery reads the session before it takes the writer's lock."""

    def add_request(self, code: str, new: NewRequest, *, last_seq: int | None = None) -> tuple[RequestRecord, bool]:
        with self._tx() as db:
            row = db.execute("SELECT last_seq, closed_at FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                raise SessionNotFound("session not found", reason="unknown")
            existing = db.execute("SELECT * FROM requests WHERE code = ? AND id = ?", (code, new.id)).fetchone()
            if existing is not None:
                return request_of(existing), False
            if row["closed_at"] is not None:
                raise SessionNotFound("session closed", reason="closed")
            seq = row["last_seq"] + 1
            db.execute("UPDATE sessions SET last_seq = ? WHERE code = ?", (seq, code))
            args = dumps(new.args)
            db.execute(
                "INSERT INTO requests (code, seq, id, tool, args, fingerprint, created_at, expires_at, status, "
                "arg_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
                (code, seq, new.id, new.tool, args, new.fingerprint, new.created_at, new.expires_at, len(args)),
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
