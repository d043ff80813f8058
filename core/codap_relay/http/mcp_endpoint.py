"""The MCP endpoint over HTTP: ``POST /mcp/{code}``, ``POST /mcp`` with ``Authorization: Bearer <code>``, and
``POST /mcp`` with an OAuth access token (http/oauth/), which reaches the plugin it was granted by.

The transport only: it checks the request's headers, records who is calling, and lets a per-request stateless
session manager of the SDK serve the protocol's server (codap_relay.mcp.server). The SDK's session manager may be
``run()`` only once per instance and normally lives in the app lifespan, which Mangum (``lifespan="off"``) never
starts and which would break on the second warm invocation anyway; a stateless manager keeps nothing between
requests, so each request gets a fresh one, entered for that request alone.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from ..codes import CODE_RE
from ..mcp.calls import Refused, read_call
from ..mcp.server import SCOPE_KEY, SERVER, McpCall, build_server
from ..relay import Relay
from ..relay.limits import grant_client
from ..settings import Settings
from .context import allowed_origins, client_ip, mcp_code, public_base, relay_of
from .errors import error_response
from .oauth import challenge, provider_for


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


def looks_like_code(credential: str) -> bool:
    """A bearer that is a pairing code (8 of A-Z, 2-7, hyphen and spaces allowed) rather than an OAuth token (43
    URL-safe characters): the two never share a shape."""
    return len(credential) <= 12 and CODE_RE.match(re.sub(r"[\s-]", "", credential).upper()) is not None


async def caller_of(request: Request) -> McpCall | Response:
    """Who calls: a pairing code (``/mcp/{code}``, or ``/mcp`` with the code as bearer), or an OAuth grant (``/mcp``
    with an access token), whose plugin's latest session it reaches. ``/mcp`` with neither is answered 401 with
    where to start OAuth discovery; a token that is not live (expired, revoked, disconnected) 401 too."""
    relay = relay_of(request)
    base = public_base(request)
    raw_code = mcp_code(request)
    if raw_code is None or (request.path_params.get("code") is None and not looks_like_code(raw_code)):
        token = raw_code
        verified = None if token is None else await provider_for(request).verify(token)  # one read of the store
        if verified is None:
            error = None if token is None else "invalid_token"
            message = (
                "Connect this app to CODAP: sign in through OAuth (this answer's WWW-Authenticate header says where), "
                "or use the URL /mcp/CODE with the 8-character code shown in the CODAP plugin."
                if token is None
                else "This token is not valid here any more (expired, or the app was disconnected in the plugin)."
            )
            return error_response(request, 401, error or "token_required", message, headers=challenge(base, error))
        # Limited by what the caller holds (this grant's window and its plugin's, every app it approved together),
        # never the address; the call's per-code window is these (queue.py). Counted once the POST's method is
        # read (``admit_grant_of``): a tools/call counts them with its append, in the same transaction.
        grant = verified.grant
        return McpCall(
            relay=relay, raw_code=verified.code, client=grant_client(grant.id), base_url=base, grant=grant.id
        )
    return McpCall(relay=relay, raw_code=raw_code, client=client_ip(request), base_url=base)


def admit_grant_of(relay: Relay, grant_id: str) -> Callable[[Any], Awaitable[None]]:
    """An OAuth POST's limits, by its method: every one counts in its grant's window and its plugin's, in one write,
    except a ``tools/call``, whose append counts them in its own transaction (``RateLimits.grant_charges``): a
    tool call through OAuth costs no write more than one by pairing code."""

    async def admit(method: Any) -> None:
        if method != "tools/call":
            s = relay.settings
            await relay.limits.admit_grant(
                grant_id, per_grant=s.rate_limit_request_per_grant, per_plugin=s.rate_limit_request_per_plugin
            )

    return admit


class McpEndpoint:
    """ASGI endpoint: records who is calling, then lets a per-request stateless session manager serve it."""

    def __init__(self, server: Server[Any] = SERVER) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        relay = relay_of(request)
        settings = relay.settings
        caller = await caller_of(request)
        if isinstance(caller, Response):
            await caller(scope, receive, send)
            return
        scope[SCOPE_KEY] = caller
        security = security_settings(settings)
        rejected = await check_headers(request, security)
        if rejected is not None:
            await rejected(scope, receive, send)
            return
        try:
            admit = None if caller.grant is None else admit_grant_of(relay, caller.grant)
            json_response, receive = await read_call(request, receive, relay, caller.raw_code, caller.client, admit)
        except Refused as exc:
            await JSONResponse(exc.body(), status_code=400)(scope, receive, send)
            return
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
