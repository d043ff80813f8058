"""Counters: the rate limits' windows, added to atomically, a window that has ended starting again. And push
connections' records, which $disconnect takes."""

from __future__ import annotations

import sqlite3

from ...records import ConnectionRecord
from .database import Database


class CounterOps(Database):
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
            return self._add(db, key, expires_at, now, amount)

    def incr_counters(self, key: str, names: list[str], expires_at: float, now: float) -> list[int]:
        with self._tx(durable=False) as db:  # one transaction: the counts move together
            return [self._add(db, f"{key}#{name}", expires_at, now, 1) for name in names]

    @staticmethod
    def _add(db: sqlite3.Connection, key: str, expires_at: float, now: float, amount: int) -> int:
        db.execute(
            "INSERT INTO counters (key, count, expires_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
            "count = CASE WHEN counters.expires_at <= ? THEN excluded.count ELSE counters.count + excluded.count "
            "END, expires_at = CASE WHEN counters.expires_at <= ? THEN excluded.expires_at "
            "ELSE counters.expires_at END",
            (key, amount, expires_at, now, now),
        )
        row = db.execute("SELECT count FROM counters WHERE key = ?", (key,)).fetchone()
        return int(row["count"])
