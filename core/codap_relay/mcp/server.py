"""The MCP server: the SDK's low-level ``Server`` with the relay's tools, resources, prompts and instructions.

Stateless, JSON responses; its HTTP transport is http/mcp_endpoint.py. A long-lived server (codap-relay serve)
also answers ``subscriptions/listen`` with a stream that stays open (subscriptions.py); each such stream is one
POST's answer, so the endpoint needs no session state for it either. The SDK routes each POST by its
``MCP-Protocol-Version`` header: handshake-era clients (2025, ``initialize`` first) take the stateless legacy
path, 2026-07-28 clients the single-exchange path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.requests import Request

from codap_relay import __version__
from codap_relay.codes import normalise_code
from codap_relay.errors import InvalidCode, RelayError, SessionNotFound
from codap_relay.manifest import DEFAULT_TOOLS
from codap_relay.mcp.app import is_app_uri
from codap_relay.mcp.resources import handlers as resource_handlers
from codap_relay.mcp.tools import Caller, call_tool, error_result, list_tools, mcp_tools, protocol_error
from codap_relay.primer import PRIMER
from codap_relay.records import SessionRecord
from codap_relay.relay import Relay

SCOPE_KEY = "codap_relay.mcp"


@dataclass
class McpCall:
    """What the HTTP layer learned about one MCP POST; the handlers read it from the ASGI scope."""

    relay: Relay
    raw_code: str | None
    client: str | None
    base_url: str
    grant: str | None = None  # the OAuth grant the call carries (its token), else None: a pairing code
    session: SessionRecord | None = None


def _call_of(ctx: ServerRequestContext[Any, Any]) -> McpCall:
    request = ctx.request
    assert isinstance(request, Request), "the relay serves MCP over HTTP only"
    call: McpCall = request.scope[SCOPE_KEY]
    return call


async def require_session(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Every request (initialize included) needs a live pairing code, so a stale one fails at connect time; but for
    reading the app's page, which holds no data and is the same for everyone (a host reads it whenever it likes)."""
    if ctx.request_id is None:  # a notification: nothing to answer, nothing to check
        return await call_next(ctx)
    if ctx.method == "resources/read" and is_app_uri((ctx.params or {}).get("uri")):
        return await call_next(ctx)  # the app's page: the same for everyone, no data, no store read
    call = _call_of(ctx)
    try:
        if call.grant is not None:
            call.session = await _granted_session(call, ctx.method)
        else:
            if call.raw_code is None:
                raise InvalidCode(
                    "No pairing code: use the URL /mcp/CODE with the 8-character code shown in the CODAP "
                    "plugin, or send it as Authorization: Bearer CODE. Get a code by opening the codap-relay plugin."
                )
            code = normalise_code(call.raw_code)
            call.session = await call.relay.sessions.for_llm(code, client=call.client)
    except RelayError as exc:
        raise protocol_error(exc) from exc
    return await call_next(ctx)


NOT_OPEN = (
    "The CODAP plugin this app is connected to is not open. Ask the user to open CODAP with the codap-relay plugin "
    "in the browser where they approved this app; it reconnects by itself, with no new code to share."
)


# What a connector may do while its plugin is closed: connect and list the tools (a host does both when a chat
# starts, and would show the connector as broken otherwise), and call one, which answers that the plugin is closed.
WITHOUT_PLUGIN = frozenset({"initialize", "ping", "tools/list", "tools/call"})


async def _granted_session(call: McpCall, method: str) -> SessionRecord | None:
    """The session of the plugin a grant reaches: its latest code, followed by itself (no code to share). None
    while that plugin is not open, for the methods that can do without it."""
    try:
        if call.raw_code is None:
            raise SessionNotFound(NOT_OPEN, reason="expired")
        return await call.relay.sessions.for_llm(call.raw_code, client=call.client)
    except SessionNotFound as exc:
        if method in WITHOUT_PLUGIN:
            return None
        raise SessionNotFound(NOT_OPEN, reason=exc.reason) from exc


async def _on_list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    call = _call_of(ctx)
    if call.session is None:  # a grant whose plugin is closed: the tools every plugin offers
        return types.ListToolsResult(tools=mcp_tools(DEFAULT_TOOLS))
    return await list_tools(call.relay, call.session)


async def _on_call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    call = _call_of(ctx)
    if call.session is None:  # a grant whose plugin is closed
        return error_result(NOT_OPEN, {"error": "plugin_not_open"})
    caller = Caller(
        code=call.session.code,
        client=call.client,
        base_url=call.base_url,
        session=call.session,
        rpc_id=ctx.request_id,
        progress=lambda done, message: ctx.session.report_progress(done, message=message),
    )
    return await call_tool(call.relay, caller, params.name, params.arguments)


def build_server(*, subscriptions: bool = False) -> Server[Any]:
    """``subscriptions``: serve ``subscriptions/listen`` (subscriptions.py), which also makes the server declare
    ``resources.subscribe`` and ``listChanged``; only for a long-lived process (codap-relay serve)."""
    extra: dict[str, Any] = {}
    if subscriptions:
        from codap_relay.mcp.subscriptions import listen_handler

        extra["on_subscriptions_listen"] = listen_handler(_call_of)
    server: Server[Any] = Server(
        "codap-relay",
        version=__version__,
        title="CODAP relay",
        instructions=PRIMER,
        on_list_tools=_on_list_tools,
        on_call_tool=_on_call_tool,
        **resource_handlers(_call_of),  # resources, templates, prompts, completion (resources.py)
        **extra,
    )
    server.middleware.append(require_session)
    return server


SERVER = build_server()
