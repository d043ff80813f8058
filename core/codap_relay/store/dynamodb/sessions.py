"""Sessions: the META item of a session's partition (create, read, slide, close, detach a tab). It holds its
manifest by address only (manifests.py), so it stays a few hundred bytes: every poll reads it, every sign of life
writes it."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ...errors import CodeCollision
from ...records import DETACHED, SessionRecord
from . import codec
from .client import condition_failed
from .codec import Item, n, s
from .manifests import ManifestOps
from .table import TTL_ATTRIBUTE, key, pk, purge_at


class SessionOps(ManifestOps):
    def create_session(self, session: SessionRecord, tools: list[dict[str, Any]] | None = None) -> None:
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
        purge = purge_at(session.expires_at)
        kept = None
        if session.manifest is not None and tools is not None:
            kept = self._keep_manifest(session.manifest, tools, purge)  # first: no session points at nothing
        item = codec.session_item(session, partition, purge, kept)
        try:
            self._call("put_item", TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if condition_failed(exc):
                raise CodeCollision("pairing code already in use", code=session.code) from exc
            raise

    def get_session(self, code: str) -> SessionRecord | None:
        item = self._noted(code, self._get(pk(code), "META"))
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
            purge = purge_at(expires_at)
            slide = {**fields, "expires_at": n(expires_at), TTL_ATTRIBUTE: n(purge)}
            slid = self._update_meta(code, slide, "attribute_exists(pk) AND #expires_at < :expires_at", returns=True)
            if slid is not None:
                self._keep_manifest_for(code, slid, purge)
                return
        if fields:
            self._update_meta(code, fields, "attribute_exists(pk)")

    def _keep_manifest_for(self, code: str, meta: Item, purge: int) -> None:
        """The session slid to ``purge``: its manifest is kept at least as long (rarely a write, see manifests.py)."""
        if "manifest" not in meta or int(meta["manifest_purge"]["N"]) >= purge:
            return
        kept = self._keep_manifest(meta["manifest"]["S"], None, purge)
        moved = {"manifest_purge": n(kept)}
        self._update_meta(code, moved, "attribute_exists(pk) AND #manifest_purge < :manifest_purge")

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

    def _update_meta(self, code: str, fields: Item, condition: str, *, returns: bool = False) -> Item | None:
        """Set ``fields`` if ``condition`` holds: the item as written (``returns``: its attributes, which costs no
        read), None if the condition failed."""
        names = {f"#{k}": k for k in fields}
        values = {f":{k}": v for k, v in fields.items()}
        try:
            written = self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(code), "META"),
                UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                **({"ReturnValues": "ALL_NEW"} if returns else {}),
            )
        except ClientError as exc:
            if condition_failed(exc):
                return None
            raise
        attributes: Item = written.get("Attributes", {})
        return attributes
