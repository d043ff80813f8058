"""The database file: its schema and the migrations from earlier versions, the one writer's transactions and each
thread's read snapshots, and the housekeeping that purges rows long past expiry. Every write is committed before it
returns, and on disk (fsync) before it returns, except delivery marks and rate-limit counts (see ``_tx``)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import StoreUnavailable
from ...records import manifest_id
from ..base import PURGE_GRACE_SECONDS

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

# Rows are kept PURGE_GRACE_SECONDS past their expiry (for the activity log and late readers), then purged; the
# OAuth server's items when they end (nobody reads one after it, and a pending authorization must not pile up).
PURGE_EVERY_N_SESSIONS = 200
PURGE_EVERY_N_AUTH_PUTS = 200


class Database:
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
        self._auth_puts = 0

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

    def purge(self, now: float) -> None:
        """Delete rows long past expiry. Runs now and then from create_session."""
        cutoff = now - PURGE_GRACE_SECONDS
        with self._tx() as db:
            db.execute("DELETE FROM counters WHERE expires_at < ?", (now,))
            db.execute("DELETE FROM connections WHERE expires_at < ?", (now,))
            db.execute("DELETE FROM changes WHERE expires_at < ?", (cutoff,))
            db.execute("DELETE FROM auth WHERE expires_at < ?", (now,))
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
