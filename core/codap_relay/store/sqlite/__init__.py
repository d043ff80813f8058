"""Embedded SQLite store: the local server's default. WAL mode, every write committed before it returns, and on
disk (fsync) before it returns, except delivery marks and rate-limit counts (see ``Database._tx``).

- ``database.py``: the file, its schema and migrations, the writer's transactions and each thread's read
  snapshots, the purge of rows long past expiry.
- ``rows.py``: each table's row as the record the store interface returns.
- ``sessions.py``, ``requests.py`` (the queue and its delivery), ``responses.py``, ``counters.py`` (rate-limit
  windows, push connections), ``changes.py`` (change marks), ``auth.py`` (the OAuth server's items): the store
  interface's operations (``store/base.py``) in the same groups as the DynamoDB store's.
"""

from __future__ import annotations

from .auth import AuthOps
from .changes import ChangeOps
from .counters import CounterOps
from .database import SCHEMA
from .requests import RequestOps
from .responses import ResponseOps
from .sessions import SessionOps


class SqliteStore(RequestOps, SessionOps, ResponseOps, CounterOps, ChangeOps, AuthOps):
    """The Store (store/base.py) in one SQLite file: each group of operations is a mixin over the shared
    ``Database`` (database.py), so they share one writer connection and its lock."""

    pushes = True
    blocking = True
    # Reads go to a worker thread too: a read of a large session (or a cold page cache) takes real time, and on the
    # event loop it would hold up every other request. Each thread reads on a connection of its own; in WAL mode no
    # writer holds them up.
    blocking_reads = True


__all__ = ["SCHEMA", "SqliteStore"]
