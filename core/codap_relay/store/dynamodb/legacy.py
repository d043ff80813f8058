"""The earlier layout of a session's requests, for sessions an earlier version opened (their META item counts in
``last_seq``; ``codec.is_current`` tells): a session open while a new version is deployed keeps working, with
every request it holds.

In it a request is ``REQ#<seq>`` (with its id item ``RID#<id>``: its seq), its answer ``RESP#<id>``, and the session's
unanswered requests a ``PENDING`` item; a request is appended in one transaction of the four, and answered in one
of three. The current layout (requests.py, responses.py) needs neither transaction's second half. Nothing here
opens such a session: they end as sessions do, and this module can go once no deployment can hold one (a day
after the version before this one was replaced: PURGE_GRACE_SECONDS).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ...errors import RequestExpired, RequestNotFound, SessionNotFound, StoreUnavailable
from ...records import PENDING, Completion, Lookup, NewRequest, RequestRecord, ResponseRecord, SessionRecord
from ..base import PendingRef, PendingTotals, args_bytes
from . import codec
from .client import AGAIN, AGAIN_NOW, Attempt, Connection, Decided, condition_failed
from .codec import Item, n, s
from .table import MAX_SEQ, TTL_ATTRIBUTE, key, pk, purge_at, req_sk


class LegacyOps(Connection):
    # --- the queue --------------------------------------------------------------------------------------------

    def _v1_add_request(self, code: str, new: NewRequest) -> tuple[RequestRecord, bool]:
        partition = pk(code)
        purge = purge_at(new.expires_at)
        args, chunks = codec.pack("args", new.args, partition, purge)
        size = args_bytes(new.args)

        def attempt(tries: int) -> Attempt[tuple[RequestRecord, bool]]:
            read = self._v1_last_seq(code, new.id)
            if isinstance(read, RequestRecord):  # the session is closed, and this is an idempotent retry
                return Decided((read, False), committed=False)
            seq = read + 1
            if seq > MAX_SEQ:
                raise StoreUnavailable("This session has reached its request limit; start a new one.")
            request = codec.request_item(new, partition, seq, purge, args, size)
            rid = codec.rid_item(partition, new.id, seq, new.created_at, purge)
            counted = self._v1_counting(code, seq, new.expires_at, size)
            reasons = self._transact([*self._v1_appending(partition, seq, read, request, rid), counted])
            if reasons is None:
                self._remember(code, new.id, seq, new.created_at)
                return Decided((self._request(code, request), True), committed=True)
            if reasons[2] == "ConditionalCheckFailed":  # the id is taken: an idempotent retry
                existing = self._v1_get_request(code, new.id)
                if existing is not None:
                    return Decided((existing, False), committed=False)
            return AGAIN_NOW if reasons[0] == "ConditionalCheckFailed" else AGAIN

        return self._committing(chunks, attempt)

    def _v1_last_seq(self, code: str, request_id: str) -> int | RequestRecord:
        """The session's last seq as it is now; a closed session's existing request ``request_id`` instead."""
        meta = self._get(pk(code), "META")
        if meta is None:
            raise SessionNotFound("session not found", reason="unknown")
        if "closed_at" in meta:
            existing = self._v1_get_request(code, request_id)
            if existing is not None:
                return existing
            raise SessionNotFound("session closed", reason="closed")
        return int(meta["last_seq"]["N"])

    def _v1_appending(self, partition: str, seq: int, last: int, request: Item, rid: Item) -> list[dict[str, Any]]:
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(partition, "META"),
                    "UpdateExpression": "SET last_seq = :seq",
                    "ConditionExpression": "last_seq = :last AND attribute_not_exists(closed_at)",
                    "ExpressionAttributeValues": {":seq": n(seq), ":last": n(last)},
                }
            },
            {"Put": {"TableName": self.table, "Item": request, "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Put": {"TableName": self.table, "Item": rid, "ConditionExpression": "attribute_not_exists(pk)"}},
        ]

    def _v1_counting(self, code: str, seq: int, expires_at: float, size: int) -> dict[str, Any]:
        """The PENDING item's part of an append: request ``seq``'s entry, and the item's TTL moved with it."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(pk(code), "PENDING"),
                "UpdateExpression": "SET #e = :e, #purge = :purge",
                "ExpressionAttributeNames": {"#e": codec.pending_entry(seq), "#purge": TTL_ATTRIBUTE},
                "ExpressionAttributeValues": {
                    ":e": codec.pending_value(expires_at, size),
                    ":purge": n(purge_at(expires_at)),
                },
            }
        }

    def _v1_get_request(self, code: str, request_id: str) -> RequestRecord | None:
        located = self._locate(code, request_id)
        if located is None:
            return None
        item = self._get(pk(code), req_sk(located[0]))
        if item is None or item["id"]["S"] != request_id:
            return None
        return self._request(code, item)

    def _v1_pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
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

    def _v1_pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
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

    def _v1_count_pending(self, code: str, now: float) -> PendingTotals:
        live, _ = codec.pending_totals(self._get(pk(code), "PENDING") or {}, now)
        return live

    def _v1_list_requests(self, code: str) -> list[RequestRecord]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": s(pk(code)), ":prefix": s("REQ#")},
        )
        return [self._request(code, item) for item in items]

    def _v1_deliver(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        """A live session's requests after ``after_seq``, each queued one marked delivered at ``now``."""
        out = []
        for request in self._v1_pending_requests(code, after_seq, now):
            if request.status == "queued" and self._v1_mark_delivered(code, request, now):
                request = request.with_(status="delivered", delivered_at=now)
            out.append(request)
        return out

    def _v1_mark_delivered(self, code: str, request: RequestRecord, at: float) -> bool:
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

    # --- answers ------------------------------------------------------------------------------------------------

    def _v1_lookup(self, code: str, request_id: str, session: SessionRecord, seq: int) -> Lookup:
        partition = pk(code)
        found = self._batch_get(partition, [f"RESP#{request_id}", req_sk(seq)])
        head = found.get(f"RESP#{request_id}")
        if head is not None:
            return Lookup(session, None, self._response_of(code, request_id, head))
        item = found.get(req_sk(seq))
        if item is None or item["id"]["S"] != request_id:
            return Lookup(session, None, None)
        return Lookup(session, self._request(code, item), None)

    def _v1_complete_request(
        self, response: ResponseRecord, now: float | None, token_hash: str | None, alive_until: float | None
    ) -> Completion:
        code = response.code
        partition = pk(code)
        if token_hash is not None or alive_until is not None:
            meta = self._get(partition, "META")
            if meta is None or (token_hash is not None and meta["token_hash"]["S"] != token_hash):
                raise RequestNotFound("no such request", request_id=response.id)
            if alive_until is not None and now is not None:
                if "closed_at" in meta:
                    raise SessionNotFound("session closed", reason="closed")
                if float(meta["expires_at"]["N"]) <= now:
                    raise SessionNotFound("session expired", reason="expired")
        located = self._locate(code, response.id)
        if located is None:
            raise RequestNotFound("no such request", request_id=response.id)
        seq, queued_at = located
        purge = purge_at(response.expires_at)
        body, chunks = codec.pack("body", response.body, partition, purge)
        head = codec.response_item(response, partition, purge, body)
        values: Item = {":status": s(response.status), ":at": n(response.timestamp), ":id": s(response.id)}
        update = "SET #status = :status, completed_at = :at"
        if response.error_code is not None:
            update += ", error_code = :error"
            values[":error"] = s(response.error_code)
        else:
            update += " REMOVE error_code"
        condition = "#id = :id"
        if now is not None:
            condition += " AND (expires_at > :now OR NOT #status IN (:queued, :delivered))"
            values.update({":now": n(now), ":queued": s("queued"), ":delivered": s("delivered")})
        items: list[dict[str, Any]] = [
            {"Put": {"TableName": self.table, "Item": head, "ConditionExpression": "attribute_not_exists(pk)"}},
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(partition, req_sk(seq)),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#status": "status", "#id": "id"},
                    "ExpressionAttributeValues": values,
                }
            },
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(partition, "PENDING"),
                    "UpdateExpression": "REMOVE #e SET #purge = if_not_exists(#purge, :purge)",
                    "ExpressionAttributeNames": {"#e": codec.pending_entry(seq), "#purge": TTL_ATTRIBUTE},
                    "ExpressionAttributeValues": {":purge": n(purge)},
                }
            },
        ]

        def attempt(tries: int) -> Attempt[Completion]:
            reasons = self._transact(items)
            if reasons is None:
                if alive_until is not None and now is not None:
                    self._v1_seen(code, now, alive_until)
                return Decided(Completion(response, True, queued_at), committed=True)
            if reasons[0] == "ConditionalCheckFailed":
                earlier = self._v1_get_response(code, response.id)
                if earlier is not None:
                    return Decided(Completion(earlier, False, queued_at), committed=False)
            elif reasons[1] == "ConditionalCheckFailed":
                request = self._v1_get_request(code, response.id)
                if request is None:
                    raise RequestNotFound("no such request", request_id=response.id)
                if request.pending and now is not None and request.expires_at <= now:
                    raise RequestExpired("request expired unanswered", request_id=response.id)
            return AGAIN

        return self._committing(chunks, attempt)

    def _v1_seen(self, code: str, now: float, alive_until: float) -> None:
        """The answer as the plugin's sign of life, in a write of its own (this layout's answer is a transaction)."""
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(code), "META"),
                UpdateExpression="SET last_seen = :now, expires_at = :exp, #purge = :purge",
                ConditionExpression="attribute_not_exists(closed_at) AND expires_at > :now AND expires_at < :exp",
                ExpressionAttributeNames={"#purge": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":now": n(now), ":exp": n(alive_until), ":purge": n(purge_at(alive_until))},
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise

    def _v1_get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        item = self._get(pk(code), f"RESP#{request_id}")
        return None if item is None else self._response_of(code, request_id, item)
