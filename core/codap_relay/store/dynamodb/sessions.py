"""Sessions: the META item of a session's partition (create, read, slide, close, detach a tab)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from ...errors import CodeCollision, PayloadTooLarge
from ...records import DETACHED, SessionRecord
from . import codec
from .client import Connection, condition_failed
from .codec import INLINE_LIMIT, Item, n, s
from .table import TTL_ATTRIBUTE, key, pk, purge_at


class SessionOps(Connection):
    def create_session(self, session: SessionRecord) -> None:
        partition = pk(session.code)
        # Any item left under this code (even one whose session item TTL already removed) keeps the code taken,
        # so a new session never inherits another's requests.
        taken = self._call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": s(partition)},
            ProjectionExpression="pk",
            Limit=1,
        ).get("Items")
        if taken:
            raise CodeCollision("pairing code already in use", code=session.code)
        tools: Item = {}
        if session.tools is not None:
            tools, chunks = codec.pack("tools", session.tools, partition, 0)
            if chunks:  # the session item's expiry slides, chunks could not follow it
                raise PayloadTooLarge(
                    "The tool manifest is too large for this relay; send fewer or smaller tool definitions.",
                    limit=INLINE_LIMIT,
                )
        item = codec.session_item(session, partition, purge_at(session.expires_at), tools)
        try:
            self._call("put_item", TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if condition_failed(exc):
                raise CodeCollision("pairing code already in use", code=session.code) from exc
            raise

    def get_session(self, code: str) -> SessionRecord | None:
        item = self._get(pk(code), "META")
        return None if item is None else self._session(code, item)

    def update_session(
        self,
        code: str,
        *,
        expires_at: float | None = None,
        last_seen: float | None = None,
        consumer: str | None = None,
        closed_at: float | None = None,
    ) -> None:
        fields: Item = {}
        if last_seen is not None:
            fields["last_seen"] = n(last_seen)
        if consumer is not None:
            fields["consumer"] = s(consumer)
        if closed_at is not None:
            fields["closed_at"] = n(closed_at)
        if expires_at is not None:
            # One write in the usual case (the expiry moves forward); a late, older slide falls back to the rest.
            slide = {**fields, "expires_at": n(expires_at), TTL_ATTRIBUTE: n(purge_at(expires_at))}
            if self._update_meta(code, slide, "attribute_exists(pk) AND #expires_at < :expires_at"):
                return
        if fields:
            self._update_meta(code, fields, "attribute_exists(pk)")

    def detach(self, code: str, owner: str) -> bool:
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(code), "META"),
                UpdateExpression="SET #consumer = :detached",
                ConditionExpression="#consumer = :owner OR begins_with(#consumer, :prefix)",
                ExpressionAttributeNames={"#consumer": "consumer"},
                ExpressionAttributeValues={
                    ":detached": s(DETACHED),
                    ":owner": s(owner),
                    ":prefix": s(owner + "."),
                },
            )
            return True
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise

    def _update_meta(self, code: str, fields: Item, condition: str) -> bool:
        names = {f"#{k}": k for k in fields}
        values = {f":{k}": v for k, v in fields.items()}
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(code), "META"),
                UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
            return True
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise
