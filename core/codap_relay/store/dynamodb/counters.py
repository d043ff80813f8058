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
        counter_key = item_key(f"COUNTER#{key}", "COUNTER")
        purge = n(math.ceil(expires_at))
        for attempt in range(TRANSACTION_ATTEMPTS):
            try:
                result = self._call(
                    "update_item",
                    TableName=self.table,
                    Key=counter_key,
                    UpdateExpression=(
                        "ADD #count :one SET expires_at = if_not_exists(expires_at, :exp), "
                        "#purge = if_not_exists(#purge, :purge)"
                    ),
                    ConditionExpression="attribute_not_exists(pk) OR expires_at > :now",
                    ExpressionAttributeNames={"#count": "count", "#purge": TTL_ATTRIBUTE},
                    ExpressionAttributeValues={
                        ":one": n(amount),
                        ":exp": n(expires_at),
                        ":purge": purge,
                        ":now": n(now),
                    },
                    ReturnValues="UPDATED_NEW",
                )
                return int(result["Attributes"]["count"]["N"])
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            # The window has ended: start a new one, unless another writer just did.
            try:
                self._call(
                    "put_item",
                    TableName=self.table,
                    Item={**counter_key, "count": n(amount), "expires_at": n(expires_at), TTL_ATTRIBUTE: purge},
                    ConditionExpression="expires_at <= :now",
                    ExpressionAttributeValues={":now": n(now)},
                )
                return amount
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            self._backoff(attempt)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)
