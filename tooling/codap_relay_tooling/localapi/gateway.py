"""The front of local-api: an ASGI app that does what API Gateway's REST API stage does for the relay.

Every request is checked and routed as the deployed stage would check and route it, turned into the proxy
event, handed to an instance of its function (``instances``), and the answer mapped back. The stream route is
proxied to the stream function's own web server the way the Lambda Web Adapter forwards it, event by event.
Where API Gateway or Lambda refuse something, the answer is theirs, status and body, as recorded here:

- unknown resource or method: 403 ``{"message":"Missing Authentication Token"}`` (AWS knowledge center,
  "api-gateway-authentication-token-errors": a request to a method or resource that does not exist); a path
  outside the stage: 403 ``{"message":"Forbidden"}`` (github.com/OWASP/Serverless-Goat/issues/14);
- body over 10 MB: 413, text ``HTTP content length exceeded 10485760 bytes.``; an event over Lambda's
  6,291,456-byte request limit: 413 ``{"message": "Request Too Long"}`` (both answers as recorded from a REST API
  in github.com/koki-develop/lgtm-generator/issues/10; the Lambda limit as Lambda words it, "Request must be
  smaller than 6291456 bytes", zaccharles.medium.com "Deep Dive: Lambda's Request Payload Size Limit");
- a function error, a crash, a malformed answer, or an answer over 6,291,556 bytes ("Response payload size
  exceeded maximum allowed payload size (6291556 bytes)"): 502 ``{"message": "Internal server error"}``
  (INTEGRATION_FAILURE, github.com/DataBiosphere/azul/issues/8192);
- no answer within the integration timeout (29 s unless the route sets TimeoutInMillis): 504
  ``{"message": "Endpoint request timed out"}`` (github.com/aws/context-ontology-accelerator/issues/143);
- over the stage's throttle or a route's own (MethodSettings): 429 ``{"message":"Too Many Requests"}``.

The template's ``GatewayResponses`` (headers, status) apply to these answers, as on AWS.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .bodies import read_body
from .events import (
    HOP_BY_HOP,
    GatewayAnswer,
    IncomingRequest,
    MalformedResponse,
    build_event,
    compressed,
    encode_payload,
    read_answer,
    trace_id,
)
from .forkserver import Forkserver
from .instances import AdapterInstance, Instance, Pool
from .invocations import MAX_RESPONSE_PAYLOAD_BYTES, Invoker, Refused
from .routing import Match, Router
from .template import Stack
from .throttle import TokenBucket

MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024
MAX_EVENT_BYTES = 6_291_456


@dataclass(frozen=True)
class Refusal:
    """An answer API Gateway makes itself. ``kind`` is its gateway response type (None: not customisable)."""

    kind: str | None
    status: int
    message: str
    body: bytes
    content_type: str = "application/json"


MISSING_TOKEN = Refusal(
    "MISSING_AUTHENTICATION_TOKEN", 403, "Missing Authentication Token", b'{"message":"Missing Authentication Token"}'
)
NO_STAGE = Refusal(None, 403, "Forbidden", b'{"message":"Forbidden"}')
BODY_TOO_LARGE = Refusal(
    "REQUEST_TOO_LARGE",
    413,
    "HTTP content length exceeded 10485760 bytes.",
    b"HTTP content length exceeded 10485760 bytes.",
    "text; charset=utf-8",
)
EVENT_TOO_LARGE = Refusal("DEFAULT_4XX", 413, "Request Too Long", b'{"message": "Request Too Long"}')
THROTTLED = Refusal("THROTTLED", 429, "Too Many Requests", b'{"message":"Too Many Requests"}')
INTEGRATION_FAILURE = Refusal(
    "INTEGRATION_FAILURE", 502, "Internal server error", b'{"message": "Internal server error"}'
)
# Lambda refuses an invocation over the function's reserved concurrency (TooManyRequestsException); API Gateway
# answers that as an integration failure, 500 unless a gateway response says otherwise (repost.aws,
# "API Gateway proxy integration does not forward Lambda throttling (HTTP 429) to client").
LAMBDA_THROTTLED = Refusal("INTEGRATION_FAILURE", 500, "Internal server error", b'{"message": "Internal server error"}')
INTEGRATION_TIMEOUT = Refusal(
    "INTEGRATION_TIMEOUT", 504, "Endpoint request timed out", b'{"message": "Endpoint request timed out"}'
)
#: What the REST API answers for an invocation that gave no payload.
REFUSALS: dict[Refused, Refusal] = {
    "throttled": LAMBDA_THROTTLED,
    "timed out": INTEGRATION_TIMEOUT,
    "failed": INTEGRATION_FAILURE,
}
STARTING = Refusal(None, 503, "local-api is starting", b'{"message": "local-api is still starting its functions"}')


@dataclass
class Gateway:
    """``stage``: the URL prefix is /<stage> (the execute-api host); with ``base_path`` the prefix is /<base path>
    instead, as on a custom domain whose base path mapping points at the stage (the event's path keeps it)."""

    stack: Stack
    pools: dict[str, Pool]
    output: TextIO
    base_path: str | None = None
    ready: bool = False
    on_ready: Callable[[], None] | None = None
    #: The template's WebSocket API, served on its own port (``socket_port``): requests to that port go to it.
    socket: ASGIApp | None = None
    socket_port: int | None = None
    #: Where buffered functions' processes are forked from (``--forkserver``), stopped after them.
    forkserver: Forkserver | None = None

    def __post_init__(self) -> None:
        self.invoker = Invoker(self.output)
        self.router = Router(self.stack.routes)
        self.prefix = f"/{(self.base_path or self.stack.stage).strip('/')}"
        throttle = self.stack.throttle
        self.bucket = TokenBucket(throttle.rate_per_second, throttle.burst) if throttle else None
        self.route_buckets = {
            key: TokenBucket(t.rate_per_second, t.burst) for key, t in self.stack.route_throttles.items()
        }

    def bucket_for(self, method: str, match: Match | None) -> TokenBucket | None:
        """The throttle a request meets: its method's own MethodSettings entry, else its resource's ``*`` entry,
        else the stage's (API Gateway applies the most specific setting, not several)."""
        if match is not None:
            path = match.route.path
            for key in ((path, method.upper()), (path, "*")):
                if key in self.route_buckets:
                    return self.route_buckets[key]
        return self.bucket

    # --- ASGI ---------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif self.socket is not None and (scope.get("server") or ("", None))[1] == self.socket_port:
            await self.socket(scope, receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":  # a REST API does not upgrade: refused as a missing resource
            await receive()
            await send({"type": "websocket.close", "code": 1008})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Every function gets one warm instance before the API says it is ready (samconfig's
                # warm_containers = EAGER); a function that cannot start stops local-api with the reason.
                try:
                    await self.start()
                except Exception as exc:
                    await self.close()
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def start(self) -> None:
        instances = await asyncio.gather(*(pool.acquire(timeout=120) for pool in self.pools.values()))
        for pool, instance in zip(self.pools.values(), instances, strict=True):
            await pool.release(instance)
        self.ready = True
        if self.on_ready is not None:
            self.on_ready()

    async def close(self) -> None:
        await self.invoker.close()
        count = sum(len(pool.instances) for pool in self.pools.values())
        await asyncio.gather(*(pool.close() for pool in self.pools.values()), return_exceptions=True)
        if self.forkserver is not None:
            await self.forkserver.stop()
        self._log(f"stopped: {count} function instance(s) ended")

    # --- one request ------------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = str(uuid.uuid4())
        path: str = scope["path"]
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            await self._refuse(send, NO_STAGE, request_id)
            return
        inner = path[len(self.prefix) :] or "/"
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        if inner.rstrip("/") == "/healthz" and not self.ready:
            await self._refuse(send, STARTING, request_id)
            return
        match = self.router.match(scope["method"], inner)
        bucket = self.bucket_for(scope["method"], match)
        if bucket is not None and not bucket.take():
            await self._refuse(send, THROTTLED, request_id)
            return
        if match is None:
            await self._refuse(send, MISSING_TOKEN, request_id)
            return
        body = await read_body(receive, MAX_REQUEST_BODY_BYTES, dict(headers).get("content-length"))
        if body is None:
            await self._refuse(send, BODY_TOO_LARGE, request_id)
            return
        client = scope.get("client") or ("127.0.0.1", 0)
        server = scope.get("server") or ("127.0.0.1", 80)
        request = IncomingRequest(
            method=scope["method"],
            path=path if self.base_path else inner,
            public_path=path,
            query_string=scope.get("query_string", b""),
            headers=headers,
            body=body,
            source_ip=client[0],
            scheme=scope.get("scheme", "http"),
            port=server[1],
        )
        now = time.time()
        event = build_event(
            request,
            match,
            stage=self.stack.stage,
            binary_media_types=self.stack.binary_media_types,
            request_id=request_id,
            now=now,
        )
        payload = encode_payload(event)
        if len(payload) > MAX_EVENT_BYTES:
            await self._refuse(send, EVENT_TOO_LARGE, request_id)
            return
        function = self.stack.functions[match.route.function]
        if function.web_adapter:
            await self._forward(scope, receive, send, match, request, event, request_id)
        else:
            await self._invoke(send, match, request, payload, request_id, now)

    async def _refuse(self, send: Send, refusal: Refusal, request_id: str) -> None:
        """API Gateway's own answer, customised by the template's GatewayResponses (the type's own entry, else
        DEFAULT_4XX / DEFAULT_5XX): its headers, status and response template."""
        status, body, content_type = refusal.status, refusal.body, refusal.content_type
        custom = None
        if refusal.kind is not None:
            responses = self.stack.gateway_responses
            custom = responses.get(refusal.kind) or responses.get("DEFAULT_4XX" if status < 500 else "DEFAULT_5XX")
        headers = [("x-amzn-requestid", request_id)]
        if refusal.kind == "MISSING_AUTHENTICATION_TOKEN":
            headers.append(("x-amzn-errortype", "MissingAuthenticationTokenException"))
        if custom is not None:
            headers += [(k.lower(), v) for k, v in custom.headers.items()]
            status = custom.status or status
            if custom.templates:
                content_type = (
                    "application/json" if "application/json" in custom.templates else next(iter(custom.templates))
                )
                body = render_template(custom.templates[content_type], refusal, request_id, self.stack.stage)
        await _send(send, GatewayAnswer(status, [("content-type", content_type), *headers], body))

    async def _acquire(self, send: Send, pool: Pool, match: Match, request_id: str) -> Instance | None:
        """A warm or new instance for one invocation; None once the refusal API Gateway would give is sent."""
        found = await self.invoker.instance(pool, match.route.timeout_ms / 1000)
        if isinstance(found, str):
            await self._refuse(send, REFUSALS[found], request_id)
            return None
        return found

    # --- buffered functions (the Lambda invoke) ------------------------------------------------------------

    async def _invoke(
        self, send: Send, match: Match, request: IncomingRequest, payload: bytes, request_id: str, now: float
    ) -> None:
        pool = self.pools[match.route.function]
        invoked = await self.invoker.invoke(pool, payload, request_id, match.route.timeout_ms / 1000, now)
        if invoked.payload is None:
            await self._refuse(send, REFUSALS[invoked.refused or "failed"], request_id)
            return
        accept = dict(request.headers).get("accept")
        try:
            answer = read_answer(
                json.loads(invoked.payload), accept=accept, binary_media_types=self.stack.binary_media_types
            )
        except (MalformedResponse, ValueError, RecursionError) as exc:
            assert invoked.instance is not None
            invoked.instance.log(
                f"Execution failed due to configuration error: Malformed Lambda proxy response ({exc})"
            )
            await self._refuse(send, INTEGRATION_FAILURE, request_id)
            return
        headers = list(answer.headers)
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", "application/json"))
        headers += [("x-amzn-requestid", request_id), ("x-amzn-trace-id", trace_id(now))]
        encoding = dict(request.headers).get("accept-encoding")
        answer = compressed(GatewayAnswer(answer.status, headers, answer.body), encoding, self.stack.compress_from)
        await _send(send, answer)

    # --- functions behind the Lambda Web Adapter (the stream) ----------------------------------------------

    async def _forward(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        match: Match,
        request: IncomingRequest,
        event: dict[str, Any],
        request_id: str,
    ) -> None:
        """Forward as the adapter does: the event's path (no stage), its headers plus ``x-amzn-request-context``
        and ``x-amzn-lambda-context``; the answer streams back chunk by chunk. When the client goes away the
        function is not told: as on AWS, where a streamed response is not interrupted when the client's connection
        breaks, it runs on (its output read and dropped, its instance busy) until it ends itself or times out."""
        function = self.stack.functions[match.route.function]
        pool = self.pools[function.logical_id]
        instance = await self._acquire(send, pool, match, request_id)
        if instance is None:
            return
        assert isinstance(instance, AdapterInstance) and instance.client is not None
        invocation = instance.begin(request_id)
        deadline = min(match.route.timeout_ms / 1000, function.timeout_s)
        lambda_context = {
            "request_id": request_id,
            "deadline": int((time.time() + function.timeout_s) * 1000),
            "invoked_function_arn": f"arn:aws:lambda:{instance.environment.get('AWS_REGION', 'us-east-1')}:"
            f"123456789012:function:{function.logical_id}",
            "xray_trace_id": None,
            "client_context": None,
            "identity": None,
            "env_config": {
                "function_name": function.logical_id,
                "memory": function.memory_mb,
                "version": "$LATEST",
                "log_stream": "local-api",
                "log_group": f"/aws/lambda/{function.logical_id}",
            },
        }
        multi: dict[str, list[str]] = event["multiValueHeaders"] or {}
        headers = [(name, value) for name, values in multi.items() for value in values if name != "content-length"]
        headers += [
            ("x-amzn-request-context", json.dumps(event["requestContext"], separators=(",", ":"))),
            ("x-amzn-lambda-context", json.dumps(lambda_context, separators=(",", ":"))),
        ]
        status = ""
        timed_out = False
        try:
            async with asyncio.timeout(deadline):
                status = await self._stream_through(
                    instance.client, send, receive, request, event["path"], headers, request_id, match.route.streaming
                )
        except TimeoutError:
            timed_out = True
        except httpx.TransportError as exc:
            instance.log(f"the adapter could not reach the app: {exc}")
            status = "error"
        instance.end(invocation, status="timeout" if timed_out else status)
        if timed_out:
            instance.log(f"Task timed out after {deadline:.2f} seconds")
            await pool.discard(instance)
        elif instance.alive:
            await pool.release(instance)
        else:
            await pool.discard(instance)

    async def _stream_through(
        self,
        client: httpx.AsyncClient,
        send: Send,
        receive: Receive,
        request: IncomingRequest,
        path: str,
        headers: list[tuple[str, str]],
        request_id: str,
        streaming: bool,
    ) -> str:
        upstream_request = client.build_request(
            request.method,
            path,
            params=request.query_string.decode("latin-1"),
            headers=headers,
            content=request.body,
        )
        try:
            response = await client.send(upstream_request, stream=True)
        except httpx.TransportError:
            await self._refuse(send, INTEGRATION_FAILURE, request_id)
            raise
        try:
            out_headers = [
                (k, v) for k, v in response.headers.multi_items() if k.lower() not in (*HOP_BY_HOP, "content-length")
            ]
            out_headers.append(("x-amzn-requestid", request_id))
            if not streaming:
                body = b""
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > MAX_RESPONSE_PAYLOAD_BYTES:
                        await self._refuse(send, INTEGRATION_FAILURE, request_id)
                        return "error"
                await _send(send, GatewayAnswer(response.status_code, out_headers, body))
                return ""
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers]
            start: Message = {"type": "http.response.start", "status": response.status_code, "headers": raw}
            gone = await _pump(response, start, send, receive, lambda: self._log(f"{request_id}: {RUNS_ON}"))
            if not gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return "client gone" if gone else ""
        finally:
            await response.aclose()

    def _log(self, text: str) -> None:
        self.invoker.log(text)


def render_template(template: str, refusal: Refusal, request_id: str, stage: str) -> bytes:
    """The $context variables a gateway response template can use (the ones the relay's template does)."""
    values = {
        "$context.error.messageString": json.dumps(refusal.message),
        "$context.error.message": refusal.message,
        "$context.error.responseType": refusal.kind or "",
        "$context.requestId": request_id,
        "$context.stage": stage,
    }
    for name, value in values.items():
        template = template.replace(name, value)
    return template.encode()


RUNS_ON = "the client went away; the function runs on, as on AWS"


async def _pump(
    response: httpx.Response, start: Message, send: Send, receive: Receive, on_gone: Callable[[], None]
) -> bool:
    """Send ``start``, then copy the body chunk by chunk until it ends; returns whether the client went away
    meanwhile. From then on the rest is read and dropped: the function sees no disconnect (AWS does not interrupt
    a response stream whose client left) and ends only by itself or at its timeout, its instance busy until then."""
    gone = asyncio.Event()

    def leave() -> None:
        if not gone.is_set():
            gone.set()
            on_gone()

    async def watch() -> None:
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                leave()
                return

    watcher = asyncio.create_task(watch())
    try:
        try:
            await send(start)
        except OSError:
            leave()
        async for chunk in response.aiter_raw():
            if gone.is_set():
                continue
            try:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError:
                leave()
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    return gone.is_set()


async def _send(send: Send, answer: GatewayAnswer) -> None:
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})
