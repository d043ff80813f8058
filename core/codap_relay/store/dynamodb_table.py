"""The relay's DynamoDB table as ``template.yaml`` defines it, created from that definition.

The template is the one source of truth for the table's keys and TTL: ``codap-relay dynamodb create-table``,
``codap-relay local-api`` (DynamoDB Local), the tests and the benchmarks all create the table through here.
"""

from __future__ import annotations

from typing import Any

from ..sam_template import TemplateError

TABLE_TYPE = "AWS::DynamoDB::Table"
# Properties create_table takes as they are written in the template.
CREATE_KEYS = ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")


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
