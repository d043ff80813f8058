"""What the OpenAPI document's paths share: references to the models, parameters, and the error responses."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .. import schemas as s


def ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def json_body(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref(model)}}}


def errors(*statuses: int) -> dict[str, Any]:
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
    return {str(code): json_body(s.ErrorBody, text[code]) for code in statuses}


def param(name: str, where: str, description: str, *, required: bool = False, schema: Any = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": required,
        "description": description,
        "schema": schema or {"type": "string"},
    }


CODE_Q = param(
    "code",
    "query",
    "Pairing code shown in the CODAP plugin",
    required=True,
    schema={"type": "string", "pattern": "^[A-Za-z2-7 ]{8,}$"},
)
CODE_P = param("code", "path", "Pairing code", required=True)


def wait_param(longest: float) -> dict[str, Any]:
    text = f"Seconds to wait for the result (0-{longest:g})"
    return param("wait", "query", text, schema={"type": "number", "minimum": 0, "maximum": longest})


BEARER: list[dict[str, list[str]]] = [{"browserToken": []}]


def object_body(description: str, media: str = "application/json") -> dict[str, Any]:
    return {"description": description, "content": {media: {"schema": {"type": "object"}}}}


OAUTH_ERROR = object_body("OAuth error (RFC 6749 5.2): error and error_description")
FORM = "application/x-www-form-urlencoded"
