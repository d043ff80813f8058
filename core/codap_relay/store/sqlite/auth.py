"""The OAuth server's items: clients, codes, grants and tokens, by kind and key, listed by owner."""

from __future__ import annotations

from ...jsonvalues import dumps
from ...records import AuthItem
from .database import PURGE_EVERY_N_AUTH_PUTS, Database
from .rows import auth_item_of


class AuthOps(Database):
    def put_auth(self, item: AuthItem, *, now: float | None = None) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO auth (kind, key, owner, data, expires_at) VALUES (?, ?, ?, ?, ?)",
                (item.kind, item.key, item.owner, dumps(item.data), item.expires_at),
            )
            self._auth_puts += 1
            if now is not None and self._auth_puts % PURGE_EVERY_N_AUTH_PUTS == 0:
                db.execute("DELETE FROM auth WHERE expires_at < ?", (now,))

    def get_auths(self, keys: list[tuple[str, str]]) -> list[AuthItem | None]:
        if not keys:
            return []
        where = " OR ".join(["(kind = ? AND key = ?)"] * len(keys))
        rows = self._all(f"SELECT * FROM auth WHERE {where}", tuple(v for pair in keys for v in pair))
        found = {(r["kind"], r["key"]): auth_item_of(r) for r in rows}
        return [found.get(k) for k in keys]

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
