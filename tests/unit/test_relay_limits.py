"""RateLimits on its own, on the memory store and a fake clock: one-minute windows and the hourly byte budget."""

from __future__ import annotations

import pytest

from codap_relay.errors import ByteBudgetExceeded, RateLimited
from codap_relay.relay.limits import BYTES_BLOCK, BYTES_WINDOW_SECONDS, RATE_WINDOW_SECONDS, RateLimits
from codap_relay.relay.store_io import StoreIO
from codap_relay.settings import Settings
from codap_relay.store.base import Charge, ChargeRefused
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock


class Seen:
    """An observer that keeps the scopes it was told were rate limited."""

    def __init__(self) -> None:
        self.limited: list[str] = []

    def session_created(self) -> None: ...
    def request_queued(self, tool: str) -> None: ...
    def response_completed(self, status: str, latency_ms: float | None) -> None: ...

    def rate_limited(self, scope: str) -> None:
        self.limited.append(scope)


def limits_of(settings: Settings, clock: FakeClock) -> tuple[RateLimits, MemoryStore, Seen]:
    store, seen = MemoryStore(), Seen()
    return RateLimits(StoreIO(store, settings), clock, seen), store, seen


async def test_exactly_the_limit_passes_in_a_window_then_the_next_window_opens(
    settings: Settings, clock: FakeClock
) -> None:
    clock.set(RATE_WINDOW_SECONDS * 1000 + 15)  # 45 s before the window ends
    limits, _, seen = limits_of(settings, clock)
    for _ in range(3):
        await limits.admit("status", "1.2.3.4", 3)
    with pytest.raises(RateLimited) as raised:
        await limits.admit("status", "1.2.3.4", 3)
    assert (raised.value.retry_after, raised.value.scope, seen.limited) == (45, "status", ["status"])
    await limits.admit("status", "5.6.7.8", 3)  # each key counts alone
    await limits.admit("session", "1.2.3.4", 3)  # and each scope
    clock.advance(45)
    await limits.admit("status", "1.2.3.4", 3)


async def test_a_request_counts_against_its_sessions_window_and_its_addresss_byte_budget(
    settings: Settings, clock: FakeClock
) -> None:
    """The two charges an append counts (in the store's own step): the session's window of requests from an address
    (kept with the session) and the address's hourly byte budget, each named after its window, the budget charged
    ahead a block at a time (one write of the address's counter in many appends)."""
    clock.set(BYTES_WINDOW_SECONDS * 100 + 615)  # 45 s before the minute ends, 2,985 s before the hour does
    limits, _, _ = limits_of(settings, clock)
    window, budget = limits.request_charges("1.2.3.4", 700, per_code=3, bytes_per_hour=1000)
    minute = int(clock.now() // RATE_WINDOW_SECONDS)
    assert window == Charge(f"rl:request:1.2.3.4:{minute}", 1, 3, float((minute + 1) * RATE_WINDOW_SECONDS), True)
    assert budget == Charge("rl:bytes:1.2.3.4:100", 700, 1000, float(BYTES_WINDOW_SECONDS * 101), block=BYTES_BLOCK)


async def test_a_refused_charge_says_which_limit_and_when_to_come_back(settings: Settings, clock: FakeClock) -> None:
    clock.set(BYTES_WINDOW_SECONDS * 100 + 615)
    limits, _, seen = limits_of(settings, clock)
    window, budget = limits.request_charges("1.2.3.4", 400, per_code=3, bytes_per_hour=1000)
    said = limits.refused(ChargeRefused(budget, 1100))
    assert isinstance(said, ByteBudgetExceeded) and (said.retry_after, said.limit) == (2985, 1000)
    assert "queued 700 bytes" in str(said) and "adds 400" in str(said)
    limited = limits.refused(ChargeRefused(window, 4))
    assert type(limited) is RateLimited and (limited.retry_after, limited.scope) == (45, "request")
    assert seen.limited == ["request_bytes", "request"]
