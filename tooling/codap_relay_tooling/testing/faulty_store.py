"""A failing wrapper around any Store: counts calls and injects a fault at a chosen one.

``before`` raises without touching the inner store (the request never reached it); ``after`` performs the
call and then raises (the write landed but the reply was lost, as with a timeout) — the harder case.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from codap_relay.store.base import Store

Mode = Literal["before", "after"]
METHODS = (
    "create_session",
    "get_session",
    "update_session",
    "add_request",
    "get_request",
    "lookup",
    "pending_requests",
    "count_pending",
    "deliver",
    "list_requests",
    "complete_request",
    "get_response",
    "incr_counter",
)


@dataclass
class Fault:
    at: int  # index into the calls made after arming, 0-based
    mode: Mode
    make: Callable[[], BaseException]


class FaultInjector:
    """Counts the calls it wraps and fails the one chosen by ``arm``; with ``down`` set, fails every call."""

    calls: list[str]
    fault: Fault | None
    down: bool
    down_error: Callable[[], BaseException]
    fired: int
    _lock: threading.Lock

    def arm(self, at: int, mode: Mode, make: Callable[[], BaseException]) -> None:
        with self._lock:
            self.calls.clear()
            self.fault = Fault(at, mode, make)

    def disarm(self) -> None:
        with self._lock:
            self.fault = None

    def _intercept(self, name: str, target: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                index = len(self.calls)
                self.calls.append(name)
                fault = self.fault if self.fault is not None and self.fault.at == index else None
                if fault is not None:
                    self.fault = None
                down = self.down
            if down:
                raise self.down_error()
            if fault is not None and fault.mode == "before":
                self.fired += 1
                raise fault.make()
            if fault is None:
                return target(*args, **kwargs)
            self.fired += 1
            with contextlib.suppress(Exception):  # whatever the call did or said, its reply is lost
                target(*args, **kwargs)
            raise fault.make()

        return call


@dataclass
class FaultyStore(FaultInjector):
    inner: Store
    calls: list[str] = field(default_factory=list)
    fault: Fault | None = None
    down: bool = False  # every call fails until cleared (an outage)
    down_error: Callable[[], BaseException] = lambda: TimeoutError("store timed out")
    fired: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pushes(self) -> bool:
        return self.inner.pushes

    @property
    def blocking(self) -> bool:
        return self.inner.blocking

    @property
    def blocking_reads(self) -> bool:
        return self.inner.blocking_reads

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        return self._intercept(name, target) if name in METHODS else target


def throttled(op: str = "TransactWriteItems") -> BaseException:
    from botocore.exceptions import ClientError

    error = {"Code": "ProvisionedThroughputExceededException", "Message": "Rate of requests exceeds the allowed"}
    exc: BaseException = ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, op)
    return exc


def server_error(op: str = "GetItem") -> BaseException:
    from botocore.exceptions import ClientError

    error = {"Code": "InternalServerError", "Message": "Internal server error"}
    exc: BaseException = ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 500}}, op)
    return exc


def read_timeout() -> BaseException:
    from botocore.exceptions import ReadTimeoutError

    exc: BaseException = ReadTimeoutError(endpoint_url="http://127.0.0.1:8000/")
    return exc


def transaction_throttled() -> BaseException:
    from botocore.exceptions import ClientError

    error = {"Code": "TransactionCanceledException", "Message": "Transaction cancelled [ThrottlingError, None]"}
    reasons = [{"Code": "ThrottlingError"}, {"Code": "None"}]
    exc: BaseException = ClientError(
        {"Error": error, "CancellationReasons": reasons, "ResponseMetadata": {"HTTPStatusCode": 400}},
        "TransactWriteItems",
    )
    return exc


@dataclass
class FaultyClient(FaultInjector):
    """The same fault injection one level down: around the boto3 DynamoDB client the DynamoStore uses, so the
    store's own error mapping (throttling, timeouts, 5xx -> StoreUnavailable) is under test too."""

    inner: Any
    calls: list[str] = field(default_factory=list)
    fault: Fault | None = None
    down: bool = False
    down_error: Callable[[], BaseException] = read_timeout
    fired: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def exceptions(self) -> Any:
        return self.inner.exceptions

    @property
    def meta(self) -> Any:
        return self.inner.meta

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target) or name.startswith("_") or name in ("can_paginate", "get_paginator", "get_waiter"):
            return target
        return self._intercept(name, target)
