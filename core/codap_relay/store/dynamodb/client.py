"""The connection to the table: the boto3 client, DynamoDB's errors mapped to the relay's, and the plumbing every
group of operations shares (reads, queries, transactions retried until decided, payload chunks, the seq cache)."""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoRegionError

from ...errors import StoreUnavailable
from ...records import RequestRecord, ResponseRecord, SessionRecord
from ..base import StoreUrlError
from . import codec
from .codec import Item
from .table import key, pk

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


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def condition_failed(exc: ClientError) -> bool:
    """A write's condition did not hold (the one ClientError the operations decide on; others propagate)."""
    return error_code(exc) == "ConditionalCheckFailedException"


def _reasons(exc: ClientError) -> list[str]:
    return [code for code, _ in _cancellations(exc)]


def _cancellations(exc: ClientError) -> list[tuple[str, Item | None]]:
    """Each item's cancellation reason, with the item as it was when its condition failed (where the action asked
    for it with ``ReturnValuesOnConditionCheckFailure``: no read needed to learn why)."""
    raw = exc.response.get("CancellationReasons") or []
    return [(str((r or {}).get("Code") or "None"), (r or {}).get("Item")) for r in raw]


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


class Connection:
    """One table through one client; the groups of operations (sessions.py, requests.py, …) build on it."""

    pushes = False
    blocking = True
    blocking_reads = True

    def __init__(self, client: Any, table: str, *, owns_client: bool = False) -> None:
        self._client = client
        self.table = table
        self._owns_client = owns_client
        # (code, id) -> (seq, queued at). Safe to cache: neither ever changes; hits are re-checked against the item.
        self._seqs: OrderedDict[tuple[str, str], tuple[int, float | None]] = OrderedDict()
        self._seq_lock = threading.Lock()  # also guards _manifests_kept
        # manifest address -> how long its item is known to be kept (manifests.py): stored manifests never change.
        self._manifests_kept: dict[str, int] = {}
        # code -> its META item's attributes that lapse (pending entries, rate windows) and when, as last read here:
        # its next append removes those whose time has passed (requests.py).
        self._lapsing: OrderedDict[str, dict[str, float]] = OrderedDict()
        # code -> what its session has charged ahead and not spent (requests.py, ``Charge.block``), as last read here.
        self._credits: dict[str, dict[str, int]] = {}

    def _noted(self, code: str, item: Item | None) -> Item | None:
        """A session's META item as read here: what of it lapses, and what it has charged ahead, are noted for its
        next append here (requests.py)."""
        if item is not None and codec.is_current(item):
            with self._seq_lock:
                self._lapsing[code] = codec.lapsing_attributes(item)
                self._lapsing.move_to_end(code)
                self._credits[code] = codec.credits_of(item)
                while len(self._lapsing) > 4096:
                    self._credits.pop(self._lapsing.popitem(last=False)[0], None)
        return item

    def close(self) -> None:
        if self._owns_client:
            close = getattr(self._client, "close", None)
            if close is not None:
                close()

    # --- calls --------------------------------------------------------------------------------------------

    def _call(self, op: str, **kwargs: Any) -> dict[str, Any]:
        """One DynamoDB call. Throttling and outages become StoreUnavailable; conditional failures pass through."""
        try:
            result: dict[str, Any] = getattr(self._client, op)(**kwargs)
            return result
        except ClientError as exc:
            code = error_code(exc)
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

    def _get(self, partition: str, sort: str) -> Item | None:
        item: Item | None = self._call(
            "get_item", TableName=self.table, Key=key(partition, sort), ConsistentRead=True
        ).get("Item")
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

    def _batch_get(self, partition: str, sort_keys: list[str], **projection: Any) -> dict[str, Item]:
        """Strongly consistent BatchGetItem of items in one partition, by sort key (unprocessed keys retried), 100
        keys a request; ``projection``: ProjectionExpression and its names (which must name ``sk``)."""
        found: dict[str, Item] = {}
        for start in range(0, len(sort_keys), 100):
            found.update(self._batch_get_some(partition, sort_keys[start : start + 100], projection))
        return found

    def _batch_get_some(self, partition: str, sort_keys: list[str], projection: dict[str, Any]) -> dict[str, Item]:
        keys: list[Item] = [key(partition, sk) for sk in sort_keys]
        found: dict[str, Item] = {}
        for attempt in range(8):
            if not keys:
                return found
            wanted = {"Keys": keys, "ConsistentRead": True, **projection}
            result = self._call("batch_get_item", RequestItems={self.table: wanted})
            for item in result.get("Responses", {}).get(self.table, []):
                found[item["sk"]["S"]] = item
            keys = result.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if not keys:
                return found
            self._backoff(attempt + 3)
        raise StoreUnavailable(UNAVAILABLE, retry_after=1)

    # --- transactions -------------------------------------------------------------------------------------

    def _transact(self, items: list[dict[str, Any]]) -> list[str] | None:
        """Run a transaction. None on success, else the per-item cancellation reasons (throttling raises)."""
        cancelled = self._transact_returning(items)
        return None if cancelled is None else [code for code, _ in cancelled]

    def _transact_returning(self, items: list[dict[str, Any]]) -> list[tuple[str, Item | None]] | None:
        """Run a transaction. None on success, else each item's cancellation reason and, where its action asked
        for it, the item as it stood (throttling raises)."""
        try:
            self._call("transact_write_items", TransactItems=items)
            return None
        except ClientError as exc:
            if error_code(exc) not in ("TransactionCanceledException", "TransactionConflictException"):
                raise
            cancelled = _cancellations(exc) or [("TransactionConflict", None)] * len(items)
            if THROTTLED_REASONS.intersection(code for code, _ in cancelled):
                raise StoreUnavailable(UNAVAILABLE, retry_after=1) from exc
            return cancelled

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

    # --- payload chunks -----------------------------------------------------------------------------------

    def _unpack(self, name: str, item: Item) -> Any:
        """Payload ``name`` of ``item``, from the item or from its chunks (codec.Unpack)."""
        if name in item:
            return codec.decompress(item[name]["B"])
        nonce, count = codec.chunk_ref(name, item)
        parts = [
            bytes(c["z"]["B"])
            for c in self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": item["pk"], ":prefix": codec.s(f"BLOB#{nonce}#")},
            )
        ]
        if len(parts) != count:
            raise StoreUnavailable("A stored payload is incomplete; retry in a moment.", retry_after=1)
        return codec.decompress(b"".join(parts))

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

    # --- records, and where each request is -----------------------------------------------------------

    def _session(self, code: str, item: Item) -> SessionRecord:
        return codec.session_of(code, item)

    def _request(self, code: str, item: Item) -> RequestRecord:
        record = codec.request_of(code, item, self._unpack)
        self._remember(code, record.id, record.seq, record.created_at)
        return record

    def _response_of(self, code: str, request_id: str, item: Item) -> ResponseRecord:
        return codec.response_of(code, request_id, item, self._unpack)

    def _remember(self, code: str, request_id: str, seq: int, queued_at: float | None) -> None:
        with self._seq_lock:
            self._seqs[(code, request_id)] = (seq, queued_at)
            self._seqs.move_to_end((code, request_id))
            while len(self._seqs) > 4096:
                self._seqs.popitem(last=False)

    def _cached(self, code: str, request_id: str) -> tuple[int, float | None] | None:
        with self._seq_lock:
            return self._seqs.get((code, request_id))

    def _locate(self, code: str, request_id: str) -> tuple[int, float | None] | None:
        """(seq, queued at) of request ``request_id``, from the cache or its id item."""
        cached = self._cached(code, request_id)
        if cached is not None:
            return cached
        item = self._get(pk(code), f"RID#{request_id}")
        return None if item is None else self._located(code, request_id, item)

    def _located(self, code: str, request_id: str, item: Item) -> tuple[int, float | None]:
        found = (int(item["seq"]["N"]), codec.f(item, "created_at"))  # id items of earlier versions lack it
        self._remember(code, request_id, *found)
        return found
