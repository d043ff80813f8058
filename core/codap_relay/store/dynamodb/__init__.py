"""DynamoDB store: one table shared by every Lambda instance (``pushes = False``: readers poll).

- ``table.py``: the table as template.yaml defines it (created from that definition), and the items' keys.
- ``codec.py``: records to items and back; payloads compressed, and chunked when too large for their item.
- ``client.py``: the boto3 client, DynamoDB's errors as the relay's, transactions retried until decided.
- ``sessions.py``, ``requests.py`` (the queue and its delivery), ``responses.py``, ``counters.py`` (rate-limit
  windows), ``changes.py`` (change marks), ``auth.py`` (the OAuth server's items): the store interface's
  operations (``store/base.py``), in its groups; ``legacy.py`` serves sessions an earlier version opened.

A request is appended in one ``TransactWriteItems``: the session's seq moves (conditioned on its old value, the
session not closed, and, for a request posted at once, its consumer unchanged), the request's item is new (its id
unused) and each limit it counts against stays within bounds; nothing is half-written. An answer is a single
conditional write of the request's item (first answer wins), so a pushed call costs one transaction, not two.
DynamoDB deletes expired items lazily (or, in moto and DynamoDB Local, never), so expiry stays the service's
check on ``expires_at``, as for every store.
"""

from __future__ import annotations

from ..base import StoreUrlError
from .auth import AuthOps
from .changes import ChangeOps
from .client import TABLE_NAME_RE, dynamodb_client
from .codec import INLINE_LIMIT
from .counters import CounterOps
from .requests import RequestOps
from .responses import ResponseOps
from .sessions import SessionOps
from .table import TTL_ATTRIBUTE, create_table, table_definition


class DynamoStore(SessionOps, RequestOps, ResponseOps, CounterOps, ChangeOps, AuthOps):
    """The Store (store/base.py) on one DynamoDB table: each group of operations is a mixin over the shared
    ``Connection`` (client.py), so they share one client, one table name and one seq cache."""

    @classmethod
    def from_url(
        cls,
        table: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        **unknown: str,
    ) -> DynamoStore:
        """Open ``dynamodb://TABLE?region=…&endpoint_url=…`` (endpoint_url for DynamoDB Local)."""
        if unknown:
            raise StoreUrlError(
                f"unknown dynamodb store option(s) {', '.join(sorted(unknown))}: use region= and endpoint_url="
            )
        if not TABLE_NAME_RE.match(table or ""):
            raise StoreUrlError(
                f"dynamodb store URL needs a table name of 3-255 letters, digits, '_', '-' or '.' "
                f"(like dynamodb://codap-relay?region=us-east-1), got {table!r}"
            )
        client = dynamodb_client(endpoint_url=endpoint_url, region=region)
        return cls(client, table, owns_client=True)


__all__ = ["INLINE_LIMIT", "TTL_ATTRIBUTE", "DynamoStore", "create_table", "dynamodb_client", "table_definition"]
