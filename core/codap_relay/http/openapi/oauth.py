"""The authorization server of ``/mcp`` (OAuth 2.1, http/oauth/): the SDK's endpoints, the consent page and the
plugin's connected apps. Their bodies are the RFCs', so they are described, not modelled."""

from __future__ import annotations

from typing import Any

from .parts import BEARER, CODE_P, FORM, OAUTH_ERROR, errors, object_body, param

# The authorization request (RFC 6749 4.1.1 with PKCE, RFC 7636, and the resource indicator, RFC 8707), as the MCP
# SDK's handler reads it from the query (GET) or the form (POST).
AUTHORIZE: list[tuple[str, str, dict[str, Any]]] = [
    ("response_type", "Must be code", {"type": "string", "enum": ["code"]}),
    ("client_id", "A registered client's id, or the https URL of a Client ID Metadata Document", {"type": "string"}),
    ("code_challenge", "PKCE: the S256 hash of the verifier the token request will carry", {"type": "string"}),
    ("code_challenge_method", "PKCE: S256 (the default)", {"type": "string", "enum": ["S256"]}),
    (
        "redirect_uri",
        "One of the client's redirect URIs, matched exactly (may be left out where it has one)",
        {"type": "string", "format": "uri"},
    ),
    ("state", "Returned to the client as it was sent", {"type": "string"}),
    ("scope", "Space-separated scopes, among the client's", {"type": "string"}),
    ("resource", "This relay's /mcp URL (the token is for it alone)", {"type": "string", "format": "uri"}),
]
NEEDED = {"response_type", "client_id", "code_challenge"}
AUTHORIZE_SUMMARY = (
    "Authorization code request (PKCE S256, resource = this relay's /mcp); client_id is a registration or a Client "
    "ID Metadata Document's https URL. Redirects to the consent page; an error goes back to the client with iss "
    "(RFC 9207), or is answered here when the client or its redirect URI is not known good. A few a minute per "
    "address and per registered client; state at most 1,024 characters"
)
AUTHORIZED = {
    "302": {
        "description": "To the consent page; or, once the client and its redirect URI are known, to the client with "
        "error, error_description, state and iss in the query"
    },
    "400": OAUTH_ERROR,
    **errors(413, 429),
}


def oauth_paths() -> dict[str, Any]:
    """The authorization server of ``/mcp`` (OAuth 2.1, http/oauth/): the SDK's endpoints, the consent page and
    the plugin's connected apps. Their bodies are the RFCs', so they are described, not modelled."""
    html: dict[str, Any] = {"text/html": {"schema": {"type": "string"}}}
    page = {"description": "The consent page", "content": html}
    metadata = {"200": object_body("Metadata (JSON)")}
    return {
        "/.well-known/oauth-protected-resource/mcp": {
            "get": {
                "operationId": "getProtectedResourceMetadata",
                "summary": "RFC 9728 metadata of /mcp: its authorization server (named in /mcp's 401)",
                "responses": metadata,
            }
        },
        "/.well-known/oauth-authorization-server": {
            "get": {
                "operationId": "getAuthorizationServerMetadata",
                "summary": "RFC 8414 metadata: endpoints, PKCE S256, registration and Client ID Metadata Documents",
                "responses": metadata,
            }
        },
        "/.well-known/openid-configuration": {
            "get": {
                "operationId": "getAuthorizationServerMetadataAppended",
                "summary": "The same metadata at the address appended to an issuer with a path (a deployment's "
                "stage), where MCP clients look when the RFC 8414 address is not served",
                "responses": metadata,
            }
        },
        "/register": {
            "post": {
                "operationId": "registerClient",
                "summary": "RFC 7591 dynamic client registration (deprecated by the MCP spec of 2026-07-28, kept for "
                "the hosts that have nothing else): redirect URIs https, loopback http (any port later) or an app's "
                "own scheme, no fragment; at most 16 KB, a name of 100 characters; a few a minute per address",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                    "201": object_body("The client's registration, with its client_id"),
                    "400": OAUTH_ERROR,
                    **errors(413, 429),
                },
            }
        },
        "/authorize": {
            "get": {
                "operationId": "authorize",
                "summary": AUTHORIZE_SUMMARY,
                "parameters": [
                    param(name, "query", text, required=name in NEEDED, schema=schema)
                    for name, text, schema in AUTHORIZE
                ],
                "responses": AUTHORIZED,
            },
            "post": {
                "operationId": "authorizeByForm",
                "summary": AUTHORIZE_SUMMARY + " (the same parameters as a form)",
                "requestBody": {
                    "required": True,
                    "content": {
                        FORM: {
                            "schema": {
                                "type": "object",
                                "required": sorted(NEEDED),
                                "properties": {
                                    name: {**schema, "description": text} for name, text, schema in AUTHORIZE
                                },
                            }
                        }
                    },
                },
                "responses": AUTHORIZED,
            },
        },
        "/oauth/consent": {
            "get": {
                "operationId": "consentPage",
                "summary": "The consent page: type the plugin's pairing code; the page then shows a number to type "
                "in the plugin with Allow. With Accept: application/json, only where the flow is (the waiting "
                "page's own script: state code, waiting, answered or gone)",
                "parameters": [param("request", "query", "The authorization request", required=True)],
                "responses": {
                    "200": {
                        "description": "The consent page, or where the flow is (JSON)",
                        "content": {**html, "application/json": {"schema": {"type": "object"}}},
                    },
                    "302": {"description": "Decided in the plugin: to the client (a code, or an error), with iss"},
                    "403": page,
                    "404": page,
                    "410": page,
                },
            },
            "post": {
                "operationId": "consentCode",
                "summary": "The pairing code typed (with the form's anti-forgery token and its cookie)",
                "requestBody": {"content": {FORM: {"schema": {"type": "object"}}}},
                "responses": {
                    "200": page,
                    "302": {"description": "Approved: to the client"},
                    "303": {"description": "To the waiting page"},
                    "403": page,
                    "404": page,
                    "410": page,
                    "429": page,
                    **errors(413),
                },
            },
        },
        "/token": {
            "post": {
                "operationId": "token",
                "summary": "Authorization code (with the PKCE verifier) or refresh token for tokens; resource, when "
                "sent, must be this relay's /mcp (invalid_target). A refresh token used twice ends its grant",
                "requestBody": {"content": {FORM: {"schema": {"type": "object"}}}},
                "responses": {
                    "200": object_body("Access and refresh token"),
                    "400": OAUTH_ERROR,
                    "401": OAUTH_ERROR,
                    **errors(413),
                },
            }
        },
        "/revoke": {
            "post": {
                "operationId": "revoke",
                "summary": "RFC 7009 revocation: ends the token's whole grant",
                "requestBody": {"content": {FORM: {"schema": {"type": "object"}}}},
                "responses": {"200": {"description": "Revoked (or unknown)"}, "401": OAUTH_ERROR, **errors(413)},
            }
        },
        "/api/sessions/{code}/grants": {
            "get": {
                "operationId": "listConnectedApps",
                "summary": "The apps connected to this plugin (plugin only)",
                "parameters": [CODE_P],
                "security": BEARER,
                "responses": {"200": object_body("persistent, and the apps"), **errors(400, 401, 403, 404, 429, 503)},
            }
        },
        "/api/sessions/{code}/grants/{grant}": {
            "delete": {
                "operationId": "disconnectApp",
                "summary": "Disconnect an app: its tokens are refused from the next call on (plugin only)",
                "parameters": [CODE_P, param("grant", "path", "The connected app's id", required=True)],
                "security": BEARER,
                "responses": {"200": object_body("Disconnected"), **errors(400, 401, 403, 404, 429, 503)},
            }
        },
    }
