"""The request queue: append (gapless seq, idempotent ids, the limits it counts against, all in one transaction
with the session), read, count, and deliver to the session's stream.

A request is one item, ``RID#<id>``, that holds it and, once answered, its answer (responses.py); the session's
META item counts the seqs (``seq``) and lists its unanswered requests (``q#<id>``: seq, expiry, argument bytes)
and its own rate windows (``r#<window end>#<key>``). So an append is one transaction of two items (three with a
counter of an address's budget), the pending limits and a status read need no read beyond the session's, and
delivery reads the requests it sends by id. Sessions of the earlier layout are served by legacy.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ...errors import SessionNotFound, StoreUnavailable
from ...records import PENDING, NewRequest, RequestRecord, SessionRecord
from ..base import Charge, ChargeRefused, PendingRef, PendingTotals, args_bytes, pending_totals
from . import codec
from .client import AGAIN, AGAIN_NOW, Attempt, Decided, condition_failed
from .codec import SEQ, Item, n, s
from .legacy import LegacyOps
from .table import MAX_SEQ, TTL_ATTRIBUTE, key, pk, purge_at

FAILED = "ConditionalCheckFailed"


def counted_attribute(charge: Charge) -> str:
    """The counter item's attribute a charge counts in: ``count``, or ``c_<field>`` (counters.py's naming)."""
    return "count" if charge.field is None else f"c_{charge.field}"


class RequestOps(LegacyOps):
    if TYPE_CHECKING:  # from SessionOps

        def get_session(self, code: str) -> SessionRecord | None: ...

    # --- the session's META item, as read here ----------------------------------------------------------------

    def _meta(self, code: str, *, consistent: bool = True) -> Item | None:
        """The session's META item; what of it lapses is noted, for the next append here to remove."""
        item: Item | None = self._call(
            "get_item", TableName=self.table, Key=key(pk(code), "META"), ConsistentRead=consistent
        ).get("Item")
        return self._noted(code, item)

    def _lapsed(self, code: str, now: float, keep: set[str]) -> list[str]:
        with self._seq_lock:
            seen = self._lapsing.get(code, {})
            return [name for name, until in seen.items() if until <= now and name not in keep]

    def _forget_pending(self, code: str, request_ids: list[str]) -> None:
        """Pending entries found answered (their answer's second write never came): the next append drops them."""
        with self._seq_lock:
            seen = self._lapsing.setdefault(code, {})
            seen.update({codec.pending_attribute(rid): 0.0 for rid in request_ids})

    # --- append -----------------------------------------------------------------------------------------------

    def add_request(
        self, code: str, new: NewRequest, *, last_seq: int | None = None, charges: Sequence[Charge] = ()
    ) -> tuple[RequestRecord, bool]:
        partition = pk(code)
        purge = purge_at(new.expires_at)
        args, chunks = codec.pack("args", new.args, partition, purge)
        size = args_bytes(new.args)
        # The caller's view of the session, tried first; a refused attempt returns the item as it stands.
        view: dict[str, Any] = {"last": last_seq, "deliver_to": new.deliver_to}
        with self._seq_lock:  # what the session has charged ahead, as last read here (a refusal says it anew)
            credits: dict[str, int | None] = dict(self._credits.get(code, {}))
        exact: set[str] = set()  # charges counted ahead whose block the counter refused: counted exactly instead

        def attempt(tries: int) -> Attempt[tuple[RequestRecord, bool]]:
            if view["last"] is None:
                meta = self._meta(code)
                if meta is None or not codec.is_current(meta) or "closed_at" in meta:
                    return self._not_appendable(code, new, meta)
                view["last"] = int(meta[SEQ]["N"])
                if view["deliver_to"] is not None and codec.opt_str(meta, "consumer") != view["deliver_to"]:
                    view["deliver_to"] = None
            seq = view["last"] + 1
            if seq > MAX_SEQ:
                raise StoreUnavailable("This session has reached its request limit; start a new one.")
            delivered = view["deliver_to"] is not None
            item = codec.request_item_v2(new, partition, seq, purge, args, size, delivered)
            counted, spent = self._ahead(charges, credits, exact)
            counters: dict[str, list[Charge]] = {}  # the counters of their own, each one item (its counts, one write)
            for charge in counted:
                if not charge.session:
                    counters.setdefault(charge.key, []).append(charge)
            actions = [
                self._appending(code, new, seq, view["last"], view["deliver_to"], size, counted, spent),
                {"Put": {"TableName": self.table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}},
                *(self._counting(group) for group in counters.values()),
            ]
            cancelled = self._transact_returning(actions)
            if cancelled is None:
                if spent:
                    with self._seq_lock:
                        self._credits.setdefault(code, {}).update({name: now for name, (_, now) in spent.items()})
                return Decided((self._request_v2(code, item), True), committed=True)
            if cancelled[1][0] == FAILED:  # the id is taken: an idempotent retry
                existing = self.get_request(code, new.id)
                if existing is not None:
                    return Decided((existing, False), committed=False)
            ahead = {c.key: c for c in charges if c.block > 0}
            for (reason, counter), group in zip(cancelled[2:], counters.values(), strict=True):
                if reason == FAILED:
                    for charge in group:
                        count = codec.counter_value((counter or {}).get(counted_attribute(charge)))
                        asked = ahead.get(charge.key)
                        if asked is not None and charge.amount > asked.amount and count + asked.amount <= asked.limit:
                            exact.add(charge.key)  # a whole block does not fit, this request does: count it alone
                        elif count + (asked or charge).amount > charge.limit:
                            raise ChargeRefused(asked or charge, count + (asked or charge).amount)
            reason, meta = cancelled[0]
            if reason == FAILED and meta is not None:
                credits.update({name: None for name in spent})
                credits.update(codec.credits_of(meta))
                self._noted(code, meta)
            if reason != FAILED:
                return AGAIN  # a conflict with another writer of the session: again, after a back-off
            if meta is None or not codec.is_current(meta) or "closed_at" in meta:
                return self._not_appendable(code, new, meta)
            for charge in charges:
                if charge.session:
                    count = codec.counter_value(meta.get(codec.window_attribute(charge.window_end, charge.key)))
                    if count + charge.amount > charge.limit:
                        raise ChargeRefused(charge, count + charge.amount)
            view["last"] = int(meta[SEQ]["N"])
            if view["deliver_to"] is not None and codec.opt_str(meta, "consumer") != view["deliver_to"]:
                view["deliver_to"] = None  # another consumer took over: queued, for it to take
            return AGAIN_NOW

        return self._committing(chunks, attempt)

    @staticmethod
    def _ahead(
        charges: Sequence[Charge], credits: dict[str, int | None], exact: set[str]
    ) -> tuple[list[Charge], dict[str, tuple[int | None, int]]]:
        """The charges to count now, and the session's credits they move (attribute: (as read, as written)). A
        charge counted ahead (``Charge.block``) is paid from the session's credit when that covers it (its counter
        not written at all), else its counter is charged a block (this request's amount at least) and the credit
        keeps the rest; one whose block the counter refused is counted exactly."""
        counted: list[Charge] = []
        spent: dict[str, tuple[int | None, int]] = {}
        for charge in charges:
            if charge.block <= 0 or charge.session:
                counted.append(charge)
                continue
            name = codec.credit_attribute(charge.window_end, charge.key)
            credit = credits.get(name)
            if credit is not None and credit >= charge.amount:
                spent[name] = (credit, credit - charge.amount)
                continue
            top = charge.amount if charge.key in exact else max(charge.block, charge.amount)
            counted.append(replace(charge, amount=top))
            spent[name] = (credit, (credit or 0) + top - charge.amount)
        return counted, spent

    def _not_appendable(self, code: str, new: NewRequest, meta: Item | None) -> Decided[tuple[RequestRecord, bool]]:
        """A session that takes no append: of the earlier layout (appended there), unknown, or ended (unless this
        is a retry of a request it holds, which gets that request back)."""
        if meta is not None and not codec.is_current(meta):
            return Decided(self._v1_add_request(code, new), committed=False)
        existing = self.get_request(code, new.id)
        if existing is not None:
            return Decided((existing, False), committed=False)
        if meta is None:
            raise SessionNotFound("session not found", reason="unknown")
        raise SessionNotFound("session closed", reason="closed")

    def _appending(
        self,
        code: str,
        new: NewRequest,
        seq: int,
        last: int,
        deliver_to: str | None,
        size: int,
        charges: Sequence[Charge],
        spent: dict[str, tuple[int | None, int]],
    ) -> dict[str, Any]:
        """The META item's part of an append: the seq moves from ``last`` (the session not closed, and, when the
        request is stored delivered, still ``deliver_to``'s), the request is listed as pending, the session's own
        windows count it, and what lapsed since it was last read here goes."""
        names = {"#seq": SEQ, "#q": codec.pending_attribute(new.id)}
        values: Item = {
            ":seq": n(seq),
            ":last": n(last),
            ":q": codec.pending_entry_value(seq, new.expires_at, size),
        }
        sets = ["#seq = :seq", "#q = :q"]
        conditions = ["#seq = :last", "attribute_not_exists(closed_at)"]
        if deliver_to is not None:
            names["#consumer"] = "consumer"
            values[":to"] = s(deliver_to)
            conditions.append("#consumer = :to")
        for i, charge in enumerate(c for c in charges if c.session):
            names[f"#w{i}"] = codec.window_attribute(charge.window_end, charge.key)
            values[f":w{i}"] = n(charge.amount)
            values[f":room{i}"] = n(charge.limit - charge.amount)
            sets.append(f"#w{i} = if_not_exists(#w{i}, :zero) + :w{i}")
            conditions.append(f"(attribute_not_exists(#w{i}) OR #w{i} <= :room{i})")
            values[":zero"] = n(0)
        for i, (name, (was, now)) in enumerate(spent.items()):  # a credit moves only from what was read
            names[f"#k{i}"] = name
            values[f":k{i}"] = n(now)
            sets.append(f"#k{i} = :k{i}")
            if was is None:
                conditions.append(f"attribute_not_exists(#k{i})")
            else:
                values[f":kwas{i}"] = n(was)
                conditions.append(f"#k{i} = :kwas{i}")
        update = "SET " + ", ".join(sets)
        lapsed = self._lapsed(code, new.created_at, set(names.values()))
        if lapsed:
            names.update({f"#x{i}": name for i, name in enumerate(lapsed)})
            update += " REMOVE " + ", ".join(f"#x{i}" for i in range(len(lapsed)))
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(pk(code), "META"),
                "UpdateExpression": update,
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _counting(self, charges: list[Charge]) -> dict[str, Any]:
        """A counter of its own (an address's budget across sessions, an OAuth grant's and its plugin's windows),
        its counts (``Charge.field``: an attribute each, as ``incr_counters`` keeps them) counted in the append's
        transaction."""
        first = charges[0]
        names = {"#purge": TTL_ATTRIBUTE}
        values: Item = {":exp": n(first.window_end), ":purge": n(codec.counter_purge(first.window_end))}
        adds, conditions = [], []
        for i, charge in enumerate(charges):
            names[f"#c{i}"] = counted_attribute(charge)
            values[f":a{i}"] = n(charge.amount)
            values[f":room{i}"] = n(charge.limit - charge.amount)
            adds.append(f"#c{i} :a{i}")
            conditions.append(f"(attribute_not_exists(#c{i}) OR #c{i} <= :room{i})")
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(f"COUNTER#{first.key}", "COUNTER"),
                "UpdateExpression": f"ADD {', '.join(adds)} SET expires_at = if_not_exists(expires_at, :exp), "
                "#purge = if_not_exists(#purge, :purge)",
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    # --- reads ------------------------------------------------------------------------------------------------

    def _request_v2(self, code: str, item: Item) -> RequestRecord:
        return codec.request_of(code, item, self._unpack)  # the same attributes as the earlier layout's REQ item

    def get_request(self, code: str, request_id: str) -> RequestRecord | None:
        item = self._get(pk(code), f"RID#{request_id}")
        if item is None:
            return None
        if not codec.is_current_request(item):
            self._located(code, request_id, item)
            return self._v1_get_request(code, request_id)
        return self._request_v2(code, item)

    def _pending_items(self, code: str, entries: list[codec.PendingEntry], now: float) -> list[RequestRecord]:
        """The requests of ``entries`` (read by id) still unanswered and unexpired at ``now``, in seq order."""
        entries = [e for e in entries if e.expires_at > now]
        if not entries:
            return []
        found = self._batch_get(pk(code), [f"RID#{e.id}" for e in entries])
        out, answered = [], []
        for entry in entries:
            item = found.get(f"RID#{entry.id}")
            if item is None or item["status"]["S"] not in PENDING:
                answered.append(entry.id)
                continue
            out.append(self._request_v2(code, item))
        if answered:
            self._forget_pending(code, answered)
        return [r for r in out if r.expires_at > now]

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        meta = self._meta(code)
        if meta is None:
            return []
        if not codec.is_current(meta):
            return self._v1_pending_requests(code, after_seq, now)
        return self._pending_items(code, [e for e in codec.pending_entries(meta) if e.seq > after_seq], now)

    def pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
        """The session's listed pending requests by id prefix, their status and tool read projected: the arguments
        are neither sent nor unpacked."""
        meta = self._meta(code)
        if meta is None:
            return []
        if not codec.is_current(meta):
            return self._v1_pending_refs(code, prefix, now)
        ids = [e.id for e in codec.pending_entries(meta) if e.id.startswith(prefix) and e.expires_at > now]
        if not ids:
            return []
        found = self._batch_get(
            pk(code),
            [f"RID#{rid}" for rid in ids],
            ProjectionExpression="sk, #id, tool, #status, expires_at",
            ExpressionAttributeNames={"#id": "id", "#status": "status"},
        )
        refs = []
        for rid in ids:
            item = found.get(f"RID#{rid}")
            if item is None or item["status"]["S"] not in PENDING or float(item["expires_at"]["N"]) <= now:
                continue
            refs.append(PendingRef(rid, item["tool"]["S"], item["status"]["S"]))  # type: ignore[arg-type]
        return refs

    def count_pending(self, code: str, now: float) -> PendingTotals:
        """From the session's META item alone (its ``q#`` entries), however long its history."""
        meta = self._meta(code)
        if meta is None:
            return PendingTotals(0, 0)
        if not codec.is_current(meta):
            return self._v1_count_pending(code, now)
        return pending_totals(tuple((e.expires_at, e.size) for e in codec.pending_entries(meta)), now)

    def list_requests(self, code: str) -> list[RequestRecord]:
        items = list(
            self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": s(pk(code)), ":prefix": s("RID#")},
            )
        )
        if any(not codec.is_current_request(item) for item in items):
            return self._v1_list_requests(code)
        return sorted((self._request_v2(code, item) for item in items), key=lambda r: r.seq)

    # --- delivery to the stream ---------------------------------------------------------------------------

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        if not fresh:
            # Most of a stream's polls find nothing new, and an eventually consistent read (half the read units)
            # can say so. It may come from a replica that has not seen the latest append yet: the stream reads
            # fresh at least every STALE_POLL_SECONDS, so that costs a request that long at most. Any other
            # answer (news, or a session that looks ended, expired or taken over) is decided on a consistent read.
            glance = self._meta(code, consistent=False)
            if glance is not None:
                seen = self._session(code, glance)
                if self._live_for(seen, consumer, now) and seen.last_seq <= after_seq:
                    return seen, []
        meta = self._meta(code)
        if meta is None:
            return None, []
        session = self._session(code, meta)
        if not self._live_for(session, consumer, now) or session.last_seq <= after_seq:
            return session, []
        if not codec.is_current(meta):
            return session, self._v1_deliver(code, after_seq, now)
        out = []
        for request in self._pending_items(code, [e for e in codec.pending_entries(meta) if e.seq > after_seq], now):
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
                Key=key(pk(code), f"RID#{request.id}"),
                UpdateExpression="SET #status = :delivered, delivered_at = :at",
                ConditionExpression="#status = :queued",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":delivered": s("delivered"), ":queued": s("queued"), ":at": n(at)},
            )
            return True
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
