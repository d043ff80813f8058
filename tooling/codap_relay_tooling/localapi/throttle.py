"""API Gateway's throttles, as local-api applies them to a stage's methods and a WebSocket API's routes."""

from __future__ import annotations

import time


class TokenBucket:
    """API Gateway's stage throttle: ``burst`` requests at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
