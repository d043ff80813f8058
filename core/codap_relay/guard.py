"""The code-guessing guard: a client that looks up too many unknown pairing codes in a minute is refused every
code lookup until the minute is over, known codes included, so no answer tells a guesser which codes are live."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .errors import RateLimited

SCOPE = "unknown-code"


class GuessingGuard:
    def __init__(self, admit: Callable[[str, str, int], Awaitable[None]], now: Callable[[], float], limit: int) -> None:
        self._admit = admit  # the relay's store-backed rate limit, counted per window in the shared store
        self._now = now
        self._limit = limit
        self._blocked: dict[str, float] = {}  # client -> refused until

    def check(self, client: str | None) -> None:
        """Raise RateLimited if this client is refused lookups right now."""
        if client is None or (until := self._blocked.get(client)) is None:
            return
        now = self._now()
        if until <= now:
            del self._blocked[client]
            return
        raise RateLimited(
            "Too many unknown pairing codes from this address. Wait, then check the code shown in the CODAP plugin.",
            retry_after=max(1, int(until - now + 0.999)),
            scope=SCOPE,
        )

    async def count_unknown(self, client: str | None) -> None:
        """Count a lookup of an unknown code; past the limit, this client is refused all code lookups."""
        if client is None:
            return
        try:
            await self._admit(SCOPE, client, self._limit)
        except RateLimited as exc:
            # The counter lives in the shared store, so every instance trips on its own next miss; this
            # process-local mark makes known codes refused too, so 429-vs-200 is no oracle for a guesser.
            self._blocked[client] = self._now() + exc.retry_after
            raise

    def reset(self) -> None:
        """Forget every refusal made in this process (the store's counters stay)."""
        self._blocked.clear()
