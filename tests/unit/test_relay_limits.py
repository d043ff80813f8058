"""RateLimits on its own, on the memory store and a fake clock: one-minute windows and the hourly byte budget."""

from __future__ import annotations

import pytest

from codap_relay.errors import ByteBudgetExceeded, RateLimited
from codap_relay.relay.limits import BYTES_WINDOW_SECONDS, RATE_WINDOW_SECONDS, RateLimits
from codap_relay.relay.store_io import StoreIO
from codap_relay.settings import Settings
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


async def no() -> bool:
    return False


async def yes() -> bool:
    return True


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


async def test_the_byte_budget_charges_refuses_past_it_and_gives_back(settings: Settings, clock: FakeClock) -> None:
    clock.set(BYTES_WINDOW_SECONDS * 100 + 600)
    limits, store, seen = limits_of(settings, clock)
    charged = await limits.charge_bytes("1.2.3.4", 700, 1000, is_retry=no)
    key = charged[0]
    assert charged == (f"rl:bytes:1.2.3.4:{100}", float(BYTES_WINDOW_SECONDS * 101), 700)
    with pytest.raises(ByteBudgetExceeded) as raised:
        await limits.charge_bytes("1.2.3.4", 400, 1000, is_retry=no)
    assert (raised.value.retry_after, raised.value.limit, seen.limited) == (3000, 1000, ["request_bytes"])
    assert "queued 700 bytes" in str(raised.value) and "adds 400" in str(raised.value)
    assert store.incr_counter(key, 0, clock.now(), 0) == 700  # what was refused took nothing
    await limits.charge_bytes("1.2.3.4", 400, 1000, is_retry=yes)  # a retry stores nothing: it passes
    await limits.refund(charged)
    await limits.refund(None)
    assert store.incr_counter(key, 0, clock.now(), 0) == 400


async def test_a_refund_is_best_effort(settings: Settings, clock: FakeClock) -> None:
    limits, store, _ = limits_of(settings, clock)

    def down(*_: object) -> int:
        raise OSError("the store is down")

    store.incr_counter = down  # type: ignore[method-assign,assignment]
    await limits.refund(("rl:bytes:x:1", 1.0, 10))  # no error: the request was refused or failed anyway
