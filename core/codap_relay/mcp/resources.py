"""MCP resources, prompts and completion over the resources/ package and prompts.py: the handlers mcp/server.py
registers.

Subscriptions are subscriptions.py's, and only a long-lived server's: the deployed functions answer each POST
and end, so nothing could carry a ``notifications/resources/updated`` to the client later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from codap_relay import errors as e
from codap_relay.mcp.app import APP_MIME_TYPE, APP_RESOURCE_META, app_html, is_app_uri
from codap_relay.mcp.tools import UNAVAILABLE, protocol_error
from codap_relay.prompts import PROMPTS, PromptError, find_prompt
from codap_relay.records import SessionRecord
from codap_relay.relay import Relay
from codap_relay.resources import TEMPLATES, DocumentReader, ResourceError

RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for an unknown resource

KIND_CODES = {
    "not_found": RESOURCE_NOT_FOUND,
    "invalid": types.INVALID_PARAMS,
    "not_connected": UNAVAILABLE,
    "timeout": UNAVAILABLE,
    "codap_error": types.INTERNAL_ERROR,
}


class Call(Protocol):
    relay: Relay
    client: str | None
    session: SessionRecord | None


Ctx = ServerRequestContext[Any, Any]


def resource_error(exc: ResourceError) -> MCPError:
    return MCPError(
        code=KIND_CODES.get(exc.kind, types.INTERNAL_ERROR), message=exc.message, data={"error": exc.kind, **exc.data}
    )


def reader_of(call: Call) -> DocumentReader:
    assert call.session is not None  # require_session ran first
    return DocumentReader(call.relay, call.session, call.client)


async def guarded(work: Awaitable[Any]) -> Any:
    try:
        return await work
    except ResourceError as exc:
        raise resource_error(exc) from exc
    except e.RelayError as exc:
        raise protocol_error(exc) from exc


def handlers(call_of: Callable[[Ctx], Call]) -> dict[str, Any]:
    """The on_* handlers for the SDK's low-level Server: resources, templates, prompts, completion."""

    async def on_list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        listed = await guarded(reader_of(call_of(ctx)).listing())
        # The app (ui://codap/document) is not listed: hosts find it in the tools' _meta.ui.resourceUri (the
        # extension lets a server leave it out), and the list stays the document's, as GET /resources gives it.
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
                for r in listed
            ]
        )

    async def on_list_resource_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t["uriTemplate"],
                    name=t["name"],
                    title=t["title"],
                    description=t["description"],
                    mime_type=t["mimeType"],
                )
                for t in TEMPLATES
            ]
        )

    async def on_read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if is_app_uri(params.uri):
            page = types.TextResourceContents(
                uri=params.uri, mime_type=APP_MIME_TYPE, text=app_html(), _meta=APP_RESOURCE_META
            )
            return types.ReadResourceResult(contents=[page])
        read = await guarded(reader_of(call_of(ctx)).read(params.uri))
        contents: list[types.TextResourceContents | types.BlobResourceContents] = []
        for c in read:
            meta = c.meta or None
            if c.blob is not None:
                contents.append(types.BlobResourceContents(uri=c.uri, mime_type=c.mime_type, blob=c.blob, _meta=meta))
            else:
                contents.append(
                    types.TextResourceContents(uri=c.uri, mime_type=c.mime_type, text=c.text or "", _meta=meta)
                )
        return types.ReadResourceResult(contents=contents)

    async def on_list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in p.arguments
                    ],
                )
                for p in PROMPTS
            ]
        )

    async def on_get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            prompt = find_prompt(params.name)
            text = prompt.render(params.arguments or {})
        except PromptError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        return types.GetPromptResult(
            description=prompt.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    async def on_completion(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        reader = reader_of(call_of(ctx))
        name = params.argument.name
        typed = params.argument.value.lower()
        given = (params.context.arguments if params.context else None) or {}
        values: list[str] = []
        if reader.relay.presence.is_connected(reader.session):
            if name in ("name", "datasetName") and (
                name == "datasetName" or "datasets" in getattr(params.ref, "uri", "")
            ):
                values = await guarded(reader.dataset_names())
            elif name in ("name", "graph"):
                values = await guarded(reader.graph_names())
            elif name.endswith("Attribute") and given.get("datasetName"):
                values = await guarded(reader.attribute_names(given["datasetName"]))
        matches = [v for v in values if v.lower().startswith(typed)] + [
            v for v in values if typed and typed in v.lower() and not v.lower().startswith(typed)
        ]
        return types.CompleteResult(
            completion=types.Completion(values=matches[:100], total=len(matches), has_more=len(matches) > 100)
        )

    return {
        "on_list_resources": on_list_resources,
        "on_list_resource_templates": on_list_resource_templates,
        "on_read_resource": on_read_resource,
        "on_list_prompts": on_list_prompts,
        "on_get_prompt": on_get_prompt,
        "on_completion": on_completion,
    }
