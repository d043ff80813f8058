"""What a deployment of template.yaml needs from an AWS account, against what the account has.

Pure: ``Account`` holds what was read from the account (``codap_relay.commands.doctor`` reads it with boto3),
``Deployment`` the stack's parameters and the size it must serve; ``check`` returns one ``Finding`` per need. A
finding that ``blocks`` is a deploy that fails, or a size the account or the stack's settings cannot serve.
Figures are the ones docs/deploy.md derives (reads per poll, writes per call, a call's hold on a function).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LAMBDA_MIN_UNRESERVED = 100  # Lambda refuses a reservation that leaves less of the quota unreserved
NEW_TABLE_READS, NEW_TABLE_WRITES = 12_000, 4_000  # what a new on-demand table serves at once (warm throughput)
READ_UNITS_PER_POLL = 0.5  # an eventually consistent read of the session item (under 4 KB)
WRITE_UNITS_PER_CALL = 12  # two transactions, every item billed twice (docs/deploy.md, per 1,000 calls)
PING_FUNCTION_SECONDS = 0.035  # a push ping's function time, measured locally
CALL_HOLD_SECONDS = 1.0  # a call holds a function while it waits for the plugin; about a second each
WEBSOCKET_NEW_CONNECTIONS = 500  # per second, per account and region, unless raised
BELL_SECONDS = 60  # a school's tabs open within about a minute of its bell

OK, NOTE, BLOCK, UNKNOWN = "ok", "note", "raise", "unknown"


@dataclass(frozen=True)
class Finding:
    status: str  # OK, NOTE, BLOCK (something must be raised or changed) or UNKNOWN (the account did not say)
    topic: str
    text: str

    @property
    def blocks(self) -> bool:
        return self.status == BLOCK


@dataclass(frozen=True)
class Account:
    """What the account said; None where it could not be read (the reason in ``unread``)."""

    concurrent_executions: int | None = None
    unreserved_executions: int | None = None
    cloudwatch_role_arn: str | None = None
    api_role_read: bool = False  # whether cloudwatch_role_arn was read (None then means: no role set)
    rest_rate_limit: float | None = None  # the account's REST API throttle, requests/s
    table_max_reads: int | None = None  # table-level throughput limit, on-demand tables included
    table_max_writes: int | None = None
    websocket_new_connections: float | None = None  # per second (Service Quotas), if the account says
    unread: tuple[tuple[str, str], ...] = ()  # (what, why)


@dataclass(frozen=True)
class Deployment:
    """The stack's parameters (template defaults, samconfig and overrides applied) and the size to serve."""

    parameters: Mapping[str, str]
    tabs: int  # CODAP tabs open at once
    calls_per_second: float  # tool calls per second at the busiest
    llm_route_rate: float  # the stage's throttle on the LLM's routes (requests/s)
    push_stage_rate: float  # the push stage's DefaultRouteSettings rate limit (messages/s)

    def number(self, name: str) -> float:
        return float(self.parameters[name])

    @property
    def push(self) -> bool:
        return self.parameters.get("PushChannel") == "websocket"


def check(account: Account, deployment: Deployment) -> list[Finding]:
    findings = [Finding(UNKNOWN, what, f"could not read it: {why}") for what, why in account.unread]
    findings += _lambda(account, deployment)
    findings += _api_gateway(account, deployment)
    findings += _dynamodb(account, deployment)
    findings += _guard_rails(deployment)
    return findings


def _llm_executions(d: Deployment) -> int:
    return math.ceil(d.calls_per_second * CALL_HOLD_SECONDS)


def _lambda(a: Account, d: Deployment) -> list[Finding]:
    quota, unreserved = a.concurrent_executions, a.unreserved_executions
    if quota is None or unreserved is None:
        return []
    out = []
    reserved = int(d.number("StreamConcurrency"))
    elsewhere = quota - unreserved  # reserved by other functions of the account
    llm = _llm_executions(d)
    if reserved:
        left = unreserved - reserved
        if left < LAMBDA_MIN_UNRESERVED:
            need = elsewhere + reserved + LAMBDA_MIN_UNRESERVED
            out.append(
                Finding(
                    BLOCK,
                    "lambda",
                    (
                        f"StreamConcurrency={reserved} would leave {left} of {unreserved} unreserved executions; "
                        f"Lambda keeps {LAMBDA_MIN_UNRESERVED}, so the deploy fails: raise 'Concurrent executions' to "
                        f"{need} (Service Quotas, Lambda) or set StreamConcurrency at most "
                        f"{max(unreserved - LAMBDA_MIN_UNRESERVED, 0)} (0 reserves nothing). On an update, this "
                        "stack's own reservation is already out of the unreserved."
                    ),
                )
            )
        else:
            out.append(Finding(OK, "lambda", f"StreamConcurrency={reserved} leaves {left} unreserved (at least 100)"))
    streams = 0 if d.push else d.tabs
    if reserved and streams > reserved:
        out.append(
            Finding(
                BLOCK,
                "lambda",
                (
                    f"{d.tabs} tabs hold {d.tabs} streams but StreamConcurrency={reserved}: the rest wait (503); set "
                    f"StreamConcurrency={d.tabs}."
                ),
            )
        )
        streams = reserved
    pings = math.ceil(d.tabs / d.number("PushPingSeconds") * PING_FUNCTION_SECONDS) if d.push else 0
    shared = llm + pings + (0 if reserved else streams)  # what runs in the unreserved pool
    pool = unreserved - reserved
    held = f"{streams} streams, " if streams and not reserved else ""
    text = (
        f"{held}{llm} executions for {d.calls_per_second:g} calls/s and {pings} for pings need {shared} of {pool} "
        "unreserved"
    )
    if shared > pool:
        raise_to = elsewhere + reserved + shared + (LAMBDA_MIN_UNRESERVED if reserved else 0)
        out.append(Finding(BLOCK, "lambda", f"{text}: raise 'Concurrent executions' to {raise_to} (now {quota})"))
    else:
        out.append(Finding(OK, "lambda", f"{text} (quota {quota})"))
    if d.push:
        out.append(
            Finding(
                NOTE,
                "lambda",
                "a tab that cannot open its socket falls back to a stream, which holds one execution while it is open",
            )
        )
    return out


def _api_gateway(a: Account, d: Deployment) -> list[Finding]:
    out = []
    logging = d.parameters.get("ApiAccessLogging", "Disabled")
    if a.api_role_read:
        role = a.cloudwatch_role_arn
        if logging == "UseAccountRole" and not role:
            out.append(
                Finding(
                    BLOCK,
                    "apigateway",
                    (
                        "ApiAccessLogging=UseAccountRole but the account has no CloudWatch Logs role, so the stage "
                        "fails to create: deploy with ApiAccessLogging=CreateAccountRole, or set the role "
                        "(docs/deploy.md)"
                    ),
                )
            )
        elif logging == "CreateAccountRole" and role:
            out.append(
                Finding(
                    NOTE,
                    "apigateway",
                    (
                        f"the stack will replace the account's CloudWatch Logs role {role} with its own (kept when "
                        "the stack is deleted); ApiAccessLogging=UseAccountRole keeps this one"
                    ),
                )
            )
        elif logging == "Disabled" and role:
            out.append(
                Finding(
                    NOTE,
                    "apigateway",
                    (
                        "no access log, though the account has a CloudWatch Logs role: "
                        "ApiAccessLogging=UseAccountRole adds it (and the 429 alarm)"
                    ),
                )
            )
        else:
            out.append(Finding(OK, "apigateway", f"access log {logging}; account role: {role or 'none'}"))
    requests = d.calls_per_second * 3 + (0 if d.push else d.tabs / d.number("StreamMaxSeconds"))
    if d.calls_per_second > d.llm_route_rate:
        out.append(
            Finding(
                BLOCK,
                "apigateway",
                (
                    f"{d.calls_per_second:g} calls/s over the LLM routes' throttle of {d.llm_route_rate:g}/s "
                    "(template.yaml MethodSettings): raise it there"
                ),
            )
        )
    if a.rest_rate_limit is not None:
        status = BLOCK if requests > a.rest_rate_limit else OK
        out.append(
            Finding(
                status,
                "apigateway",
                (
                    f"about {requests:.0f} REST requests/s of the account's {a.rest_rate_limit:g}/s"
                    + ("; ask for a higher 'Throttle rate' (Service Quotas, API Gateway)" if status == BLOCK else "")
                ),
            )
        )
    if d.push:
        opening = d.tabs / BELL_SECONDS
        quota = a.websocket_new_connections or WEBSOCKET_NEW_CONNECTIONS
        said = "" if a.websocket_new_connections else " (the default; the account did not say)"
        status = BLOCK if opening > quota else OK
        out.append(
            Finding(
                status,
                "apigateway",
                (
                    f"{d.tabs} tabs opening within a minute: {opening:.0f} new WebSocket connections/s "
                    f"of {quota:g}{said}"
                ),
            )
        )
        messages = d.tabs * 2 / d.number("PushPingSeconds") + d.calls_per_second
        status = BLOCK if messages > d.push_stage_rate else OK
        out.append(
            Finding(
                status,
                "apigateway",
                (
                    f"about {messages:.0f} push messages/s of the push stage's throttle of {d.push_stage_rate:g}/s"
                    + (" (template.yaml PushStage DefaultRouteSettings): raise it" if status == BLOCK else "")
                ),
            )
        )
    return out


def _dynamodb(a: Account, d: Deployment) -> list[Finding]:
    if d.push:
        pings = d.tabs / d.number("PushPingSeconds")
        reads, writes = pings, pings + d.calls_per_second * WRITE_UNITS_PER_CALL
        how = "pings (a read and a write each)"
    else:
        reads = d.tabs * READ_UNITS_PER_POLL / d.number("PollIntervalSeconds")
        writes = d.calls_per_second * WRITE_UNITS_PER_CALL
        how = "streams polling as in use"
    out = [
        Finding(
            NOTE,
            "dynamodb",
            f"at the busiest ({how}, {d.calls_per_second:g} calls/s): {reads:.0f} read and {writes:.0f} write units/s",
        )
    ]
    warm_reads = int(d.number("TableWarmReadUnitsPerSecond")) or NEW_TABLE_READS
    warm_writes = (
        int(d.number("TableWarmWriteUnitsPerSecond")) if d.number("TableWarmReadUnitsPerSecond") else (NEW_TABLE_WRITES)
    )
    for kind, need, cap_name, warm, warm_name, table_max in (
        ("read", reads, "TableMaxReadUnitsPerSecond", warm_reads, "TableWarmReadUnitsPerSecond", a.table_max_reads),
        (
            "write",
            writes,
            "TableMaxWriteUnitsPerSecond",
            warm_writes,
            "TableWarmWriteUnitsPerSecond",
            a.table_max_writes,
        ),
    ):
        cap = int(d.number(cap_name))
        if need > cap:
            out.append(
                Finding(
                    BLOCK,
                    "dynamodb",
                    f"{need:.0f} {kind} units/s over the table's cap: {cap_name}={math.ceil(need)} (now {cap})",
                )
            )
        if warm > cap:
            out.append(
                Finding(
                    BLOCK,
                    "dynamodb",
                    f"the table is warmed to {warm} {kind} units/s but capped at {cap}: "
                    f"raise {cap_name} to at least {warm}",
                )
            )
        if need > warm:
            out.append(
                Finding(
                    BLOCK,
                    "dynamodb",
                    f"{need:.0f} {kind} units/s over what the table serves at once "
                    f"({warm}): pre-warm it, {warm_name}={math.ceil(need)} (a one-time charge)",
                )
            )
        if table_max is not None:
            status = BLOCK if need > table_max else OK
            more = "; ask for more (Service Quotas, DynamoDB)" if status == BLOCK else ""
            out.append(
                Finding(
                    status,
                    "dynamodb",
                    f"{need:.0f} {kind} units/s of the account's table-level limit of {table_max}{more}",
                )
            )
    return out


def _guard_rails(d: Deployment) -> list[Finding]:
    alarms = d.parameters.get("Alarms") == "Enabled"
    email = d.parameters.get("AlertEmail", "")
    budget = float(d.parameters.get("MonthlyBudgetUsd", "0") or 0)
    if alarms and not email:
        return [Finding(NOTE, "alarms", "the alarms notify no one and there is no budget: set AlertEmail")]
    if not alarms:
        return [Finding(NOTE, "alarms", "Alarms=Disabled: no alarm watches the stack")]
    return [Finding(OK, "alarms", f"alarms mail {email}" + (f"; budget ${budget:g} a month" if budget else ""))]


def route_rate(method_settings: list[Any], resource_path: str) -> float:
    """The throttle (requests/s) MethodSettings give a route: its own entry, else the stage-wide one."""
    default: dict[str, Any] = next((s for s in method_settings if s.get("ResourcePath") == "/*"), {})
    own = next((s for s in method_settings if s.get("ResourcePath") == resource_path), default)
    return float(own.get("ThrottlingRateLimit", 10_000))
