"""Responses: the first answer to a request wins (stored with the request's new status in one transaction), and
the one-read lookup an LLM's poll for its answer makes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import RequestExpired, RequestNotFound
from ...records import Completion, Lookup, RequestRecord, ResponseRecord
from . import codec
from .client import AGAIN, Attempt, Connection, Decided
from .codec import Item, n, s
from .table import TTL_ATTRIBUTE, key, pk, purge_at, req_sk


class ResponseOps(Connection):
    if TYPE_CHECKING:  # from RequestOps

        def get_request(self, code: str, request_id: str) -> RequestRecord | None: ...

    def lookup(self, code: str, request_id: str) -> Lookup:
        partition = pk(code)
        cached = self._cached(code, request_id)
        # One batch: the session, the response, and the request itself when its seq is known, else its id item.
        third = req_sk(cached[0]) if cached is not None else f"RID#{request_id}"
        found = self._batch_get(partition, ["META", f"RESP#{request_id}", third])
        meta = found.get("META")
        if meta is None:
            return Lookup(None, None, None)
        session = self._session(code, meta)
        head = found.get(f"RESP#{request_id}")
        if head is not None:
            return Lookup(session, None, self._response_of(code, request_id, head))
        item = found.get(third)
        if item is not None and third.startswith("RID#"):
            item = self._get(partition, req_sk(self._located(code, request_id, item)[0]))
        if item is None or item["id"]["S"] != request_id:
            return Lookup(session, None, None)
        return Lookup(session, self._request(code, item), None)

    def complete_request(self, response: ResponseRecord, *, now: float | None = None) -> Completion:
        code = response.code
        partition = pk(code)
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
        # The request exists (its id item said where); an unanswered one past its expiry takes no answer.
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
            # Answered: no longer pending (the count, requests.py), in the same step.
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
                return Decided(Completion(response, True, queued_at), committed=True)
            if reasons[0] == "ConditionalCheckFailed":
                earlier = self.get_response(code, response.id)
                if earlier is not None:
                    return Decided(Completion(earlier, False, queued_at), committed=False)
            elif reasons[1] == "ConditionalCheckFailed":
                request = self.get_request(code, response.id)
                if request is None:
                    raise RequestNotFound("no such request", request_id=response.id)
                if request.pending and now is not None and request.expires_at <= now:
                    raise RequestExpired("request expired unanswered", request_id=response.id)
            return AGAIN

        return self._committing(chunks, attempt)

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        item = self._get(pk(code), f"RESP#{request_id}")
        return None if item is None else self._response_of(code, request_id, item)
