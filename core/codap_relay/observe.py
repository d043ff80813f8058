"""What the core reports as it works, for metrics. The core calls these; backends decide what to do.

The Lambda handlers plug in a Powertools Metrics observer; the local server uses the no-op one.
"""

from __future__ import annotations

from typing import Protocol


class Observer(Protocol):
    def session_created(self) -> None: ...
    def request_queued(self, tool: str) -> None: ...
    def response_completed(self, status: str, latency_ms: float | None) -> None:
        """``latency_ms``: from queued to answered; None where the store could not tell when it was queued."""

    def rate_limited(self, scope: str) -> None: ...


class NullObserver:
    def session_created(self) -> None:
        pass

    def request_queued(self, tool: str) -> None:
        pass

    def response_completed(self, status: str, latency_ms: float | None) -> None:
        pass

    def rate_limited(self, scope: str) -> None:
        pass
