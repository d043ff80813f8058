"""The test run's DynamoDB Local: one, started on first use and stopped when the test process exits, with a fresh
table for each test (so tests never see each other's items). A machine without it (or without Java) skips those
tests, or fails them under REAL_PARTS_REQUIRED (real_parts.py).
The launcher itself is dynamodb_local.py, which the benchmark shares."""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Iterator

from codap_relay_tooling.testing.dynamodb_local import (
    CREDENTIALS,
    DynamoLocal,
    DynamoLocalUnavailable,
    env_for,
    find_jar,
    new_table,
    start,
)
from codap_relay_tooling.testing.real_parts import missing

__all__ = ["CREDENTIALS", "env_for", "find_jar", "fresh_table", "new_table", "shared", "store_url"]

_lock = threading.Lock()
_shared: DynamoLocal | None = None


def shared() -> DynamoLocal:
    """One DynamoDB Local per test process, started on first use and stopped at exit."""
    global _shared
    with _lock:
        if _shared is None or _shared.process.poll() is not None:
            try:
                _shared = start()
            except DynamoLocalUnavailable as exc:
                missing(exc.part)
            atexit.register(_shared.stop)
        return _shared


@contextlib.contextmanager
def fresh_table() -> Iterator[tuple[DynamoLocal, str]]:
    local = shared()
    client = local.client()
    name = new_table(client)
    try:
        yield local, name
    finally:
        with contextlib.suppress(Exception):
            client.delete_table(TableName=name)


def store_url(local: DynamoLocal, table: str) -> str:
    return local.store_url(table)
