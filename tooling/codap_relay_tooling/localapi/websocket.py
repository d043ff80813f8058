"""The template's WebSocket API (the push channel) as API Gateway runs it, on a loopback port of its own.

A WebSocket API has its own host on AWS (``wss://{api}.execute-api.{region}.amazonaws.com/{stage}``); here it is
``ws://HOST:PORT/{stage}``, and its ``@connections`` management API is ``http://HOST:PORT/{stage}/@connections/{id}``
on the same port, as on AWS. What it does, from API Gateway's documentation (WebSocket API quotas, "$connect and
$disconnect routes", "Use @connections commands in your backend service", the Lambda proxy event) where it speaks,
and from recorded behaviour where it does not (each point says which):

- a client's upgrade invokes ``$connect`` with the proxy event (requestContext: routeKey, eventType CONNECT,
  connectionId, connectedAt, ...; headers, multiValueHeaders, query parameters); an answer with a non-2xx
  statusCode refuses the handshake with that status (recorded: wscat's "Unexpected server response: 401"), a
  function error with 500; only then is the connection open: a post before that is 410 (AWS knowledge center,
  "410-gone-api-gateway");
- each message invokes the route ``RouteSelectionExpression`` picks (``$request.body.action`` of a JSON body, else
  ``$default``), each invocation on its own as messages come (API Gateway does not wait for one to end before
  starting the next, so their order is not kept); the answer's body goes back to the client only on a route with a
  RouteResponseSelectionExpression (two-way); a failed invocation sends the client API Gateway's error message;
- a message over 128 KB (frames of any size are joined up to it; AWS splits frames at 32 KB) closes the connection
  with 1009; an idle connection closes after 10 minutes, any after 2 hours (1001; both configurable for tests);
- a close by either side invokes ``$disconnect`` (eventType DISCONNECT, disconnectStatusCode), best effort, after
  the connection is gone;
- ``@connections/{id}``: POST sends the body as one message (413 over 128 KB), GET describes the connection,
  DELETE closes it (204); an unknown or closed connection is 410 GoneException. A request without a SigV4
  ``Authorization`` header is 403 as an unsigned request to an IAM-authorised API is; the signature is not checked.

With ``faults`` (``local-api --push-faults SEED``, for chaos tests) the management API misbehaves as a loaded or
failing one might, drawn from a seeded generator: a 500 before or after the frame went out, an answer that comes
too late for the publisher's timeout, a 410 that closes the connection, a slow post (``PostFaults``).

Every invocation runs in an instance (process) of the route's function from local-api's pools, with Lambda's
START / END / REPORT lines, as the REST side's.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.types import Receive, Scope, Send

from .bodies import read_body
from .events import API_ID, IncomingRequest, caller_identity, encode_payload, gateway_headers
from .instances import Pool
from .invocations import Invoker, Refused
from .template import SocketApi, SocketRoute
from .throttle import TokenBucket

MAX_MESSAGE_BYTES = 128 * 1024  # "Message payload size: 128 KB", for messages in and posts out
IDLE_TIMEOUT_SECONDS = 600.0  # "Idle Connection Timeout: 10 minutes"
MAX_CONNECTION_SECONDS = 7200.0  # "Connection duration for WebSocket API: 2 hours"
CLOSE_TOO_BIG = 1009
CLOSE_GOING_AWAY = 1001
CLOSE_NORMAL = 1000
SIGV4 = "AWS4-HMAC-SHA256"


def quiet_refusals() -> None:
    """uvicorn's sans-I/O WebSocket protocol logs "ASGI callable returned without completing handshake." as an
    error after a handshake answered with an HTTP status (a refused $connect), which is no error here."""
    logging.getLogger("uvicorn.error").addFilter(
        lambda record: "without completing handshake" not in record.getMessage()
    )


def connection_id() -> str:
    """API Gateway's shape: 16 characters of base64 ending in ``=`` (11 random bytes), e.g. ``L0SM9cOFvHcCIhw=``."""
    return base64.b64encode(secrets.token_bytes(11)).decode("ascii")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(epoch * 1000) % 1000:03d}Z"


def _request_time(epoch: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(epoch))


@dataclass
class Connection:
    id: str
    send: Send
    connected_at: float
    source_ip: str
    user_agent: str | None
    domain: str
    headers: list[tuple[str, str]]
    last_active: float = 0.0
    open: bool = False  # $connect accepted it and it has not closed: posts reach it
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def deliver(self, message: dict[str, Any]) -> bool:
        """One frame (or the close) to the client, never two at once; False if the socket is already gone."""
        async with self.lock:
            if not self.open:
                return False
            if message["type"] == "websocket.close":
                self.open = False
            try:
                await self.send(message)
            except (OSError, RuntimeError):
                self.open = False
                return False
            return True


@dataclass(frozen=True)
class Outcome:
    """How one invocation ended: ``ok`` with the function's result, or the error API Gateway reports for it."""

    ok: bool
    result: Any = None
    error: str = ""  # "Internal server error" / "Endpoint request timed out" / "Too Many Requests"


#: What the WebSocket API tells the client for an invocation that gave no payload (a throttled function too is an
#: internal error to it).
SOCKET_ERRORS: dict[Refused, str] = {
    "throttled": "Internal server error",
    "timed out": "Endpoint request timed out",
    "failed": "Internal server error",
}


@dataclass
class PostFaults:
    """Faults for ``POST @connections/{id}``, one draw per post from a seeded generator. Each kind leaves the relay
    one of the outcomes it must handle: unknown though delivered (``late``, ``500-after``), unknown and not
    delivered (``500``), gone (``410``, and the socket really closes), sent but slowly (``slow``)."""

    rng: random.Random
    rates: tuple[tuple[str, float], ...] = (
        ("500", 0.04),
        ("500-after", 0.03),
        ("late", 0.03),
        ("410", 0.02),
        ("slow", 0.08),
    )
    late_seconds: float = 1.5  # longer than the relay's PUSH_PUBLISH_SECONDS (1 s): it stops waiting
    drawn: dict[str, int] = field(default_factory=dict)

    def draw(self) -> str | None:
        roll = self.rng.random()
        for kind, rate in self.rates:
            if roll < rate:
                self.drawn[kind] = self.drawn.get(kind, 0) + 1
                return kind
            roll -= rate
        return None


class SocketGateway:
    """The WebSocket API's ASGI side: ``websocket`` scopes are client connections, ``http`` the management API."""

    def __init__(
        self,
        api: SocketApi,
        pools: Mapping[str, Pool],
        invoker: Invoker,
        *,
        idle_seconds: float = IDLE_TIMEOUT_SECONDS,
        max_seconds: float = MAX_CONNECTION_SECONDS,
        faults: PostFaults | None = None,
    ) -> None:
        self.api = api
        self.faults = faults
        self.pools = pools
        self.invoker = invoker
        self.idle_seconds = idle_seconds
        self.max_seconds = max_seconds
        self.prefix = f"/{api.stage}"
        self.connections: dict[str, Connection] = {}
        # The stage's DefaultRouteSettings throttle each route on its own (route-level throttling), $connect too.
        throttle = api.throttle
        self.buckets = (
            {key: TokenBucket(throttle.rate_per_second, throttle.burst) for key in (*api.routes, "$connect")}
            if throttle is not None
            else {}
        )
        expression = api.route_selection_expression
        self.selector = (
            expression.removeprefix("$request.body.").split(".") if expression.startswith("$request.body.") else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._connection(scope, receive, send)
        elif scope["type"] == "http":
            await self._manage(scope, receive, send)

    # --- a client's connection --------------------------------------------------------------------------

    async def _connection(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if scope["path"].rstrip("/") != self.prefix:
            await self._refuse(scope, send, 403, b'{"message":"Forbidden"}')
            return
        if not self._admit("$connect"):
            await self._refuse(scope, send, 429, b'{"message":"Too Many Requests"}')
            return
        now = time.time()
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        client = scope.get("client") or ("127.0.0.1", 0)
        server = scope.get("server") or ("127.0.0.1", 80)
        request = IncomingRequest(
            method="GET",
            path=scope["path"],
            public_path=scope["path"],
            query_string=scope.get("query_string", b""),
            headers=headers,
            body=b"",
            source_ip=client[0],
            scheme="https" if scope.get("scheme") == "wss" else "http",
            port=server[1],
        )
        forwarded = gateway_headers(request, now)
        conn = Connection(
            id=connection_id(),
            send=send,
            connected_at=now,
            source_ip=client[0],
            user_agent=dict(headers).get("user-agent"),
            domain=dict(headers).get("host", f"{server[0]}:{server[1]}"),
            headers=forwarded,
            last_active=now,
        )
        event = self._event(conn, "$connect", "CONNECT", now)
        multi: dict[str, list[str]] = {}
        for name, value in forwarded:
            multi.setdefault(name, []).append(value)
        event["headers"] = {name: values[-1] for name, values in multi.items()}
        event["multiValueHeaders"] = multi
        query = parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True)
        if query:
            event["queryStringParameters"] = dict(query)
            multi_query: dict[str, list[str]] = {}
            for name, value in query:
                multi_query.setdefault(name, []).append(value)
            event["multiValueQueryStringParameters"] = multi_query
        event["isBase64Encoded"] = False
        route = self.api.routes.get("$connect")
        outcome = await self._invoke(route, event) if route is not None else Outcome(True, {"statusCode": 200})
        status = _status(outcome.result) if outcome.ok else 500
        if status is None or not 200 <= status < 300:
            self._log(f"push: {conn.id} refused by $connect ({status or 'malformed answer'})")
            await self._refuse(scope, send, status if status is not None else 500, _body(outcome.result))
            return
        try:
            await send({"type": "websocket.accept"})
        except OSError:  # the client left while $connect ran: nothing was opened
            self._log(f"push: {conn.id} left before $connect answered")
            return
        conn.open = True
        conn.last_active = time.time()  # idle from here: the $connect invocation took its time before
        self.connections[conn.id] = conn
        self._log(f"push: {conn.id} connected from {conn.source_ip}")
        if route is not None and route.two_way:
            await self._answer(conn, outcome.result)
        watchdog = asyncio.create_task(self._watch(conn))
        code, reason = CLOSE_NORMAL, ""
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    code, reason = int(message.get("code", 1005)), str(message.get("reason") or "")
                    break
                text, data = message.get("text"), message.get("bytes")
                size = len(text.encode("utf-8")) if text is not None else len(data or b"")
                if size > MAX_MESSAGE_BYTES:  # uvicorn's ws_max_size closes first; this is the same rule
                    await conn.deliver({"type": "websocket.close", "code": CLOSE_TOO_BIG})
                    continue
                conn.last_active = time.time()
                self.invoker.spawn(self._message(conn, text, data))
        finally:
            watchdog.cancel()
            conn.open = False
            self.connections.pop(conn.id, None)
        self._log(f"push: {conn.id} closed ({code}{' ' + reason if reason else ''})")
        self.invoker.spawn(self._disconnected(conn, code, reason))

    async def _refuse(self, scope: Scope, send: Send, status: int, body: bytes) -> None:
        """The handshake answered with an HTTP status instead of 101 (403 where the server cannot say more)."""
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})

    def _event(self, conn: Connection, route_key: str, kind: str, now: float, **extra: Any) -> dict[str, Any]:
        request_id = base64.b64encode(secrets.token_bytes(11)).decode("ascii")
        context: dict[str, Any] = {
            "routeKey": route_key,
            "disconnectStatusCode": None,
            "messageId": None,
            "eventType": kind,
            "extendedRequestId": request_id,
            "requestTime": _request_time(now),
            "messageDirection": "IN",
            "disconnectReason": None,
            "stage": self.api.stage,
            "connectedAt": int(conn.connected_at * 1000),
            "requestTimeEpoch": int(now * 1000),
            "identity": caller_identity(conn.source_ip, conn.user_agent),
            "requestId": request_id,
            "domainName": conn.domain,
            "connectionId": conn.id,
            "apiId": API_ID,
            **extra,
        }
        return {"requestContext": context}

    def route_for(self, text: str | None) -> SocketRoute | None:
        """The route ``$request.body.<path>`` of a JSON text message names, else ``$default``."""
        if self.selector is not None and text is not None:
            try:
                value: Any = json.loads(text)
                for part in self.selector:
                    value = value.get(part) if isinstance(value, dict) else None
            except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: $default, as AWS does
                value = None
            if isinstance(value, str) and value in self.api.routes and not value.startswith("$"):
                return self.api.routes[value]
        return self.api.routes.get("$default")

    async def _message(self, conn: Connection, text: str | None, data: bytes | None) -> None:
        now = time.time()
        route = self.route_for(text)
        message_id = base64.b64encode(secrets.token_bytes(11)).decode("ascii")
        key = route.key if route is not None else "$default"
        event = self._event(conn, key, "MESSAGE", now, messageId=message_id)
        del event["requestContext"]["disconnectStatusCode"], event["requestContext"]["disconnectReason"]
        if text is not None:
            event["body"], event["isBase64Encoded"] = text, False
        else:
            event["body"], event["isBase64Encoded"] = base64.b64encode(data or b"").decode("ascii"), True
        request_id = event["requestContext"]["requestId"]
        if route is None:  # no route for it and no $default: API Gateway tells the client
            await self._tell(conn, "Forbidden", request_id)
            return
        if not self._admit(route.key):
            await self._tell(conn, "Too Many Requests", request_id)
            return
        outcome = await self._invoke(route, event)
        if not outcome.ok:
            await self._tell(conn, outcome.error, request_id)
        elif route.two_way:
            await self._answer(conn, outcome.result)

    def _admit(self, route_key: str) -> bool:
        bucket = self.buckets.get(route_key)
        return bucket is None or bucket.take()

    async def _tell(self, conn: Connection, error: str, request_id: str) -> None:
        body = {"message": error, "connectionId": conn.id, "requestId": request_id}
        await conn.deliver({"type": "websocket.send", "text": json.dumps(body)})

    async def _answer(self, conn: Connection, result: Any) -> None:
        if isinstance(result, dict) and isinstance(result.get("body"), str) and result["body"]:
            await conn.deliver({"type": "websocket.send", "text": result["body"]})

    async def _disconnected(self, conn: Connection, code: int, reason: str) -> None:
        route = self.api.routes.get("$disconnect")
        if route is None:
            return
        now = time.time()
        event = self._event(conn, "$disconnect", "DISCONNECT", now, disconnectStatusCode=code, disconnectReason=reason)
        headers = [("host", conn.domain), ("x-forwarded-for", conn.source_ip)]
        event["headers"] = dict(headers)
        event["multiValueHeaders"] = {k: [v] for k, v in headers}
        event["isBase64Encoded"] = False
        await self._invoke(route, event)

    async def _watch(self, conn: Connection) -> None:
        """Closes the connection when it has been idle (no message from the client) or open too long."""
        while conn.open:
            now = time.time()
            left = min(conn.last_active + self.idle_seconds, conn.connected_at + self.max_seconds) - now
            if left <= 0:
                idle = now - conn.last_active >= self.idle_seconds
                self._log(f"push: {conn.id} {'idle' if idle else 'open'} too long: closed (1001)")
                await conn.deliver({"type": "websocket.close", "code": CLOSE_GOING_AWAY, "reason": "Going away"})
                return
            await asyncio.sleep(left)

    # --- one invocation of the route's function ----------------------------------------------------------

    async def _invoke(self, route: SocketRoute, event: dict[str, Any]) -> Outcome:
        pool = self.pools[route.function]
        request_id = str(event["requestContext"]["requestId"])
        invoked = await self.invoker.invoke(
            pool, encode_payload(event), request_id, route.timeout_ms / 1000, time.time()
        )
        if invoked.payload is None:
            return Outcome(False, error=SOCKET_ERRORS[invoked.refused or "failed"])
        try:
            return Outcome(True, json.loads(invoked.payload))
        except (ValueError, RecursionError):
            return Outcome(False, error="Internal server error")

    # --- the @connections management API -----------------------------------------------------------------

    async def _manage(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1").split("?", 1)[0]
        head = f"{self.prefix}/@connections/"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method = scope["method"]
        if not raw_path.startswith(head) or "/" in raw_path[len(head) :] or method not in ("POST", "GET", "DELETE"):
            await _respond(send, 403, {"message": "Forbidden"}, "ForbiddenException")
            return
        if not headers.get("authorization", "").startswith(SIGV4):
            # An IAM-authorised route asked without a signature: API Gateway's answer to an unsigned request.
            unsigned = {"message": "Missing Authentication Token"}
            await _respond(send, 403, unsigned, "MissingAuthenticationTokenException")
            return
        target = unquote(raw_path[len(head) :])
        body = await read_body(receive, MAX_MESSAGE_BYTES, headers.get("content-length"))
        conn = self.connections.get(target)
        if conn is None or not conn.open:
            await _respond(send, 410, {"message": None}, "GoneException")
            return
        if method == "GET":
            info = {
                "connectedAt": _iso(conn.connected_at),
                "identity": {"sourceIp": conn.source_ip, "userAgent": conn.user_agent},
                "lastActiveAt": _iso(conn.last_active),
            }
            await _respond(send, 200, info)
        elif method == "DELETE":
            await conn.deliver({"type": "websocket.close", "code": CLOSE_NORMAL})
            self._log(f"push: {conn.id} closed by DELETE @connections")
            await _respond(send, 204, None)
        elif body is None:
            await _respond(send, 413, {"message": "Message too long"}, "PayloadTooLargeException")
        else:
            try:
                frame: dict[str, Any] = {"type": "websocket.send", "text": body.decode("utf-8")}
            except UnicodeDecodeError:
                frame = {"type": "websocket.send", "bytes": body}
            await self._post(conn, frame, send)

    async def _post(self, conn: Connection, frame: dict[str, Any], send: Send) -> None:
        fault = self.faults.draw() if self.faults is not None else None
        if fault is not None:
            self._log(f"push: post to {conn.id}: fault {fault}")
        if fault == "500":
            await _respond(send, 500, {"message": "Internal server error"}, "InternalServerErrorException")
            return
        if fault == "410":
            await conn.deliver({"type": "websocket.close", "code": CLOSE_GOING_AWAY, "reason": "Going away"})
            await _respond(send, 410, {"message": None}, "GoneException")
            return
        if fault in ("late", "slow"):
            assert self.faults is not None
            await asyncio.sleep(self.faults.late_seconds if fault == "late" else self.faults.rng.uniform(0.1, 0.6))
        if not await conn.deliver(frame):
            await _respond(send, 410, {"message": None}, "GoneException")
        elif fault == "500-after":
            await _respond(send, 500, {"message": "Internal server error"}, "InternalServerErrorException")
        else:
            await _respond(send, 200, None)

    def _log(self, text: str) -> None:
        self.invoker.log(text)


def _status(result: Any) -> int | None:
    status = result.get("statusCode") if isinstance(result, dict) else None
    return status if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599 else None


def _body(result: Any) -> bytes:
    body = result.get("body") if isinstance(result, dict) else None
    return body.encode("utf-8") if isinstance(body, str) else b""


async def _respond(send: Send, status: int, body: Any, error_type: str | None = None) -> None:
    """The management API's answers are JSON with ``x-amzn-ErrorType`` on errors, which boto3 maps to its
    exceptions (GoneException, PayloadTooLargeException, ForbiddenException)."""
    data = b"" if body is None else json.dumps(body).encode()
    headers = [(b"x-amzn-requestid", str(uuid.uuid4()).encode()), (b"content-length", str(len(data)).encode())]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    if error_type is not None:
        headers.append((b"x-amzn-errortype", error_type.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
