"""StoreIO on its own: where store calls run, how their failures reach callers, how long a wait sleeps."""

from __future__ import annotations

import threading

import pytest

from codap_relay.errors import SessionNotFound, StoreUnavailable
from codap_relay.relay.store_io import StoreIO
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore


def thread_id() -> int:
    return threading.get_ident()


def broken() -> None:
    raise KeyError("a store bug")


async def test_a_blocking_store_runs_in_a_worker_thread_and_a_memory_store_right_here(settings: Settings) -> None:
    store = MemoryStore()
    io = StoreIO(store, settings)
    assert await io.run(thread_id) == threading.get_ident()
    store.blocking = True
    assert await io.run(thread_id) != threading.get_ident()
    assert await io.read(thread_id) == threading.get_ident()  # reads wait only where blocking_reads says so
    store.blocking_reads = True
    assert await io.read(thread_id) != threading.get_ident()


@pytest.mark.parametrize("blocking", [False, True])
async def test_an_unexpected_store_failure_is_a_503_a_domain_error_passes(settings: Settings, blocking: bool) -> None:
    store = MemoryStore()
    store.blocking = store.blocking_reads = blocking
    io = StoreIO(store, settings)
    for call in (io.run, io.read):
        with pytest.raises(StoreUnavailable) as raised:
            await call(broken)
        assert raised.value.retry_after == 1 and isinstance(raised.value.__cause__, KeyError)
    with pytest.raises(SessionNotFound):
        await io.run(store.add_request, "NOSUCHCO", None)


def test_a_wait_sleeps_it_all_where_writes_are_pushed_else_one_poll(settings: Settings) -> None:
    store = MemoryStore()
    s = settings.model_copy(
        update={"poll_interval_seconds": 0.05, "idle_poll_interval_seconds": 0.15, "poll_active_seconds": 60}
    )
    io = StoreIO(store, s)
    assert io.wait_slice(10) == 10  # the memory store pushes every write: a notification cuts the wait short
    store.pushes = False
    assert io.wait_slice(10) == 0.05
    assert io.wait_slice(10, quiet_for=59) == 0.05
    assert io.wait_slice(10, quiet_for=60) == 0.15  # quiet for poll_active_seconds: the idle rate
    assert io.wait_slice(0.01, quiet_for=60) == 0.01  # never past the time left
