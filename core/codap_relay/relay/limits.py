"""Rate limits kept in the shared store: fixed one-minute windows of calls per scope and key, and each address's
hourly budget of request bytes. And one kept in the process only (``LocalRate``), for the push channel's
per-connection message rate."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from ..clock import Clock
from ..errors import ByteBudgetExceeded, RateLimited, StoreUnavailable
from ..observe import Observer
from .store_io import StoreIO

RATE_WINDOW_SECONDS = 60
BYTES_WINDOW_SECONDS = 3600  # the window of REQUEST_BYTES_PER_IP_PER_HOUR
Charge = tuple[str, float, int]  # (counter key, its window's end, bytes): what ``refund`` gives back


class RateLimits:
    def __init__(self, store_io: StoreIO, clock: Clock, observer: Observer) -> None:
        self.store_io = store_io
        self.clock = clock
        self.observer = observer

    async def admit(self, scope: str, key: str, limit: int, *, window: int = RATE_WINDOW_SECONDS) -> None:
        """Fixed windows (a minute unless said): exactly ``limit`` calls per window pass, the rest get
        RateLimited."""
        now = self.clock.now()
        index = int(now // window)
        window_end = (index + 1) * window
        key = f"rl:{scope}:{key}:{index}" if window == RATE_WINDOW_SECONDS else f"rl:{scope}:{key}:{window}:{index}"
        count = await self.store_io.run(self.store_io.store.incr_counter, key, float(window_end), now)
        if count > limit:
            self.observer.rate_limited(scope)
            raise _limited(scope, limit, now, window_end, per="hour" if window == 3600 else "minute")

    async def admit_grant(self, grant_id: str, *, per_grant: int, per_plugin: int) -> None:
        """An OAuth call: the grant's window and its plugin's (all that plugin's grants together), one write.
        A plugin that approves more apps gets no more calls, and no window is shared with another plugin."""
        ref, _, own = grant_id.partition(".")
        now = self.clock.now()
        index = int(now // RATE_WINDOW_SECONDS)
        window_end = (index + 1) * RATE_WINDOW_SECONDS
        counts = await self.store_io.run(
            self.store_io.store.incr_counters, f"rl:oauth:{ref}:{index}", ["plugin", own], float(window_end), now
        )
        for count, limit, scope in zip(counts[::-1], (per_grant, per_plugin), ("grant", "plugin"), strict=True):
            if count > limit:
                self.observer.rate_limited(scope)
                retry = max(1, int(window_end - now + 0.999))
                whose = (
                    f"this app may make {limit} calls a minute (RATE_LIMIT_REQUEST_PER_GRANT)"
                    if scope == "grant"
                    else f"the apps connected to this CODAP may make {limit} calls a minute together "
                    "(RATE_LIMIT_REQUEST_PER_PLUGIN)"
                )
                raise RateLimited(
                    f"Too many calls: {whose}. Wait {retry} s and try again.", retry_after=retry, scope=scope
                )

    async def charge_bytes(
        self, client: str, size: int, limit: int, *, is_retry: Callable[[], Awaitable[bool]]
    ) -> Charge:
        """Charge ``size`` bytes to the address's budget for this hour (``limit``: REQUEST_BYTES_PER_IP_PER_HOUR).
        Past the budget the charge is given back and ByteBudgetExceeded raised, unless ``is_retry()`` says the
        request is already stored (a retry stores nothing). Returns the charge, for ``refund``."""
        now = self.clock.now()
        window = int(now // BYTES_WINDOW_SECONDS)
        window_end = (window + 1) * BYTES_WINDOW_SECONDS
        key = f"rl:bytes:{client}:{window}"
        total = await self.store_io.run(self.store_io.store.incr_counter, key, float(window_end), now, size)
        charged = (key, float(window_end), size)
        if total > limit and not await is_retry():
            await self.refund(charged)  # what was refused takes nothing from the budget
            self.observer.rate_limited("request_bytes")
            retry = max(1, int(window_end - now + 0.999))
            raise ByteBudgetExceeded(
                f"This address has queued {total - size} bytes of requests this hour, across its sessions; "
                f"{limit} is the most (REQUEST_BYTES_PER_IP_PER_HOUR), and this request "
                f"adds {size}. Send smaller arguments, or wait {retry} s for the next hour's budget.",
                retry_after=retry,
                scope="request_bytes",
                limit=limit,
            )
        return charged

    async def refund(self, charged: Charge | None) -> None:
        """Give back bytes charged to an address for a request that was not stored (best effort)."""
        if charged is not None:
            key, window_end, size = charged
            with contextlib.suppress(StoreUnavailable):
                await self.store_io.run(self.store_io.store.incr_counter, key, window_end, self.clock.now(), -size)


def _limited(scope: str, limit: int, now: float, window_end: float, per: str = "minute") -> RateLimited:
    retry = max(1, int(window_end - now + 0.999))
    return RateLimited(
        f"Too many {scope} requests: the limit is {limit} per {per}. Wait {retry} s and try again.",
        retry_after=retry,
        scope=scope,
    )


GRANT_CLIENT = "grant:"  # an OAuth call's caller (the queue's ``client``): ``grant:<grant id>``


def grant_client(grant_id: str) -> str:
    return f"{GRANT_CLIENT}{grant_id}"


def is_grant_client(client: str | None) -> bool:
    return client is not None and client.startswith(GRANT_CLIENT)


def tenant_of(client: str) -> str:
    """Whose budget a caller spends: an address, or for an OAuth call the plugin its grant belongs to (every app
    it approved shares that one budget)."""
    if is_grant_client(client):
        return f"plugin:{client[len(GRANT_CLIENT) :].partition('.')[0]}"
    return client


class LocalRate:
    """Fixed one-minute windows counted in this process only: no store write, for a limit that a flood breaks
    in any one process it reaches. A push connection's messages: the plugin sends about one a minute, so a
    function instance that sees ``limit`` from one connection in a minute sees a flood, and a second count in
    the store would cost a write per ping of every tab."""

    def __init__(self, clock: Clock, observer: Observer, scope: str) -> None:
        self.clock = clock
        self.observer = observer
        self.scope = scope
        self._window = -1
        self._counts: dict[str, int] = {}

    def admit(self, key: str, limit: int) -> None:
        now = self.clock.now()
        window = int(now // RATE_WINDOW_SECONDS)
        if window != self._window:  # a new minute: the last one's counts go
            self._window, self._counts = window, {}
        count = self._counts[key] = self._counts.get(key, 0) + 1
        if count > limit:
            self.observer.rate_limited(self.scope)
            raise _limited(self.scope, limit, now, (window + 1) * RATE_WINDOW_SECONDS)
