"""The tool calls' paths: the plugin's event stream and its answers, the LLM's requests and its reads of
the answers, and the session's tool manifest."""

from __future__ import annotations

from typing import Any

from .. import schemas as s
from .parts import BEARER, CODE_Q, errors, json_body, param, ref


def tool_call_paths(wait_q: dict[str, Any]) -> dict[str, Any]:
    return {
        "/stream": {
            "get": {
                "operationId": "streamRequests",
                "summary": "Server-sent events carrying tool requests to the plugin",
                "parameters": [
                    CODE_Q,
                    param("token", "query", "Browser token (when a header cannot be set)"),
                    param("lastEventId", "query", "Resume after this seq", schema={"type": "integer"}),
                    param(
                        "mode",
                        "query",
                        "stream (default), poll, or check (204 when a stream could start now)",
                        schema={"enum": ["stream", "poll", "check"]},
                    ),
                    param("tab", "query", "The plugin page's id (8-64 of A-Z a-z 0-9 - _), to detach its streams"),
                ],
                "security": BEARER,
                "responses": {
                    "200": {
                        "description": "Event stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    "204": {"description": "mode=check: a stream could start now"},
                    **errors(400, 401, 403, 404, 429, 503),
                },
            }
        },
        "/request": {
            "post": {
                "operationId": "postToolRequest",
                "summary": "Queue a tool call for CODAP (the LLM does this)",
                "parameters": [wait_q],
                "requestBody": {"required": True, "content": {"application/json": {"schema": ref(s.ToolRequest)}}},
                "responses": {
                    "200": json_body(s.Result, "Finished within ?wait"),
                    "202": json_body(s.Queued, "Durably queued"),
                    **errors(400, 404, 409, 413, 429, 503),
                },
            }
        },
        "/response": {
            "post": {
                "operationId": "postToolResponse",
                "summary": "Answer a tool request (the plugin does this)",
                "security": BEARER,
                "parameters": [
                    param(
                        "code",
                        "query",
                        "The body's pairing code again: the token is then checked before the body is read; "
                        "without it a body may be no larger than a request's",
                    )
                ],
                "requestBody": {"required": True, "content": {"application/json": {"schema": ref(s.ToolResponse)}}},
                "responses": {"202": json_body(s.Answered, "Stored"), **errors(400, 401, 403, 404, 409, 413, 429, 503)},
            },
            "get": {
                "operationId": "getToolResponse",
                "summary": "Read a tool call's result (the LLM does this); long-polls with ?wait",
                "parameters": [CODE_Q, param("id", "query", "Request id", required=True), wait_q],
                "responses": {
                    "200": json_body(s.Result, "Finished"),
                    "202": json_body(s.Pending, "Not finished yet"),
                    **errors(400, 404, 429, 503),
                },
            },
        },
        "/metadata": {
            "get": {
                "operationId": "getToolManifest",
                "summary": "The session's tools with their JSON Schemas",
                "parameters": [CODE_Q],
                "responses": {"200": json_body(s.Metadata, "Manifest"), **errors(400, 404, 429, 503)},
            }
        },
    }
