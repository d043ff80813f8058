"""The OAuth routes of ``/mcp`` (codap_relay.oauth): discovery, the SDK's handlers, the consent page, and the
plugin's list of connected apps.

The SDK's ``create_auth_routes`` fixes the issuer URL when the app is built; the relay learns its public URL per
request (PUBLIC_BASE_URL, else the request's own), so each request gets the SDK's handlers over a provider that
knows it. The handlers are the SDK's; only the consent page and the plugin's grant list are the relay's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from ..codes import normalise_code
from ..errors import BadInput, ClientDocumentRefused, RateLimited
from ..oauth import consent
from ..oauth.client_documents import is_document_id
from ..oauth.provider import SCOPE, RelayOAuthProvider, resource_url
from ..relay import Relay
from .context import bearer_token, client_ip, public_base, relay_of

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
CSRF_COOKIE = "codap_relay_consent"
REGISTRATION = ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE])


def provider_for(request: Request) -> RelayOAuthProvider:
    relay = relay_of(request)
    allow_loopback = relay.settings.oauth_client_documents_allow_loopback
    return RelayOAuthProvider(relay.grants, public_base(request), allow_loopback_documents=allow_loopback)


def resource_metadata_url(base: str) -> str:
    return f"{base}{RESOURCE_METADATA_PATH}/mcp"


def challenge(base: str, error: str | None = None) -> dict[str, str]:
    """The WWW-Authenticate header of a 401 from /mcp: where a client starts discovery (RFC 9728)."""
    parts = [f'resource_metadata="{resource_metadata_url(base)}"', f'scope="{SCOPE}"']
    if error:
        parts.append(f'error="{error}"')
    return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}


# --- discovery ------------------------------------------------------------------------------------------------


async def protected_resource(request: Request) -> Response:
    base = public_base(request)
    metadata = ProtectedResourceMetadata(
        resource=AnyHttpUrl(resource_url(base)),
        authorization_servers=[AnyHttpUrl(base)],
        scopes_supported=[SCOPE],
        resource_name="CODAP relay",
    )
    return await ProtectedResourceMetadataHandler(metadata).handle(request)


async def authorization_server(request: Request) -> Response:
    metadata = build_metadata(AnyHttpUrl(public_base(request)), None, REGISTRATION, RevocationOptions(enabled=True))
    # Public clients (PKCE, no secret) as the MCP hosts register; the SDK lists only the secret-based methods.
    metadata.token_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
    metadata.client_id_metadata_document_supported = True  # a client_id may be its document's URL
    return await MetadataHandler(metadata).handle(request)


# --- the SDK's endpoints, each over this request's provider ------------------------------------------------------


def _sdk(handler: Callable[[RelayOAuthProvider], Callable[[Request], Awaitable[Response]]]) -> ASGIApp:
    async def endpoint(request: Request) -> Response:
        return await handler(provider_for(request))(request)

    return RequestBodyLimitMiddleware(request_response(endpoint), DEFAULT_MAX_REQUEST_BODY_SIZE)


def _authorize(p: RelayOAuthProvider) -> Callable[[Request], Awaitable[Response]]:
    handler = AuthorizationHandler(p)

    async def handle(request: Request) -> Response:
        # A client_id that is a metadata document's URL is fetched first, so that a refusal says why; the SDK's
        # handler would only say the client is unknown. Never redirected: the redirect URI is the document's.
        params = request.query_params if request.method == "GET" else await request.form()
        client_id = params.get("client_id")
        if isinstance(client_id, str) and is_document_id(client_id):
            try:
                await p.client_document(client_id)
            except ClientDocumentRefused as exc:
                return JSONResponse({"error": exc.error, "error_description": exc.message}, status_code=400)
        return await handler.handle(request)

    return handle


def _token(p: RelayOAuthProvider) -> Callable[[Request], Awaitable[Response]]:
    return TokenHandler(p, ClientAuthenticator(p)).handle


def _register(p: RelayOAuthProvider) -> Callable[[Request], Awaitable[Response]]:
    return RegistrationHandler(p, options=REGISTRATION).handle


def _revoke(p: RelayOAuthProvider) -> Callable[[Request], Awaitable[Response]]:
    handler = RevocationHandler(p, ClientAuthenticator(p))

    async def handle(request: Request) -> Response:
        # The SDK's RevocationRequest declares client_secret without a default, so a public client (PKCE, no
        # secret: every MCP host) that leaves it out, as RFC 7009 lets it, would get 400. Read as sent empty.
        form = await request.form()
        if "client_secret" not in form:
            request._form = FormData([*form.multi_items(), ("client_secret", "")])
        return await handler.handle(request)

    return handle


# --- the consent page -------------------------------------------------------------------------------------------

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:2em auto;padding:0 1em;color:#1a1a1a}"
    "h1{font-size:1.4em}label{display:block;font-weight:600;margin:1em 0 .3em}"
    "input{font:inherit;font-size:1.4em;letter-spacing:.15em;text-transform:uppercase;padding:.3em;width:10em}"
    "button{font:inherit;margin-top:1em;padding:.4em 1.2em}.error{color:#a00000;font-weight:600}"
    ".app{font-weight:700}.small{color:#444;font-size:.9em}"
)
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
# Never framed (clickjacking); scripts none at all; the form posts only here.
PAGE_CSP = f"default-src 'none'; style-src 'sha256-{STYLE_HASH}'; frame-ancestors 'none'; base-uri 'none'"
PAGE_HEADERS = {"Content-Security-Policy": PAGE_CSP, "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def _page(title: str, body: str, *, status: int = 200, refresh: bool = False) -> HTMLResponse:
    meta = '<meta http-equiv="refresh" content="1">' if refresh else ""
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">{meta}<style>{STYLE}</style></head>'
        f"<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=PAGE_HEADERS)


def _code_form(request_id: str, pending: dict[str, Any], error: str | None) -> str:
    app = html.escape(str(pending["client_name"]))
    where = html.escape(consent.app_host(str(pending["redirect_uri"])))
    said = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    return (
        f'<p><span class="app">{app}</span> (returning to {where}) asks to use a CODAP document.</p>'
        "<p>Open CODAP with the codap-relay plugin and type the pairing code the plugin shows. The plugin then "
        "asks you to allow it.</p>"
        f'{said}<form method="post" action="consent">'
        f'<input type="hidden" name="request" value="{html.escape(request_id)}">'
        f'<input type="hidden" name="csrf" value="{html.escape(str(pending["csrf"]))}">'
        '<label for="code">Pairing code</label>'
        '<input id="code" name="code" autocomplete="off" autocapitalize="characters" spellcheck="false" '
        'maxlength="12" required placeholder="ABCD-2345" autofocus>'
        '<br><button type="submit">Continue</button></form>'
        '<p class="small">Nothing is shared until you press Allow in the plugin.</p>'
    )


def _waiting(pending: dict[str, Any]) -> str:
    app = html.escape(str(pending["client_name"]))
    return (
        f'<p role="status">Now look at the codap-relay plugin in CODAP: it asks whether <span class="app">{app}'
        "</span> may use this CODAP. Press <strong>Allow</strong> there. This page goes on by itself.</p>"
    )


def _csrf_ok(request: Request, pending: dict[str, Any], given: str | None) -> bool:
    """The form's token and the cookie this page set must both be the consent's own: a post from another site
    carries neither (the cookie is SameSite=Strict), and another browser has no cookie."""
    expected = str(pending["csrf"])
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return hmac.compare_digest(cookie, expected) and (given is None or hmac.compare_digest(given, expected))


def _with_cookie(response: Response, request: Request, pending: dict[str, Any]) -> Response:
    response.set_cookie(
        CSRF_COOKIE,
        str(pending["csrf"]),
        max_age=600,
        path="/",
        httponly=True,
        samesite="strict",
        secure=public_base(request).startswith("https:"),
    )
    return response


GONE = "This approval link has expired or was already used. Start again from your app (connect it again)."


async def consent_page(request: Request) -> Response:
    relay = relay_of(request)
    request_id = request.query_params.get("request")
    item = await consent.load(relay, request_id)
    if item is None or request_id is None:
        return _page("Connect an app to CODAP", f'<p class="error">{GONE}</p>', status=404)
    if "ask" in item.data and not _csrf_ok(request, item.data, None):
        return _page(
            "Connect an app to CODAP",
            '<p class="error">Finish this in the browser where you typed the code.</p>',
            status=403,
        )
    step = await consent.next_step(relay, provider_for(request), request_id, item)
    return _render(request, request_id, step)


async def consent_post(request: Request) -> Response:
    relay = relay_of(request)
    form = await request.form()
    request_id, csrf, code = (str(form.get(k) or "") for k in ("request", "csrf", "code"))
    item = await consent.load(relay, request_id)
    if item is None:
        return _page("Connect an app to CODAP", f'<p class="error">{GONE}</p>', status=404)
    if not _csrf_ok(request, item.data, csrf):
        return _page(
            "Connect an app to CODAP",
            '<p class="error">This form was not sent from its own page. Reload it and type the code again.</p>',
            status=403,
        )
    try:
        step = await consent.ask_plugin(relay, request_id, item, code, client_ip(request))
    except RateLimited as exc:  # the guessing guard (or a limit) refused this address: the page says so
        page = _page(
            "Connect an app to CODAP", f'<p class="error" role="alert">{html.escape(exc.message)}</p>', status=429
        )
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    if step.state == "waiting":  # the page that waits, by GET: a reload does not post the code again
        return RedirectResponse(f"consent?request={request_id}", status_code=303, headers=PAGE_HEADERS)
    return _render(request, request_id, step)


def _render(request: Request, request_id: str, step: consent.Step) -> Response:
    if step.redirect is not None:
        return RedirectResponse(step.redirect, status_code=302, headers=PAGE_HEADERS)
    title = "Connect an app to CODAP"
    if step.state == "gone" or step.pending is None:
        return _page(title, f'<p class="error">{html.escape(step.error or GONE)}</p>', status=410)
    if step.state == "waiting":
        return _page(title, _waiting(step.pending), refresh=True)
    return _with_cookie(_page(title, _code_form(request_id, step.pending, step.error)), request, step.pending)


# --- the plugin's connected apps ---------------------------------------------------------------------------------


async def _identity(request: Request) -> tuple[Relay, str]:
    relay = relay_of(request)
    code = normalise_code(request.path_params["code"])
    await relay.sessions.for_plugin(code, bearer_token(request), client=client_ip(request))
    return relay, await relay.grants.identity_of(code)


async def list_grants(request: Request) -> Response:
    relay, identity = await _identity(request)
    grants = await relay.grants.grants_of(identity)
    return JSONResponse(
        {
            "persistent": not identity.startswith("code:"),
            "apps": [{"id": g.id, "app": g.client_name, "connectedAt": g.created_at} for g in grants],
        }
    )


async def delete_grant(request: Request) -> Response:
    relay, identity = await _identity(request)
    grant_id = request.path_params["grant"]
    mine = {g.id for g in await relay.grants.grants_of(identity)}
    if grant_id not in mine:
        raise BadInput("This plugin has no connected app with that id; reload the list.", field="grant")
    await relay.grants.revoke_grant(grant_id)
    return JSONResponse({"id": grant_id, "status": "disconnected"})


def routes() -> list[BaseRoute]:
    return [
        Route(RESOURCE_METADATA_PATH + "/mcp", protected_resource, methods=["GET"]),
        Route(RESOURCE_METADATA_PATH, protected_resource, methods=["GET"]),
        Route("/.well-known/oauth-authorization-server", authorization_server, methods=["GET"]),
        # The same metadata where a client looks for an issuer with a path (the stage: https://HOST/v1) once the
        # RFC 8414 address, https://HOST/.well-known/oauth-authorization-server/v1, fails: API Gateway routes only
        # under the stage, and the OpenID discovery address appended to the issuer is the one under it that MCP
        # clients try (the MCP authorization spec's discovery order; mcp.client.auth in the SDK).
        Route("/.well-known/openid-configuration", authorization_server, methods=["GET"]),
        Route("/authorize", _sdk(_authorize), methods=["GET", "POST"]),
        Route("/token", _sdk(_token), methods=["POST"]),
        Route("/register", _sdk(_register), methods=["POST"]),
        Route("/revoke", _sdk(_revoke), methods=["POST"]),
        Route("/oauth/consent", consent_page, methods=["GET"]),
        Route("/oauth/consent", consent_post, methods=["POST"]),
        Route("/api/sessions/{code}/grants", list_grants, methods=["GET"]),
        Route("/api/sessions/{code}/grants/{grant}", delete_grant, methods=["DELETE"]),
    ]
