"""A local MCP server that forwards tools, resources, prompts and completion to a relay's remote MCP endpoint.

Each forwarded request is one stateless 2026-07-28 exchange (no handshake, no probe) over one shared HTTP client,
so the bridge holds no remote session that could go stale. Protocol errors from the relay (an expired code, an
unknown tool) are re-raised as they came, so the local client shows the relay's own message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_MODERN_VERSION

from codap_relay import __version__
from codap_relay.errors import NonFiniteNumber
from codap_relay.jsonvalues import check_finite
from codap_relay.primer import PRIMER

T = TypeVar("T")


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Remote:
    def __init__(self, url: str, http: httpx2.AsyncClient, timeout: float) -> None:
        self.url = url
        self.http = http
        self.timeout = timeout
        parts = urlsplit(url)
        self.where = f"{parts.scheme}://{parts.netloc}"  # for messages: never the path, which holds the code

    async def forward(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        failure: MCPError | None = None
        try:
            async with Client(
                streamable_http_client(self.url, http_client=self.http, terminate_on_close=False),
                mode=LATEST_MODERN_VERSION,
                read_timeout_seconds=self.timeout,
                cache=None,
            ) as client:
                try:
                    return await fn(client)
                except MCPError as exc:  # caught inside, so it leaves the client's task groups unwrapped
                    failure = exc
        except Exception as exc:
            inner = _innermost(exc)
            if isinstance(inner, MCPError):
                raise inner from None
            raise MCPError(
                types.INTERNAL_ERROR,
                f"Cannot reach the CODAP relay at {self.where}: {inner!r}. Check the --url and your connection.",
            ) from exc
        assert failure is not None
        raise failure


def build_bridge(remote: Remote) -> Server[Any]:
    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        return await remote.forward(lambda c: c.list_tools(cursor=cursor))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:  # sent on, an infinity would arrive as null (the SDK writes it so), changing the call silently
            check_finite(params.arguments, "arguments")
        except NonFiniteNumber as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message, {"error": exc.error, "field": exc.data["field"]}) from exc
        return await remote.forward(lambda c: c.call_tool(params.name, params.arguments))

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        return await remote.forward(lambda c: c.list_resources(cursor=cursor, cache_mode="bypass"))

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        cursor = params.cursor if params is not None else None
        return await remote.forward(lambda c: c.list_resource_templates(cursor=cursor, cache_mode="bypass"))

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await remote.forward(lambda c: c.read_resource(str(params.uri), cache_mode="bypass"))

    async def on_list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        cursor = params.cursor if params is not None else None
        return await remote.forward(lambda c: c.list_prompts(cursor=cursor, cache_mode="bypass"))

    async def on_get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await remote.forward(lambda c: c.get_prompt(params.name, params.arguments))

    async def on_completion(
        ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        context = params.context.arguments if params.context else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await remote.forward(lambda c: c.complete(params.ref, argument, context_arguments=context))

    return Server(
        "codap-relay",
        version=__version__,
        title="CODAP relay (stdio bridge)",
        instructions=PRIMER,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
        on_completion=on_completion,
    )


async def serve_stdio(url: str, headers: dict[str, str], timeout: float) -> None:
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout)) as http:
        server = build_bridge(Remote(url, http, timeout))
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
