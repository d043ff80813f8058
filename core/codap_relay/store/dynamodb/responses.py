"""Responses: the first answer to a request wins (stored in the request's own item by one conditional write), and
the reads an LLM's wait for its answer makes (one item each).

An answer is one ``UpdateItem`` of the request's item, conditioned on the request being unanswered (and, for the
plugin, unexpired, and the plugin's token being the session's): atomic without a transaction. A second write
takes it off the session's list of unanswered requests; if that one never comes (the function ended between the
two), the entry only counts one pending request too many until delivery finds it answered and the next append
drops it. Sessions of the earlier layout are served by legacy.py.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ...errors import RequestExpired, RequestNotFound, SessionNotFound, StoreUnavailable
from ...records import PENDING, Completion, Lookup, RequestRecord, ResponseRecord
from . import codec
from .client import condition_failed
from .codec import Item, n, s
from .legacy import LegacyOps
from .table import TTL_ATTRIBUTE, key, pk, purge_at


class ResponseOps(LegacyOps):
    if TYPE_CHECKING:  # from RequestOps

        def _request_v2(self, code: str, item: Item) -> RequestRecord: ...

    def lookup(self, code: str, request_id: str) -> Lookup:
        partition = pk(code)
        found = self._batch_get(partition, ["META", f"RID#{request_id}"])
        meta = found.get("META")
        if meta is None:
            return Lookup(None, None, None)
        session = self._session(code, meta)
        item = found.get(f"RID#{request_id}")
        if item is None:
            return Lookup(session, None, None)
        if not codec.is_current_request(item):
            return self._v1_lookup(code, request_id, session, self._located(code, request_id, item)[0])
        answer = codec.answer_of(code, item, self._unpack)
        if answer is not None:
            return Lookup(session, None, answer)
        return Lookup(session, self._request_v2(code, item), None)

    def complete_request(
        self,
        response: ResponseRecord,
        *,
        now: float | None = None,
        token_hash: str | None = None,
        alive_until: float | None = None,
    ) -> Completion:
        code = response.code
        partition = pk(code)
        purge = purge_at(response.expires_at)
        body, chunks = codec.pack("body", response.body, partition, purge)
        update, names, values = codec.answering(response, body, purge)
        names["#id"] = "id"
        values.update({":id": s(response.id), ":queued": s("queued"), ":delivered": s("delivered")})
        condition = "attribute_exists(tool) AND #id = :id AND #status IN (:queued, :delivered)"
        if now is not None:
            condition += " AND expires_at > :now"
            values[":now"] = n(now)
        if token_hash is not None:
            condition += " AND tok = :tok"
            values[":tok"] = s(token_hash)
        self._write_chunks(chunks)
        try:
            written = self._call(
                "update_item",
                TableName=self.table,
                Key=key(partition, f"RID#{response.id}"),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                # When the request was queued (the answer's latency metric) comes back with it: no read, no
                # read units (its arguments travel back too, a few hundred bytes as a rule).
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if chunks:
                self._discard_chunks(chunks)
            if not condition_failed(exc):
                raise
            return self._not_answered(response, exc.response.get("Item"), now, token_hash, alive_until)
        except StoreUnavailable:
            if chunks:
                self._discard_chunks(chunks)
            raise
        before: Item = written.get("Attributes", {})
        ended = self._unlist(code, response.id, now if alive_until is not None else None, alive_until)
        if ended is not None:
            # The session had ended (closed, or expired unseen) before this answer: it takes none. Rare (an answer
            # checks the session in its second write, to make it one write in the usual case): put it back.
            self._unanswer(response, before, chunks)
            raise SessionNotFound(f"session {ended}", reason=ended)
        return Completion(response, True, codec.f(before, "created_at"))

    def _unanswer(self, response: ResponseRecord, before: Item, chunks: list[Item]) -> None:
        """Take back an answer just stored (``before``: the request's item as it was), if it is still that one."""
        names = {"#status": "status", "#purge": TTL_ATTRIBUTE}
        values: Item = {
            ":status": before["status"],
            ":purge": before[TTL_ATTRIBUTE],
            ":at": n(response.timestamp),
            ":fingerprint": s(response.fingerprint),
        }
        taken = ["completed_at", "r_fingerprint", "r_timestamp", "r_expires_at", "error_code", "body", "body_ref"]
        names.update({f"#t{i}": name for i, name in enumerate(taken)})
        with contextlib.suppress(ClientError):  # another answer took its place meanwhile: it stands
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(pk(response.code), f"RID#{response.id}"),
                UpdateExpression="SET #status = :status, #purge = :purge REMOVE "
                + ", ".join(f"#t{i}" for i in range(len(taken))),
                ConditionExpression="r_timestamp = :at AND r_fingerprint = :fingerprint",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        if chunks:
            self._discard_chunks(chunks)

    def _not_answered(
        self,
        response: ResponseRecord,
        item: Item | None,
        now: float | None,
        token_hash: str | None,
        alive_until: float | None,
    ) -> Completion:
        """Why an answer was not stored, from the request's item as it stood: none, the earlier layout (answered
        there), another session's token, answered before (that answer stands) or expired unanswered."""
        if item is None:
            raise RequestNotFound("no such request", request_id=response.id)
        if not codec.is_current_request(item):
            return self._v1_complete_request(response, now, token_hash, alive_until)
        if token_hash is not None and codec.opt_str(item, "tok") != token_hash:
            if "tok" in item or not self._session_token_is(response.code, token_hash):
                raise RequestNotFound("no such request", request_id=response.id)
            # A request stored without its session's token hash: checked against the session, then answered.
            return self.complete_request(response, now=now, alive_until=alive_until)
        queued_at = codec.f(item, "created_at")
        earlier = codec.answer_of(response.code, item, self._unpack)
        if earlier is not None:
            return Completion(earlier, False, queued_at)
        if item["status"]["S"] in PENDING and now is not None and float(item["expires_at"]["N"]) <= now:
            raise RequestExpired("request expired unanswered", request_id=response.id)
        raise StoreUnavailable("The answer could not be stored; send it again.", retry_after=1)

    def _session_token_is(self, code: str, token_hash: str) -> bool:
        meta = self._get(pk(code), "META")
        return meta is not None and meta["token_hash"]["S"] == token_hash

    def _unlist(self, code: str, request_id: str, now: float | None, alive_until: float | None) -> str | None:
        """Take an answered request off its session's pending list (best effort: see the module's docstring) and,
        given ``alive_until``, record the answer as the plugin's sign of life in the same write: last seen ``now``,
        the expiry slid forward, while the session is live. Returns why the session is not (``closed``,
        ``expired``), in which case nothing is written; a session slid further meanwhile gets the plain removal."""
        partition = pk(code)
        names = {"#q": codec.pending_attribute(request_id)}
        try:
            if alive_until is not None and now is not None:
                purge = purge_at(alive_until)
                try:
                    written = self._call(
                        "update_item",
                        TableName=self.table,
                        Key=key(partition, "META"),
                        UpdateExpression="REMOVE #q SET last_seen = :now, expires_at = :exp, #purge = :purge",
                        ConditionExpression="attribute_exists(pk) AND attribute_not_exists(closed_at) "
                        "AND expires_at > :now AND expires_at < :exp",
                        ExpressionAttributeNames={**names, "#purge": TTL_ATTRIBUTE},
                        ExpressionAttributeValues={":now": n(now), ":exp": n(alive_until), ":purge": n(purge)},
                        ReturnValues="ALL_NEW",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    )
                    self._keep_manifest_for(code, written.get("Attributes", {}), purge)
                    return None
                except ClientError as exc:
                    if not condition_failed(exc):
                        raise
                    meta = exc.response.get("Item")
                    if meta is None or "closed_at" in meta or float(meta["expires_at"]["N"]) <= now:
                        return "closed" if meta is not None and "closed_at" in meta else "expired"
            self._call(
                "update_item",
                TableName=self.table,
                Key=key(partition, "META"),
                UpdateExpression="REMOVE #q",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames=names,
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
        except StoreUnavailable:
            self._forget_pending(code, [request_id])
        return None

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        item = self._get(pk(code), f"RID#{request_id}")
        if item is None:
            return None
        if not codec.is_current_request(item):
            return self._v1_get_response(code, request_id)
        return codec.answer_of(code, item, self._unpack)

    if TYPE_CHECKING:  # from RequestOps and SessionOps

        def _forget_pending(self, code: str, request_ids: list[str]) -> None: ...

        def _keep_manifest_for(self, code: str, meta: Item, purge: int) -> None: ...
