"""For the unit, reliability and fuzz suites: deterministic relays (fixed codes, tokens, ids, a fake clock) over any
store."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay.clock import IdFactory
from codap_relay.codes import new_token
from codap_relay.observe import Observer
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store.base import Store
from codap_relay.store.memory import MemoryStore
from codap_relay.store.sqlite import SqliteStore
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.relay_settings import make_settings

EMBEDDED = ["memory", "sqlite"]

# Generous limits so that only the test that is about limits ever meets one.
ROOMY: dict[str, Any] = {
    "rate_limit_session_per_ip": 100_000,
    "rate_limit_request_per_code": 100_000,
    "guess_limit_per_ip": 100_000,
    "rate_limit_status_per_ip": 100_000,
    "max_pending_requests_per_session": 100_000,
    "max_pending_bytes_per_session": 10**10,
    "request_bytes_per_ip_per_hour": 10**10,
}


def open_embedded(kind: str, tmp: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    return SqliteStore(tmp / f"relay-{next(_db_numbers)}.db")


_db_numbers = itertools.count(1)


def fixed_codes() -> Callable[[], str]:
    """AAAAAAA2, AAAAAAA3, ...: deterministic, valid pairing codes."""
    alphabet = "234567ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    counter = itertools.count(0)

    def make() -> str:
        n = next(counter)
        digits = []
        for _ in range(8):
            digits.append(alphabet[n % 32])
            n //= 32
        return "".join(reversed(digits))

    return make


def fixed_tokens() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"token-{next(counter):04d}-" + "x" * 32


def make_relay(
    store: Store,
    clock: FakeClock | None = None,
    *,
    codes: Callable[[], str] | None = None,
    observer: Observer | None = None,
    **overrides: Any,
) -> Relay:
    """A deterministic relay over ``store``; ``overrides`` are settings (on top of roomy limits)."""
    settings: Settings = make_settings(**{**ROOMY, **overrides})
    return Relay(
        settings,
        store,
        clock=clock or FakeClock(),
        ids=counting_ids(),
        codes=codes or fixed_codes(),
        tokens=fixed_tokens(),
        observer=observer,
    )


def unit_relay(
    settings: Settings,
    clock: FakeClock,
    store: MemoryStore | None = None,
    *,
    codes: Callable[[], str] | None = None,
    ids: IdFactory | None = None,
    observer: Observer | None = None,
) -> Relay:
    """The relay's units wired as the relay wires them, for a test that drives one unit on its own (``relay.sessions``,
    ``relay.queue``, ...): a memory store, codes CODE0001, CODE0002, ... unless ``codes`` says otherwise, no push
    channel."""
    numbers = itertools.count(1)
    return Relay(
        settings,
        store if store is not None else MemoryStore(),
        clock=clock,
        ids=ids or counting_ids(),
        codes=codes or (lambda: f"CODE{next(numbers):04d}"),
        tokens=new_token,
        observer=observer,
    )


async def open_session(c: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await c.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    data: dict[str, Any] = r.json()
    return data


ALL_STORES = [*EMBEDDED, pytest.param("dynamodb_local", marks=[pytest.mark.dynamodb_local, pytest.mark.slow])]


@contextlib.contextmanager
def any_store(kind: str, tmp: Path) -> Iterator[Store]:
    """An empty store of any kind: memory, sqlite, or a fresh table on the shared DynamoDB Local."""
    if kind == "dynamodb_local":
        from codap_relay_tooling.testing.store_backends import dynamodb_local_store

        with dynamodb_local_store() as store:
            yield store
        return
    store = open_embedded(kind, tmp)
    try:
        yield store
    finally:
        store.close()
