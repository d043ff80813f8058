"""The OAuth routes of ``/mcp`` (codap_relay.oauth): discovery (discovery.py), the SDK's endpoints with what the
relay adds around them (endpoints.py), the consent page (consent_page.py, page.py) and the plugin's list of
connected apps (apps.py)."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from . import endpoints as sdk
from .apps import delete_grant, list_grants
from .consent_page import CSRF_COOKIE, consent_get, consent_post_app
from .discovery import (
    RESOURCE_METADATA_PATH,
    authorization_server,
    challenge,
    protected_resource,
    provider_for,
    resource_metadata_url,
)

__all__ = ["CSRF_COOKIE", "RESOURCE_METADATA_PATH", "challenge", "provider_for", "resource_metadata_url", "routes"]


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
        Route("/authorize", sdk.sdk(sdk.authorize), methods=["GET", "POST"]),
        Route("/token", sdk.sdk(sdk.token), methods=["POST"]),
        Route("/register", sdk.sdk(sdk.register), methods=["POST"]),
        Route("/revoke", sdk.sdk(sdk.revoke), methods=["POST"]),
        Route("/oauth/consent", consent_get, methods=["GET"]),
        Route("/oauth/consent", consent_post_app(), methods=["POST"]),
        Route("/api/sessions/{code}/grants", list_grants, methods=["GET"]),
        Route("/api/sessions/{code}/grants/{grant}", delete_grant, methods=["DELETE"]),
    ]
