"""Every store backend the contract suite runs against. Each entry opens a fresh, empty store."""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

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


class SerializedClient:
    """A boto3 client whose calls run one at a time.

    moto's in-process backend checks a transaction's conditions and applies its writes without a lock, so two
    threads can both pass ``last_seq = :n``; DynamoDB applies each call atomically. The lock restores that
    (per call, not across calls), so the store's own concurrency control is what the contract tests.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return target(*args, **kwargs)

        return call


@contextlib.contextmanager
def moto_store() -> Iterator[Store]:
    """DynamoStore on moto's in-process DynamoDB, table built from template.yaml."""
    import boto3
    from moto import mock_aws

    from codap_relay.store.dynamodb import DynamoStore
    from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, new_table

    with mock_aws():
        client = boto3.client("dynamodb", **CREDENTIALS)
        yield DynamoStore(SerializedClient(client), new_table(client))


@contextlib.contextmanager
def dynamodb_local_store() -> Iterator[Store]:
    """DynamoStore on DynamoDB Local (one server per test run, a fresh table per use)."""
    from codap_relay.store.dynamodb import DynamoStore
    from codap_relay_tooling.testing.dynamodb_shared import fresh_table

    with fresh_table() as (local, table):
        yield DynamoStore(local.client(), table)


#: How far the lagging backend's replica runs behind, in calls: a read that may be stale misses what the last three
#: calls wrote (an append and the read right after it, a slide and the poll after it), while what a test set up before
#: them is there, as a replica a moment behind shows it. A lag longer than any test would show an empty table, which
#: makes every read look like a miss and hides what a stale read of an existing item does.
LAG_CALLS = 3


@contextlib.contextmanager
def dynamodb_lagging_store() -> Iterator[Store]:
    """DynamoStore on DynamoDB Local whose eventually consistent reads come from a replica ``LAG_CALLS`` calls behind
    (lagging_dynamodb.py): DynamoDB as it may behave, which neither moto nor DynamoDB Local does."""
    from codap_relay.store.dynamodb import DynamoStore
    from codap_relay_tooling.testing.dynamodb_shared import fresh_table
    from codap_relay_tooling.testing.lagging_dynamodb import LaggingClient

    with fresh_table() as (local, table):
        yield DynamoStore(LaggingClient(local.client(), LAG_CALLS, per_call=True), table)


BACKENDS: dict[str, Callable[[], ContextManager[Store]]] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
    "moto": moto_store,
    "dynamodb_local": dynamodb_local_store,
    "dynamodb_lagging": dynamodb_lagging_store,
}


def sweep_expired(store: Store, now: float) -> None:
    """Each backend's own housekeeping as if it ran at ``now``: the SQLite purge, or what DynamoDB's TTL does (it
    deletes items whose TTL attribute is in the past; moto and DynamoDB Local never do, so the test does it). The
    memory store keeps everything for the life of its process."""
    from codap_relay.store.dynamodb import TTL_ATTRIBUTE, DynamoStore

    if isinstance(store, SqliteStore):
        store.purge(now)
    elif isinstance(store, DynamoStore):
        client, start = store._client, None
        while True:
            page = client.scan(
                TableName=store.table, ConsistentRead=True, **({"ExclusiveStartKey": start} if start else {})
            )
            for item in page.get("Items", []):
                if TTL_ATTRIBUTE in item and float(item[TTL_ATTRIBUTE]["N"]) < now:
                    client.delete_item(TableName=store.table, Key={"pk": item["pk"], "sk": item["sk"]})
            start = page.get("LastEvaluatedKey")
            if not start:
                return
