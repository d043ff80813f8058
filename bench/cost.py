"""Cost model of the deployed stack, for both plugin channels, from what the benchmark measures and list prices.

Pure arithmetic. The counts come from bench.deployed (local-api on DynamoDB Local): DynamoDB requests and capacity
units as AWS bills them (bench.dynamo_proxy, the counting proxy), Lambda billed duration per function from
local-api's REPORT lines, API requests as invocations, an idle plugin's polls and presence writes per hour. Memory
sizes, architecture and waiting settings come from template.yaml. Every price is a named constant below with the
page it is listed on.

Two channels carry tool requests to the plugin:

- ``sse``: the plugin holds a streamed REST response (``GET /stream``) served by the stream function, which polls
  DynamoDB: the function is held (and billed) the whole time a tab is open.
- ``websocket``: API Gateway WebSocket API (docs/deploy.md, "Push channel"): the relay posts each request to the
  plugin's connection (``@connections``) right after the durable write; the plugin pings every
  ``push_ping_seconds`` and each ping is one short PushFunction invocation that reads the session (and writes the
  presence when due) and answers ``heartbeat``.

What the WebSocket channel does per call, per ping and per reconnect is measured the same way (bench.deployed's
``push`` figures: DynamoDB units by the counting proxy, the push function's and the submitting function's billed
time from local-api's REPORT lines, WebSocket messages counted at the plugin), and priced at the production ping
interval (the template's ``PushPingSeconds``): each ping refreshes the presence at any interval, so a ping counted
at the bench's short interval costs what one at 90 s does. What stays assumed: API Gateway's 2-hour connection
limit (so a reconnect every 2 hours) and the connection-minutes. A JSON without the ``push`` figures (an older
run) is priced as before, derived from the SSE counts with the named assumptions below.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from bench.server import ROOT

PRICES_CHECKED = "2026-11-25"  # list prices as published for us-east-1 (not re-read online in this run)


@dataclass(frozen=True)
class Prices:
    """US East (N. Virginia) on-demand list prices (USD). Each field's page is in ``PRICE_SOURCES``."""

    dynamodb_read_per_million: float = 0.125  # on-demand read request units (price since 1 Nov 2024)
    dynamodb_write_per_million: float = 0.625  # on-demand write request units
    lambda_gb_second_x86_64: float = 0.0000166667  # first 6 billion GB-s per month
    lambda_gb_second_arm64: float = 0.0000133334  # first 7.5 billion GB-s per month
    lambda_per_million_requests: float = 0.20
    lambda_streamed_per_gb: float = 0.008  # response streaming: bytes beyond the first 6 MB of each response
    lambda_stream_free_bytes: int = 6 * 1024 * 1024
    api_gateway_rest_per_million: float = 3.50  # REST API, first 333 million requests per month
    api_gateway_rest_stream_bytes_per_request: int = 10 * 1024 * 1024  # a streamed response: each 10 MB a request
    api_gateway_websocket_messages_per_million: float = 1.00  # first 1 billion messages per month
    api_gateway_websocket_message_bytes: int = 32 * 1024  # messages are metered in 32 KB increments
    api_gateway_websocket_connection_minutes_per_million: float = 0.25

    def lambda_gb_second(self, architecture: str) -> float:
        return self.lambda_gb_second_arm64 if architecture == "arm64" else self.lambda_gb_second_x86_64


LAMBDA_PRICING = "https://aws.amazon.com/lambda/pricing/"
APIGW_PRICING = "https://aws.amazon.com/api-gateway/pricing/"
DYNAMODB_PRICING = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
PRICE_SOURCES: dict[str, str] = {
    "dynamodb_read_per_million": DYNAMODB_PRICING,
    "dynamodb_write_per_million": DYNAMODB_PRICING,
    "lambda_gb_second_x86_64": LAMBDA_PRICING,
    "lambda_gb_second_arm64": LAMBDA_PRICING,
    "lambda_per_million_requests": LAMBDA_PRICING,
    "lambda_streamed_per_gb": LAMBDA_PRICING + " (response streaming)",
    "lambda_stream_free_bytes": LAMBDA_PRICING + " (response streaming)",
    "api_gateway_rest_per_million": APIGW_PRICING + " (REST APIs)",
    "api_gateway_rest_stream_bytes_per_request": APIGW_PRICING + " (REST APIs, response streaming)",
    "api_gateway_websocket_messages_per_million": APIGW_PRICING + " (WebSocket APIs)",
    "api_gateway_websocket_message_bytes": APIGW_PRICING + " (WebSocket APIs)",
    "api_gateway_websocket_connection_minutes_per_million": APIGW_PRICING + " (WebSocket APIs)",
}

# --- the push channel: API Gateway's rules, and the fallback when its counts are missing (an older JSON) -----

PUSH_FUNCTION_MB = 128  # push-spec.md: PushFunction, arm64, 128 MB
PUSH_INVOCATION_BILLED_MS = 10.0  # a warm ping/attach: one or two DynamoDB requests (GetItem ~ 5 ms in-region)
PUSH_PUBLISH_BILLED_MS = 15.0  # added to the submitting function: one signed @connections POST in the region
PUSH_CONNECTION_SECONDS = 7200  # API Gateway ends every WebSocket connection after 2 hours: the plugin reconnects
PUSH_MESSAGES_PER_CONNECT = 2  # attach in, resumed out
PUSH_INVOCATIONS_PER_CONNECT = 3  # $connect, attach ($default), $disconnect
PUSH_UNITS_PER_CONNECT = (1.0, 1.0)  # attach: one consistent session read, one consumer write (read, write units)
SSE_HEARTBEAT_BYTES = 40  # "event: heartbeat\ndata: {...}\n\n" on the stream
TOOL_REQUEST_BYTES = 400  # the bench's tool-request event/message (add_codap_cases with one case), JSON

# --- scenarios (issue 23) ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    key: str
    label: str
    tab_hours: float
    calls: int


SCENARIOS = (
    Scenario("idle_plugin_hour", "1 idle connected plugin, per hour", 1, 0),
    Scenario("class_hour", "a class-hour (30 tabs, 300 calls)", 30, 300),
    Scenario("district_day", "a district day (3,000 tabs x 6 h, 100k calls)", 3000 * 6, 100_000),
    # issue 44: 300 classes x 30 tabs x 5 hours, 180 calls a class-hour
    Scenario("district_class_day", "a district's class day (300 classes x 30 tabs x 5 h, 270k calls)", 45_000, 270_000),
    Scenario("thousand_calls", "1,000 calls (beyond the idle tabs)", 0, 1000),
)


@dataclass(frozen=True)
class Goal:
    channel: str
    scenario: str
    usd: float
    label: str


GOALS = (
    Goal("websocket", "class_hour", 0.02, "push channel class-hour ≤ $0.02"),
    Goal("websocket", "district_day", 5.0, "push channel district day ≤ $5"),
    Goal("websocket", "district_class_day", 5.0, "push channel, a district's class day (45,000 tab-hours) ≤ $5"),
    Goal("websocket", "idle_plugin_hour", 0.001, "idle connected plugin (push) ≤ $0.001 per hour"),
    Goal("sse", "idle_plugin_hour", 0.0065, "SSE on arm64 ≤ $0.0065 per plugin-hour"),
)


@dataclass(frozen=True)
class Deployment:
    """What the template deploys: waiting behaviour, and memory and architecture per function (logical id)."""

    poll_interval_seconds: float = 0.1
    idle_poll_interval_seconds: float | None = None  # None: one interval, active or not
    poll_active_seconds: float = 0.0
    stream_max_seconds: float = 840
    heartbeat_seconds: float = 15
    push_ping_seconds: float = 90  # PushPingSeconds: a push plugin's ping, each of which refreshes its presence
    architecture: str = "x86_64"
    default_memory_mb: int = 256
    memory_mb: dict[str, int] | None = None  # function logical id -> MemorySize

    def memory_for(self, function: str) -> int:
        return (self.memory_mb or {}).get(function, self.default_memory_mb)


def deployment_from_template() -> Deployment:
    """Read template.yaml's defaults; fall back to the built-in ones when it is missing or unreadable."""
    try:
        from codap_relay.sam_template import load_template

        template = load_template(ROOT / "template.yaml")
    except Exception:
        return Deployment()
    params = template.get("Parameters") or {}

    def param(name: str, fallback: float | None) -> float | None:
        try:
            return float(params[name]["Default"]) if name in params else fallback
        except (TypeError, ValueError, KeyError):
            return fallback

    globals_ = (template.get("Globals") or {}).get("Function") or {}
    default_mem = int(globals_.get("MemorySize", 256))
    architecture = str((globals_.get("Architectures") or ["x86_64"])[0])
    memory: dict[str, int] = {}
    for name, resource in (template.get("Resources") or {}).items():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function":
            memory[name] = int((resource.get("Properties") or {}).get("MemorySize", default_mem))
    return Deployment(
        poll_interval_seconds=param("PollIntervalSeconds", 0.1) or 0.1,
        idle_poll_interval_seconds=param("IdlePollIntervalSeconds", None),
        poll_active_seconds=param("PollActiveSeconds", 0.0) or 0.0,
        stream_max_seconds=param("StreamMaxSeconds", 840) or 840,
        heartbeat_seconds=param("HeartbeatSeconds", 15) or 15,
        push_ping_seconds=param("PushPingSeconds", 90) or 90,
        architecture=architecture,
        default_memory_mb=default_mem,
        memory_mb=memory,
    )


STREAM_FUNCTION = "StreamFunction"
PUSH_FUNCTION = "PushFunction"


# --- usage: what a scenario consumes, leg by leg --------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    read_units: float = 0.0
    write_units: float = 0.0
    lambda_gb_seconds: float = 0.0
    lambda_requests: float = 0.0
    lambda_streamed_bytes: float = 0.0  # billed part only: beyond the first 6 MB of each streamed response
    api_requests: float = 0.0  # REST requests, streamed responses' extra 10 MB units included
    websocket_messages: float = 0.0  # in 32 KB units
    websocket_connection_minutes: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def times(self, k: float) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) * k for f in fields(self)})


def dollars(u: Usage, prices: Prices, architecture: str) -> dict[str, float]:
    """Each leg's price, and the total."""
    legs = {
        "dynamodb_usd": (
            u.read_units * prices.dynamodb_read_per_million + u.write_units * prices.dynamodb_write_per_million
        )
        / 1e6,
        "lambda_usd": u.lambda_gb_seconds * prices.lambda_gb_second(architecture)
        + u.lambda_requests * prices.lambda_per_million_requests / 1e6
        + u.lambda_streamed_bytes / 2**30 * prices.lambda_streamed_per_gb,
        "api_gateway_usd": u.api_requests * prices.api_gateway_rest_per_million / 1e6,
        "websocket_usd": u.websocket_messages * prices.api_gateway_websocket_messages_per_million / 1e6
        + u.websocket_connection_minutes * prices.api_gateway_websocket_connection_minutes_per_million / 1e6,
    }
    out = {k: round(v, 6) for k, v in legs.items()}
    out["total_usd"] = round(sum(legs.values()), 6)
    return out


def priced(u: Usage, prices: Prices, architecture: str) -> dict[str, Any]:
    figures = {k: round(v, 3) for k, v in asdict(u).items()}
    return {**figures, **dollars(u, prices, architecture)}


def ws_units(message_bytes: float, prices: Prices) -> int:
    return max(1, math.ceil(message_bytes / prices.api_gateway_websocket_message_bytes))


# --- SSE: the stream function held open per tab ---------------------------------------------------------------


def sse_idle_hour(idle: dict[str, Any], dep: Deployment, prices: Prices) -> Usage:
    """One connected plugin doing nothing for an hour: its stream function runs (and is billed) the whole hour,
    polling at the measured rate; it ends every ``stream_max_seconds`` and the plugin reconnects."""
    streams = 3600 / dep.stream_max_seconds
    stream_bytes = dep.stream_max_seconds / dep.heartbeat_seconds * SSE_HEARTBEAT_BYTES
    extra_units = max(0, math.ceil(stream_bytes / prices.api_gateway_rest_stream_bytes_per_request) - 1)
    return Usage(
        read_units=idle["read_units"],
        write_units=idle["write_units"],
        lambda_gb_seconds=3600 * dep.memory_for(STREAM_FUNCTION) / 1024,
        lambda_requests=streams,
        lambda_streamed_bytes=streams * max(0.0, stream_bytes - prices.lambda_stream_free_bytes),
        api_requests=streams * (1 + extra_units),
    )


def sse_call(call: dict[str, Any], idle: dict[str, Any] | None, dep: Deployment) -> Usage:
    """One call of a measured type: DynamoDB units beyond what the idle plugin costs anyway over the same time,
    Lambda GB-s of every function but the stream (billed duration x memory), API Gateway and Lambda requests."""
    seconds = call["seconds_per_call"]
    idle_reads = (idle or {}).get("read_units", 0) / 3600 * seconds
    idle_writes = (idle or {}).get("write_units", 0) / 3600 * seconds
    gb_seconds = sum(ms / 1000 * dep.memory_for(f) / 1024 for f, ms in call["lambda_billed_ms"].items())
    return Usage(
        read_units=max(0.0, call["read_units"] - idle_reads),
        write_units=max(0.0, call["write_units"] - idle_writes),
        lambda_gb_seconds=gb_seconds,
        lambda_requests=call.get("lambda_invocations", call["api_requests"]),
        api_requests=call["api_requests"],
    )


# --- WebSocket push: no function held; a ping per heartbeat, a message per request ---------------------------


def units_per_poll(idle: dict[str, Any]) -> float:
    """Read units of one idle poll (the session read), as measured: an idle stream's reads are its polls."""
    polls = idle.get("polling_reads") or idle.get("dynamodb_requests") or 1
    return float(idle["read_units"]) / polls


def push_idle_hour(idle: dict[str, Any], dep: Deployment, prices: Prices, ping_seconds: float | None = None) -> Usage:
    ping = ping_seconds or dep.push_ping_seconds
    pings = 3600 / ping
    touches = pings  # a push plugin's presence is refreshed at every ping (relay.presence: due after half a ping)
    connects = 3600 / PUSH_CONNECTION_SECONDS
    invocations = pings + connects * PUSH_INVOCATIONS_PER_CONNECT
    read_per_connect, write_per_connect = PUSH_UNITS_PER_CONNECT
    return Usage(
        read_units=pings * units_per_poll(idle) + connects * read_per_connect,
        write_units=touches + connects * write_per_connect,
        lambda_gb_seconds=invocations * PUSH_INVOCATION_BILLED_MS / 1000 * PUSH_FUNCTION_MB / 1024,
        lambda_requests=invocations,
        websocket_messages=2 * pings + connects * PUSH_MESSAGES_PER_CONNECT,  # ping in, heartbeat out
        websocket_connection_minutes=60,
    )


SUBMITTING_FUNCTIONS = ("RequestFunction", "McpFunction")


def push_call(call: dict[str, Any], idle: dict[str, Any] | None, dep: Deployment, prices: Prices) -> Usage:
    """An SSE call without the stream's polling reads while it was under way (at the active interval), plus the
    publish: one @connections POST from the submitting function and one message of the request's size."""
    sse = sse_call(call, idle, dep)
    polls = call["seconds_per_call"] / dep.poll_interval_seconds
    stream_poll_units = min(call.get("polling_read_units", 0.0), polls * units_per_poll(idle or {"read_units": 0.5}))
    submitter = next((f for f in SUBMITTING_FUNCTIONS if f in call["lambda_billed_ms"]), "RequestFunction")
    publish_gb_s = PUSH_PUBLISH_BILLED_MS / 1000 * dep.memory_for(submitter) / 1024
    return replace(
        sse,
        read_units=max(0.0, sse.read_units - stream_poll_units),
        lambda_gb_seconds=sse.lambda_gb_seconds + publish_gb_s,
        websocket_messages=ws_units(TOOL_REQUEST_BYTES, prices),
    )


# --- WebSocket push from its own counts (bench.deployed's ``push``) -------------------------------------------


def ws_message_units(figures: dict[str, Any], prices: Prices) -> float:
    """Messages as metered (each a 32 KB unit or more): every counted message at the largest one's size."""
    per = ws_units(figures.get("largest_message_bytes", 0), prices)
    return float(figures["websocket_messages"]) * per


def measured_push_idle_hour(push: dict[str, Any], dep: Deployment, ping_seconds: float | None = None) -> Usage:
    """An idle push plugin's hour from the counted ping (and reconnect, when counted): so many pings an hour at
    ``ping_seconds`` (the template's by default), a reconnect every 2 hours, 60 connection-minutes."""
    ping, reconnect = push["ping"], push.get("reconnect")
    pings = 3600 / (ping_seconds or dep.push_ping_seconds)
    connects = 3600 / PUSH_CONNECTION_SECONDS
    if reconnect is not None:
        c_reads, c_writes = reconnect["read_units"], reconnect["write_units"]
        c_invocations, c_ms = reconnect["push_invocations"], reconnect["push_billed_ms"]
        c_messages = reconnect["websocket_messages"]
    else:
        (c_reads, c_writes), c_invocations = PUSH_UNITS_PER_CONNECT, PUSH_INVOCATIONS_PER_CONNECT
        c_ms, c_messages = PUSH_INVOCATIONS_PER_CONNECT * PUSH_INVOCATION_BILLED_MS, PUSH_MESSAGES_PER_CONNECT
    billed_ms = pings * ping["push_billed_ms"] + connects * c_ms
    return Usage(
        read_units=pings * ping["read_units"] + connects * c_reads,
        write_units=pings * ping["write_units"] + connects * c_writes,
        lambda_gb_seconds=billed_ms / 1000 * dep.memory_for(PUSH_FUNCTION) / 1024,
        lambda_requests=pings * ping["push_invocations"] + connects * c_invocations,
        websocket_messages=pings * ping["websocket_messages"] + connects * c_messages,
        websocket_connection_minutes=60,
    )


def measured_push_call(call: dict[str, Any], dep: Deployment, prices: Prices) -> Usage:
    """A call over push as counted: no stream runs beside it, so nothing is taken off (its polls are not there);
    the publish is in the submitting function's billed time; its messages as counted at the plugin."""
    return replace(sse_call(call, None, dep), websocket_messages=ws_message_units(call, prices))


def push_measured(deployed: dict[str, Any]) -> bool:
    push = deployed.get("push") or {}
    return "ping" in push and SCENARIO_CALL_KIND in (push.get("kinds") or {})


# --- the model -----------------------------------------------------------------------------------------------

SSE_HOUR_GOAL = next(g.usd for g in GOALS if g.channel == "sse" and g.scenario == "idle_plugin_hour")


def sse_idle_poll_for(goal_usd: float, idle: dict[str, Any], dep: Deployment, prices: Prices) -> float | None:
    """The idle poll interval at which an idle SSE plugin-hour costs ``goal_usd``: what is left of it once the
    held function, the reconnects and the presence writes are paid buys the polls' reads."""
    hour = sse_idle_hour(idle, dep, prices)
    fixed = dollars(replace(hour, read_units=0.0), prices, dep.architecture)["total_usd"]
    left = goal_usd - fixed
    if left <= 0:
        return None
    polls = left / (units_per_poll(idle) * prices.dynamodb_read_per_million / 1e6)
    return 3600 / polls


SCENARIO_CALL_KIND = "http_wait"  # a tool call in the scenarios: one POST /request?wait (MCP costs about the same)
PING_ALTERNATIVES = (15.0, 30.0, 60.0, 90.0, 120.0, 300.0, 540.0)  # under API Gateway's 10-minute idle timeout


def scenarios(idle_hour: Usage, call: Usage, prices: Prices, architecture: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in SCENARIOS:
        usage = idle_hour.times(s.tab_hours) + call.times(s.calls)
        out[s.key] = {"label": s.label, **priced(usage, prices, architecture)}
    return out


LEG_NAMES = {
    "dynamodb_usd": "DynamoDB",
    "lambda_usd": "Lambda",
    "api_gateway_usd": "API Gateway REST",
    "websocket_usd": "WebSocket messages and minutes",
}


def check_goals(channels: dict[str, Any], why: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for g in GOALS:
        figures = channels.get(g.channel, {}).get("scenarios", {}).get(g.scenario)
        if figures is None:
            continue
        total = figures["total_usd"]
        legs = sorted(((figures[k], name) for k, name in LEG_NAMES.items()), reverse=True)
        shares = ", ".join(f"{name} ${v:.4g} ({v / total:.0%})" for v, name in legs if total and v / total >= 0.05)
        reason = f"largest legs: {shares}" + (f"; {why[g.channel]}" if g.channel in why else "")
        out.append({"goal": g.label, "usd": total, "limit": g.usd, "met": total <= g.usd, "why": reason})
    return out


def model(deployed: dict[str, Any], dep: Deployment, prices: Prices) -> dict[str, Any]:
    """Price the deployed stack's measured figures (bench.deployed) for both channels."""
    out: dict[str, Any] = {
        "prices": asdict(prices),
        "price_sources": PRICE_SOURCES,
        "prices_checked": PRICES_CHECKED,
        "deployment": asdict(dep),
    }
    arch = dep.architecture
    idle = deployed.get("idle")
    if idle is not None:  # the SSE figures as before (the table printed under the deployed shape)
        out["idle_plugin_hour"] = priced(sse_idle_hour(idle, dep, prices), prices, arch)
    for kind, call in deployed["kinds"].items():
        out[f"per_1000_{kind}"] = priced(sse_call(call, idle, dep).times(1000), prices, arch)
    call = deployed["kinds"].get(SCENARIO_CALL_KIND) or next(iter(deployed["kinds"].values()), None)
    if idle is None or call is None:
        return out
    measured = push_measured(deployed)
    sse_hour = sse_idle_hour(idle, dep, prices)

    def push_hour_at(ping: float | None = None) -> Usage:
        if measured:
            return measured_push_idle_hour(deployed["push"], dep, ping)
        return push_idle_hour(idle, dep, prices, ping)

    push_call_usage = (
        measured_push_call(deployed["push"]["kinds"][SCENARIO_CALL_KIND], dep, prices)
        if measured
        else push_call(call, idle, dep, prices)
    )
    push_hour = push_hour_at()
    out["push_source"] = "measured" if measured else "derived"
    if measured:
        out["per_1000_push"] = {
            kind: priced(measured_push_call(c, dep, prices).times(1000), prices, arch)
            for kind, c in deployed["push"]["kinds"].items()
        }
    channels = {
        "sse": {
            "label": f"SSE on Lambda streaming ({arch}, stream function {dep.memory_for(STREAM_FUNCTION)} MB)",
            "scenarios": scenarios(sse_hour, sse_call(call, idle, dep), prices, arch),
        },
        "websocket": {
            "label": f"WebSocket push (API Gateway WebSocket API, ping every {dep.push_ping_seconds:g} s)",
            "scenarios": scenarios(push_hour, push_call_usage, prices, arch),
        },
    }
    out["channels"] = channels
    out["scenario_call_kind"] = SCENARIO_CALL_KIND
    gb_hour = dep.memory_for(STREAM_FUNCTION) / 1024 * 3600 * prices.lambda_gb_second(arch)
    why = {
        "sse": f"the stream function is held the whole hour: {dep.memory_for(STREAM_FUNCTION)} MB x 3,600 s = "
        f"${gb_hour:.4f}, plus its polls' reads",
        "websocket": f"each ping is 2 messages (ping in, heartbeat out): {2 * 3600 / dep.push_ping_seconds:g} an "
        f"hour per tab at {dep.push_ping_seconds:g} s, plus a Lambda invocation, a session read and a presence "
        "write each",
    }
    if measured:
        ping = deployed["push"]["ping"]
        why["websocket"] = (
            f"each ping is {ping['websocket_messages']:g} messages, {ping['push_invocations']:g} push-function "
            f"invocation(s) of {ping['push_billed_ms']:g} billed ms, {ping['read_units']:g} read and "
            f"{ping['write_units']:g} write units (measured); {3600 / dep.push_ping_seconds:g} pings an hour per tab "
            f"at {dep.push_ping_seconds:g} s"
        )
    interval = sse_idle_poll_for(SSE_HOUR_GOAL, idle, dep, prices)
    if interval is not None:
        out["sse_idle_poll_for_goal"] = round(interval, 2)
        why["sse"] += f"; its reads fit the goal with IdlePollIntervalSeconds ≥ {interval:.2f} s"
    else:
        why["sse"] += "; no poll interval fits the goal: the function's hour alone is over it"
    out["goals"] = check_goals(channels, why)
    out["push_ping_sensitivity"] = [
        {
            "ping_seconds": p,
            **{
                k: v["total_usd"]
                for k, v in scenarios(push_hour_at(p), push_call_usage, prices, arch).items()
                if k != "thousand_calls"
            },
        }
        for p in PING_ALTERNATIVES
    ]
    return out
