"""Rate limits kept in the shared store: fixed one-minute windows of calls per scope and key, and what a request
counts against when it is appended (its session's window of requests from an address, the address's hourly
budget of request bytes: ``Charge``s the store counts with the append). And one kept in the process only
(``LocalRate``), for the push channel's per-connection message rate."""

from __future__ import annotations

from ..clock import Clock
from ..errors import ByteBudgetExceeded, RateLimited
from ..observe import Observer
from ..store.base import Charge, ChargeRefused
from .store_io import StoreIO

RATE_WINDOW_SECONDS = 60
BYTES_WINDOW_SECONDS = 3600  # the window of REQUEST_BYTES_PER_IP_PER_HOUR
#: A session charges its address's byte budget this much ahead at a time (a store may keep the rest with the
#: session): most appends then write no counter of the address. It runs ahead of what was queued by less than a
#: block per session: 300 sessions behind one address, 2.4 MB of its 32 MiB.
BYTES_BLOCK = 8192


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
        A plugin that approves more apps gets no more calls, and no window is shared with another plugin. (A
        ``tools/call`` counts them with its append instead: ``grant_charges``.)"""
        key, names, window_end = self._grant_window(grant_id)
        now = self.clock.now()
        counts = await self.store_io.run(self.store_io.store.incr_counters, key, names, window_end, now)
        for count, limit, scope in zip(counts[::-1], (per_grant, per_plugin), ("grant", "plugin"), strict=True):
            if count > limit:
                raise self._grant_limited(scope, limit, window_end)

    def grant_charges(self, grant_id: str, *, per_grant: int, per_plugin: int) -> list[Charge]:
        """``admit_grant``'s two windows as charges of an OAuth ``tools/call``'s append (``RequestQueue.submit``):
        counted in the append's transaction, so the call costs no write of its own for them."""
        key, (plugin, own), window_end = self._grant_window(grant_id)
        return [
            Charge(key, 1, per_plugin, window_end, field=plugin),
            Charge(key, 1, per_grant, window_end, field=own),
        ]

    def _grant_window(self, grant_id: str) -> tuple[str, list[str], float]:
        """(the counter, its counts' names: the plugin's and the grant's own, the window's end)."""
        ref, _, own = grant_id.partition(".")
        index = int(self.clock.now() // RATE_WINDOW_SECONDS)
        return f"rl:oauth:{ref}:{index}", ["plugin", own], float((index + 1) * RATE_WINDOW_SECONDS)

    def _grant_limited(self, scope: str, limit: int, window_end: float) -> RateLimited:
        self.observer.rate_limited(scope)
        retry = max(1, int(window_end - self.clock.now() + 0.999))
        whose = (
            f"this app may make {limit} calls a minute (RATE_LIMIT_REQUEST_PER_GRANT)"
            if scope == "grant"
            else f"the apps connected to this CODAP may make {limit} calls a minute together "
            "(RATE_LIMIT_REQUEST_PER_PLUGIN)"
        )
        return RateLimited(f"Too many calls: {whose}. Wait {retry} s and try again.", retry_after=retry, scope=scope)

    def request_charges(self, client: str, size: int, *, per_code: int, bytes_per_hour: int) -> list[Charge]:
        """What a request from ``client`` counts against, in the same step as its append (``Store.add_request``):
        the session's window of requests from that address (RATE_LIMIT_REQUEST_PER_CODE a minute, the session's
        own counter) and its tenant's hourly budget of request bytes across its sessions
        (REQUEST_BYTES_PER_IP_PER_HOUR; ``tenant_of``). An OAuth call's windows were counted for its POST
        (``admit_grant``): it counts only the bytes. A request that is not stored (refused, a retry) counts
        against neither."""
        now = self.clock.now()
        minute = int(now // RATE_WINDOW_SECONDS)
        hour = int(now // BYTES_WINDOW_SECONDS)
        budget = Charge(
            f"rl:bytes:{tenant_of(client)}:{hour}",
            size,
            bytes_per_hour,
            float((hour + 1) * BYTES_WINDOW_SECONDS),
            block=BYTES_BLOCK,
        )
        if is_grant_client(client):
            return [budget]
        window_end = float((minute + 1) * RATE_WINDOW_SECONDS)
        return [Charge(f"rl:request:{client}:{minute}", 1, per_code, window_end, session=True), budget]

    def refused(self, exc: ChargeRefused) -> RateLimited:
        """What the caller of an append that a charge refused is told (``request_charges``' and
        ``grant_charges``')."""
        charge, now = exc.charge, self.clock.now()
        if charge.key.startswith("rl:oauth:"):
            return self._grant_limited(
                "plugin" if charge.field == "plugin" else "grant", charge.limit, charge.window_end
            )
        if charge.key.startswith("rl:bytes:"):
            self.observer.rate_limited("request_bytes")
            retry = max(1, int(charge.window_end - now + 0.999))
            return ByteBudgetExceeded(
                f"This address has queued {exc.total - charge.amount} bytes of requests this hour, across its "
                f"sessions; {charge.limit} is the most (REQUEST_BYTES_PER_IP_PER_HOUR), and this request adds "
                f"{charge.amount}. Send smaller arguments, or wait {retry} s for the next hour's budget.",
                retry_after=retry,
                scope="request_bytes",
                limit=charge.limit,
            )
        self.observer.rate_limited("request")
        return _limited("request", charge.limit, now, charge.window_end)


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
