"""Time and ids that tests control: a clock that moves only when told to, and ids that count."""

from __future__ import annotations

import itertools

from codap_relay.clock import IdFactory


class FakeClock:
    """A clock that moves only when told to (a ``codap_relay.clock.Clock``)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._t = start

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        self._t += seconds

    def set(self, t: float) -> None:
        self._t = t


def counting_ids(prefix: str = "req-") -> IdFactory:
    """Deterministic ids: req-1, req-2, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"
