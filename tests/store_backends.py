"""Every store backend the contract suite runs against. Each entry opens a fresh, empty store."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path

from codap_relay.store.base import Store
from codap_relay.store.memory import MemoryStore
from codap_relay.store.sqlite import SqliteStore


@contextlib.contextmanager
def memory_store() -> Iterator[Store]:
    yield MemoryStore()


@contextlib.contextmanager
def sqlite_store() -> Iterator[Store]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "relay.db")
        try:
            yield store
        finally:
            store.close()


BACKENDS: dict[str, Callable[[], ContextManager[Store]]] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
}
