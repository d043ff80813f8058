"""Injected time and id sources, so TTL and ordering tests are exact and need no sleeps."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock; stored in records and compared against TTLs)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._t = start

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        self._t += seconds

    def set(self, t: float) -> None:
        self._t = t


IdFactory = Callable[[], str]


def uuid_ids() -> str:
    return str(uuid.uuid4())


def counting_ids(prefix: str = "req-") -> IdFactory:
    """Deterministic ids for tests: req-1, req-2, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def iso(ts: float) -> str:
    """ISO-8601 UTC with milliseconds and a Z, as the seed contract shows."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
