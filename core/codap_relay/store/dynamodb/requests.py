"""The request queue: append (gapless seq, idempotent ids, in one transaction with the session), read, count,
and deliver to the session's stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ...errors import SessionNotFound, StoreUnavailable
from ...records import PENDING, NewRequest, RequestRecord, SessionRecord
from ..base import PendingRef, PendingTotals, args_bytes
from . import codec
from .client import AGAIN, AGAIN_NOW, Attempt, Connection, Decided, condition_failed
from .codec import Item, n, s
from .table import MAX_SEQ, TTL_ATTRIBUTE, key, pk, purge_at, req_sk


class RequestOps(Connection):
    if TYPE_CHECKING:  # from SessionOps

        def get_session(self, code: str) -> SessionRecord | None: ...

    def add_request(self, code: str, new: NewRequest, *, last_seq: int | None = None) -> tuple[RequestRecord, bool]:
        partition = pk(code)
        purge = purge_at(new.expires_at)
        args, chunks = codec.pack("args", new.args, partition, purge)
        size = args_bytes(new.args)
        last = last_seq  # the caller's view of last_seq: tried first, read afresh if the transaction refuses it

        def attempt(tries: int) -> Attempt[tuple[RequestRecord, bool]]:
            nonlocal last
            if last is None:
                read = self._last_seq(code, new.id)
                if isinstance(read, RequestRecord):  # the session is closed, and this is an idempotent retry
                    return Decided((read, False), committed=False)
                last = read
            seq = last + 1
            if seq > MAX_SEQ:
                raise StoreUnavailable("This session has reached its request limit; start a new one.")
            request = codec.request_item(new, partition, seq, purge, args, size)
            rid = codec.rid_item(partition, new.id, seq, new.created_at, purge)
            counted = self._counting(code, seq, new.expires_at, size)
            reasons = self._transact([*self._appending(partition, seq, last, request, rid), counted])
            if reasons is None:
                self._remember(code, new.id, seq, new.created_at)
                return Decided((self._request(code, request), True), committed=True)
            if reasons[2] == "ConditionalCheckFailed":  # the id is taken: an idempotent retry
                existing = self.get_request(code, new.id)
                if existing is not None:
                    return Decided((existing, False), committed=False)
            stale_hint = reasons[0] == "ConditionalCheckFailed" and tries == 0 and last_seq is not None
            last = None
            return AGAIN_NOW if stale_hint else AGAIN  # a stale hint (or an ended session): read it, no back-off

        return self._committing(chunks, attempt)

    def _last_seq(self, code: str, request_id: str) -> int | RequestRecord:
        """The session's last seq as it is now; a closed session's existing request ``request_id`` instead
        (an idempotent retry still gets its answer). SessionNotFound when there is none to add to."""
        meta = self._call(
            "get_item",
            TableName=self.table,
            Key=key(pk(code), "META"),
            ConsistentRead=True,
            ProjectionExpression="last_seq, closed_at",
        ).get("Item")
        if meta is None:
            raise SessionNotFound("session not found", reason="unknown")
        if "closed_at" in meta:
            existing = self.get_request(code, request_id)
            if existing is not None:
                return existing
            raise SessionNotFound("session closed", reason="closed")
        return int(meta["last_seq"]["N"])

    def _appending(self, partition: str, seq: int, last: int, request: Item, rid: Item) -> list[dict[str, Any]]:
        """The transaction that appends ``request`` as number ``seq``: the session's counter moves from ``last``
        (and the session is not closed), the request and its id item ``rid`` are new."""
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(partition, "META"),
                    "UpdateExpression": "SET last_seq = :seq",
                    # Not closed: a session being ended takes no new requests, atomically.
                    "ConditionExpression": "last_seq = :last AND attribute_not_exists(closed_at)",
                    "ExpressionAttributeValues": {":seq": n(seq), ":last": n(last)},
                }
            },
            {"Put": {"TableName": self.table, "Item": request, "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Put": {"TableName": self.table, "Item": rid, "ConditionExpression": "attribute_not_exists(pk)"}},
        ]

    def _counting(self, code: str, seq: int, expires_at: float, size: int) -> dict[str, Any]:
        """The PENDING item's part of an append: request ``seq``'s entry set, the expired entries the last count
        saw dropped (they stay expired), and the item's TTL moved with the request's."""
        with self._seq_lock:
            expired = [e for e in self._expired_entries.pop(code, []) if e != codec.pending_entry(seq)]
        names = {"#e": codec.pending_entry(seq), "#purge": TTL_ATTRIBUTE}
        names.update({f"#x{i}": e for i, e in enumerate(expired)})
        update = "SET #e = :e, #purge = :purge"
        if expired:
            update += " REMOVE " + ", ".join(f"#x{i}" for i in range(len(expired)))
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(pk(code), "PENDING"),
                "UpdateExpression": update,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {
                    ":e": codec.pending_value(expires_at, size),
                    ":purge": n(purge_at(expires_at)),
                },
            }
        }

    def get_request(self, code: str, request_id: str) -> RequestRecord | None:
        located = self._locate(code, request_id)
        if located is None:
            return None
        item = self._get(pk(code), req_sk(located[0]))
        if item is None or item["id"]["S"] != request_id:
            return None
        return self._request(code, item)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        if after_seq >= MAX_SEQ:
            return []
        items = self._query(
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            FilterExpression="#status IN (:queued, :delivered) AND expires_at > :now",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":pk": s(pk(code)),
                ":lo": s(req_sk(max(0, after_seq) + 1)),
                ":hi": s(req_sk(MAX_SEQ)),
                ":queued": s("queued"),
                ":delivered": s("delivered"),
                ":now": n(now),
            },
        )
        return [self._request(code, item) for item in items]

    def pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
        """The id items (a seq and a time each) by prefix, then each request's status and tool, projected: the
        arguments are neither sent nor unpacked."""
        partition = pk(code)
        seqs = [
            int(item["seq"]["N"])
            for item in self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": s(partition), ":prefix": s(f"RID#{prefix}")},
            )
        ]
        refs = []
        for seq in sorted(seqs):
            item = self._call(
                "get_item",
                TableName=self.table,
                Key=key(partition, req_sk(seq)),
                ConsistentRead=True,
                ProjectionExpression="#id, tool, #status, expires_at",
                ExpressionAttributeNames={"#id": "id", "#status": "status"},
            ).get("Item")
            if item is None or item["status"]["S"] not in PENDING or float(item["expires_at"]["N"]) <= now:
                continue
            refs.append(PendingRef(item["id"]["S"], item["tool"]["S"], item["status"]["S"]))  # type: ignore[arg-type]
        return refs

    def count_pending(self, code: str, now: float) -> PendingTotals:
        """One read of the session's PENDING item (codec.pending_entry): each unanswered request's expiry and
        bytes, kept in the transactions that append and answer, so the count reads neither the requests nor their
        arguments, however long the session's history. Expired entries are left out, and dropped by the session's
        next append. A session opened before this item existed counts only the requests queued since."""
        item = self._get(pk(code), "PENDING") or {}
        live, expired = codec.pending_totals(item, now)
        with self._seq_lock:
            self._expired_entries[code] = expired
        return live

    def list_requests(self, code: str) -> list[RequestRecord]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": s(pk(code)), ":prefix": s("REQ#")},
        )
        return [self._request(code, item) for item in items]

    # --- delivery to the stream ---------------------------------------------------------------------------

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        if not fresh:
            # Most of a stream's polls find nothing new, and an eventually consistent read (half the read units)
            # can say so. It may come from a replica that has not seen the latest append yet: the stream reads
            # fresh at least every STALE_POLL_SECONDS, so that costs a request that long at most. Any other
            # answer (news, or a session that looks ended, expired or taken over) is decided on a consistent read.
            glance = self._call("get_item", TableName=self.table, Key=key(pk(code), "META")).get("Item")
            if glance is not None:
                seen = self._session(code, glance)
                if self._live_for(seen, consumer, now) and seen.last_seq <= after_seq:
                    return seen, []
        session = self.get_session(code)
        if session is None:
            return None, []
        if not self._live_for(session, consumer, now) or session.last_seq <= after_seq:
            return session, []
        out = []
        for request in self.pending_requests(code, after_seq, now):
            if request.status == "queued" and self._mark_delivered(code, request, now):
                request = request.with_(status="delivered", delivered_at=now)
            out.append(request)  # delivered or answered meanwhile: sent as read (the plugin deduplicates)
        return session, out

    @staticmethod
    def _live_for(session: SessionRecord, consumer: str, now: float) -> bool:
        return session.closed_at is None and session.expires_at > now and session.consumer == consumer

    def _mark_delivered(self, code: str, request: RequestRecord, at: float) -> bool:
        """queued -> delivered; False if it was not queued any more."""
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(code), req_sk(request.seq)),
                UpdateExpression="SET #status = :delivered, delivered_at = :at",
                ConditionExpression="#status = :queued AND #id = :id",
                ExpressionAttributeNames={"#status": "status", "#id": "id"},
                ExpressionAttributeValues={
                    ":delivered": s("delivered"),
                    ":queued": s("queued"),
                    ":at": n(at),
                    ":id": s(request.id),
                },
            )
            return True
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
