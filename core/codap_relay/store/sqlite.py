"""Embedded SQLite store: the local server's default. WAL mode, every write committed before it returns, and on
disk (fsync) before it returns, except delivery marks and rate-limit counts (see ``_tx``)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import CodeCollision, RequestExpired, RequestNotFound, SessionNotFound, StoreUnavailable
from ..jsonvalues import dumps
from ..records import (
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
    manifest_id,
)
from .base import PURGE_GRACE_SECONDS, PendingRef, PendingTotals, merged_marks

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  code TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL,
  manifest TEXT, last_seq INTEGER NOT NULL DEFAULT 0, last_seen REAL, consumer TEXT, closed_at REAL
);
CREATE TABLE IF NOT EXISTS manifests (id TEXT PRIMARY KEY, tools TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
  code TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
  fingerprint TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, status TEXT NOT NULL,
  delivered_at REAL, completed_at REAL, error_code TEXT, arg_bytes INTEGER,
  PRIMARY KEY (code, seq), UNIQUE (code, id)
);
CREATE TABLE IF NOT EXISTS responses (
  code TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL, fingerprint TEXT NOT NULL,
  timestamp REAL NOT NULL, expires_at REAL NOT NULL, error_code TEXT, PRIMARY KEY (code, id)
);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS connections (
    id TEXT PRIMARY KEY, code TEXT NOT NULL, consumer TEXT NOT NULL, expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
  code TEXT PRIMARY KEY, seq INTEGER NOT NULL, marks TEXT NOT NULL, expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS auth (
  kind TEXT NOT NULL, key TEXT NOT NULL, owner TEXT, data TEXT NOT NULL, expires_at REAL NOT NULL,
  PRIMARY KEY (kind, key)
);
CREATE INDEX IF NOT EXISTS auth_owner ON auth (kind, owner);
"""
# A session's pending requests are counted (status reads, the pending limits) from this index alone: the rows,
# with their arguments in overflow pages, are never read for it.
PENDING_INDEX = "CREATE INDEX IF NOT EXISTS requests_pending ON requests (code, status, expires_at, arg_bytes)"

# A session row's columns (a database from before manifests moved out keeps an empty ``tools`` column).
SESSION_COLUMNS = "code, token_hash, created_at, expires_at, manifest, last_seq, last_seen, consumer, closed_at"

# Rows are kept PURGE_GRACE_SECONDS past their expiry (for the activity log and late readers), then purged.
PURGE_EVERY_N_SESSIONS = 200


class SqliteStore:
    pushes = True
    blocking = True
    # Reads go to a worker thread too: a read of a large session (or a cold page cache) takes real time, and on the
    # event loop it would hold up every other request. Each thread reads on a connection of its own; in WAL mode no
    # writer holds them up.
    blocking_reads = True

    def __init__(self, path: str | Path, *, shared: bool = False) -> None:
        """``shared``: other processes write this file too (local-api runs each function in its own process),
        so a write here wakes no waiter there: waiters poll, as with DynamoDB."""
        self.path = str(path)
        self.pushes = not shared
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._local = threading.local()  # each thread's read connection
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before we answer 2xx, not merely handed to the OS.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._migrate()
        self._created = 0

    def _migrate(self) -> None:
        """Bring a database of an earlier version up to this one: requests gained ``arg_bytes``; sessions' own
        copies of their manifests (the ``tools`` column, left empty) moved to ``manifests``."""
        self._migrate_manifests()
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(requests)")}
        if "arg_bytes" not in columns:
            with self._tx() as db:
                if "arg_bytes" not in {row["name"] for row in db.execute("PRAGMA table_info(requests)")}:
                    db.execute("ALTER TABLE requests ADD COLUMN arg_bytes INTEGER")
                    db.execute("UPDATE requests SET arg_bytes = LENGTH(args)")  # json.dumps writes ASCII
        self._db.execute(PENDING_INDEX)

    def _migrate_manifests(self) -> None:
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(sessions)")}
        if "manifest" in columns and (
            "tools" not in columns
            or self._db.execute("SELECT 1 FROM sessions WHERE tools IS NOT NULL").fetchone() is None
        ):
            return
        with self._tx() as db:
            columns = {row["name"] for row in db.execute("PRAGMA table_info(sessions)")}
            if "manifest" not in columns:
                db.execute("ALTER TABLE sessions ADD COLUMN manifest TEXT")
            if "tools" not in columns:
                return
            for row in db.execute("SELECT code, tools FROM sessions WHERE tools IS NOT NULL").fetchall():
                address = manifest_id(json.loads(row["tools"]))
                db.execute("INSERT OR IGNORE INTO manifests (id, tools) VALUES (?, ?)", (address, row["tools"]))
                db.execute("UPDATE sessions SET manifest = ?, tools = NULL WHERE code = ?", (address, row["code"]))

    @contextmanager
    def _tx(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction. ``durable=False`` for writes whose loss in a power cut harms nothing (a delivery
        mark: the request is sent again; a rate-limit count): their commit skips the fsync, and the next durable
        commit's fsync of the log covers them too. Safe against a crash of this process either way (WAL)."""
        with self._lock:
            if not durable:
                self._db.execute("PRAGMA synchronous=NORMAL")
            try:
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
            finally:
                if not durable:
                    self._db.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads, in one snapshot: this thread's own (a file in WAL mode lets readers and the
        writer go on side by side); an in-memory database has only the one connection, under the lock."""
        if self.path == ":memory:":
            with self._lock:
                yield self._db
            return
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
            db.row_factory = sqlite3.Row
            self._local.db = db
            with self._readers_lock:  # not the writer's lock, which a commit may be holding
                self._readers.append(db)
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    def _one(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
        with self._reading() as db:
            row: sqlite3.Row | None = db.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
        with self._reading() as db:
            return db.execute(sql, args).fetchall()

    # --- sessions ---------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord, tools: list[dict[str, Any]] | None = None) -> None:
        with self._tx() as db:
            try:
                db.execute(
                    "INSERT INTO sessions (code, token_hash, created_at, expires_at, manifest, last_seq) "
                    "VALUES (?, ?, ?, ?, ?, 0)",
                    (session.code, session.token_hash, session.created_at, session.expires_at, session.manifest),
                )
            except sqlite3.IntegrityError as exc:
                raise CodeCollision("pairing code already in use", code=session.code) from exc
            if session.manifest is not None and tools is not None:
                db.execute(
                    "INSERT OR IGNORE INTO manifests (id, tools) VALUES (?, ?)", (session.manifest, json.dumps(tools))
                )
        self._created += 1
        if self._created % PURGE_EVERY_N_SESSIONS == 0:
            self.purge(session.created_at)

    def get_session(self, code: str) -> SessionRecord | None:
        row = self._one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE code = ?", (code,))
        return None if row is None else self._session(row)

    def get_manifest(self, manifest: str) -> list[dict[str, Any]] | None:
        row = self._one("SELECT tools FROM manifests WHERE id = ?", (manifest,))
        return None if row is None else list(json.loads(row["tools"]))

    @staticmethod
    def _session(row: sqlite3.Row) -> SessionRecord:
        return SessionRecord(
            code=row["code"],
            token_hash=row["token_hash"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            manifest=row["manifest"],
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

    def detach(self, code: str, owner: str) -> bool:
        with self._tx() as db:
            # substr, not LIKE: a tab id may hold "_", which LIKE reads as a wildcard.
            changed = db.execute(
                "UPDATE sessions SET consumer = ? WHERE code = ? AND (consumer = ? OR substr(consumer, 1, ?) = ?)",
                (DETACHED, code, owner, len(owner) + 1, owner + "."),
            ).rowcount
        return bool(changed)

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

    def add_request(self, code: str, new: NewRequest, *, last_seq: int | None = None) -> tuple[RequestRecord, bool]:
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
        return None if row is None else self._request(row)

    def lookup(self, code: str, request_id: str) -> Lookup:
        with self._reading() as db:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE code = ?", (code,)).fetchone()
            if row is None:
                return Lookup(None, None, None)
            answer = db.execute("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id)).fetchone()
            if answer is not None:
                return Lookup(self._session(row), None, self._response(answer))
            request = db.execute("SELECT * FROM requests WHERE code = ? AND id = ?", (code, request_id)).fetchone()
            return Lookup(self._session(row), None if request is None else self._request(request), None)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        rows = self._all(
            "SELECT * FROM requests WHERE code = ? AND seq > ? AND status IN ('queued', 'delivered') "
            "AND expires_at > ? ORDER BY seq",
            (code, after_seq, now),
        )
        return [self._request(r) for r in rows]

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
        self, code: str, consumer: str, after_seq: int, now: float
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        session = self.get_session(code)
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
            session = self._session(row)
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
        return session, [self._request(r) for r in rows]

    def list_requests(self, code: str) -> list[RequestRecord]:
        return [self._request(r) for r in self._all("SELECT * FROM requests WHERE code = ? ORDER BY seq", (code,))]

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

    def complete_request(self, response: ResponseRecord, *, now: float | None = None) -> Completion:
        with self._tx() as db:
            request = db.execute(
                "SELECT status, expires_at, created_at FROM requests WHERE code = ? AND id = ?",
                (response.code, response.id),
            ).fetchone()
            if request is None:
                raise RequestNotFound("no such request", request_id=response.id)
            earlier = db.execute(
                "SELECT * FROM responses WHERE code = ? AND id = ?", (response.code, response.id)
            ).fetchone()
            if earlier is not None:
                return Completion(self._response(earlier), False, request["created_at"])
            pending = request["status"] in ("queued", "delivered")
            if now is not None and pending and request["expires_at"] <= now:
                raise RequestExpired("request expired unanswered", request_id=response.id)
            db.execute(
                "INSERT INTO responses (code, id, status, body, fingerprint, timestamp, expires_at, error_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    response.code,
                    response.id,
                    response.status,
                    dumps(response.body),
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
        return Completion(response, True, request["created_at"])

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        row = self._one("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id))
        return None if row is None else self._response(row)

    # --- counters and housekeeping ----------------------------------------------------------------------

    def put_connection(self, record: ConnectionRecord) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO connections (id, code, consumer, expires_at) VALUES (?, ?, ?, ?)",
                (record.connection_id, record.code, record.consumer, record.expires_at),
            )

    def take_connection(self, connection_id: str, now: float) -> ConnectionRecord | None:
        with self._tx() as db:
            row = db.execute(
                "DELETE FROM connections WHERE id = ? RETURNING code, consumer, expires_at", (connection_id,)
            ).fetchone()
        if row is None or row["expires_at"] <= now:
            return None
        return ConnectionRecord(connection_id, row["code"], row["consumer"], float(row["expires_at"]))

    def incr_counter(self, key: str, expires_at: float, now: float, amount: int = 1) -> int:
        with self._tx(durable=False) as db:
            db.execute(
                "INSERT INTO counters (key, count, expires_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "count = CASE WHEN counters.expires_at <= ? THEN excluded.count ELSE counters.count + excluded.count "
                "END, expires_at = CASE WHEN counters.expires_at <= ? THEN excluded.expires_at "
                "ELSE counters.expires_at END",
                (key, amount, expires_at, now, now),
            )
            row = db.execute("SELECT count FROM counters WHERE key = ?", (key,)).fetchone()
        return int(row["count"])

    def note_changes(self, code: str, marks: list[str], expires_at: float) -> ChangeMarks:
        # Not durable: a change note only wakes watchers; one lost to a crash costs a client one notification.
        with self._tx(durable=False) as db:
            row = db.execute("SELECT seq, marks FROM changes WHERE code = ?", (code,)).fetchone()
            seq = (int(row["seq"]) if row else 0) + 1
            merged = merged_marks(json.loads(row["marks"]) if row else {}, marks, seq)
            db.execute(
                "INSERT INTO changes (code, seq, marks, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT(code) DO UPDATE "
                "SET seq = excluded.seq, marks = excluded.marks, "
                "expires_at = MAX(changes.expires_at, excluded.expires_at)",
                (code, seq, dumps(merged), expires_at),
            )
        return ChangeMarks(code=code, seq=seq, marks=merged)

    def get_changes(self, code: str) -> ChangeMarks | None:
        with self._reading() as db:
            row = db.execute("SELECT seq, marks FROM changes WHERE code = ?", (code,)).fetchone()
        if row is None:
            return None
        return ChangeMarks(
            code=code, seq=int(row["seq"]), marks={k: int(v) for k, v in json.loads(row["marks"]).items()}
        )

    # --- the OAuth server's items -----------------------------------------------------------------------

    @staticmethod
    def _auth_item(row: sqlite3.Row) -> AuthItem:
        return AuthItem(
            kind=row["kind"],
            key=row["key"],
            owner=row["owner"],
            data=json.loads(row["data"]),
            expires_at=float(row["expires_at"]),
        )

    def put_auth(self, item: AuthItem) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO auth (kind, key, owner, data, expires_at) VALUES (?, ?, ?, ?, ?)",
                (item.kind, item.key, item.owner, dumps(item.data), item.expires_at),
            )

    def get_auth(self, kind: str, key: str) -> AuthItem | None:
        row = self._one("SELECT * FROM auth WHERE kind = ? AND key = ?", (kind, key))
        return None if row is None else self._auth_item(row)

    def take_auth(self, kind: str, key: str) -> AuthItem | None:
        with self._tx() as db:
            row = db.execute("SELECT * FROM auth WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM auth WHERE kind = ? AND key = ?", (kind, key))
        return self._auth_item(row)

    def delete_auth(self, kind: str, key: str) -> bool:
        return self.take_auth(kind, key) is not None

    def list_auth(self, kind: str, owner: str) -> list[AuthItem]:
        return [self._auth_item(r) for r in self._all("SELECT * FROM auth WHERE kind = ? AND owner = ?", (kind, owner))]

    def purge(self, now: float) -> None:
        """Delete rows long past expiry. Runs now and then from create_session."""
        cutoff = now - PURGE_GRACE_SECONDS
        with self._tx() as db:
            db.execute("DELETE FROM counters WHERE expires_at < ?", (now,))
            db.execute("DELETE FROM connections WHERE expires_at < ?", (now,))
            db.execute("DELETE FROM changes WHERE expires_at < ?", (cutoff,))
            db.execute("DELETE FROM auth WHERE expires_at < ?", (cutoff,))
            db.execute("DELETE FROM responses WHERE expires_at < ?", (cutoff,))
            db.execute("DELETE FROM requests WHERE expires_at < ? AND status NOT IN ('queued','delivered')", (cutoff,))
            db.execute("DELETE FROM requests WHERE expires_at < ?", (cutoff,))
            db.execute(
                "DELETE FROM sessions WHERE expires_at < ? AND code NOT IN (SELECT DISTINCT code FROM requests)",
                (cutoff,),
            )
            # A manifest goes with the last session that refers to it.
            db.execute(
                "DELETE FROM manifests WHERE id NOT IN (SELECT manifest FROM sessions WHERE manifest IS NOT NULL)"
            )

    def close(self) -> None:
        with self._lock, self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._db.close()
