"""MCP tool logic over the relay core, independent of the HTTP transport.

``tools/list`` turns the session's manifest into MCP tools (title + annotations); ``tools/call`` validates,
queues through the relay's queue and waits for the browser's answer (``relay.responses.call``). Domain errors
reach MCP through the one table ``MCP_ERRORS``: some become a tool result with ``isError`` (the model can act on
them), the rest a JSON-RPC error.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from codap_relay import errors as e
from codap_relay.catalog import changes_document, declared_annotations, tool_title
from codap_relay.jsonvalues import check_finite, dumps
from codap_relay.manifest import ANNOTATION_HINTS, _validator, find_tool, validate_args
from codap_relay.mcp.app import APP_TOOL_META
from codap_relay.records import RequestRecord, SessionRecord, canonical_json
from codap_relay.relay import Relay
from codap_relay.relay.limits import GRANT_CLIENT, is_grant_client
from codap_relay.store.base import Charge

# --- tool presentation -----------------------------------------------------------------------------------


def tool_annotations(name: str, title: str, declared: Any = None) -> types.ToolAnnotations:
    """Hints for the client's confirmation UI, as catalog.declared_annotations finds them. A tool nothing is known
    of is assumed able to change anything; every tool acts on the user's own CODAP document only."""
    declared = declared_annotations(name, declared)
    if isinstance(declared, dict):
        hints = {hint: declared[hint] for hint in ANNOTATION_HINTS if isinstance(declared.get(hint), bool)}
        return types.ToolAnnotations.model_validate({**hints, "title": title})
    return types.ToolAnnotations(
        title=title, read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
    )


def mcp_tools(manifest: list[dict[str, Any]]) -> list[types.Tool]:
    tools = []
    for spec in manifest:
        title = tool_title(spec)
        tools.append(
            types.Tool(
                name=spec["name"],
                title=title,
                description=spec.get("description") or title,
                input_schema=spec["inputSchema"],
                output_schema=spec.get("outputSchema"),
                annotations=tool_annotations(spec["name"], title, spec.get("annotations")),
                # A host with MCP Apps shows the document beside the result of a tool that changes it; others
                # ignore _meta and read the result as before.
                _meta=APP_TOOL_META if changes_document(spec["name"], spec.get("annotations")) else None,
            )
        )
    return tools


# --- errors: one table for the MCP entry point -----------------------------------------------------------

# Implementation-defined JSON-RPC codes (the MCP spec leaves -32003..-32019 to servers).
SESSION_NOT_FOUND = -32010
RATE_LIMITED = -32011
UNAVAILABLE = -32012
REQUEST_NOT_FOUND = -32013


@dataclass(frozen=True)
class Surface:
    rpc_code: int  # the JSON-RPC error code when it is a protocol error
    in_tool_result: bool  # inside tools/call: report as an isError result the model can act on


# Most specific first; the first class that matches decides.
MCP_ERRORS: list[tuple[type[e.RelayError], Surface]] = [
    (e.InvalidArguments, Surface(types.INVALID_PARAMS, True)),
    (e.NonFiniteNumber, Surface(types.INVALID_PARAMS, False)),  # not JSON: the message itself is malformed
    (e.UnknownTool, Surface(types.INVALID_PARAMS, False)),  # the spec: an unknown tool is a protocol error
    (e.InvalidCode, Surface(types.INVALID_PARAMS, False)),
    (e.BadInput, Surface(types.INVALID_PARAMS, True)),
    (e.SessionNotFound, Surface(SESSION_NOT_FOUND, False)),
    (e.RequestExpired, Surface(REQUEST_NOT_FOUND, True)),
    (e.RequestNotFound, Surface(REQUEST_NOT_FOUND, True)),
    (e.DuplicateRequestId, Surface(types.INVALID_PARAMS, True)),
    (e.RateLimited, Surface(RATE_LIMITED, True)),
    (e.StoreUnavailable, Surface(UNAVAILABLE, True)),
    (e.CodeCollision, Surface(UNAVAILABLE, True)),
]
FALLBACK = Surface(types.INTERNAL_ERROR, False)


def surface_for(exc: e.RelayError) -> Surface:
    for cls, surface in MCP_ERRORS:
        if isinstance(exc, cls):
            return surface
    return FALLBACK


def error_data(exc: e.RelayError) -> dict[str, Any]:
    return {"error": exc.error, **e.client_fields(exc)}


def protocol_error(exc: e.RelayError) -> MCPError:
    return MCPError(code=surface_for(exc).rpc_code, message=exc.message, data=error_data(exc))


def text_result(text: str, *, is_error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], is_error=is_error, structured_content=structured
    )


# --- the two operations ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """Who is calling, as the HTTP layer saw it, and the session as it was read for this call."""

    code: str
    client: str | None
    base_url: str  # where the relay's HTTP API lives, for the "check before retrying" hint
    session: SessionRecord
    rpc_id: Any = None  # the JSON-RPC id of the tools/call, which a notifications/cancelled names
    progress: Progress | None = None  # sends notifications/progress (a no-op without the client's progressToken)


Progress = Callable[[float, str], Awaitable[None]]
PROGRESS_EVERY = 2.0  # seconds between progress notifications while a call waits on the plugin
STATE_TEXT = {
    "queued": "Queued at the relay; waiting for the CODAP plugin to take it",
    "delivered": "Delivered to the CODAP plugin; running in CODAP",
}


def request_prefix(client: str | None, rpc_id: Any) -> str:
    """The start of the relay request id of an MCP call: the same for the client's JSON-RPC id (and address), so a
    ``notifications/cancelled`` that arrives in another POST, perhaps another process, finds the request in the
    store. Ids of different calls differ in the random part after it."""
    key = dumps([client, rpc_id], default=str)
    return f"mcp-{hashlib.sha256(key.encode()).hexdigest()[:16]}-"


async def cancel_call(relay: Relay, code: str, client: str | None, rpc_id: Any) -> list[str]:
    """``notifications/cancelled`` for the call with JSON-RPC id ``rpc_id``: withdraw it if the plugin has not
    received it yet (RequestQueue.cancel)."""
    ids = await relay.queue.pending_ids(code, request_prefix(client, rpc_id))
    return await relay.queue.cancel(code, ids, client=client) if ids else []


async def list_tools(relay: Relay, session: SessionRecord) -> types.ListToolsResult:
    return types.ListToolsResult(tools=mcp_tools(await relay.sessions.manifest(session)))


async def call_tool(relay: Relay, caller: Caller, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool call end to end. Raises MCPError for protocol errors; everything else is a result."""
    try:
        check_finite(arguments, "arguments")
        return await _call_tool(relay, caller, name, {} if arguments is None else arguments)
    except e.RelayError as exc:
        if surface_for(exc).in_tool_result:
            return error_result(exc.message, error_data(exc))
        raise protocol_error(exc) from exc


async def _call_tool(relay: Relay, caller: Caller, name: str, args: dict[str, Any]) -> types.CallToolResult:
    session = caller.session
    validate_args(find_tool(await relay.sessions.manifest(session), name), args)
    if not relay.presence.is_connected(session):
        return error_result(_not_connected_text(relay, session), {"error": "plugin_not_connected"})
    timeout = relay.settings.mcp_tool_timeout_seconds
    request_id = request_prefix(caller.client, caller.rpc_id) + uuid.uuid4().hex[:12]
    on_wait = None if caller.progress is None else _reporter(relay, caller.progress)
    try:
        record, answer = await relay.responses.call(
            caller.code,
            name,
            args,
            request_id,
            wait=timeout,
            client=caller.client,
            session=session,
            on_wait=on_wait,
            every=PROGRESS_EVERY,
            charges=_grant_charges(relay, caller.client),
        )
    except anyio.get_cancelled_exc_class():
        # The client went away (2026-07-28: it cancels by closing the response stream): withdraw the request if
        # the plugin has not taken it yet.
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await relay.queue.cancel(caller.code, [request_id])
        raise
    if answer.response is None:
        return error_result(
            _timeout_text(caller, name, record.id, timeout, delivered=_delivered(answer.request)),
            {"error": "timeout", "requestId": record.id, "check": _check_url(caller, record.id)},
        )
    body = answer.response.body
    if "error" in body:
        return error_result(_browser_error_text(name, body["error"]), browser_error_data(body["error"]))
    return typed(find_tool(await relay.sessions.manifest(session), name), tool_result(body.get("result")))


def _grant_charges(relay: Relay, client: str | None) -> list[Charge]:
    """An OAuth call's windows (its grant's, its plugin's), counted with its append (mcp_endpoint.py)."""
    if not is_grant_client(client):
        return []
    assert client is not None
    s = relay.settings
    grant_id = client[len(GRANT_CLIENT) :]
    return relay.limits.grant_charges(
        grant_id, per_grant=s.rate_limit_request_per_grant, per_plugin=s.rate_limit_request_per_plugin
    )


def typed(spec: dict[str, Any], result: types.CallToolResult) -> types.CallToolResult:
    """A tool that declares an outputSchema answers structuredContent that follows it (MCP clients such as the SDK's
    reject a result that does not). A plugin answer that does not is an error naming the rule it broke, its text
    kept, so the model still reads what the plugin said."""
    schema = spec.get("outputSchema")
    if schema is None or result.is_error:
        return result
    problem = output_problem(schema, result.structured_content)
    if problem is None:
        return result
    text = f"The plugin's answer to {spec['name']} does not follow the tool's outputSchema ({problem})."
    result.content.insert(0, types.TextContent(text=text))
    return types.CallToolResult(
        content=result.content,
        is_error=True,
        structured_content={"error": "invalid_result", "message": text},
    )


def output_problem(schema: dict[str, Any], structured: Any) -> str | None:
    if structured is None:
        return "no structuredContent"
    from jsonschema.exceptions import best_match

    error = best_match(_validator(canonical_json(schema)).iter_errors(structured))
    if error is None:
        return None
    path = "structuredContent" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{path}: {error.message}"


def _reporter(relay: Relay, progress: Progress) -> Callable[[RequestRecord], Awaitable[None]]:
    """Progress for a waiting call: the request's state (queued at the relay, delivered to the plugin) and the
    seconds it has waited; the progress value counts the notifications, so it always increases."""
    sent = 0

    async def report(request: RequestRecord) -> None:
        nonlocal sent
        sent += 1
        waited = max(0, int(relay.clock.now() - request.created_at))
        with contextlib.suppress(Exception):  # a client that stopped listening does not fail the call
            await progress(float(sent), f"{STATE_TEXT.get(request.status, request.status)} ({waited} s).")

    return report


def error_result(text: str, data: dict[str, Any]) -> types.CallToolResult:
    """A failed call as the model reads it: the sentence, and the same as structuredContent
    ``{error: code, message, …}`` (``available``: what exists instead, where the failure names it). A client that
    validates typed results checks only successful ones (MCP: outputSchema describes a result without isError)."""
    structured = {"error": data.get("error") or "tool_failed", "message": data.get("message") or text}
    structured.update({k: v for k, v in data.items() if k not in ("error", "message")})
    return text_result(text, is_error=True, structured=structured)


def browser_error_data(error: Any) -> dict[str, Any]:
    """The plugin's error (errors.js errorBody: {message, code, data?}) as the structured body's fields: the code,
    and the fields of its data (``available``, ``datasetName``, …); data that is not an object stays ``data``."""
    if not isinstance(error, dict):
        return {"error": "plugin_error"}
    code = error.get("code")
    out: dict[str, Any] = {"error": code if isinstance(code, str) and code else "plugin_error"}
    if isinstance(error.get("message"), str) and error["message"]:
        out["message"] = error["message"]
    data = error.get("data")
    if isinstance(data, dict):
        out.update({k: v for k, v in data.items() if k not in ("error", "message")})
    elif data is not None:
        out["data"] = data
    return out


def tool_result(result: Any) -> types.CallToolResult:
    """The plugin's answer as an MCP result: its own text, image and structured parts when it sends them
    (``{"content": [{"type": "text", ...}, {"type": "image", ...}], "structuredContent": {...}}``; the relay
    checked every image when the plugin posted it), else the JSON as text."""
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        parts = [_content_item(c) for c in result["content"]]
        kept = [p for p in parts if p is not None]
        if kept and len(kept) == len(parts) and isinstance(kept[0], types.TextContent):
            structured = result.get("structuredContent")
            meta = result.get("_meta")  # e.g. how long CODAP took, when it was slow (the plugin's slow.js)
            return types.CallToolResult(
                content=kept,
                structured_content=structured if isinstance(structured, dict) else None,
                _meta=meta if isinstance(meta, dict) else None,
            )
    text = result if isinstance(result, str) else dumps(result, ensure_ascii=False)
    return text_result(text, structured=result if isinstance(result, dict) else None)


def _content_item(item: Any) -> types.TextContent | types.ImageContent | None:
    if not isinstance(item, dict):
        return None
    if item.get("type") == "text" and isinstance(item.get("text"), str):
        return types.TextContent(text=item["text"])
    if item.get("type") == "image" and isinstance(item.get("data"), str) and isinstance(item.get("mimeType"), str):
        return types.ImageContent(data=item["data"], mime_type=item["mimeType"])
    return None


def _not_connected_text(relay: Relay, session: SessionRecord) -> str:
    if session.last_seen is None:
        seen = "has not connected yet"
    else:
        seen = f"was last seen {int(relay.clock.now() - session.last_seen)} s ago"
    return (
        f"The CODAP plugin for this session {seen}, so nothing was sent to CODAP. Ask the user to open CODAP "
        "with the codap-relay plugin and keep that browser tab open, then call the tool again."
    )


def _check_url(caller: Caller, request_id: str) -> str:
    return f"{caller.base_url}/response?{urlencode({'code': caller.code, 'id': request_id})}"


def _delivered(request: RequestRecord | None) -> bool:
    return request is not None and request.status == "delivered"


# Why a request the plugin has taken can outlast the wait: CODAP answers the plugin on one thread, which a graph
# drawn with WebGL in software blocks for seconds (docs/plugin.md, "When CODAP is slow"; the plugin's slow.js); and
# CODAP takes each plugin message in a setTimeout of its own, which Firefox runs a second late at the soonest in a
# background tab (docs/plugin.md, "When CODAP's tab is behind another": 15-30 s for a graph with its picture).
SLOW_CODAP_HINT = (
    "The plugin has received it, so CODAP is likely slow to answer: a graph drawn with WebGL on a "
    "computer without graphics acceleration keeps CODAP busy for seconds (the fix: in CODAP's Settings menu, "
    '"Graphics Acceleration: Turn off", or the browser\'s hardware acceleration), and in Firefox a CODAP tab in '
    "the background answers each of the plugin's messages a second late (the fix: bring CODAP's tab to the front). "
)


def _timeout_text(caller: Caller, tool: str, request_id: str, timeout: float, *, delivered: bool = False) -> str:
    check = _check_url(caller, request_id)
    running = SLOW_CODAP_HINT if delivered else ""
    return (
        f"CODAP did not answer {tool} (request id {request_id}) within {timeout:g} s. {running}"
        "The request stays queued and may still complete in CODAP. Before retrying, check its outcome with "
        f"GET {check} (200 = done, 202 = still pending) or look at the document with get_codap_datasets; "
        "creating datasets or adding cases is not idempotent, so a blind retry can do it twice."
    )


def _browser_error_text(tool: str, error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message") or "no message"
        code = error.get("code")
        suffix = f" (code {code})" if isinstance(code, str) and code else ""
        return f"CODAP could not run {tool}: {message}{suffix}"
    return f"CODAP could not run {tool}: {error}"
