"""The relay's DynamoDB table: its definition as ``template.yaml`` writes it, and the layout of the items in it.

The template is the one source of truth for the table's keys, indexes and TTL: ``codap-relay dynamodb
create-table``, ``codap-relay local-api`` (DynamoDB Local), the tests and the benchmarks all create the table
through here.

Items (``pk``, ``sk``; every item carries ``purge_at``, the table's TTL attribute in epoch seconds):

- ``SESSION#<code>`` / ``META``: the session, with ``last_seq``, the highest seq handed out, and its manifest's
  address (``manifest``) and how long that is kept (``manifest_purge``): a few hundred bytes, read by every poll.
- ``MANIFEST#<sha256 of the manifest's canonical JSON>`` / ``MANIFEST``: a tool manifest, shared by every session
  that registers it; kept at least as long as they are (``manifests.py``).
- ``SESSION#<code>`` / ``REQ#<seq, 12 digits>``: a request; sort order is seq order.
- ``SESSION#<code>`` / ``RID#<id>``: the seq of request ``id`` and when it was queued (idempotent ids, lookups
  by id).
- ``SESSION#<code>`` / ``RESP#<id>``: the first answer to request ``id``.
- ``SESSION#<code>`` / ``BLOB#<nonce>#<n>``: chunks of a payload too large for its item (items hold 400 KB).
- ``SESSION#<code>`` / ``CHANGES``: what the plugin said changed in the document (``seq``, ``marks`` as JSON).
- ``COUNTER#<key>`` / ``COUNTER``: a rate-limit window.
- ``AUTH#<kind>#<key>`` / ``AUTH``: an item of the OAuth server; ``AUTHBY#<kind>#<owner>`` / ``<key>``: its
  copy in its owner's partition, for listing.
"""

from __future__ import annotations

import math
from typing import Any

from ...sam_template import TemplateError
from ..base import PURGE_GRACE_SECONDS

TABLE_TYPE = "AWS::DynamoDB::Table"
# Properties create_table takes as they are written in the template.
CREATE_KEYS = ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")

TTL_ATTRIBUTE = "purge_at"
SEQ_DIGITS = 12
MAX_SEQ = 10**SEQ_DIGITS - 1


def table_definition(template: dict[str, Any], logical_id: str | None = None) -> dict[str, Any]:
    """The Properties of the template's DynamoDB table (the only one, or the one named ``logical_id``)."""
    tables = {
        name: res
        for name, res in (template.get("Resources") or {}).items()
        if isinstance(res, dict) and res.get("Type") == TABLE_TYPE
    }
    if logical_id is not None:
        tables = {k: v for k, v in tables.items() if k == logical_id}
    if len(tables) != 1:
        raise TemplateError(
            f"expected exactly one {TABLE_TYPE} resource{f' named {logical_id}' if logical_id else ''}, "
            f"found {len(tables)}"
        )
    props: dict[str, Any] = next(iter(tables.values())).get("Properties") or {}
    return props


def create_table(client: Any, name: str, props: dict[str, Any], *, wait: bool = True) -> bool:
    """Create table ``name`` as defined; returns False if it already exists. Enables TTL as declared."""
    kwargs: dict[str, Any] = {k: props[k] for k in CREATE_KEYS if k in props}
    kwargs.setdefault("BillingMode", "PAY_PER_REQUEST")
    if kwargs["BillingMode"] == "PROVISIONED":
        kwargs["ProvisionedThroughput"] = props["ProvisionedThroughput"]
    try:
        client.create_table(TableName=name, **kwargs)
    except client.exceptions.ResourceInUseException:
        return False
    if wait:
        client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    ttl = props.get("TimeToLiveSpecification")
    if ttl and str(ttl.get("Enabled")).lower() == "true":
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True}
        )
    return True


# --- keys ---------------------------------------------------------------------------------------------------


def pk(code: str) -> str:
    """The partition of session ``code``: every item of the session is in it."""
    return f"SESSION#{code}"


def req_sk(seq: int) -> str:
    return f"REQ#{seq:0{SEQ_DIGITS}d}"


def key(partition: str, sort: str) -> dict[str, dict[str, Any]]:
    return {"pk": {"S": partition}, "sk": {"S": sort}}


def purge_at(expires_at: float) -> int:
    """The TTL of an item that expires at ``expires_at``: items outlive their expiry by PURGE_GRACE_SECONDS (as in
    the SQLite store), so late readers get "expired", not "unknown", and an ended session's log stays readable for
    LOG_GRACE_SECONDS."""
    return math.ceil(expires_at) + PURGE_GRACE_SECONDS
