"""The whole OpenAPI document: every path, the models' JSON Schemas, the browser token's security scheme."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ... import __version__
from ...settings import Settings
from .. import schemas as s
from ..resources import ResourceList, ResourceRead
from .oauth import oauth_paths
from .parts import json_body, wait_param
from .resources import resource_paths
from .sessions import session_paths
from .tool_calls import tool_call_paths

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


DEFAULT_MAX_WAIT: float = Settings.model_fields["max_wait_seconds"].default
DEFAULT_TOOL_TIMEOUT: float = Settings.model_fields["mcp_tool_timeout_seconds"].default


@lru_cache(maxsize=8)
def document(
    server_url: str = "",
    max_wait_seconds: float = DEFAULT_MAX_WAIT,
    *,
    tool_timeout_seconds: float = DEFAULT_TOOL_TIMEOUT,
    long_lived: bool = True,
) -> dict[str, Any]:
    """The document of a relay with these settings (its longest ?wait, how long a resource read waits for CODAP).
    ``long_lived``: the server is one process that outlives its requests (codap-relay serve), which alone
    takes the plugin's change notes; a deployed stack's document leaves that path out, as its API has no route."""
    wait_q = wait_param(max_wait_seconds)
    _, defs = models_json_schema([(m, "validation") for m in MODELS], ref_template="#/components/schemas/{model}")
    paths: dict[str, Any] = {
        **session_paths(),
        **tool_call_paths(wait_q),
        **resource_paths(tool_timeout_seconds),
        "/healthz": {
            "get": {"operationId": "health", "summary": "Liveness", "responses": {"200": json_body(s.Health, "OK")}}
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
