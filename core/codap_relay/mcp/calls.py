"""What the MCP endpoint reads of a POST before the SDK serves it: whether to answer with a stream, and a
cancellation to apply.

A stateless Streamable HTTP server answers each POST on its own. The SDK answers JSON (``json_response=True``)
or a ``text/event-stream`` (``False``, which it demands the client accept). The relay picks per POST: a
``tools/call`` that carries ``_meta.progressToken`` from a client that accepts ``text/event-stream`` gets the
stream, so ``notifications/progress`` can come before the result; everything else stays JSON, as before. Behind a
buffered gateway (API Gateway REST + Lambda, local-api) the stream reaches the client whole at the end: the same
events, progress first, then the result.

``notifications/cancelled`` arrives as a POST of its own, perhaps in another process than the call it names, so
it is applied through the relay's store (``tools.cancel_call``) before the SDK acknowledges it with 202.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.streamable_http import check_accept_headers
from mcp_types import INVALID_PARAMS
from starlette.requests import Request
from starlette.types import Message, Receive

from codap_relay.codes import normalise_code
from codap_relay.errors import BadInput, NonFiniteNumber, RelayError, client_fields
from codap_relay.jsonvalues import loads
from codap_relay.mcp.tools import cancel_call
from codap_relay.relay import Relay


async def _read_some(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The request's messages up to the end of its body, or until more than ``limit`` bytes came: (the messages
    read, the whole body or None when it was not all read)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None  # the client went away: the SDK will see it
        size += len(message.get("body", b""))
        if size > limit:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` as if nothing had been read: the messages read first, then the client's own (the rest of a
    long body, its disconnect, as the SDK watches for it)."""
    pending = list(messages)

    async def again() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return again


class Refused(Exception):
    """A POST the relay answers itself with a JSON-RPC error: a message the SDK would read otherwise than sent."""

    def __init__(self, rpc_id: Any, error: NonFiniteNumber) -> None:
        super().__init__(error.message)
        self.rpc_id = rpc_id
        self.error = error

    def body(self) -> dict[str, Any]:
        data = {"error": self.error.error, **client_fields(self.error)}
        rpc_id = self.rpc_id if isinstance(self.rpc_id, str | int) and not isinstance(self.rpc_id, bool) else None
        return {
            "jsonrpc": "2.0",
            "id": rpc_id,
            "error": {"code": INVALID_PARAMS, "message": self.error.message, "data": data},
        }


def _rpc_id(body: bytes) -> Any:
    """The id of a message refused for its numbers, read again with them allowed (it is no use elsewhere)."""
    with contextlib.suppress(ValueError, RecursionError):
        message = json.loads(body)
        return message.get("id") if isinstance(message, dict) else None
    return None


async def read_call(
    request: Request,
    receive: Receive,
    relay: Relay,
    raw_code: str | None,
    client: str | None,
    admit: Callable[[Any], Awaitable[None]] | None = None,
) -> tuple[bool, Receive]:
    """(json_response, the receive to serve the POST with). At most MAX_REQUEST_BYTES of the body are read here;
    a longer one is left to the SDK, which refuses it. Raises Refused for a message holding a number JSON cannot
    hold (``1e999``): the SDK would read it as infinity and pass it on. ``admit``: called with the message's
    method (None where it has none that can be read) before anything else is done for it (an OAuth caller's
    limits, which a ``tools/call`` counts with its append instead)."""
    messages, body = await _read_some(receive, relay.settings.max_request_bytes)
    replay = _replay(messages, receive)
    message: Any = None
    if body is not None:
        try:
            message = loads(body)
        except NonFiniteNumber as exc:
            raise Refused(_rpc_id(body), exc) from exc
        except BadInput:
            pass  # not JSON: the SDK answers its parse error
    if admit is not None:
        await admit(message.get("method") if isinstance(message, dict) else None)
    if not isinstance(message, dict):
        return True, replay
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    method = message.get("method")
    if method == "notifications/cancelled" and "id" not in message and raw_code:
        await _cancel(relay, raw_code, client, params.get("requestId"))
        return True, replay
    meta = params.get("_meta")
    wants_progress = method == "tools/call" and isinstance(meta, dict) and meta.get("progressToken") is not None
    return not (wants_progress and check_accept_headers(request)[1]), replay


async def _cancel(relay: Relay, raw_code: str, client: str | None, rpc_id: Any) -> None:
    """Best effort, as notifications are: an unknown code or id, or a store fault, cancels nothing."""
    if not isinstance(rpc_id, str | int) or isinstance(rpc_id, bool):
        return
    with contextlib.suppress(RelayError):
        code = normalise_code(raw_code)
        await relay.sessions.for_llm(code, client=client)
        await cancel_call(relay, code, client, rpc_id)
