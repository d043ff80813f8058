"""The MCP endpoint: ``POST /mcp/{code}`` and ``POST /mcp`` with ``Authorization: Bearer <code>``.

Streamable HTTP, stateless, JSON responses, on the SDK's low-level ``Server``. A long-lived server (codap-relay
serve) also answers ``subscriptions/listen`` with a stream that stays open (subscriptions.py); each such
stream is one POST's answer, so the endpoint needs no session state for it either. The SDK routes each POST by its
``MCP-Protocol-Version`` header: handshake-era clients (2025, ``initialize`` first) take the stateless legacy
path, 2026-07-28 clients the single-exchange path. The SDK's session manager may be ``run()`` only once per
instance and normally lives in the app lifespan, which Mangum (``lifespan="off"``) never starts and which would
break on the second warm invocation anyway; a stateless manager keeps nothing between requests, so each request
gets a fresh one, entered for that request alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from codap_relay import __version__
from codap_relay.codes import normalise_code
from codap_relay.errors import InvalidCode, RelayError
from codap_relay.http.context import allowed_origins, client_ip, mcp_code, public_base, relay_of
from codap_relay.http.errors import error_response
from codap_relay.mcp.calls import read_call
from codap_relay.mcp.resources import handlers as resource_handlers
from codap_relay.mcp.tools import Caller, call_tool, list_tools, protocol_error
from codap_relay.primer import PRIMER
from codap_relay.records import SessionRecord
from codap_relay.relay import Relay
from codap_relay.settings import Settings

SCOPE_KEY = "codap_relay.mcp"


@dataclass
class McpCall:
    """What the HTTP layer learned about one MCP POST; the handlers read it from the ASGI scope."""

    relay: Relay
    raw_code: str | None
    client: str | None
    base_url: str
    session: SessionRecord | None = None


def _call_of(ctx: ServerRequestContext[Any, Any]) -> McpCall:
    request = ctx.request
    assert isinstance(request, Request), "the relay serves MCP over HTTP only"
    call: McpCall = request.scope[SCOPE_KEY]
    return call


async def require_session(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Every request (initialize included) needs a live pairing code, so a stale one fails at connect time."""
    if ctx.request_id is None:  # a notification: nothing to answer, nothing to check
        return await call_next(ctx)
    call = _call_of(ctx)
    try:
        if call.raw_code is None:
            raise InvalidCode(
                "No pairing code: use the URL /mcp/CODE with the 8-character code shown in the CODAP "
                "plugin, or send it as Authorization: Bearer CODE. Get a code by opening the codap-relay plugin."
            )
        code = normalise_code(call.raw_code)
        call.session = await call.relay.session_for_llm(code, client=call.client)
    except RelayError as exc:
        raise protocol_error(exc) from exc
    return await call_next(ctx)


async def _on_list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    call = _call_of(ctx)
    assert call.session is not None  # require_session ran first
    return list_tools(call.relay, call.session)


async def _on_call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    call = _call_of(ctx)
    assert call.session is not None
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


def security_settings(settings: Settings) -> TransportSecuritySettings:
    """Host/Origin checks from ALLOWED_HOSTS. ``*`` (the default) turns the DNS-rebinding check off: the relay
    is a public service reached by many hostnames, and the pairing code is the credential."""
    hosts = [h for h in settings.allowed_hosts if h]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts: list[str] = []
    origins = allowed_origins(settings)
    for host in hosts:
        allowed_hosts.append(host)
        if ":" not in host.rsplit("]", 1)[-1]:
            allowed_hosts.append(f"{host}:*")  # the same host on any port
            origins.extend([f"https://{host}", f"http://{host}:*", f"https://{host}:*", f"http://{host}"])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=origins
    )


# The SDK answers these checks with a bare text line; ours say what to do. Keyed by the SDK's status.
HEADER_REJECTIONS = {
    400: ("unsupported_media_type", "Send the JSON-RPC message with Content-Type: application/json."),
    403: (
        "origin_not_allowed",
        "Browsers may call the MCP endpoint only from the origins in CORS_ORIGIN; other clients send no Origin.",
    ),
    421: (
        "host_not_allowed",
        "This relay does not answer to that host name. Use the relay's public URL (its ALLOWED_HOSTS setting).",
    ),
}


async def check_headers(request: Request, security: TransportSecuritySettings) -> Response | None:
    rejected = await TransportSecurityMiddleware(security).validate_request(request, is_post=True)
    if rejected is None:
        return None
    status = rejected.status_code
    error, message = HEADER_REJECTIONS.get(status, ("bad_request", "The request headers were refused."))
    return error_response(request, status, error, message)


class McpEndpoint:
    """ASGI endpoint: records who is calling, then lets a per-request stateless session manager serve it."""

    def __init__(self, server: Server[Any] = SERVER) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        relay = relay_of(request)
        settings = relay.settings
        scope[SCOPE_KEY] = McpCall(
            relay=relay, raw_code=mcp_code(request), client=client_ip(request), base_url=public_base(request)
        )
        security = security_settings(settings)
        rejected = await check_headers(request, security)
        if rejected is not None:
            await rejected(scope, receive, send)
            return
        json_response, receive = await read_call(request, receive, relay, scope[SCOPE_KEY].raw_code, client_ip(request))
        manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=json_response,
            security_settings=security,
            max_request_body_size=settings.max_request_bytes,
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)


def routes(*, subscriptions: bool = False) -> list[BaseRoute]:
    endpoint = McpEndpoint(build_server(subscriptions=True) if subscriptions else SERVER)
    # Only POST: in stateless mode there is no stream to GET and no session to DELETE (both answer 405).
    return [
        Route("/mcp", endpoint, methods=["POST"]),
        Route("/mcp/{code}", endpoint, methods=["POST"]),
    ]
