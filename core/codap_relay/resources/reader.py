"""Reading the open document through the plugin: one read-only tool call at a time, as ``tools/call`` does, and
the document's names (datasets, graphs, attributes) for listing and completion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import errors as e
from ..manifest import find_tool
from ..records import SessionRecord
from ..relay import Relay
from .contents import ResourceError
from .uris import graph_label


@dataclass
class PluginReads:
    """Reads the session's open CODAP document through the plugin, one read-only tool call at a time."""

    relay: Relay
    session: SessionRecord
    client: str | None = None

    async def tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """One read-only tool call; its result ``{content, structuredContent}``, or a ResourceError."""
        session = self.session
        try:
            find_tool(await self.relay.sessions.manifest(session), name)
        except e.UnknownTool:
            raise ResourceError(
                "codap_error",
                f"This session's plugin does not offer {name}, which resources are read with. Ask the user to reload "
                "the codap-relay plugin in CODAP (a newer plugin offers it).",
                tool=name,
            ) from None
        if not self.relay.presence.is_connected(session):
            raise ResourceError(
                "not_connected",
                "The CODAP plugin for this session is not connected, so the document cannot be read. Ask the user to "
                "open CODAP with the codap-relay plugin and keep that browser tab open, then read it again.",
            )
        timeout = self.relay.settings.mcp_tool_timeout_seconds
        record, answer = await self.relay.responses.call(
            session.code, name, args, wait=timeout, client=self.client, session=session
        )
        if answer.response is None:
            raise ResourceError(
                "timeout",
                f"CODAP did not answer {name} (request id {record.id}) within {timeout:g} s. Read the resource again "
                "in a moment.",
                requestId=record.id,
            )
        body = answer.response.body
        if "error" in body:
            error = body["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            code = error.get("code") if isinstance(error, dict) else None
            data = error.get("data") if isinstance(error, dict) else None
            raise ResourceError(
                "not_found" if code in ("dataset_not_found", "graph_not_found") else "codap_error",
                f"CODAP could not run {name}: {message}",
                **({"codapError": code} if code else {}),
                **(data if isinstance(data, dict) else {}),
            )
        result = body.get("result")
        return result if isinstance(result, dict) else {"structuredContent": {}, "content": []}

    async def structured(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        found = (await self.tool(name, args)).get("structuredContent")
        return found if isinstance(found, dict) else {}

    # --- the document's names, for listing and completion -----------------------------------------------

    async def status(self) -> dict[str, Any]:
        return await self.structured("get_codap_status", {})

    async def dataset_names(self) -> list[str]:
        listed = await self.structured("get_codap_datasets", {})
        return [d["name"] for d in listed.get("datasets", []) if isinstance(d, dict) and "name" in d]

    async def graph_names(self) -> list[str]:
        status = await self.structured("get_codap_status", {"includeDatasets": False})
        return [graph_label(c) for c in status.get("components", []) if c.get("type") == "graph"]

    async def attribute_names(self, dataset: str) -> list[str]:
        listed = await self.structured("get_codap_datasets", {})
        for d in listed.get("datasets", []):
            if d.get("name") == dataset:
                return [str(a) for a in d.get("attributes", [])]
        return []

    async def export(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return await self.structured("export_codap_data", {"datasetName": name, **args})
