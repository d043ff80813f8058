"""The SDK's endpoints (/authorize, /token, /register, /revoke), each over this request's provider, with what the
relay adds before and after them.

The SDK's ``create_auth_routes`` fixes the issuer URL when the app is built; the relay learns its public URL per
request (PUBLIC_BASE_URL, else the request's own), so each request gets the SDK's handlers over a provider that
knows it. Around them: bodies limited before any parsing (``FORM_LIMIT``), registrations and authorizations
throttled per address (and per registered client), a registration checked against the redirect policy and the
sizes a stranger may make the relay keep, an authorization's parameters bounded, RFC 9207's ``iss`` on every
redirect to the client, and RFC 8707's ``resource`` checked at /token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import construct_redirect_uri
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import request_response
from starlette.types import ASGIApp

from ...errors import BadInput, ClientDocumentRefused
from ...jsonvalues import loads
from ...oauth.client_documents import is_document_id
from ...oauth.provider import RelayOAuthProvider, issuer_of, resource_url, same_resource
from ...oauth.registration import MetadataRefused, check_metadata
from ..bodies import BodyLimit
from ..context import relay_of
from .discovery import REGISTRATION, provider_for

FORM_LIMIT = 16 * 1024  # an OAuth request is a few hundred bytes; a registration, with its URIs, a few thousand
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# The most an authorization request's own strings may hold: the pending authorization keeps them.
PARAMETER_BOUNDS = {"client_id": 512, "state": 1024, "code_challenge": 128, "scope": 200, "resource": 512}

Handler = Callable[[Request], Awaitable[Response]]


def sdk(make: Callable[[RelayOAuthProvider], Handler]) -> ASGIApp:
    async def endpoint(request: Request) -> Response:
        return await make(provider_for(request))(request)

    return BodyLimit(request_response(endpoint), FORM_LIMIT)


def oauth_error(error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=400, headers=NO_STORE)


def with_iss(response: Response, base: str) -> Response:
    """A redirect back to the client carries the issuer (RFC 9207), errors included; the relay's own consent page
    is no authorization response."""
    location = response.headers.get("location")
    if response.status_code != 302 or location is None or location.startswith(f"{base}/oauth/consent?"):
        return response
    return RedirectResponse(construct_redirect_uri(location, iss=issuer_of(base)), 302, headers=NO_STORE)


def authorize(p: RelayOAuthProvider) -> Handler:
    handler = AuthorizationHandler(p)

    async def handle(request: Request) -> Response:
        relay = relay_of(request)
        s = relay.settings
        params = request.query_params if request.method == "GET" else await request.form()
        if p.client is not None:
            await relay.limits.admit("authorize", p.client, s.rate_limit_authorize_per_ip)
        for name, most in PARAMETER_BOUNDS.items():
            value = params.get(name)
            if isinstance(value, str) and len(value) > most:  # answered here: no redirect before the client is known
                return oauth_error("invalid_request", f"{name} is at most {most} characters.")
        client_id = params.get("client_id")
        if isinstance(client_id, str) and is_document_id(client_id):
            # Fetched first, so that a refusal says why; the SDK's handler would only say the client is unknown.
            # Never redirected: the redirect URI is the document's.
            try:
                await p.client_document(client_id)
            except ClientDocumentRefused as exc:
                return oauth_error(exc.error, exc.message)
        elif isinstance(client_id, str):  # a registration is one installation's: it gets its own window
            await relay.limits.admit("authorize-client", client_id, s.rate_limit_authorize_per_client)
        return with_iss(await handler.handle(request), p.base)

    return handle


def token(p: RelayOAuthProvider) -> Handler:
    handler = TokenHandler(p, ClientAuthenticator(p))

    async def handle(request: Request) -> Response:
        resource = (await request.form()).get("resource")
        if resource is not None and not same_resource(str(resource), p.base):
            return oauth_error("invalid_target", f"This server is the resource {resource_url(p.base)}.")
        answer: Response = await handler.handle(request)
        return answer

    return handle


def register(p: RelayOAuthProvider) -> Handler:
    handler = RegistrationHandler(p, options=REGISTRATION)

    async def handle(request: Request) -> Response:
        relay = relay_of(request)
        if p.client is not None:
            await relay.limits.admit("register", p.client, relay.settings.rate_limit_register_per_ip)
        try:
            check_metadata(loads(await request.body()))
        except MetadataRefused as exc:
            return oauth_error(exc.error, exc.message)
        except BadInput:
            pass  # not JSON: the SDK's handler says so
        return await handler.handle(request)

    return handle


def revoke(p: RelayOAuthProvider) -> Handler:
    handler = RevocationHandler(p, ClientAuthenticator(p))

    async def handle(request: Request) -> Response:
        # The SDK's RevocationRequest declares client_secret without a default, so a public client (PKCE, no
        # secret: every MCP host) that leaves it out, as RFC 7009 lets it, would get 400. Read as sent empty.
        form = await request.form()
        if "client_secret" not in form:
            request._form = FormData([*form.multi_items(), ("client_secret", "")])
        return await handler.handle(request)

    return handle
