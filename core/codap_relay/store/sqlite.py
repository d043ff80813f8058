"""Embedded SQLite store: the local server's default. WAL mode, every write committed before it returns."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import CodeCollision, SessionNotFound, StoreUnavailable
from ..records import NewRequest, RequestRecord, ResponseRecord, SessionRecord
from .base import PURGE_GRACE_SECONDS

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  code TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL,
  tools TEXT, last_seq INTEGER NOT NULL DEFAULT 0, last_seen REAL, consumer TEXT, closed_at REAL
);
CREATE TABLE IF NOT EXISTS requests (
  code TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
  fingerprint TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, status TEXT NOT NULL,
  delivered_at REAL, completed_at REAL, error_code TEXT,
  PRIMARY KEY (code, seq), UNIQUE (code, id)
);
CREATE TABLE IF NOT EXISTS responses (
  code TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, fingerprint TEXT NOT NULL,
  timestamp REAL NOT NULL, expires_at REAL NOT NULL, error_code TEXT, PRIMARY KEY (code, id)
);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at REAL NOT NULL);
"""

# Rows are kept PURGE_GRACE_SECONDS past their expiry (for the activity log and late readers), then purged.
PURGE_EVERY_N_SESSIONS = 200


class SqliteStore:
    pushes = True
    blocking = True

    def __init__(self, path: str | Path, *, shared: bool = False) -> None:
        """``shared``: other processes write this file too (local-api runs each function in its own process),
        so a write here wakes no waiter there: waiters poll, as with DynamoDB."""
        self.path = str(path)
        self.pushes = not shared
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before we answer 2xx, not merely handed to the OS.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._created = 0

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(
                    "The relay's database is busy; nothing was changed. Retry in a moment.", retry_after=1
                ) from exc
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.Error:
                    # A failed COMMIT (disk full, I/O error) can leave the transaction open; without a rollback
                    # its writes stay visible and every later BEGIN fails.
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise

    def _one(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._db.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- sessions ---------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord) -> None:
        with self._tx() as db:
            try:
                db.execute(
                    "INSERT INTO sessions (code, token_hash, created_at, expires_at, tools, last_seq) "
                    "VALUES (?, ?, ?, ?, ?, 0)",
                    (
                        session.code,
                        session.token_hash,
                        session.created_at,
                        session.expires_at,
                        None if session.tools is None else json.dumps(session.tools),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise CodeCollision("pairing code already in use", code=session.code) from exc
        self._created += 1
        if self._created % PURGE_EVERY_N_SESSIONS == 0:
            self.purge(session.created_at)

    def get_session(self, code: str) -> SessionRecord | None:
        row = self._one("SELECT * FROM sessions WHERE code = ?", (code,))
        if row is None:
            return None
        return SessionRecord(
            code=row["code"],
            token_hash=row["token_hash"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            tools=None if row["tools"] is None else json.loads(row["tools"]),
            last_seq=row["last_seq"],
            last_seen=row["last_seen"],
            consumer=row["consumer"],
            closed_at=row["closed_at"],
        )

    def update_session(
        self,
        code: str,
        *,
        expires_at: float | None = None,
        last_seen: float | None = None,
        consumer: str | None = None,
        closed_at: float | None = None,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE sessions SET expires_at = MAX(expires_at, COALESCE(?, expires_at)), "
                "last_seen = COALESCE(?, last_seen), consumer = COALESCE(?, consumer), "
                "closed_at = COALESCE(?, closed_at) WHERE code = ?",
                (expires_at, last_seen, consumer, closed_at, code),
            )

    # --- requests ---------------------------------------------------------------------------------------

    @staticmethod
    def _request(row: sqlite3.Row) -> RequestRecord:
        return RequestRecord(
            code=row["code"],
            seq=row["seq"],
            id=row["id"],
            tool=row["tool"],
            args=json.loads(row["args"]),
            fingerprint=row["fingerprint"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            status=row["status"],
            delivered_at=row["delivered_at"],
            completed_at=row["completed_at"],
            error_code=row["error_code"],
        )

    def add_request(self, code: str, new: NewRequest) -> tuple[RequestRecord, bool]:
        with self._tx() as db:
            row = db.execute("SELECT last_seq, closed_at FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                raise SessionNotFound("session not found", reason="unknown")
            existing = db.execute("SELECT * FROM requests WHERE code = ? AND id = ?", (code, new.id)).fetchone()
            if existing is not None:
                return self._request(existing), False
            if row["closed_at"] is not None:
                raise SessionNotFound("session closed", reason="closed")
            seq = row["last_seq"] + 1
            db.execute("UPDATE sessions SET last_seq = ? WHERE code = ?", (seq, code))
            db.execute(
                "INSERT INTO requests (code, seq, id, tool, args, fingerprint, created_at, expires_at, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued')",
                (code, seq, new.id, new.tool, json.dumps(new.args), new.fingerprint, new.created_at, new.expires_at),
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
        return None if row is None else self._request(row)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        rows = self._all(
            "SELECT * FROM requests WHERE code = ? AND seq > ? AND status IN ('queued', 'delivered') "
            "AND expires_at > ? ORDER BY seq",
            (code, after_seq, now),
        )
        return [self._request(r) for r in rows]

    def list_requests(self, code: str) -> list[RequestRecord]:
        return [self._request(r) for r in self._all("SELECT * FROM requests WHERE code = ? ORDER BY seq", (code,))]

    def mark_delivered(self, code: str, request_id: str, at: float) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE requests SET status = 'delivered', delivered_at = ? "
                "WHERE code = ? AND id = ? AND status = 'queued'",
                (at, code, request_id),
            )

    # --- responses --------------------------------------------------------------------------------------

    @staticmethod
    def _response(row: sqlite3.Row) -> ResponseRecord:
        return ResponseRecord(
            code=row["code"],
            id=row["id"],
            status=row["status"],
            body=json.loads(row["body"]),
            fingerprint=row["fingerprint"],
            timestamp=row["timestamp"],
            expires_at=row["expires_at"],
            error_code=row["error_code"],
        )

    def complete_request(self, response: ResponseRecord) -> tuple[ResponseRecord, bool]:
        with self._tx() as db:
            if db.execute("SELECT 1 FROM sessions WHERE code = ?", (response.code,)).fetchone() is None:
                raise SessionNotFound("session not found", reason="unknown")
            earlier = db.execute(
                "SELECT * FROM responses WHERE code = ? AND id = ?", (response.code, response.id)
            ).fetchone()
            if earlier is not None:
                return self._response(earlier), False
            db.execute(
                "INSERT INTO responses (code, id, status, body, fingerprint, timestamp, expires_at, error_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    response.code,
                    response.id,
                    response.status,
                    json.dumps(response.body),
                    response.fingerprint,
                    response.timestamp,
                    response.expires_at,
                    response.error_code,
                ),
            )
            db.execute(
                "UPDATE requests SET status = ?, completed_at = ?, error_code = ? WHERE code = ? AND id = ?",
                (response.status, response.timestamp, response.error_code, response.code, response.id),
            )
        return response, True

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        row = self._one("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id))
        return None if row is None else self._response(row)

    # --- counters and housekeeping ----------------------------------------------------------------------

    def incr_counter(self, key: str, expires_at: float, now: float) -> int:
        with self._tx() as db:
            db.execute(
                "INSERT INTO counters (key, count, expires_at) VALUES (?, 1, ?) ON CONFLICT(key) DO UPDATE SET "
                "count = CASE WHEN counters.expires_at <= ? THEN 1 ELSE counters.count + 1 END, "
                "expires_at = CASE WHEN counters.expires_at <= ? THEN excluded.expires_at "
                "ELSE counters.expires_at END",
                (key, expires_at, now, now),
            )
            row = db.execute("SELECT count FROM counters WHERE key = ?", (key,)).fetchone()
        return int(row["count"])

    def purge(self, now: float) -> None:
        """Delete rows long past expiry. Runs now and then from create_session."""
        cutoff = now - PURGE_GRACE_SECONDS
        with self._tx() as db:
            db.execute("DELETE FROM counters WHERE expires_at < ?", (now,))
            db.execute("DELETE FROM responses WHERE expires_at < ?", (cutoff,))
            db.execute("DELETE FROM requests WHERE expires_at < ? AND status NOT IN ('queued','delivered')", (cutoff,))
            db.execute("DELETE FROM requests WHERE expires_at < ?", (cutoff,))
            db.execute(
                "DELETE FROM sessions WHERE expires_at < ? AND code NOT IN (SELECT DISTINCT code FROM requests)",
                (cutoff,),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
