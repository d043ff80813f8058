"""OpenAPI 3.1 document, generated from the pydantic models in schemas.py."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .. import __version__
from ..settings import Settings
from . import schemas as s
from .resources import ResourceList, ResourceRead

MODELS: list[type[BaseModel]] = [
    s.SessionCreate,
    s.SessionCreated,
    s.ToolRequest,
    s.Queued,
    s.ToolResponse,
    s.Answered,
    s.Result,
    s.Pending,
    s.Metadata,
    s.SessionStatus,
    s.SessionClosed,
    s.PushedRequest,
    s.ChangesNote,
    s.ChangesNoted,
    s.SessionDetached,
    s.ActivityLog,
    s.TracePage,
    s.FullLogPage,
    s.ErrorBody,
    s.Health,
    ResourceList,
    ResourceRead,
]


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "Invalid input; the message names the field",
        401: "Browser token missing",
        403: "Browser token wrong",
        404: "Unknown or expired session or request",
        409: "Conflicting reuse of an id",
        413: "Body over the size limit; nothing stored",
        429: "Rate limited, or a pending-work limit reached (too_many_pending, request_bytes_exceeded); the "
        "message names the limit and what to do; see Retry-After",
        503: "Store unavailable; see Retry-After",
    }
    return {str(code): _json(s.ErrorBody, text[code]) for code in statuses}


def _param(name: str, where: str, description: str, *, required: bool = False, schema: Any = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": required,
        "description": description,
        "schema": schema or {"type": "string"},
    }


CODE_Q = _param(
    "code",
    "query",
    "Pairing code shown in the CODAP plugin",
    required=True,
    schema={"type": "string", "pattern": "^[A-Za-z2-7 ]{8,}$"},
)
CODE_P = _param("code", "path", "Pairing code", required=True)


def _wait_param(longest: float) -> dict[str, Any]:
    text = f"Seconds to wait for the result (0-{longest:g})"
    return _param("wait", "query", text, schema={"type": "number", "minimum": 0, "maximum": longest})


BEARER: list[dict[str, list[str]]] = [{"browserToken": []}]


DEFAULT_MAX_WAIT: float = Settings.model_fields["max_wait_seconds"].default


def _object(description: str, media: str = "application/json") -> dict[str, Any]:
    return {"description": description, "content": {media: {"schema": {"type": "object"}}}}


OAUTH_ERROR = _object("OAuth error (RFC 6749 5.2): error and error_description")
FORM = "application/x-www-form-urlencoded"


def oauth_paths() -> dict[str, Any]:
    """The authorization server of ``/mcp`` (OAuth 2.1, http/oauth.py): the SDK's endpoints, the consent page and
    the plugin's connected apps. Their bodies are the RFCs', so they are described, not modelled."""
    page = {"description": "The consent page", "content": {"text/html": {"schema": {"type": "string"}}}}
    metadata = {"200": _object("Metadata (JSON)")}
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
                "summary": "RFC 7591 dynamic client registration (redirect URIs matched exactly later)",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {"201": _object("The client's registration, with its client_id"), "400": OAUTH_ERROR},
            }
        },
        "/authorize": {
            "get": {
                "operationId": "authorize",
                "summary": "Authorization code request (PKCE S256, resource = this relay's /mcp); client_id is a "
                "registration or a Client ID Metadata Document's https URL. Redirects to the consent page",
                "responses": {
                    "302": {"description": "To the consent page, or to the client with an error"},
                    "400": OAUTH_ERROR,
                },
            }
        },
        "/oauth/consent": {
            "get": {
                "operationId": "consentPage",
                "summary": "The consent page: type the plugin's pairing code, then Allow in the plugin",
                "parameters": [_param("request", "query", "The authorization request", required=True)],
                "responses": {
                    "200": page,
                    "302": {"description": "Approved: to the client"},
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
                },
            },
        },
        "/token": {
            "post": {
                "operationId": "token",
                "summary": "Authorization code (with the PKCE verifier) or refresh token for tokens",
                "requestBody": {"content": {FORM: {"schema": {"type": "object"}}}},
                "responses": {"200": _object("Access and refresh token"), "400": OAUTH_ERROR, "401": OAUTH_ERROR},
            }
        },
        "/revoke": {
            "post": {
                "operationId": "revoke",
                "summary": "RFC 7009 revocation: ends the token's whole grant",
                "requestBody": {"content": {FORM: {"schema": {"type": "object"}}}},
                "responses": {"200": {"description": "Revoked (or unknown)"}, "401": OAUTH_ERROR},
            }
        },
        "/api/sessions/{code}/grants": {
            "get": {
                "operationId": "listConnectedApps",
                "summary": "The apps connected to this plugin (plugin only)",
                "parameters": [CODE_P],
                "security": BEARER,
                "responses": {"200": _object("persistent, and the apps"), **_errors(400, 401, 403, 404, 429, 503)},
            }
        },
        "/api/sessions/{code}/grants/{grant}": {
            "delete": {
                "operationId": "disconnectApp",
                "summary": "Disconnect an app: its tokens are refused from the next call on (plugin only)",
                "parameters": [CODE_P, _param("grant", "path", "The connected app's id", required=True)],
                "security": BEARER,
                "responses": {"200": _object("Disconnected"), **_errors(400, 401, 403, 404, 429, 503)},
            }
        },
    }


@lru_cache(maxsize=8)
def document(
    server_url: str = "", max_wait_seconds: float = DEFAULT_MAX_WAIT, *, long_lived: bool = True
) -> dict[str, Any]:
    """``long_lived``: the server is one process that outlives its requests (codap-relay serve), which alone
    takes the plugin's change notes; a deployed stack's document leaves that path out, as its API has no route."""
    wait_q = _wait_param(max_wait_seconds)
    _, defs = models_json_schema([(m, "validation") for m in MODELS], ref_template="#/components/schemas/{model}")
    paths: dict[str, Any] = {
        "/api/sessions": {
            "post": {
                "operationId": "createSession",
                "summary": "Open a session (the CODAP plugin does this) and get a pairing code",
                "requestBody": {"content": {"application/json": {"schema": _ref(s.SessionCreate)}}},
                "responses": {"201": _json(s.SessionCreated, "Session created"), **_errors(400, 413, 429, 503)},
            }
        },
        "/api/sessions/{code}": {
            "get": {
                "operationId": "getSessionStatus",
                "summary": "Is the session alive and is the plugin connected? With the browser token (the plugin "
                "waiting for room on the stream) the code's expiry also slides",
                "parameters": [CODE_P],
                "responses": {"200": _json(s.SessionStatus, "Session status"), **_errors(400, 404, 429, 503)},
            },
            "delete": {
                "operationId": "closeSession",
                "summary": "End the session (plugin only)",
                "parameters": [CODE_P],
                "security": BEARER,
                "responses": {"200": _json(s.SessionClosed, "Closed"), **_errors(400, 401, 403, 404, 429, 503)},
            },
        },
        "/api/sessions/{code}/changes": {
            "post": {
                "operationId": "postDocumentChanges",
                "summary": "What CODAP said changed in the document (plugin only; a long-lived server, which names "
                "this path in the session's `changes`): the MCP subscriptions of that session learn of it",
                "parameters": [CODE_P],
                "security": BEARER,
                "requestBody": {"content": {"application/json": {"schema": _ref(s.ChangesNote)}}},
                "responses": {
                    "202": _json(s.ChangesNoted, "Noted"),
                    **_errors(400, 401, 403, 404, 413, 429, 503),
                },
            }
        },
        "/api/sessions/{code}/detach": {
            "post": {
                "operationId": "detachPlugin",
                "summary": "The plugin's tab is going away (pagehide, plugin only): its stream ends within a poll and "
                "the plugin shows as not connected; a newer tab's stream is left alone. No body, so a keepalive fetch "
                "needs no preflight",
                "parameters": [
                    CODE_P,
                    _param("tab", "query", "The id the tab opened its stream with (?tab= on /stream)", required=True),
                    _param("token", "query", "Browser token (when a header cannot be set)"),
                ],
                "security": BEARER,
                "responses": {
                    "200": _json(s.SessionDetached, "Recorded"),
                    **_errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/api/sessions/{code}/requests/{id}": {
            "get": {
                "operationId": "getPushedRequest",
                "summary": "A tool request too large to push whole (plugin only): the push message's `pointer`. "
                "Served even once answered, so a late fetch is harmless",
                "parameters": [CODE_P, _param("id", "path", "The request's id", required=True)],
                "security": BEARER,
                "responses": {
                    "200": _json(s.PushedRequest, "The request"),
                    **_errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/api/sessions/{code}/log": {
            "get": {
                "operationId": "getActivityLog",
                "summary": "The session's activity trace (plugin only); readable for LOG_GRACE_SECONDS after it ended",
                "parameters": [
                    CODE_P,
                    _param(
                        "full",
                        "query",
                        "1: pages of requests with their arguments and whole answers (FullLogPage); without it the "
                        "activity view is one small answer",
                    ),
                    _param(
                        "view",
                        "query",
                        "activity (default): every request; trace: pages of requests with their arguments and a "
                        "one-line summary of each answer, for saving and replaying a session",
                        schema={"enum": ["activity", "trace"]},
                    ),
                    _param(
                        "after",
                        "query",
                        "trace view and ?full=1: the previous page's `next` (0 for the first page)",
                        schema={"type": "integer", "minimum": 0},
                    ),
                ],
                "security": BEARER,
                "responses": {
                    "200": {
                        "description": "Log (ActivityLog); with ?view=trace one page of the trace (TracePage); with "
                        "?full=1 one page of the full log (FullLogPage)",
                        "content": {
                            "application/json": {
                                "schema": {"anyOf": [_ref(s.ActivityLog), _ref(s.TracePage), _ref(s.FullLogPage)]}
                            }
                        },
                    },
                    **_errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/stream": {
            "get": {
                "operationId": "streamRequests",
                "summary": "Server-sent events carrying tool requests to the plugin",
                "parameters": [
                    CODE_Q,
                    _param("token", "query", "Browser token (when a header cannot be set)"),
                    _param("lastEventId", "query", "Resume after this seq", schema={"type": "integer"}),
                    _param(
                        "mode",
                        "query",
                        "stream (default), poll, or check (204 when a stream could start now)",
                        schema={"enum": ["stream", "poll", "check"]},
                    ),
                    _param("tab", "query", "The plugin page's id (8-64 of A-Z a-z 0-9 - _), to detach its streams"),
                ],
                "security": BEARER,
                "responses": {
                    "200": {
                        "description": "Event stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    "204": {"description": "mode=check: a stream could start now"},
                    **_errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/request": {
            "post": {
                "operationId": "postToolRequest",
                "summary": "Queue a tool call for CODAP (the LLM does this)",
                "parameters": [wait_q],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref(s.ToolRequest)}}},
                "responses": {
                    "200": _json(s.Result, "Finished within ?wait"),
                    "202": _json(s.Queued, "Durably queued"),
                    **_errors(400, 404, 409, 413, 429, 503),
                },
            }
        },
        "/response": {
            "post": {
                "operationId": "postToolResponse",
                "summary": "Answer a tool request (the plugin does this)",
                "security": BEARER,
                "parameters": [
                    _param(
                        "code",
                        "query",
                        "The body's pairing code again: the token is then checked before the body is read; "
                        "without it a body may be no larger than a request's",
                    )
                ],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref(s.ToolResponse)}}},
                "responses": {"202": _json(s.Answered, "Stored"), **_errors(400, 401, 403, 404, 409, 413, 429, 503)},
            },
            "get": {
                "operationId": "getToolResponse",
                "summary": "Read a tool call's result (the LLM does this); long-polls with ?wait",
                "parameters": [CODE_Q, _param("id", "query", "Request id", required=True), wait_q],
                "responses": {
                    "200": _json(s.Result, "Finished"),
                    "202": _json(s.Pending, "Not finished yet"),
                    **_errors(400, 404, 429, 503),
                },
            },
        },
        "/metadata": {
            "get": {
                "operationId": "getToolManifest",
                "summary": "The session's tools with their JSON Schemas",
                "parameters": [CODE_Q],
                "responses": {"200": _json(s.Metadata, "Manifest"), **_errors(400, 404, 429, 503)},
            }
        },
        "/resources": {
            "get": {
                "operationId": "listResources",
                "summary": "The open CODAP document's resources (datasets, cases, graphs), templates and prompts",
                "parameters": [CODE_Q],
                "responses": {"200": _json(ResourceList, "Resources"), **_errors(400, 404, 429, 503)},
            }
        },
        "/resources/read": {
            "get": {
                "operationId": "readResource",
                "summary": "Read one resource live from CODAP: JSON or CSV text, or a base64 PNG",
                "parameters": [
                    CODE_Q,
                    _param(
                        "uri",
                        "query",
                        "codap://datasets, codap://components, codap://datasets/NAME, codap://datasets/NAME/cases"
                        "[?page=N], codap://graphs/NAME/image (URL-encoded)",
                        required=True,
                    ),
                ],
                "responses": {
                    "200": _json(ResourceRead, "Contents"),
                    "502": _json(s.ErrorBody, "CODAP could not answer"),
                    "503": _json(s.ErrorBody, "The plugin is not connected (not_connected), or the store is down"),
                    "504": _json(s.ErrorBody, "CODAP did not answer in time"),
                    **_errors(400, 404, 429),
                },
            }
        },
        "/healthz": {
            "get": {"operationId": "health", "summary": "Liveness", "responses": {"200": _json(s.Health, "OK")}}
        },
    }
    paths.update(oauth_paths())
    if not long_lived:
        del paths["/api/sessions/{code}/changes"]
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "codap-relay",
            "version": __version__,
            "description": "Relay between language models and a CODAP plugin. The LLM needs only the pairing "
            "code; the plugin's endpoints also need the browser token.",
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"browserToken": {"type": "http", "scheme": "bearer"}},
        },
    }
    if server_url:
        doc["servers"] = [{"url": server_url}]
    return doc
