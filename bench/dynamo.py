"""DynamoDB Local for the benchmark, through the test suite's own helper (tests/dynamodb_local.py).

DynamoDB Local is the real DynamoDB engine's local edition on loopback: its latencies are not AWS's (no network,
no replication, different storage engine), but its request counts and consumed capacity are the same API's.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from bench.server import ROOT


@dataclass(frozen=True)
class LocalTable:
    store_url: str
    env: dict[str, str]
    endpoint: str  # DynamoDB Local's URL
    table: str

    def store_url_via(self, endpoint: str) -> str:
        """The store URL for the same table reached through another endpoint (the counting proxy)."""
        return f"dynamodb://{self.table}?endpoint_url={endpoint}&region=us-east-1"


@contextlib.contextmanager
def dynamodb_local() -> Iterator[LocalTable | str]:
    """Yields a fresh table on a private DynamoDB Local, or a string saying why none could be started."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.append(tests)
    try:
        import pytest

        import dynamodb_local as helper  # type: ignore[import-not-found]
    except ImportError as exc:
        yield f"the DynamoDB Local helper could not be imported ({exc})"
        return
    try:
        local = helper.start()
    except pytest.skip.Exception as exc:  # the helper skips when the jar or Java is missing
        yield str(exc.msg) if hasattr(exc, "msg") else str(exc)
        return
    except RuntimeError as exc:
        yield str(exc)
        return
    try:
        table = helper.new_table(local.client())
        yield LocalTable(helper.store_url(local, table), helper.env_for(local), local.endpoint, table)
    finally:
        local.stop()
