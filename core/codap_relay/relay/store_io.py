"""How the relay's units reach the store: blocking calls off the event loop, unexpected store failures as 503s,
and how long to wait before reading again."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import RelayError, StoreUnavailable
from ..settings import Settings
from ..store.base import ChargeRefused, Store

T = TypeVar("T")
#: A wait for an answer on a store written by other processes reads again after at least two poll intervals, then
#: after this share of the time it has waited so far (an answer is seen at most that much later than it came),
#: and at most every ANSWER_POLL_MAX_SECONDS: a 15 s wait reads about 30 times, not 300.
ANSWER_POLL_SHARE = 0.25
ANSWER_POLL_MAX_SECONDS = 1.0


@contextlib.contextmanager
def store_failures_unavailable() -> Iterator[None]:
    """A store bug or outage must not become a 500: nothing was acknowledged, so it is a 503 to retry."""
    try:
        yield
    except (RelayError, ChargeRefused):  # a domain error, or a limit the caller words itself
        raise
    except Exception as exc:
        raise StoreUnavailable(
            "The relay's store is unavailable right now; nothing was changed. Retry in a moment.", retry_after=1
        ) from exc


class StoreIO:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store call off the event loop when it blocks; map unexpected store failures to 503."""
        if self.store.blocking:
            with store_failures_unavailable():
                return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        with store_failures_unavailable():
            return fn(*args, **kwargs)

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A store read: in a worker thread wherever reads can wait (a network, a file), else right here (memory)."""
        if self.store.blocking_reads:
            return await self.run(fn, *args, **kwargs)
        with store_failures_unavailable():
            return fn(*args, **kwargs)

    def wait_slice(self, remaining: float, *, quiet_for: float = 0.0) -> float:
        """How long to sleep before re-reading: the full time if writes are pushed here, else one poll. Polls
        come every ``poll_interval_seconds`` while something happens, and every ``idle_poll_interval_seconds``
        once nothing has for ``poll_active_seconds`` (``quiet_for`` says how long that is)."""
        if self.store.pushes:
            return remaining
        s = self.settings
        interval = s.poll_interval_seconds if quiet_for < s.poll_active_seconds else s.idle_poll_interval_seconds
        return min(remaining, interval)

    def answer_slice(self, remaining: float, *, waited: float) -> float:
        """How long a wait for an answer sleeps before it reads again, ``waited`` seconds into it: the full time if
        writes are pushed here; else two poll intervals at first (the plugin's answer takes a round trip of its
        own), then ANSWER_POLL_SHARE of the time waited, at most ANSWER_POLL_MAX_SECONDS. A tool that answers at
        once is read once or twice; a slow one costs a read a second, not twenty."""
        if self.store.pushes:
            return remaining
        first = 2 * self.settings.poll_interval_seconds
        return min(remaining, max(first, min(waited * ANSWER_POLL_SHARE, ANSWER_POLL_MAX_SECONDS)))
