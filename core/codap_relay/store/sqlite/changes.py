"""Change marks: each session's document changes, merged into one row with a rising seq."""

from __future__ import annotations

import json

from ...jsonvalues import dumps
from ...records import ChangeMarks
from ..base import merged_marks
from .database import Database


class ChangeOps(Database):
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
