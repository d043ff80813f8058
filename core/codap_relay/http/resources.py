"""``GET /resources`` and ``GET /resources/read``: the MCP resources for models that have only HTTP.

The same reads as MCP ``resources/list`` and ``resources/read`` (the resources/ package), with the pairing code as
the LLM role's credential (``?code=`` or ``Authorization: Bearer``). Deployed in the MCP function (template.yaml).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..codes import normalise_code
from ..errors import BadInput
from ..prompts import PROMPTS
from ..resources import TEMPLATES, DocumentReader, ResourceError
from .context import authorization_bearer, client_ip, relay_of
from .errors import error_response


class ResourceItem(BaseModel):
    uri: str = Field(description="codap://… (names URL-encoded)")
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None


class ResourceList(BaseModel):
    resources: list[ResourceItem] = Field(description="The open document's resources, read live from CODAP")
    resourceTemplates: list[dict[str, Any]] = Field(description="uriTemplate, name, title, description, mimeType")
    prompts: list[dict[str, Any]] = Field(description="Class routines: name, title, description, arguments")


class ResourceContents(BaseModel):
    uri: str
    mimeType: str
    text: str | None = Field(None, description="JSON or CSV text")
    blob: str | None = Field(None, description="base64 (a PNG picture of a graph)")
    meta: dict[str, Any] | None = Field(
        None, alias="_meta", description="For CSV pages: page, pages, firstRow, lastRow, next (the next page's uri)"
    )


class ResourceRead(BaseModel):
    contents: list[ResourceContents]


KIND_STATUS = {"not_found": 404, "invalid": 400, "not_connected": 503, "timeout": 504, "codap_error": 502}


async def reader(request: Request) -> DocumentReader:
    raw = request.query_params.get("code") or authorization_bearer(request)
    if not raw:
        raise BadInput("Give the pairing code: ?code=CODE (the 8 characters the CODAP plugin shows).", field="code")
    relay = relay_of(request)
    client = client_ip(request)
    session = await relay.sessions.for_llm(normalise_code(raw), client=client)
    return DocumentReader(relay, session, client)


def failed(request: Request, exc: ResourceError) -> Response:
    return error_response(request, KIND_STATUS.get(exc.kind, 502), exc.kind, exc.message, **exc.data)


async def list_resources(request: Request) -> Response:
    read = await reader(request)
    try:
        listed = await read.listing()
    except ResourceError as exc:
        return failed(request, exc)
    return JSONResponse(
        {
            "resources": [
                {"uri": r.uri, "name": r.name, "title": r.title, "description": r.description, "mimeType": r.mime_type}
                for r in listed
            ],
            "resourceTemplates": TEMPLATES,
            "prompts": [
                {
                    "name": p.name,
                    "title": p.title,
                    "description": p.description,
                    "arguments": [
                        {"name": a.name, "description": a.description, "required": a.required} for a in p.arguments
                    ],
                }
                for p in PROMPTS
            ],
        },
        headers={"Cache-Control": "no-store"},
    )


async def read_resource(request: Request) -> Response:
    uri = request.query_params.get("uri")
    if not uri:
        raise BadInput("Give the resource: ?uri=codap://datasets (GET /resources lists them).", field="uri")
    read = await reader(request)
    try:
        contents = await read.read(uri)
    except ResourceError as exc:
        return failed(request, exc)
    return JSONResponse({"contents": [c.as_json() for c in contents]}, headers={"Cache-Control": "no-store"})


def routes() -> list[BaseRoute]:
    return [
        Route("/resources", list_resources, methods=["GET"]),
        Route("/resources/read", read_resource, methods=["GET"]),
    ]
