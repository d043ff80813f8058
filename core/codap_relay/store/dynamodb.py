"""DynamoDB store: one table shared by every Lambda instance (``pushes = False``: readers poll).

Layout (``pk``, ``sk``; every item carries ``purge_at``, the table's TTL attribute in epoch seconds):

- ``SESSION#<code>`` / ``META``: the session, with ``last_seq``, the highest seq handed out.
- ``SESSION#<code>`` / ``REQ#<seq, 12 digits>``: a request; sort order is seq order.
- ``SESSION#<code>`` / ``RID#<id>``: the seq of request ``id`` and when it was queued (idempotent ids, lookups
  by id).
- ``SESSION#<code>`` / ``RESP#<id>``: the first answer to request ``id``.
- ``SESSION#<code>`` / ``BLOB#<nonce>#<n>``: chunks of a payload too large for its item (items hold 400 KB).
- ``SESSION#<code>`` / ``CHANGES``: what the plugin said changed in the document (``seq``, ``marks`` as JSON).
- ``COUNTER#<key>`` / ``COUNTER``: a rate-limit window.

Payloads (tool args, response bodies, manifests) are stored as zlib-compressed JSON; above ``INLINE_LIMIT``
compressed bytes they go to chunk items written *before* the transaction that references them, so a failed
or lost commit leaves only unreferenced chunks that nobody reads and TTL removes.

Every multi-item change is one ``TransactWriteItems`` with conditions, so nothing is half-written: a request
is appended together with the session counter bump (conditioned on the counter's old value) and its id item,
and a response is stored together with the request's new status (conditioned on the request being there and,
for an unanswered one, not expired). DynamoDB deletes expired items lazily (or, in moto and DynamoDB Local,
never), so expiry stays the service's check on ``expires_at``, as for every store.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Generic, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoRegionError

from ..errors import (
    CodeCollision,
    PayloadTooLarge,
    RequestExpired,
    RequestNotFound,
    SessionNotFound,
    StoreUnavailable,
)
from ..records import (
    DETACHED,
    ChangeMarks,
    Completion,
    Lookup,
    NewRequest,
    RequestRecord,
    ResponseRecord,
    SessionRecord,
)
from .base import PURGE_GRACE_SECONDS, PendingTotals, StoreUrlError, args_bytes, merged_marks

Item = dict[str, dict[str, Any]]

TTL_ATTRIBUTE = "purge_at"
SEQ_DIGITS = 12
MAX_SEQ = 10**SEQ_DIGITS - 1
# Compressed payloads up to this size stay inside their item; larger ones are split into chunks.
INLINE_LIMIT = 300_000
CHUNK_BYTES = 350_000
# Items outlive their expiry by PURGE_GRACE_SECONDS (as in the SQLite store): late readers get "expired", not
# "unknown", and an ended session's log stays readable for LOG_GRACE_SECONDS.
TRANSACTION_ATTEMPTS = 60
T = TypeVar("T")
TABLE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")

# Errors that mean "try again later"; anything else is a bug or a misconfiguration.
RETRYABLE_ERRORS = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "LimitExceededException",
    }
)
THROTTLED_REASONS = frozenset({"ProvisionedThroughputExceeded", "ThrottlingError", "RequestLimitExceeded"})
UNAVAILABLE = (
    "The relay's database is busy or unreachable right now; nothing was changed. Retry in a moment "
    "(after the Retry-After seconds)."
)


# --- attribute encoding ------------------------------------------------------------------------------------


def _s(value: str) -> dict[str, Any]:
    return {"S": value}


def _n(value: float | int) -> dict[str, Any]:
    if isinstance(value, int):
        return {"N": str(value)}
    # repr is the shortest exact decimal of a float; fixed-point because exponents are not accepted everywhere.
    return {"N": format(Decimal(repr(float(value))), "f")}


def _f(item: Item, name: str) -> float | None:
    attr = item.get(name)
    return None if attr is None else float(attr["N"])


def _str(item: Item, name: str) -> str | None:
    attr = item.get(name)
    return None if attr is None else str(attr["S"])


def _purge_at(expires_at: float) -> int:
    return math.ceil(expires_at) + PURGE_GRACE_SECONDS


def _pk(code: str) -> str:
    return f"SESSION#{code}"


def _req_sk(seq: int) -> str:
    return f"REQ#{seq:0{SEQ_DIGITS}d}"


def _key(pk: str, sk: str) -> Item:
    return {"pk": _s(pk), "sk": _s(sk)}


def _compress(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 6)


def _reasons(exc: ClientError) -> list[str]:
    raw = exc.response.get("CancellationReasons") or []
    return [str((r or {}).get("Code") or "None") for r in raw]


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def dynamodb_client(*, endpoint_url: str | None = None, region: str | None = None) -> Any:
    """The boto3 DynamoDB client the store uses, for anyone who must talk to the same table (creating it).
    ``endpoint_url`` (DynamoDB Local) supplies a region and, where none are configured, local credentials."""
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region is None and endpoint_url:
        region = "us-east-1"  # DynamoDB Local ignores the region but botocore needs one
    session = boto3.session.Session()
    extra: dict[str, str] = {}
    if endpoint_url and session.get_credentials() is None:
        # DynamoDB Local accepts any credentials; do not make local users invent some.
        extra = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    config = Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=3,
        read_timeout=10,
        max_pool_connections=32,
        tcp_keepalive=True,
    )
    try:
        return session.client("dynamodb", region_name=region, endpoint_url=endpoint_url or None, config=config, **extra)
    except NoRegionError as exc:
        raise StoreUrlError("dynamodb store needs a region: add ?region=… to the URL or set AWS_REGION") from exc


@dataclass(frozen=True)
class Decided(Generic[T]):
    """A transaction attempt's outcome: the result, and whether this attempt's transaction committed."""

    result: T
    committed: bool


class _Again(Enum):
    AGAIN = "again after a back-off"
    AGAIN_NOW = "again at once"


AGAIN, AGAIN_NOW = _Again.AGAIN, _Again.AGAIN_NOW
Attempt = Decided[T] | _Again


class DynamoStore:
    pushes = False
    blocking = True
    blocking_reads = True

    def __init__(self, client: Any, table: str, *, owns_client: bool = False) -> None:
        self._client = client
        self.table = table
        self._owns_client = owns_client
        # (code, id) -> (seq, queued at). Safe to cache: neither ever changes; hits are re-checked against the item.
        self._seqs: OrderedDict[tuple[str, str], tuple[int, float | None]] = OrderedDict()
        self._seq_lock = threading.Lock()

    @classmethod
    def from_url(
        cls,
        table: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        **unknown: str,
    ) -> DynamoStore:
        """Open ``dynamodb://TABLE?region=…&endpoint_url=…`` (endpoint_url for DynamoDB Local)."""
        if unknown:
            raise StoreUrlError(
                f"unknown dynamodb store option(s) {', '.join(sorted(unknown))}: use region= and endpoint_url="
            )
        if not TABLE_NAME_RE.match(table or ""):
            raise StoreUrlError(
                f"dynamodb store URL needs a table name of 3-255 letters, digits, '_', '-' or '.' "
                f"(like dynamodb://codap-relay?region=us-east-1), got {table!r}"
            )
        client = dynamodb_client(endpoint_url=endpoint_url, region=region)
        return cls(client, table, owns_client=True)

    # --- plumbing ---------------------------------------------------------------------------------------

    def _call(self, op: str, **kwargs: Any) -> dict[str, Any]:
        """One DynamoDB call. Throttling and outages become StoreUnavailable; conditional failures pass through."""
        try:
            result: dict[str, Any] = getattr(self._client, op)(**kwargs)
            return result
        except ClientError as exc:
            code = _code(exc)
            if code in RETRYABLE_ERRORS:
                raise StoreUnavailable(UNAVAILABLE, retry_after=1) from exc
            if code == "ResourceNotFoundException":
                raise StoreUnavailable(
                    f"The relay's DynamoDB table {self.table!r} does not exist; the operator must create it "
                    "(sam deploy, or codap-relay dynamodb create-table).",
                    retry_after=30,
                ) from exc
            raise
        except BotoCoreError as exc:  # connection refused, timeouts, missing credentials
            raise StoreUnavailable(UNAVAILABLE, retry_after=2) from exc

    def _get(self, pk: str, sk: str) -> Item | None:
        item: Item | None = self._call("get_item", TableName=self.table, Key=_key(pk, sk), ConsistentRead=True).get(
            "Item"
        )
        return item

    def _query(self, **kwargs: Any) -> Iterator[Item]:
        """Strongly consistent Query over every page."""
        start: Item | None = None
        while True:
            page = self._call(
                "query",
                TableName=self.table,
                ConsistentRead=True,
                **kwargs,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            yield from page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def _transact(self, items: list[dict[str, Any]]) -> list[str] | None:
        """Run a transaction. None on success, else the per-item cancellation reasons (throttling raises)."""
        try:
            self._call("transact_write_items", TransactItems=items)
            return None
        except ClientError as exc:
            if _code(exc) not in ("TransactionCanceledException", "TransactionConflictException"):
                raise
            reasons = _reasons(exc) or ["TransactionConflict"] * len(items)
            if THROTTLED_REASONS.intersection(reasons):
                raise StoreUnavailable(UNAVAILABLE, retry_after=1) from exc
            return reasons

    @staticmethod
    def _backoff(attempt: int) -> None:
        # Conflicts come from other writers on the same session; jitter spreads the retries.
        time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))

    def _committing(self, chunks: list[Item], attempt: Callable[[int], Attempt[T]]) -> T:
        """Write a large value's chunks, then make ``attempt`` (a transaction that points at them) until it is
        decided, at most TRANSACTION_ATTEMPTS times. The chunks are discarded unless a transaction committed."""
        self._write_chunks(chunks)
        committed = False
        try:
            for n in range(TRANSACTION_ATTEMPTS):
                outcome = attempt(n)
                if isinstance(outcome, Decided):
                    committed = outcome.committed
                    return outcome.result
                if outcome is not AGAIN_NOW:
                    self._backoff(n)
            raise StoreUnavailable(UNAVAILABLE, retry_after=1)
        finally:
            if chunks and not committed:
                self._discard_chunks(chunks)

    def _remember(self, code: str, request_id: str, seq: int, queued_at: float | None) -> None:
        with self._seq_lock:
            self._seqs[(code, request_id)] = (seq, queued_at)
            self._seqs.move_to_end((code, request_id))
            while len(self._seqs) > 4096:
                self._seqs.popitem(last=False)

    def _locate(self, code: str, request_id: str) -> tuple[int, float | None] | None:
        """(seq, queued at) of request ``request_id``, from the cache or its id item."""
        with self._seq_lock:
            cached = self._seqs.get((code, request_id))
        if cached is not None:
            return cached
        item = self._get(_pk(code), f"RID#{request_id}")
        return None if item is None else self._located(code, request_id, item)

    def _located(self, code: str, request_id: str, item: Item) -> tuple[int, float | None]:
        found = (int(item["seq"]["N"]), _f(item, "created_at"))  # id items of earlier versions lack created_at
        self._remember(code, request_id, *found)
        return found

    # --- payloads ---------------------------------------------------------------------------------------

    def _pack(self, name: str, value: Any, pk: str, purge_at: int) -> tuple[Item, list[Item]]:
        """Attributes that hold ``value`` in the owning item, plus any chunk items to write first."""
        raw = _compress(value)
        if len(raw) <= INLINE_LIMIT:
            return {name: {"B": raw}}, []
        nonce = uuid.uuid4().hex
        parts = [raw[i : i + CHUNK_BYTES] for i in range(0, len(raw), CHUNK_BYTES)]
        chunks = [
            {**_key(pk, f"BLOB#{nonce}#{n:04d}"), "z": {"B": part}, TTL_ATTRIBUTE: _n(purge_at)}
            for n, part in enumerate(parts)
        ]
        return {f"{name}_ref": _s(f"{nonce}:{len(parts)}")}, chunks

    def _unpack(self, name: str, item: Item) -> Any:
        if name in item:
            return json.loads(zlib.decompress(item[name]["B"]))
        nonce, count = item[f"{name}_ref"]["S"].split(":")
        parts = [
            bytes(c["z"]["B"])
            for c in self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": item["pk"], ":prefix": _s(f"BLOB#{nonce}#")},
            )
        ]
        if len(parts) != int(count):
            raise StoreUnavailable("A stored payload is incomplete; retry in a moment.", retry_after=1)
        return json.loads(zlib.decompress(b"".join(parts)))

    def _write_chunks(self, chunks: list[Item]) -> None:
        for start in range(0, len(chunks), 25):
            pending: list[dict[str, Any]] = [{"PutRequest": {"Item": c}} for c in chunks[start : start + 25]]
            for attempt in range(8):
                result = self._call("batch_write_item", RequestItems={self.table: pending})
                pending = result.get("UnprocessedItems", {}).get(self.table, [])
                if not pending:
                    break
                self._backoff(attempt + 3)
            else:
                raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    def _discard_chunks(self, chunks: list[Item]) -> None:
        """Best effort: unreferenced chunks are invisible anyway, and TTL removes what this misses."""
        for start in range(0, len(chunks), 25):
            batch = [{"DeleteRequest": {"Key": {"pk": c["pk"], "sk": c["sk"]}}} for c in chunks[start : start + 25]]
            try:
                self._call("batch_write_item", RequestItems={self.table: batch})
            except (StoreUnavailable, ClientError):
                return

    # --- sessions ---------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord) -> None:
        pk = _pk(session.code)
        # Any item left under this code (even one whose session item TTL already removed) keeps the code taken,
        # so a new session never inherits another's requests.
        taken = self._call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(pk)},
            ProjectionExpression="pk",
            Limit=1,
        ).get("Items")
        if taken:
            raise CodeCollision("pairing code already in use", code=session.code)
        item: Item = {
            **_key(pk, "META"),
            "token_hash": _s(session.token_hash),
            "created_at": _n(session.created_at),
            "expires_at": _n(session.expires_at),
            "last_seq": _n(0),
            TTL_ATTRIBUTE: _n(_purge_at(session.expires_at)),
        }
        if session.tools is not None:
            tools, chunks = self._pack("tools", session.tools, pk, 0)
            if chunks:  # the session item's expiry slides, chunks could not follow it
                raise PayloadTooLarge(
                    "The tool manifest is too large for this relay; send fewer or smaller tool definitions.",
                    limit=INLINE_LIMIT,
                )
            item.update(tools)
        try:
            self._call("put_item", TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                raise CodeCollision("pairing code already in use", code=session.code) from exc
            raise

    def get_session(self, code: str) -> SessionRecord | None:
        item = self._get(_pk(code), "META")
        return None if item is None else self._session(code, item)

    def _session(self, code: str, item: Item) -> SessionRecord:
        return SessionRecord(
            code=code,
            token_hash=item["token_hash"]["S"],
            created_at=float(item["created_at"]["N"]),
            expires_at=float(item["expires_at"]["N"]),
            tools=self._unpack("tools", item) if "tools" in item else None,
            last_seq=int(item["last_seq"]["N"]),
            last_seen=_f(item, "last_seen"),
            consumer=_str(item, "consumer"),
            closed_at=_f(item, "closed_at"),
        )

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
            fields["last_seen"] = _n(last_seen)
        if consumer is not None:
            fields["consumer"] = _s(consumer)
        if closed_at is not None:
            fields["closed_at"] = _n(closed_at)
        if expires_at is not None:
            # One write in the usual case (the expiry moves forward); a late, older slide falls back to the rest.
            slide = {**fields, "expires_at": _n(expires_at), TTL_ATTRIBUTE: _n(_purge_at(expires_at))}
            if self._update_meta(code, slide, "attribute_exists(pk) AND #expires_at < :expires_at"):
                return
        if fields:
            self._update_meta(code, fields, "attribute_exists(pk)")

    def detach(self, code: str, owner: str) -> bool:
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=_key(_pk(code), "META"),
                UpdateExpression="SET #consumer = :detached",
                ConditionExpression="#consumer = :owner OR begins_with(#consumer, :prefix)",
                ExpressionAttributeNames={"#consumer": "consumer"},
                ExpressionAttributeValues={
                    ":detached": _s(DETACHED),
                    ":owner": _s(owner),
                    ":prefix": _s(owner + "."),
                },
            )
            return True
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise

    def _update_meta(self, code: str, fields: Item, condition: str) -> bool:
        names = {f"#{k}": k for k in fields}
        values = {f":{k}": v for k, v in fields.items()}
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=_key(_pk(code), "META"),
                UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
            return True
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise

    # --- requests ---------------------------------------------------------------------------------------

    def _request(self, code: str, item: Item) -> RequestRecord:
        record = RequestRecord(
            code=code,
            seq=int(item["seq"]["N"]),
            id=item["id"]["S"],
            tool=item["tool"]["S"],
            args=self._unpack("args", item),
            fingerprint=item["fingerprint"]["S"],
            created_at=float(item["created_at"]["N"]),
            expires_at=float(item["expires_at"]["N"]),
            status=item["status"]["S"],  # type: ignore[arg-type]
            delivered_at=_f(item, "delivered_at"),
            completed_at=_f(item, "completed_at"),
            error_code=_str(item, "error_code"),
        )
        self._remember(code, record.id, record.seq, record.created_at)
        return record

    def add_request(self, code: str, new: NewRequest, *, last_seq: int | None = None) -> tuple[RequestRecord, bool]:
        pk = _pk(code)
        purge = _purge_at(new.expires_at)
        args, chunks = self._pack("args", new.args, pk, purge)
        size = args_bytes(new.args)
        last = last_seq  # the caller's view of last_seq: tried first, read afresh if the transaction refuses it

        def attempt(n: int) -> Attempt[tuple[RequestRecord, bool]]:
            nonlocal last
            if last is None:
                read = self._last_seq(code, new.id)
                if isinstance(read, RequestRecord):  # the session is closed, and this is an idempotent retry
                    return Decided((read, False), committed=False)
                last = read
            seq = last + 1
            if seq > MAX_SEQ:
                raise StoreUnavailable("This session has reached its request limit; start a new one.")
            request: Item = {
                **_key(pk, _req_sk(seq)),
                "seq": _n(seq),
                "id": _s(new.id),
                "tool": _s(new.tool),
                **args,
                "fingerprint": _s(new.fingerprint),
                "created_at": _n(new.created_at),
                "expires_at": _n(new.expires_at),
                "status": _s("queued"),
                "arg_bytes": _n(size),
                TTL_ATTRIBUTE: _n(purge),
            }
            reasons = self._transact(self._appending(pk, seq, last, request, new.id, new.created_at, purge))
            if reasons is None:
                self._remember(code, new.id, seq, new.created_at)
                return Decided((self._request(code, request), True), committed=True)
            if reasons[2] == "ConditionalCheckFailed":  # the id is taken: an idempotent retry
                existing = self.get_request(code, new.id)
                if existing is not None:
                    return Decided((existing, False), committed=False)
            stale_hint = reasons[0] == "ConditionalCheckFailed" and n == 0 and last_seq is not None
            last = None
            return AGAIN_NOW if stale_hint else AGAIN  # a stale hint (or an ended session): read it, no back-off

        return self._committing(chunks, attempt)

    def _last_seq(self, code: str, request_id: str) -> int | RequestRecord:
        """The session's last seq as it is now; a closed session's existing request ``request_id`` instead
        (an idempotent retry still gets its answer). SessionNotFound when there is none to add to."""
        meta = self._call(
            "get_item",
            TableName=self.table,
            Key=_key(_pk(code), "META"),
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

    def _appending(
        self, pk: str, seq: int, last: int, request: Item, request_id: str, created_at: float, purge: int
    ) -> list[dict[str, Any]]:
        """The transaction that appends ``request`` as number ``seq``: the session's counter moves from ``last``
        (and the session is not closed), the request and its id item are new."""
        rid: Item = {**_key(pk, f"RID#{request_id}"), "seq": _n(seq), "created_at": _n(created_at)}
        rid[TTL_ATTRIBUTE] = _n(purge)
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _key(pk, "META"),
                    "UpdateExpression": "SET last_seq = :seq",
                    # Not closed: a session being ended takes no new requests, atomically.
                    "ConditionExpression": "last_seq = :last AND attribute_not_exists(closed_at)",
                    "ExpressionAttributeValues": {":seq": _n(seq), ":last": _n(last)},
                }
            },
            {"Put": {"TableName": self.table, "Item": request, "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Put": {"TableName": self.table, "Item": rid, "ConditionExpression": "attribute_not_exists(pk)"}},
        ]

    def get_request(self, code: str, request_id: str) -> RequestRecord | None:
        located = self._locate(code, request_id)
        if located is None:
            return None
        item = self._get(_pk(code), _req_sk(located[0]))
        if item is None or item["id"]["S"] != request_id:
            return None
        return self._request(code, item)

    def lookup(self, code: str, request_id: str) -> Lookup:
        pk = _pk(code)
        with self._seq_lock:
            cached = self._seqs.get((code, request_id))
        # One batch: the session, the response, and the request itself when its seq is known, else its id item.
        third = _req_sk(cached[0]) if cached is not None else f"RID#{request_id}"
        found = self._batch_get(pk, ["META", f"RESP#{request_id}", third])
        meta = found.get("META")
        if meta is None:
            return Lookup(None, None, None)
        session = self._session(code, meta)
        head = found.get(f"RESP#{request_id}")
        if head is not None:
            return Lookup(session, None, self._response_of(code, request_id, head))
        item = found.get(third)
        if item is not None and third.startswith("RID#"):
            item = self._get(pk, _req_sk(self._located(code, request_id, item)[0]))
        if item is None or item["id"]["S"] != request_id:
            return Lookup(session, None, None)
        return Lookup(session, self._request(code, item), None)

    def _batch_get(self, pk: str, sort_keys: list[str]) -> dict[str, Item]:
        """Strongly consistent BatchGetItem of items in one partition, by sort key (unprocessed keys retried)."""
        keys: list[Item] = [_key(pk, sk) for sk in sort_keys]
        found: dict[str, Item] = {}
        for attempt in range(8):
            result = self._call("batch_get_item", RequestItems={self.table: {"Keys": keys, "ConsistentRead": True}})
            for item in result.get("Responses", {}).get(self.table, []):
                found[item["sk"]["S"]] = item
            keys = result.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if not keys:
                return found
            self._backoff(attempt + 3)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        if after_seq >= MAX_SEQ:
            return []
        items = self._query(
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            FilterExpression="#status IN (:queued, :delivered) AND expires_at > :now",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":pk": _s(_pk(code)),
                ":lo": _s(_req_sk(max(0, after_seq) + 1)),
                ":hi": _s(_req_sk(MAX_SEQ)),
                ":queued": _s("queued"),
                ":delivered": _s("delivered"),
                ":now": _n(now),
            },
        )
        return [self._request(code, item) for item in items]

    def count_pending(self, code: str, now: float) -> PendingTotals:
        """One Query over the session's requests that hands back only each pending one's ``arg_bytes``, never its
        arguments (the read units are those of the items, as for any Query; the pending limits keep them few).
        Requests stored before ``arg_bytes`` existed count as 0 bytes; they expire within REQUEST_TTL_SECONDS."""
        count = size = 0
        for item in self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            FilterExpression="#status IN (:queued, :delivered) AND expires_at > :now",
            ProjectionExpression="#bytes",
            ExpressionAttributeNames={"#status": "status", "#bytes": "arg_bytes"},
            ExpressionAttributeValues={
                ":pk": _s(_pk(code)),
                ":prefix": _s("REQ#"),
                ":queued": _s("queued"),
                ":delivered": _s("delivered"),
                ":now": _n(now),
            },
        ):
            count += 1
            size += int(item["arg_bytes"]["N"]) if "arg_bytes" in item else 0
        return PendingTotals(count, size)

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        # Most polls find nothing new, and an eventually consistent read (half the read units) can say so. Any
        # other answer (news, or a session that looks ended, expired or taken over) is decided on a consistent
        # read: a read that lags a write only puts a delivery off to the next poll, never changes what is done.
        glance = self._call("get_item", TableName=self.table, Key=_key(_pk(code), "META")).get("Item")
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

    def list_requests(self, code: str) -> list[RequestRecord]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": _s(_pk(code)), ":prefix": _s("REQ#")},
        )
        return [self._request(code, item) for item in items]

    @staticmethod
    def _live_for(session: SessionRecord, consumer: str, now: float) -> bool:
        return session.closed_at is None and session.expires_at > now and session.consumer == consumer

    def _mark_delivered(self, code: str, request: RequestRecord, at: float) -> bool:
        """queued -> delivered; False if it was not queued any more."""
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key=_key(_pk(code), _req_sk(request.seq)),
                UpdateExpression="SET #status = :delivered, delivered_at = :at",
                ConditionExpression="#status = :queued AND #id = :id",
                ExpressionAttributeNames={"#status": "status", "#id": "id"},
                ExpressionAttributeValues={
                    ":delivered": _s("delivered"),
                    ":queued": _s("queued"),
                    ":at": _n(at),
                    ":id": _s(request.id),
                },
            )
            return True
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            return False

    # --- responses --------------------------------------------------------------------------------------

    def complete_request(self, response: ResponseRecord, *, now: float | None = None) -> Completion:
        code = response.code
        pk = _pk(code)
        located = self._locate(code, response.id)
        if located is None:
            raise RequestNotFound("no such request", request_id=response.id)
        seq, queued_at = located
        purge = _purge_at(response.expires_at)
        body, chunks = self._pack("body", response.body, pk, purge)
        head: Item = {
            **_key(pk, f"RESP#{response.id}"),
            "id": _s(response.id),
            "status": _s(response.status),
            **body,
            "fingerprint": _s(response.fingerprint),
            "timestamp": _n(response.timestamp),
            "expires_at": _n(response.expires_at),
            TTL_ATTRIBUTE: _n(purge),
        }
        if response.error_code is not None:
            head["error_code"] = _s(response.error_code)
        values: Item = {":status": _s(response.status), ":at": _n(response.timestamp), ":id": _s(response.id)}
        update = "SET #status = :status, completed_at = :at"
        if response.error_code is not None:
            update += ", error_code = :error"
            values[":error"] = _s(response.error_code)
        else:
            update += " REMOVE error_code"
        # The request exists (its id item said where); an unanswered one past its expiry takes no answer.
        condition = "#id = :id"
        if now is not None:
            condition += " AND (expires_at > :now OR NOT #status IN (:queued, :delivered))"
            values.update({":now": _n(now), ":queued": _s("queued"), ":delivered": _s("delivered")})
        items: list[dict[str, Any]] = [
            {"Put": {"TableName": self.table, "Item": head, "ConditionExpression": "attribute_not_exists(pk)"}},
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _key(pk, _req_sk(seq)),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#status": "status", "#id": "id"},
                    "ExpressionAttributeValues": values,
                }
            },
        ]

        def attempt(n: int) -> Attempt[Completion]:
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
        item = self._get(_pk(code), f"RESP#{request_id}")
        return None if item is None else self._response_of(code, request_id, item)

    def _response_of(self, code: str, request_id: str, item: Item) -> ResponseRecord:
        return ResponseRecord(
            code=code,
            id=request_id,
            status=item["status"]["S"],  # type: ignore[arg-type]
            body=self._unpack("body", item),
            fingerprint=item["fingerprint"]["S"],
            timestamp=float(item["timestamp"]["N"]),
            expires_at=float(item["expires_at"]["N"]),
            error_code=_str(item, "error_code"),
        )

    # --- counters ---------------------------------------------------------------------------------------

    def incr_counter(self, key: str, expires_at: float, now: float, amount: int = 1) -> int:
        counter_key = _key(f"COUNTER#{key}", "COUNTER")
        purge = _n(math.ceil(expires_at))
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
                        ":one": _n(amount),
                        ":exp": _n(expires_at),
                        ":purge": purge,
                        ":now": _n(now),
                    },
                    ReturnValues="UPDATED_NEW",
                )
                return int(result["Attributes"]["count"]["N"])
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
            # The window has ended: start a new one, unless another writer just did.
            try:
                self._call(
                    "put_item",
                    TableName=self.table,
                    Item={**counter_key, "count": _n(amount), "expires_at": _n(expires_at), TTL_ATTRIBUTE: purge},
                    ConditionExpression="expires_at <= :now",
                    ExpressionAttributeValues={":now": _n(now)},
                )
                return amount
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
            self._backoff(attempt)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    # --- change marks -----------------------------------------------------------------------------------

    def note_changes(self, code: str, marks: list[str], expires_at: float) -> ChangeMarks:
        # Read, merge, write back conditioned on the seq read: a concurrent note makes this one read again.
        key = _key(_pk(code), "CHANGES")
        for attempt in range(TRANSACTION_ATTEMPTS):
            old = self.get_changes(code)
            seq = (old.seq if old else 0) + 1
            merged = merged_marks(old.marks if old else {}, marks, seq)
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(pk)"}
                if old is None
                else {"ConditionExpression": "seq = :old", "ExpressionAttributeValues": {":old": _n(old.seq)}}
            )
            try:
                self._call(
                    "put_item",
                    TableName=self.table,
                    Item={
                        **key,
                        "seq": _n(seq),
                        "marks": _s(json.dumps(merged)),
                        "expires_at": _n(expires_at),
                        TTL_ATTRIBUTE: _n(_purge_at(expires_at)),
                    },
                    **condition,
                )
                return ChangeMarks(code=code, seq=seq, marks=merged)
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
            self._backoff(attempt)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    def get_changes(self, code: str) -> ChangeMarks | None:
        item = self._get(_pk(code), "CHANGES")
        if item is None:
            return None
        marks = json.loads(item["marks"]["S"])
        return ChangeMarks(code=code, seq=int(item["seq"]["N"]), marks={k: int(v) for k, v in marks.items()})

    def close(self) -> None:
        if self._owns_client:
            close = getattr(self._client, "close", None)
            if close is not None:
                close()
