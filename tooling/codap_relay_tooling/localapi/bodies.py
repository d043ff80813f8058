"""Reading a request's body off ASGI with API Gateway's size limits, for the REST stage and the WebSocket
management API alike."""

from __future__ import annotations

from starlette.types import Receive


async def read_body(receive: Receive, limit: int, content_length: str | None = None) -> bytes | None:
    """The whole request body, or None past ``limit`` bytes (API Gateway's 10 MB for the REST API, 128 KB for a
    WebSocket management call): read no further than needed to know."""
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
