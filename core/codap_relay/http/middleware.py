"""Pure ASGI middleware (streaming-safe): correlation ids and one JSON access-log line per request."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..codes import CODE_RE, redact_code
from ..jsonvalues import dumps

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


def _code_hint(scope: Scope, key: bytes) -> str | None:
    code = (scope.get("path_params") or {}).get("code")
    if isinstance(code, str) and CODE_RE.match(code.strip().upper()):
        return redact_code(code.strip().upper(), key)
    return None


# Files that may be cached (the plugin's page and scripts, a served CODAP build); every other answer is per session
# and may carry a browser token or a tool's result, so no cache keeps it.
CACHEABLE_PREFIXES = ("/plugin", "/codap")


def _is_static(scope: Scope) -> bool:
    """Whether the request is for a static file; read before routing (a Mount changes root_path in the scope)."""
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and path.startswith(root):  # ASGI paths include the public prefix (a stage, a custom domain's path)
        path = path[len(root) :]
    return any(path == p or path.startswith(p + "/") for p in CACHEABLE_PREFIXES)


def _security_headers(static: bool, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Headers every answer gets: no MIME sniffing, no referrer sent on (a page's URL may hold a pairing code),
    and ``no-store`` on answers that are not static files, unless the route chose its own caching."""
    extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
    if not static and not any(name.lower() == b"cache-control" for name, _ in headers):
        extra.append((b"cache-control", b"no-store"))
    return extra


class CorrelationAndAccessLog:
    def __init__(self, app: ASGIApp, hint_key: bytes) -> None:
        self.app = app
        self.hint_key = hint_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cid = _incoming_correlation_id(scope) or uuid.uuid4().hex
        scope.setdefault("state", {})["correlation_id"] = cid
        started = time.perf_counter()
        status = 0
        static = _is_static(scope)

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-correlation-id", cid.encode()))
                headers.extend(_security_headers(static, headers))
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
            hint = _code_hint(scope, self.hint_key)
            if hint:
                record["code"] = hint
            error = scope.get("state", {}).get("error_code")
            if error:
                record["error"] = error
            access_log.info(dumps(record))
