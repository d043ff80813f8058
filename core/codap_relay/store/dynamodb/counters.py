"""Counters: the rate limits' windows, one item each, added to atomically; a window that has ended starts again.
And push connections' records (one small item each, gone by TTL), which $disconnect takes."""

from __future__ import annotations

import math

from botocore.exceptions import ClientError

from ...errors import StoreUnavailable
from ...records import ConnectionRecord
from .client import TRANSACTION_ATTEMPTS, UNAVAILABLE, Connection, condition_failed
from .codec import n
from .table import TTL_ATTRIBUTE
from .table import key as item_key


class CounterOps(Connection):
    def put_connection(self, record: ConnectionRecord) -> None:
        item = {
            **item_key(f"CONN#{record.connection_id}", "CONN"),
            "code": {"S": record.code},
            "consumer": {"S": record.consumer},
            "expires_at": n(record.expires_at),
            TTL_ATTRIBUTE: n(math.ceil(record.expires_at)),
        }
        self._call("put_item", TableName=self.table, Item=item)

    def take_connection(self, connection_id: str, now: float) -> ConnectionRecord | None:
        result = self._call(
            "delete_item", TableName=self.table, Key=item_key(f"CONN#{connection_id}", "CONN"), ReturnValues="ALL_OLD"
        )
        old = result.get("Attributes")
        if not old or float(old["expires_at"]["N"]) <= now:
            return None
        return ConnectionRecord(connection_id, old["code"]["S"], old["consumer"]["S"], float(old["expires_at"]["N"]))

    def incr_counter(self, key: str, expires_at: float, now: float, amount: int = 1) -> int:
        return self._add(key, {"count": amount}, expires_at, now)["count"]

    def incr_counters(self, key: str, names: list[str], expires_at: float, now: float) -> list[int]:
        """One UpdateItem adds to every count of the window (an attribute each)."""
        counts = self._add(key, {f"c_{name}": 1 for name in names}, expires_at, now)
        return [counts[f"c_{name}"] for name in names]

    def _add(self, key: str, amounts: dict[str, int], expires_at: float, now: float) -> dict[str, int]:
        """Add ``amounts`` to the window's attributes in one UpdateItem and return their new values; a window that
        has ended is put afresh, at ``amounts``, unless another writer just did."""
        counter_key = item_key(f"COUNTER#{key}", "COUNTER")
        purge = n(math.ceil(expires_at))
        aliases = {f"#c{i}": name for i, name in enumerate(amounts)}
        values = {f":a{i}": n(amount) for i, amount in enumerate(amounts.values())}
        for attempt in range(TRANSACTION_ATTEMPTS):
            try:
                result = self._call(
                    "update_item",
                    TableName=self.table,
                    Key=counter_key,
                    UpdateExpression=(
                        f"ADD {', '.join(f'#c{i} :a{i}' for i in range(len(amounts)))} "
                        "SET expires_at = if_not_exists(expires_at, :exp), #purge = if_not_exists(#purge, :purge)"
                    ),
                    ConditionExpression="attribute_not_exists(pk) OR expires_at > :now",
                    ExpressionAttributeNames={**aliases, "#purge": TTL_ATTRIBUTE},
                    ExpressionAttributeValues={**values, ":exp": n(expires_at), ":purge": purge, ":now": n(now)},
                    ReturnValues="UPDATED_NEW",
                )
                return {name: int(result["Attributes"][name]["N"]) for name in amounts}
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            # The window has ended: start a new one, unless another writer just did.
            try:
                fresh = {name: n(amount) for name, amount in amounts.items()}
                self._call(
                    "put_item",
                    TableName=self.table,
                    Item={**counter_key, **fresh, "expires_at": n(expires_at), TTL_ATTRIBUTE: purge},
                    ConditionExpression="expires_at <= :now",
                    ExpressionAttributeValues={":now": n(now)},
                )
                return dict(amounts)
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            self._backoff(attempt)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)
