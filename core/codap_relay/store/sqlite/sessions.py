"""Sessions: create one (its manifest stored once by address), read it, slide or close it, detach a tab."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...errors import CodeCollision
from ...records import DETACHED, SessionRecord
from .database import PURGE_EVERY_N_SESSIONS, SESSION_COLUMNS, Database
from .rows import session_of


class SessionOps(Database):
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
        return None if row is None else session_of(row)

    def get_manifest(self, manifest: str) -> list[dict[str, Any]] | None:
        row = self._one("SELECT tools FROM manifests WHERE id = ?", (manifest,))
        return None if row is None else list(json.loads(row["tools"]))

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
