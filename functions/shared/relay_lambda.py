"""Lambda glue shared by every function: one Relay per container, Mangum, and Powertools.

Each ``functions/<name>/app.py`` calls ``build([...route groups])`` at import time, so the store (and its boto3
client) is created once per container and reused by every warm invocation. The core never imports Powertools;
it reports through the ``observe.Observer`` hook, which this module turns into EMF metrics.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit
from mangum import Mangum
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codap_relay.http.app import build_app
from codap_relay.http.middleware import CORRELATION_RE
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store import open_store

logger = Logger()  # service name and level from POWERTOOLS_SERVICE_NAME / POWERTOOLS_LOG_LEVEL
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE


def _tracing_enabled() -> bool:
    return os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").lower() not in ("1", "true")


def _trace_handler(fn: Handler) -> Handler:
    """X-Ray subsegments through Powertools' Tracer, only when tracing is on: importing the X-Ray SDK costs
    ~120 ms of every cold start (see docs/performance.md), so a stack deployed without tracing never pays it."""
    if not _tracing_enabled():
        return fn
    from aws_lambda_powertools import Tracer

    traced: Handler = Tracer().capture_lambda_handler(fn, capture_response=False)  # responses may carry user data
    return traced


# The core's access log and warnings go out in the same JSON shape, with the correlation id.
copy_config_to_registered_loggers(source_logger=logger, include={"codap_relay", "codap_relay.access"})

# Most calls (reads, the stream) add no metric; Powertools would warn about that on every one of them.
warnings.filterwarnings("ignore", message="No application metrics to publish")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class MetricsObserver:
    """The core's observer hook as CloudWatch EMF metrics (no dimensions beyond the service: each costs)."""

    def session_created(self) -> None:
        metrics.add_metric(name="SessionsCreated", unit=MetricUnit.Count, value=1)

    def request_queued(self, tool: str) -> None:
        metrics.add_metric(name="RequestsQueued", unit=MetricUnit.Count, value=1)

    def response_completed(self, status: str, latency_ms: float) -> None:
        metrics.add_metric(name="ResponsesCompleted", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="RelayLatency", unit=MetricUnit.Milliseconds, value=latency_ms)

    def rate_limited(self, scope: str) -> None:
        metrics.add_metric(name="RateLimited", unit=MetricUnit.Count, value=1)


class CountServerErrors:
    """Adds one ``Errors`` metric per 5xx answer (client mistakes are the caller's, not an alarm)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 500:
                metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)
            await send(message)

        await self.app(scope, receive, watch)


class StageBasePath:
    """On the default execute-api host the stage is the first path segment (``/v1/...``) but API Gateway
    hands Lambda the path without it. Set it as the ASGI root_path so URLs the relay writes for its users
    (llms.txt, MCP hints, the index) carry the stage. Custom domains map stages themselves: left alone."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = (scope.get("aws.event") or {}).get("requestContext") or {}
        stage, domain = context.get("stage"), context.get("domainName") or ""
        if scope["type"] == "http" and isinstance(stage, str) and domain.endswith(".amazonaws.com"):
            scope = {**scope, "root_path": f"/{stage}"}
        await self.app(scope, receive, send)


class WebAdapterContext:
    """Under the Lambda Web Adapter there is no Lambda event in the ASGI scope; the adapter forwards the
    API Gateway request context as a header. Use its requestId as the correlation id, and flush metrics
    after each request (there is no handler to decorate)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers", []))
        raw = dict(headers).get(b"x-amzn-request-context")
        if raw is not None and not any(name == b"x-correlation-id" for name, _ in headers):
            try:
                rid = json.loads(raw).get("requestId")
            except (ValueError, AttributeError):
                rid = None
            if isinstance(rid, str) and CORRELATION_RE.match(rid):
                headers.append((b"x-correlation-id", rid.encode()))
                scope = {**scope, "headers": headers}
                logger.set_correlation_id(rid)
        try:
            await self.app(scope, receive, send)
        finally:
            if metrics.metric_set:
                metrics.flush_metrics()


@dataclass
class LambdaRuntime:
    """What one function keeps between warm invocations."""

    relay: Relay
    app: ASGIApp  # for uvicorn (the stream function under the Web Adapter)
    handler: Handler  # for Lambda's Python runtime (buffered responses)


def build(groups: Sequence[str], *, settings: Settings | None = None) -> LambdaRuntime:
    settings = settings or Settings.from_env()
    relay = Relay(settings, open_store(settings.relay_store), observer=MetricsObserver())
    app = CountServerErrors(StageBasePath(build_app(relay, groups=groups)))
    adapter = Mangum(app, lifespan="off")  # lifespan would run on every invocation otherwise

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
    @_trace_handler
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        result: dict[str, Any] = adapter(event, context)
        return result

    return LambdaRuntime(relay=relay, app=WebAdapterContext(app), handler=handler)
