"""Operation counters for the cost model: a store wrapper, a DynamoDB request hook, per-route server time.

The wrapper counts calls to the storage interface; the botocore hook counts real DynamoDB requests and the
capacity units DynamoDB reports for them; the middleware adds up wall time per route, which is what Lambda bills.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from codap_relay.store.base import Store


class CountingStore:
    """Delegates every call to ``inner`` and counts it by method name.

    ``pushes`` may be forced to False so that a local store waits the way a shared store does in production
    (polling every ``Settings.poll_interval_seconds``): that is how the benchmark counts the deployed stack's reads.
    """

    def __init__(self, inner: Store, *, pushes: bool | None = None) -> None:
        self._inner = inner
        self.pushes = inner.pushes if pushes is None else pushes
        self.blocking = inner.blocking
        self.blocking_reads = getattr(inner, "blocking_reads", inner.blocking)  # stores before it had none
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target) or name.startswith("_"):
            return target

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            return target(*args, **kwargs)

        return counted


class DynamoCounter:
    """Counts DynamoDB API calls and consumed capacity through botocore events on one boto3 client."""

    # Each call is counted in _after_call; ReturnConsumedCapacity is added to every request so DynamoDB says
    # what it would bill.

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("provide-client-params.dynamodb.*", self._ask_capacity)
        events.register("after-call.dynamodb.*", self._after_call)

    @staticmethod
    def _ask_capacity(params: dict[str, Any], **_: Any) -> None:
        params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _after_call(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        items = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        reads = writes = 0.0
        for item in items:
            reads += float(item.get("ReadCapacityUnits") or 0)
            writes += float(item.get("WriteCapacityUnits") or 0)
            if "ReadCapacityUnits" not in item and "WriteCapacityUnits" not in item:
                # Only a total: attribute it by the operation's kind.
                total = float(item.get("CapacityUnits") or 0)
                if model.name in WRITE_OPERATIONS:
                    writes += total
                else:
                    reads += total
        # DynamoDB Local reports 0 units for a Query that finds nothing; AWS bills every request at least one
        # unit (the store reads with ConsistentRead=True), so that is the floor counted here.
        if model.name in SINGLE_WRITES:
            writes = max(writes, 1.0)
        elif model.name in READ_OPERATIONS:
            reads = max(reads, 1.0)
        with self._lock:
            self.calls[model.name] += 1
            self.read_units += reads
            self.write_units += writes

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": dict(self.calls), "read_units": self.read_units, "write_units": self.write_units}

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.read_units = self.write_units = 0.0


SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
WRITE_OPERATIONS = SINGLE_WRITES | {"TransactWriteItems", "BatchWriteItem"}
READ_OPERATIONS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})


class RouteTimer:
    """ASGI middleware: number of requests and total wall seconds per (method, route template).

    Wall time from the first byte in to the last byte out is what a Lambda function is billed for.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            route = getattr(scope.get("route"), "path", None) or scope.get("path", "?")
            key = f"{scope['method']} {route}"
            with self._lock:
                self.count[key] += 1
                self.seconds[key] += time.perf_counter() - started

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {k: {"count": self.count[k], "seconds": self.seconds[k]} for k in self.count}

    def reset(self) -> None:
        with self._lock:
            self.count.clear()
            self.seconds.clear()
