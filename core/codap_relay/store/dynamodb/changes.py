"""Change marks: what the plugin said changed in the document (for MCP subscriptions), one item per session,
read, merged and written back under a condition on the seq read."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ...errors import StoreUnavailable
from ...records import ChangeMarks
from ..base import merged_marks
from . import codec
from .client import TRANSACTION_ATTEMPTS, UNAVAILABLE, Connection, condition_failed
from .codec import n
from .table import pk, purge_at


class ChangeOps(Connection):
    def note_changes(self, code: str, marks: list[str], expires_at: float) -> ChangeMarks:
        # Read, merge, write back conditioned on the seq read: a concurrent note makes this one read again.
        partition = pk(code)
        for attempt in range(TRANSACTION_ATTEMPTS):
            old = self.get_changes(code)
            seq = (old.seq if old else 0) + 1
            merged = merged_marks(old.marks if old else {}, marks, seq)
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(pk)"}
                if old is None
                else {"ConditionExpression": "seq = :old", "ExpressionAttributeValues": {":old": n(old.seq)}}
            )
            try:
                self._call(
                    "put_item",
                    TableName=self.table,
                    Item=codec.changes_item(partition, seq, merged, expires_at, purge_at(expires_at)),
                    **condition,
                )
                return ChangeMarks(code=code, seq=seq, marks=merged)
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
            self._backoff(attempt)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    def get_changes(self, code: str) -> ChangeMarks | None:
        item = self._get(pk(code), "CHANGES")
        return None if item is None else codec.changes_of(code, item)
