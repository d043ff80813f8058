"""Injected time and id sources, so TTL and ordering tests are exact and need no sleeps (the tests' own, a clock
that moves when told to and ids that count, are in codap_relay_tooling.testing.clock)."""

from __future__ import annotations

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


IdFactory = Callable[[], str]


def uuid_ids() -> str:
    return str(uuid.uuid4())


def iso(ts: float) -> str:
    """ISO-8601 UTC with milliseconds and a Z, as the seed contract shows."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
