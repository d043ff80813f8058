"""The tool calls' paths: the plugin's event stream and its answers, the LLM's requests and its reads of
the answers, and the session's tool manifest."""

from __future__ import annotations

from typing import Any

from .. import schemas as s
from .parts import BEARER, CODE_Q, errors, json_body, param, ref

MESSAGE = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
REQUEST = {
    "type": "object",
    "required": ["id", "tool", "args"],
    "properties": {"id": {"type": "string"}, "tool": {"type": "string"}, "args": {}},
}


def stream_event(name: str, description: str, data: dict[str, Any], *, numbered: bool = False) -> dict[str, Any]:
    """One kind of server-sent event, as an EventSource parses it: ``event``, ``data`` (JSON text, described by
    ``contentSchema``), the last ``id`` seen (EventSource keeps it until another arrives) and ``retry``."""
    return {
        "type": "object",
        "description": description,
        "required": ["event", "data", *(["id"] if numbered else [])],
        "properties": {
            "event": {"const": name},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The seq of the last tool-request"},
            "retry": {"type": "integer", "minimum": 0, "description": "Milliseconds to wait before reconnecting"},
        },
        "additionalProperties": False,
    }


# Each event of GET /stream (delivery.py): the first frame is a bare ``retry:``, which carries no event.
STREAM_EVENT: dict[str, Any] = {
    "oneOf": [
        stream_event(
            "tool-request", "A tool call to run in CODAP; its id is its seq, for Last-Event-ID", REQUEST, numbered=True
        ),
        stream_event(
            "heartbeat",
            "Nothing happened for HEARTBEAT_SECONDS (poll mode: the answer ends)",
            {"type": "object", "maxProperties": 0},
        ),
        stream_event("withdrawn", "A request the model withdrew before the plugin received it", REQUEST),
        stream_event(
            "cursor-reset",
            "Last-Event-ID was beyond this session's last seq: every unanswered request follows",
            {
                "type": "object",
                "required": ["lastEventId", "lastSeq"],
                "properties": {"lastEventId": {"type": "integer"}, "lastSeq": {"type": "integer"}},
            },
        ),
        stream_event("superseded", "Another tab took the session over; the stream ends", MESSAGE),
        stream_event(
            "reconnect", "The stream ends (host time limit, store briefly down); reconnect with Last-Event-ID", MESSAGE
        ),
        *(
            stream_event(
                name,
                f"The session {how}; the stream ends",
                {"type": "object", "required": ["reason"], "properties": {"reason": {"const": name}}},
            )
            for name, how in (("closed", "was ended in the plugin"), ("expired", "expired"))
        ),
    ]
}


def tool_call_paths(wait_q: dict[str, Any]) -> dict[str, Any]:
    return {
        "/stream": {
            "get": {
                "operationId": "streamRequests",
                "summary": "Server-sent events carrying tool requests to the plugin",
                "parameters": [
                    CODE_Q,
                    param("token", "query", "Browser token (when a header cannot be set)"),
                    param(
                        "lastEventId",
                        "query",
                        "Resume after this seq (as the Last-Event-ID header, which EventSource sends on a reconnect)",
                        schema={"type": "integer", "minimum": 0, "maximum": 999_999_999},
                    ),
                    param(
                        "Last-Event-ID",
                        "header",
                        "Resume after this seq: the id of the last tool-request received",
                        schema={"type": "string", "pattern": "^[0-9]{1,9}$"},
                    ),
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
                        "description": "Server-sent events, each of one of these kinds: tool requests in seq order, a "
                        "heartbeat when nothing happens, and a last event when the stream ends",
                        "content": {"text/event-stream": {"schema": STREAM_EVENT}},
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
