"""DynamoDB Local for the benchmark, through the launcher the tests share (codap_relay_tooling.testing.dynamodb_local).

DynamoDB Local is the real DynamoDB engine's local edition on loopback: its latencies are not AWS's (no network,
no replication, different storage engine), but its request counts and consumed capacity are the same API's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from codap_relay_tooling.testing.dynamodb_local import env_for, new_table, start


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
    try:
        local = start()
    except RuntimeError as exc:  # DynamoLocalUnavailable (no jar, no Java) or a failed start
        yield str(exc)
        return
    try:
        table = new_table(local.client())
        yield LocalTable(local.store_url(table), env_for(local), local.endpoint, table)
    finally:
        local.stop()
