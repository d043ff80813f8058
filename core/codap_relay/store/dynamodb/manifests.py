"""Manifests: one item per distinct tool manifest (``MANIFEST#<content address>``), shared by every session that
registers it, so a session's own item (read on every poll, written on every sign of life) holds only the address.

A manifest item's TTL is kept ahead of every session that refers to it: a session records how long its manifest
is kept (``manifest_purge``); a session made, or an expiry slid, past that moves the manifest's TTL on by
MANIFEST_KEEP_SECONDS more (one small write a week per manifest in use, not one per sign of life). TTL removes a
manifest MANIFEST_KEEP_SECONDS after the last session that used it was purged, at the latest.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ...errors import PayloadTooLarge
from . import codec
from .client import Connection, condition_failed
from .codec import INLINE_LIMIT, n
from .table import TTL_ATTRIBUTE, key, pk

#: How far past the session that needs it a manifest's TTL is set when it is moved: a manifest in daily use is
#: written about once in this long.
MANIFEST_KEEP_SECONDS = 7 * 86_400


def manifest_key(manifest: str) -> dict[str, dict[str, Any]]:
    return key(f"MANIFEST#{manifest}", "MANIFEST")


class ManifestOps(Connection):
    def get_manifest(self, manifest: str) -> list[dict[str, Any]] | None:
        if manifest.startswith(codec.INLINE_MANIFEST):  # an earlier version's session: in its own item
            meta = self._get(pk(manifest.removeprefix(codec.INLINE_MANIFEST)), "META")
            return None if meta is None or "tools" not in meta else list(self._unpack("tools", meta))
        # A manifest item never changes once written: an eventually consistent read (half the units) will do,
        # unless it finds nothing (a manifest stored a moment ago), which a consistent read confirms.
        for consistent in (False, True):
            item = self._call(
                "get_item", TableName=self.table, Key=manifest_key(manifest), ConsistentRead=consistent
            ).get("Item")
            if item is not None:
                tools: list[dict[str, Any]] = self._unpack("tools", item)
                return tools
        return None

    def _keep_manifest(self, manifest: str, tools: list[dict[str, Any]] | None, purge: int) -> int:
        """Make sure manifest ``manifest`` is stored and kept until at least ``purge`` (epoch seconds); returns how
        long it is kept. ``tools`` None: it is known to be stored (a live session refers to it), only its TTL moves."""
        kept = self._manifests_kept
        with self._seq_lock:
            known = kept.get(manifest, 0)
        if known >= purge:
            return known
        until = purge + MANIFEST_KEEP_SECONDS
        if tools is not None:
            found = self._call(
                "get_item",
                TableName=self.table,
                Key=manifest_key(manifest),
                ProjectionExpression="#purge",
                ExpressionAttributeNames={"#purge": TTL_ATTRIBUTE},
            ).get("Item")
            if found is not None and int(found[TTL_ATTRIBUTE]["N"]) >= purge:
                until = int(found[TTL_ATTRIBUTE]["N"])
            else:
                packed, chunks = codec.pack("tools", tools, "", 0)
                if chunks:  # a manifest's TTL moves; chunks could not follow it
                    raise PayloadTooLarge(
                        "The tool manifest is too large for this relay; send fewer or smaller tool definitions.",
                        limit=INLINE_LIMIT,
                    )
                self._move_manifest(manifest, until, packed)
        else:
            self._move_manifest(manifest, until, {})
        with self._seq_lock:
            kept[manifest] = max(until, kept.get(manifest, 0))
            if len(kept) > 1024:
                kept.clear()
        return until

    def _move_manifest(self, manifest: str, until: int, packed: codec.Item) -> None:
        """Set the manifest's TTL to ``until`` (and, given ``packed``, write it: the same content whoever writes
        it), unless it is kept longer already."""
        fields = {TTL_ATTRIBUTE: n(until), **packed}
        names = {f"#{i}": k for i, k in enumerate(fields)}
        values = {f":{i}": v for i, v in enumerate(fields.values())}
        condition = "#0 < :0" if not packed else "attribute_not_exists(pk) OR #0 < :0"
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=manifest_key(manifest),
                UpdateExpression="SET " + ", ".join(f"#{i} = :{i}" for i in range(len(fields))),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
