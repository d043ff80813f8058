"""Pure ASGI middleware (streaming-safe): correlation ids and one JSON access-log line per request."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..codes import CODE_RE, redact_code

CORRELATION_RE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
access_log = logging.getLogger("codap_relay.access")


def _incoming_correlation_id(scope: Scope) -> str | None:
    event = scope.get("aws.event")
    if isinstance(event, dict):
        rid = (event.get("requestContext") or {}).get("requestId")
        if isinstance(rid, str) and CORRELATION_RE.match(rid):
            return str(rid)
    for name, value in scope.get("headers", []):
        if name == b"x-correlation-id":
            text: str = value.decode("latin-1")
            if CORRELATION_RE.match(text):
                return text
    return None


def _route_of(scope: Scope) -> str:
    """The matched route template, so logs never carry codes or tokens from the path or query."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "(unmatched)"


def _code_hint(scope: Scope) -> str | None:
    code = (scope.get("path_params") or {}).get("code")
    if isinstance(code, str) and CODE_RE.match(code.strip().upper()):
        return redact_code(code.strip().upper())
    return None


class CorrelationAndAccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cid = _incoming_correlation_id(scope) or uuid.uuid4().hex
        scope.setdefault("state", {})["correlation_id"] = cid
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-correlation-id", cid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            record: dict[str, Any] = {
                "correlationId": cid,
                "method": scope.get("method"),
                "route": _route_of(scope),
                "status": status,
                "latencyMs": round((time.perf_counter() - started) * 1000, 2),
            }
            hint = _code_hint(scope)
            if hint:
                record["code"] = hint
            error = scope.get("state", {}).get("error_code")
            if error:
                record["error"] = error
            access_log.info(json.dumps(record))
