"""Relay settings for tests (the memory store, fast heartbeats, the test hosts allowed to frame the plugin), and
waiting out the rate window those settings count in."""

from __future__ import annotations

import time
from typing import Any

from codap_relay.settings import Settings


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: the memory store and a fast heartbeat unless told otherwise."""
    base: dict[str, Any] = {"relay_store": "memory:", "heartbeat_seconds": 0.2}
    base.update(overrides)
    return Settings(**base)


# The test hosts that frame the plugin: CODAP and the fake host on loopback, on any port, as 127.0.0.1 and as
# localhost (the cross-site variant), over http and https.
TEST_FRAME_ANCESTORS = "http://127.0.0.1:*,http://localhost:*,https://127.0.0.1:*,https://localhost:*"


def e2e_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "relay_store": "memory:",
        "heartbeat_seconds": 1,
        "rate_limit_session_per_ip": 10_000,
        "rate_limit_request_per_code": 10_000,
        "rate_limit_status_per_ip": 10_000,
        "request_bytes_per_ip_per_hour": 10**10,
        "rate_limit_consent_per_code": 100,  # a module's tests ask one shared plugin in turn
        "frame_ancestors": TEST_FRAME_ANCESTORS,
    }
    base.update(overrides)
    return Settings(**base)


def clear_of_rate_window(needed: float = 8.0) -> None:
    """The relay counts per fixed wall-clock minute. A test that expects the n-th call in a row to be refused waits,
    when fewer than ``needed`` seconds are left of this minute, for the next one: calls that straddle a minute's
    end are counted in two windows and none is refused. The callers send at most 25 quick calls in a row (under a
    second, in seconds through local-api on a loaded machine); 8 s leaves room and makes a test wait in 13 % of
    runs, not 25 %."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.05)
