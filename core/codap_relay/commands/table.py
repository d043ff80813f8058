"""``codap-relay dynamodb create-table``: create the relay's table from ``template.yaml``'s own definition
(codap_relay.store.dynamodb.table); ``seed-example``: the session the sample events under events/ use."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..extras import missing_extra
from ..sam_template import TemplateError, default_template, load_template
from ..store.base import StoreUrlError
from . import options


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("dynamodb", help="manage the relay's DynamoDB table")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = actions.add_parser("create-table", help="create the table as template.yaml defines it (TTL included)")
    c.add_argument("--table", required=True, type=options.table, help="table name (the store URL is dynamodb://TABLE)")
    c.add_argument("--endpoint-url", type=options.http_url, help="e.g. http://127.0.0.1:8000 for DynamoDB Local")
    c.add_argument(
        "--region", type=options.region, help="AWS region (default: AWS_REGION, or us-east-1 with --endpoint-url)"
    )
    c.add_argument("--template", type=options.existing_file, help="path to template.yaml (default: ./template.yaml)")
    c.set_defaults(run=run_create_table)
    e = actions.add_parser(
        "seed-example", help="add the session the events/ files use (code ABCD2345), for sam local invoke"
    )
    e.add_argument("--table", required=True, type=options.table)
    e.add_argument("--endpoint-url", type=options.http_url)
    e.add_argument("--region", type=options.region)
    e.set_defaults(run=run_seed_example)


def _aws_missing() -> bool:
    missing = missing_extra("aws", "codap-relay dynamodb")
    if missing is not None:
        print(f"codap-relay: {missing}", file=sys.stderr)
    return missing is not None


def run_create_table(args: argparse.Namespace) -> int:
    if _aws_missing():
        return 2
    from ..store.dynamodb import dynamodb_client
    from ..store.dynamodb.table import create_table, table_definition

    try:
        props = table_definition(load_template(args.template or default_template()))
        client = dynamodb_client(endpoint_url=args.endpoint_url, region=args.region)
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
    if _aws_missing():
        return 2
    import time

    from ..codes import hash_token
    from ..errors import CodeCollision, RelayError
    from ..records import SessionRecord
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
