"""Fixtures shared by every layer of tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from codap_relay.clock import FakeClock, counting_ids
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from support import make_settings


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def relay(settings: Settings, clock: FakeClock) -> Relay:
    return Relay(settings, MemoryStore(), clock=clock, ids=counting_ids())


@pytest.fixture
async def client(relay: Relay) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(relay)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 5555))
    async with httpx.AsyncClient(transport=transport, base_url="http://relay.test") as c:
        yield c


@pytest.fixture
async def session(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.post("/api/sessions", json={})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body
