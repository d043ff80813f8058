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
from codap_relay.relay.publisher import ApiGatewayPublisher
from codap_relay.settings import Settings
from codap_relay.store import open_store

logger = Logger()  # service name and level from POWERTOOLS_SERVICE_NAME / POWERTOOLS_LOG_LEVEL
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE


def _tracing_enabled() -> bool:
    return os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").lower() not in ("1", "true")


def trace_handler(fn: Handler) -> Handler:
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

    def response_completed(self, status: str, latency_ms: float | None) -> None:
        metrics.add_metric(name="ResponsesCompleted", unit=MetricUnit.Count, value=1)
        if latency_ms is not None:
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


def request_context_of(scope: Scope) -> dict[str, Any]:
    """API Gateway's request context: from the Lambda event (Mangum), or from the header the Lambda Web Adapter
    forwards it in (the stream under uvicorn). The adapter sets that header itself, replacing any the client sent."""
    event = scope.get("aws.event")
    if isinstance(event, dict):
        context = event.get("requestContext")
        return context if isinstance(context, dict) else {}
    for name, value in scope.get("headers", []):
        if name == b"x-amzn-request-context":
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                return {}
            return parsed if isinstance(parsed, dict) else {}
    return {}


def public_prefix(context: dict[str, Any], path: str, base_path: str) -> tuple[str, bool]:
    """What stands in front of the app's own paths in the public URL, and whether ``path`` lacks it.

    On the execute-api host the stage is the first segment of the URL (``requestContext.path`` is /v1/plugin/)
    but not of the path API Gateway passes on (/plugin/). On a custom domain with a base path mapping, the base
    path is in both (/codap/plugin/): PUBLIC_BASE_PATH names it. Anywhere else there is no prefix."""
    stage, public = context.get("stage"), context.get("path")
    if isinstance(stage, str) and isinstance(public, str) and public == f"/{stage}{path}":
        return f"/{stage}", True
    if base_path and (path == base_path or path.startswith(base_path + "/")):
        return base_path, False
    return "", False


class PublicPath:
    """Mount the app where its users see it: ``root_path`` is the public prefix and ``path`` includes it, as ASGI
    requires (Starlette routes on the path after root_path), so routes, static files and redirects work under
    /<stage>/ and /<base path>/, and every URL the relay writes (llms.txt, the index, MCP hints, the OpenAPI
    servers) carries the prefix."""

    def __init__(self, app: ASGIApp, base_path: str) -> None:
        self.app = app
        self.base_path = base_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            prefix, add = public_prefix(request_context_of(scope), scope["path"], self.base_path)
            if prefix:
                scope = {**scope, "root_path": prefix}
                if add:
                    raw = scope.get("raw_path")
                    scope["path"] = prefix + scope["path"]
                    scope["raw_path"] = prefix.encode() + raw if isinstance(raw, bytes) else raw
        await self.app(scope, receive, send)


class WebAdapterContext:
    """Under the Lambda Web Adapter there is no Lambda event in the ASGI scope; the adapter forwards the
    API Gateway request context as a header. Use its requestId as the correlation id, and flush metrics after
    each request (there is no handler to decorate). The client's address needs nothing here: uvicorn trusts the
    adapter on 127.0.0.1 and takes it from the X-Forwarded-For header API Gateway adds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = request_context_of(scope)
        headers = list(scope.get("headers", []))
        rid = context.get("requestId")
        if isinstance(rid, str) and CORRELATION_RE.match(rid) and not any(n == b"x-correlation-id" for n, _ in headers):
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


def build_relay(settings: Settings) -> Relay:
    """The container's relay: its store, its metrics and, where the stack offers the push channel (PUSH_ENDPOINT,
    for every function: each one may publish), the management API's publisher, whose client is made on first use."""
    publisher = None
    if settings.push_endpoint:
        publisher = ApiGatewayPublisher(settings.push_endpoint, timeout=settings.push_publish_seconds)
    return Relay(settings, open_store(settings.relay_store), observer=MetricsObserver(), publisher=publisher)


def build(groups: Sequence[str], *, settings: Settings | None = None) -> LambdaRuntime:
    settings = settings or Settings.from_env()
    relay = build_relay(settings)
    app = CountServerErrors(PublicPath(build_app(relay, groups=groups), settings.public_base_path))
    adapter = Mangum(app, lifespan="off")  # lifespan would run on every invocation otherwise

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
    @trace_handler
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        result: dict[str, Any] = adapter(event, context)
        return result

    return LambdaRuntime(relay=relay, app=WebAdapterContext(app), handler=handler)
