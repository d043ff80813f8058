"""The open document's resources over HTTP: the listing (with templates and prompts), and one read."""

from __future__ import annotations

from typing import Any

from .. import schemas as s
from ..resources import ResourceList, ResourceRead
from .parts import CODE_Q, errors, json_body, param


def resource_paths() -> dict[str, Any]:
    return {
        "/resources": {
            "get": {
                "operationId": "listResources",
                "summary": "The open CODAP document's resources (datasets, cases, graphs), templates and prompts",
                "parameters": [CODE_Q],
                "responses": {"200": json_body(ResourceList, "Resources"), **errors(400, 404, 429, 503)},
            }
        },
        "/resources/read": {
            "get": {
                "operationId": "readResource",
                "summary": "Read one resource live from CODAP: JSON or CSV text, or a base64 PNG",
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
                "responses": {
                    "200": json_body(ResourceRead, "Contents"),
                    "502": json_body(s.ErrorBody, "CODAP could not answer"),
                    "503": json_body(s.ErrorBody, "The plugin is not connected (not_connected), or the store is down"),
                    "504": json_body(s.ErrorBody, "CODAP did not answer in time"),
                    **errors(400, 404, 429),
                },
            }
        },
    }
