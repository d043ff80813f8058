"""``codap-relay dynamodb create-table``: create the relay's table from ``template.yaml``'s own definition.

The template is the one source of truth for the table's keys and TTL; this command reads it (through
codap_relay.sam_template) instead of repeating the schema.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..sam_template import TemplateError, default_template, load_template

TABLE_TYPE = "AWS::DynamoDB::Table"
# Properties create_table takes as they are written in the template.
CREATE_KEYS = ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")
__all__ = ["TemplateError", "create_table", "default_template", "load_template", "table_definition"]


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


def client_for(endpoint_url: str | None, region: str | None) -> Any:
    from ..store.dynamodb import DynamoStore

    # Reuse the store's client set-up (local credentials, region defaults) so both agree.
    return DynamoStore.from_url("placeholder-table", endpoint_url=endpoint_url, region=region)._client


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("dynamodb", help="manage the relay's DynamoDB table")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = actions.add_parser("create-table", help="create the table as template.yaml defines it (TTL included)")
    c.add_argument("--table", required=True, help="table name (the store URL is dynamodb://TABLE)")
    c.add_argument("--endpoint-url", help="e.g. http://127.0.0.1:8000 for DynamoDB Local")
    c.add_argument("--region", help="AWS region (default: AWS_REGION, or us-east-1 with --endpoint-url)")
    c.add_argument("--template", type=Path, help="path to template.yaml (default: ./template.yaml)")
    c.set_defaults(run=run_create_table)
    e = actions.add_parser(
        "seed-example", help="add the session the events/ files use (code ABCD2345), for sam local invoke"
    )
    e.add_argument("--table", required=True)
    e.add_argument("--endpoint-url")
    e.add_argument("--region")
    e.set_defaults(run=run_seed_example)


def run_create_table(args: argparse.Namespace) -> int:
    from ..store import StoreUrlError

    try:
        props = table_definition(load_template(args.template or default_template()))
        client = client_for(args.endpoint_url, args.region)
        created = create_table(client, args.table, props)
    except (TemplateError, StoreUrlError) as exc:
        print(f"codap-relay: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # botocore errors: say what failed without a traceback
        print(f"codap-relay: could not create table {args.table!r}: {exc}", file=sys.stderr)
        return 1
    print(f"table {args.table} {'created' if created else 'already exists'}")
    url = f"dynamodb://{args.table}"
    if args.endpoint_url:
        url += f"?endpoint_url={args.endpoint_url}"
    print(f"store URL: {url}")
    return 0


# The pairing code and browser token written into the sample API Gateway events under events/.
EXAMPLE_CODE = "ABCD2345"
EXAMPLE_TOKEN = "sample-browser-token-not-a-secret"


def run_seed_example(args: argparse.Namespace) -> int:
    import time

    from ..codes import hash_token
    from ..errors import CodeCollision, RelayError
    from ..records import SessionRecord
    from ..store import StoreUrlError
    from ..store.dynamodb import DynamoStore

    try:
        store = DynamoStore.from_url(args.table, endpoint_url=args.endpoint_url, region=args.region)
        now = time.time()
        store.create_session(SessionRecord(EXAMPLE_CODE, hash_token(EXAMPLE_TOKEN), now, now + 86_400))
    except CodeCollision:
        print(f"session {EXAMPLE_CODE} already exists")
        return 0
    except (StoreUrlError, RelayError) as exc:
        print(f"codap-relay: {exc}", file=sys.stderr)
        return 1
    print(f"session {EXAMPLE_CODE} created for a day; the events/ files can now be invoked against it")
    return 0
