"""Discovery: where a client that holds only ``RELAY/mcp`` learns the rest (the MCP authorization spec of
2026-07-28). The 401's challenge names the protected-resource metadata (RFC 9728) and the scope to ask; that names
the authorization server, whose metadata (RFC 8414, and the same at the OpenID discovery address) says what
Claude and every host read: PKCE S256, public clients (``none``), client ID metadata documents, and RFC 9207's
``iss`` in every authorization response."""

from __future__ import annotations

from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import Response

from ...oauth.provider import SCOPE, RelayOAuthProvider, resource_url
from ..context import client_ip, public_base, relay_of

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
REGISTRATION = ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE])


def provider_for(request: Request) -> RelayOAuthProvider:
    relay = relay_of(request)
    return RelayOAuthProvider(
        relay.grants,
        relay.limits,
        public_base(request),
        client=client_ip(request),
        allow_loopback_documents=relay.settings.oauth_client_documents_allow_loopback,
    )


def resource_metadata_url(base: str) -> str:
    return f"{base}{RESOURCE_METADATA_PATH}/mcp"


def challenge(base: str, error: str | None = None) -> dict[str, str]:
    """The WWW-Authenticate header of a 401 from /mcp: where a client starts discovery (RFC 9728), and the scope
    to ask for (the spec's first choice for a client)."""
    parts = [f'resource_metadata="{resource_metadata_url(base)}"', f'scope="{SCOPE}"']
    if error:
        parts.append(f'error="{error}"')
    return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}


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
    # Claude uses a client's metadata document only when both of the next two say so (else it registers anew).
    metadata.token_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
    metadata.client_id_metadata_document_supported = True  # a client_id may be its document's URL
    # Every authorization response carries iss (RFC 9207): said here, a client rejects a response without it.
    metadata.authorization_response_iss_parameter_supported = True
    return await MetadataHandler(metadata).handle(request)
