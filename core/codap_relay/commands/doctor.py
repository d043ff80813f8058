"""``codap-relay doctor``: read the AWS account's quotas and settings (boto3, read-only calls) and say, line by line,
what a deployment of template.yaml of the given size needs raised or changed (codap_relay.doctor). Exit 1 when
something blocks, 2 when the account cannot be read at all."""

from __future__ import annotations

import argparse
import shlex
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..extras import missing_extra
from ..sam_template import TemplateError, default_template, load_template
from . import options

Clients = Callable[[str], Any]  # a boto3 client by service name


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor", help="check an AWS account's quotas and settings against what a deployment needs"
    )
    p.add_argument("--region", type=options.region, help="AWS region (default: samconfig.toml's, else AWS_REGION)")
    p.add_argument(
        "--profile",
        type=options.config_name,
        help="AWS named profile to read the account with (default: the usual chain)",
    )
    p.add_argument("--template", type=options.existing_file, help="path to template.yaml (default: ./template.yaml)")
    p.add_argument(
        "--config-file",
        type=options.existing_file,
        help="samconfig.toml whose parameter_overrides apply (default: beside the template)",
    )
    p.add_argument(
        "--config-env",
        type=options.config_name,
        default="default",
        help="the samconfig environment to read (default: default)",
    )
    p.add_argument(
        "--parameter",
        action="append",
        default=[],
        type=options.parameter,
        metavar="NAME=VALUE",
        help="a template parameter as you will deploy it (repeatable; over samconfig's and the template's)",
    )
    p.add_argument("--tabs", type=options.positive_int, default=30, help="CODAP tabs open at once (default 30)")
    p.add_argument(
        "--calls-per-second",
        type=options.per_second,
        default=1.0,
        help="tool calls per second at the busiest (default 1)",
    )
    p.set_defaults(run=run)


def samconfig(path: Path, env: str) -> tuple[dict[str, str], str | None]:
    """samconfig.toml's deploy parameter overrides and region for ``env`` (none if the file is absent)."""
    if not path.is_file():
        return {}, None
    deploy = tomllib.loads(path.read_text()).get(env, {}).get("deploy", {}).get("parameters", {})
    overrides = deploy.get("parameter_overrides", [])
    words = shlex.split(overrides) if isinstance(overrides, str) else list(overrides)
    pairs = dict(word.split("=", 1) for word in words if "=" in word)
    return pairs, deploy.get("region")


def parameters(template: dict[str, Any], *layers: dict[str, str]) -> dict[str, str]:
    values = {name: str(spec.get("Default", "")) for name, spec in (template.get("Parameters") or {}).items()}
    for layer in layers:
        unknown = set(layer) - set(values)
        if unknown:
            raise TemplateError(f"unknown template parameter(s): {', '.join(sorted(unknown))}")
        values |= layer
    return values


def read_account(client: Clients) -> Any:
    """What the account says, read-only; each read that fails is named in ``unread`` instead."""
    from botocore.exceptions import BotoCoreError, ClientError

    from ..doctor import Account

    facts: dict[str, Any] = {}
    unread: list[tuple[str, str]] = []

    def attempt(what: str, read: Callable[[], None]) -> None:
        try:
            read()
        except (BotoCoreError, ClientError) as exc:
            unread.append((what, str(exc)))

    def lambda_settings() -> None:
        limit = client("lambda").get_account_settings()["AccountLimit"]
        facts["concurrent_executions"] = int(limit["ConcurrentExecutions"])
        facts["unreserved_executions"] = int(limit["UnreservedConcurrentExecutions"])

    def api_account() -> None:
        account = client("apigateway").get_account()
        facts["cloudwatch_role_arn"] = account.get("cloudwatchRoleArn") or None
        facts["api_role_read"] = True
        rate = (account.get("throttleSettings") or {}).get("rateLimit")
        facts["rest_rate_limit"] = float(rate) if rate is not None else None

    def table_limits() -> None:
        limits = client("dynamodb").describe_limits()
        facts["table_max_reads"] = int(limits["TableMaxReadCapacityUnits"])
        facts["table_max_writes"] = int(limits["TableMaxWriteCapacityUnits"])

    def websocket_quota() -> None:
        pages = client("service-quotas").get_paginator("list_service_quotas").paginate(ServiceCode="apigateway")
        for page in pages:
            for quota in page.get("Quotas", []):
                name = quota.get("QuotaName", "").lower()
                if "new connection" in name:  # the WebSocket APIs' "New connections per second"
                    facts["websocket_new_connections"] = float(quota["Value"])

    attempt("Lambda account settings", lambda_settings)
    attempt("API Gateway account settings", api_account)
    attempt("DynamoDB limits", table_limits)
    attempt("Service Quotas for API Gateway", websocket_quota)
    return Account(**facts, unread=tuple(unread))


def deployment(template: dict[str, Any], values: dict[str, str], tabs: int, calls: float) -> Any:
    from ..doctor import Deployment, route_rate

    resources = template.get("Resources") or {}
    api = next(r for r in resources.values() if r.get("Type") == "AWS::Serverless::Api")
    settings = api.get("Properties", {}).get("MethodSettings") or []
    stages = [r for r in resources.values() if r.get("Type") == "AWS::ApiGatewayV2::Stage"]
    push_rate = float(
        (stages[0].get("Properties", {}).get("DefaultRouteSettings") or {}).get("ThrottlingRateLimit", 10_000)
        if stages
        else 10_000
    )
    return Deployment(values, tabs, calls, route_rate(settings, "/~1request"), push_rate)


def run(args: argparse.Namespace, client: Clients | None = None) -> int:
    missing = missing_extra("aws", "codap-relay doctor")
    if missing is not None:
        print(f"codap-relay: {missing}", file=sys.stderr)
        return 2
    from ..doctor import check

    try:
        template_path = args.template or default_template()
        template = load_template(template_path)
        config, config_region = samconfig(args.config_file or template_path.parent / "samconfig.toml", args.config_env)
        given = dict(p.split("=", 1) for p in args.parameter)
        values = parameters(template, config, given)
    except TemplateError as exc:
        print(f"codap-relay: {exc}", file=sys.stderr)
        return 2
    region = args.region or config_region
    if client is None:
        import boto3

        session = boto3.session.Session(profile_name=args.profile, region_name=region)
        if session.region_name is None:
            print("codap-relay: give --region (or a region in samconfig.toml or AWS_REGION)", file=sys.stderr)
            return 2
        region = session.region_name

        def client(service: str) -> Any:
            return session.client(service)  # type: ignore[call-overload]

    account = read_account(client)
    if len(account.unread) == 4:
        print(f"codap-relay: could not read the account: {account.unread[0][1]}", file=sys.stderr)
        return 2
    findings = check(account, deployment(template, values, args.tabs, args.calls_per_second))
    print(
        f"# {region}: {args.tabs} tabs, {args.calls_per_second:g} calls/s, PushChannel={values['PushChannel']}, "
        f"StreamConcurrency={values['StreamConcurrency']}, ApiAccessLogging={values['ApiAccessLogging']}"
    )
    for f in findings:
        print(f"{f.status:<8}{f.topic:<12}{f.text}")
    blocking = sum(f.blocks for f in findings)
    print(f"# {blocking} to raise or change" if blocking else "# nothing blocks this deployment")
    return 1 if blocking else 0
