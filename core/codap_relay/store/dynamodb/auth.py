"""The OAuth server's items (store/base.py ``put_auth`` …): each is two items written and deleted together, one
to read it by kind and key, one in its owner's partition to list an owner's items. An item's owner never changes
(a token keeps its grant, a grant its plugin identity), so a put never leaves an owner's copy behind."""

from __future__ import annotations

import json
import math
from typing import Any

from ...errors import StoreUnavailable
from ...jsonvalues import dumps
from ...records import AuthItem
from .client import UNAVAILABLE, Connection
from .codec import n, s
from .table import key

NO_OWNER = "-"


def _main(kind: str, item_key: str) -> tuple[str, str]:
    return f"AUTH#{kind}#{item_key}", "AUTH"


def _owned(kind: str, owner: str, item_key: str) -> tuple[str, str]:
    return f"AUTHBY#{kind}#{owner}", item_key


class AuthOps(Connection):
    def _auth_attrs(self, item: AuthItem) -> dict[str, Any]:
        return {
            "kind": s(item.kind),
            "akey": s(item.key),
            "owner": s(item.owner or NO_OWNER),
            "data": s(dumps(item.data)),
            "expires_at": n(item.expires_at),
            # gone by the TTL once ended: nobody reads an OAuth item after it ends (pending ones must not pile up)
            "purge_at": n(math.ceil(item.expires_at)),
        }

    @staticmethod
    def _auth_of(raw: dict[str, Any]) -> AuthItem:
        owner = raw["owner"]["S"]
        return AuthItem(
            kind=raw["kind"]["S"],
            key=raw["akey"]["S"],
            owner=None if owner == NO_OWNER else owner,
            data=json.loads(raw["data"]["S"]),
            expires_at=float(raw["expires_at"]["N"]),
        )

    def put_auth(self, item: AuthItem, *, now: float | None = None) -> None:  # ended items go by the TTL
        attrs = self._auth_attrs(item)
        puts = [{"Put": {"TableName": self.table, "Item": {**key(*_main(item.kind, item.key)), **attrs}}}]
        if item.owner is not None:
            puts.append(
                {"Put": {"TableName": self.table, "Item": {**key(*_owned(item.kind, item.owner, item.key)), **attrs}}}
            )
        if self._transact(puts) is not None:  # a concurrent write to the same item: nothing was written
            raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    def get_auth(self, kind: str, key_: str) -> AuthItem | None:
        raw = self._get(*_main(kind, key_))
        return None if raw is None else self._auth_of(raw)

    def get_auths(self, keys: list[tuple[str, str]]) -> list[AuthItem | None]:
        """One strongly consistent BatchGetItem (unprocessed keys asked again)."""
        wanted = list(dict.fromkeys(keys))  # BatchGetItem refuses a key asked twice
        pending: list[dict[str, Any]] = [key(*_main(kind, k)) for kind, k in wanted]
        found: dict[tuple[str, str], AuthItem] = {}
        for attempt in range(8):
            if not pending:
                break
            result = self._call("batch_get_item", RequestItems={self.table: {"Keys": pending, "ConsistentRead": True}})
            for raw in result.get("Responses", {}).get(self.table, []):
                item = self._auth_of(raw)
                found[(item.kind, item.key)] = item
            pending = result.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if pending:
                self._backoff(attempt + 3)
        else:
            if pending:
                raise StoreUnavailable(UNAVAILABLE, retry_after=1)
        return [found.get(k) for k in keys]

    def take_auth(self, kind: str, key_: str) -> AuthItem | None:
        found = self.get_auth(kind, key_)
        if found is None:
            return None
        deletes: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self.table,
                    "Key": key(*_main(kind, key_)),
                    # only the take that still finds the copy it read wins; a concurrent take gets None
                    "ConditionExpression": "attribute_exists(pk) AND #data = :data",
                    "ExpressionAttributeNames": {"#data": "data"},
                    "ExpressionAttributeValues": {":data": s(dumps(found.data))},
                }
            }
        ]
        if found.owner is not None:
            deletes.append({"Delete": {"TableName": self.table, "Key": key(*_owned(kind, found.owner, key_))}})
        return found if self._transact(deletes) is None else None

    def delete_auth(self, kind: str, key_: str) -> bool:
        return self.take_auth(kind, key_) is not None

    def list_auth(self, kind: str, owner: str) -> list[AuthItem]:
        partition, _ = _owned(kind, owner, "")
        return [
            self._auth_of(raw)
            for raw in self._query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": s(partition)})
        ]
