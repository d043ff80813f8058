"""The open document's resources over HTTP: the listing (with templates and prompts), and one read."""

from __future__ import annotations

from typing import Any

from .. import schemas as s
from ..resources import ResourceList, ResourceRead
from .parts import CODE_Q, errors, json_body, param


def resource_paths(longest: float) -> dict[str, Any]:
    """``longest``: how long a read waits for CODAP (MCP_TOOL_TIMEOUT_SECONDS), which a client must outwait."""
    waits = (
        f"While the plugin is connected the document is read live through it: the answer waits up to {longest:g} s "
        "for CODAP, then is a 504, so a client should wait longer than that."
    )
    from_codap = {
        "502": json_body(s.ErrorBody, "CODAP could not answer (codap_error)"),
        "503": json_body(s.ErrorBody, "The plugin is not connected (not_connected), or the store is down"),
        "504": json_body(s.ErrorBody, f"CODAP did not answer within {longest:g} s (timeout)"),
    }
    return {
        "/resources": {
            "get": {
                "operationId": "listResources",
                "summary": "The open CODAP document's resources (datasets, cases, graphs), templates and prompts",
                "description": waits + " While it is not, the answer lists the fixed resources only, at once.",
                "parameters": [CODE_Q],
                "responses": {"200": json_body(ResourceList, "Resources"), **from_codap, **errors(400, 404, 429)},
            }
        },
        "/resources/read": {
            "get": {
                "operationId": "readResource",
                "summary": "Read one resource live from CODAP: JSON or CSV text, or a base64 PNG",
                "description": waits,
                "parameters": [
                    CODE_Q,
                    param(
                        "uri",
                        "query",
                        "codap://datasets, codap://components, codap://datasets/NAME, codap://datasets/NAME/cases"
                        "[?page=N], codap://graphs/NAME/image (URL-encoded)",
                        required=True,
                    ),
                ],
                "responses": {"200": json_body(ResourceRead, "Contents"), **from_codap, **errors(400, 404, 429)},
            }
        },
    }
