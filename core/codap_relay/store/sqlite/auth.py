"""The OAuth server's items: clients, codes, grants and tokens, by kind and key, listed by owner."""

from __future__ import annotations

from ...jsonvalues import dumps
from ...records import AuthItem
from .database import Database
from .rows import auth_item_of


class AuthOps(Database):
    def put_auth(self, item: AuthItem) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO auth (kind, key, owner, data, expires_at) VALUES (?, ?, ?, ?, ?)",
                (item.kind, item.key, item.owner, dumps(item.data), item.expires_at),
            )

    def get_auth(self, kind: str, key: str) -> AuthItem | None:
        row = self._one("SELECT * FROM auth WHERE kind = ? AND key = ?", (kind, key))
        return None if row is None else auth_item_of(row)

    def take_auth(self, kind: str, key: str) -> AuthItem | None:
        with self._tx() as db:
            row = db.execute("SELECT * FROM auth WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM auth WHERE kind = ? AND key = ?", (kind, key))
        return auth_item_of(row)

    def delete_auth(self, kind: str, key: str) -> bool:
        return self.take_auth(kind, key) is not None

    def list_auth(self, kind: str, owner: str) -> list[AuthItem]:
        return [auth_item_of(r) for r in self._all("SELECT * FROM auth WHERE kind = ? AND owner = ?", (kind, owner))]
