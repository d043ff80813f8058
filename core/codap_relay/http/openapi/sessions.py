"""The session's paths: open one, its status, end it, and the plugin's own (change notes, detach, a pushed
request too large to push whole, the activity log)."""

from __future__ import annotations

from typing import Any

from .. import schemas as s
from .parts import BEARER, CODE_P, errors, json_body, param, ref


def session_paths() -> dict[str, Any]:
    return {
        "/api/sessions": {
            "post": {
                "operationId": "createSession",
                "summary": "Open a session (the CODAP plugin does this) and get a pairing code",
                "requestBody": {"content": {"application/json": {"schema": ref(s.SessionCreate)}}},
                "responses": {"201": json_body(s.SessionCreated, "Session created"), **errors(400, 413, 429, 503)},
            }
        },
        "/api/sessions/{code}": {
            "get": {
                "operationId": "getSessionStatus",
                "summary": "Is the session alive and is the plugin connected? With the browser token (the plugin "
                "waiting for room on the stream) the code's expiry also slides",
                "parameters": [CODE_P],
                "responses": {"200": json_body(s.SessionStatus, "Session status"), **errors(400, 404, 429, 503)},
            },
            "delete": {
                "operationId": "closeSession",
                "summary": "End the session (plugin only)",
                "parameters": [CODE_P],
                "security": BEARER,
                "responses": {"200": json_body(s.SessionClosed, "Closed"), **errors(400, 401, 403, 404, 429, 503)},
            },
        },
        "/api/sessions/{code}/changes": {
            "post": {
                "operationId": "postDocumentChanges",
                "summary": "What CODAP said changed in the document (plugin only; a long-lived server, which names "
                "this path in the session's `changes`): the MCP subscriptions of that session learn of it",
                "parameters": [CODE_P],
                "security": BEARER,
                "requestBody": {"content": {"application/json": {"schema": ref(s.ChangesNote)}}},
                "responses": {
                    "202": json_body(s.ChangesNoted, "Noted"),
                    **errors(400, 401, 403, 404, 413, 429, 503),
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
                    param("tab", "query", "The id the tab opened its stream with (?tab= on /stream)", required=True),
                    param("token", "query", "Browser token (when a header cannot be set)"),
                ],
                "security": BEARER,
                "responses": {
                    "200": json_body(s.SessionDetached, "Recorded"),
                    **errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/api/sessions/{code}/requests/{id}": {
            "get": {
                "operationId": "getPushedRequest",
                "summary": "A tool request too large to push whole (plugin only): the push message's `pointer`. "
                "Served even once answered, so a late fetch is harmless",
                "parameters": [CODE_P, param("id", "path", "The request's id", required=True)],
                "security": BEARER,
                "responses": {
                    "200": json_body(s.PushedRequest, "The request"),
                    **errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/api/sessions/{code}/log": {
            "get": {
                "operationId": "getActivityLog",
                "summary": "The session's activity trace (plugin only); readable for LOG_GRACE_SECONDS after it ended",
                "parameters": [
                    CODE_P,
                    param(
                        "full",
                        "query",
                        "1: pages of requests with their arguments and whole answers (FullLogPage); without it the "
                        "activity view is one small answer",
                    ),
                    param(
                        "view",
                        "query",
                        "activity (default): every request; trace: pages of requests with their arguments and a "
                        "one-line summary of each answer, for saving and replaying a session",
                        schema={"enum": ["activity", "trace"]},
                    ),
                    param(
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
                                "schema": {"anyOf": [ref(s.ActivityLog), ref(s.TracePage), ref(s.FullLogPage)]}
                            }
                        },
                    },
                    **errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
    }
