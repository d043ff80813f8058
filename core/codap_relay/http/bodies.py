"""Reading request bodies at the edge: size limit before parsing, JSON only (finite numbers), UTF-8 only."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadInput, PayloadTooLarge
from ..jsonvalues import loads
from .errors import error_response

M = TypeVar("M", bound=BaseModel)


async def read_limited(request: Request, limit: int) -> bytes:
    too_large = PayloadTooLarge(
        f"The body is larger than this endpoint's limit of {limit} bytes; nothing was stored. "
        "Send less data per call (e.g. split cases over several requests).",
        limit=limit,
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int) -> Any:
    ctype = request.headers.get("content-type", "")
    raw = await read_limited(request, limit)
    if ctype.split(";")[0].strip().lower() not in ("application/json", "") and not ctype.endswith("+json"):
        raise BadInput(f"Send the body as JSON with Content-Type: application/json (got {ctype!r}).")
    if not raw.strip():
        return {}
    return loads(raw)


def parse(model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "body"
        raise BadInput(f"Invalid field `{loc}`: {err['msg']}.", path=loc) from exc


class BodyLimit:
    """ASGI wrapper: a body over ``limit`` bytes is answered 413 before the app parses any of it (a declared length
    at once, a streamed body as soon as it passes the limit, the rest never read); a body within it is handed on
    whole. For the routes whose parsers read everything first (a form, the MCP SDK's handlers)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        body = bytearray()
        tail: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                tail.append(message)
                break
            body.extend(message.get("body", b""))
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        queued: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}, *tail]

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        too_large = PayloadTooLarge(
            f"The body is larger than this endpoint's limit of {self.limit} bytes; nothing was read of it.",
            limit=self.limit,
        )
        request = Request(scope, receive)
        response = error_response(request, 413, too_large.error, too_large.message, limit=self.limit)
        await response(scope, receive, send)
