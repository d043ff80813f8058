"""The document's resources as a whole: what resources/list offers (the fixed ones, each dataset's, each graph's),
the templates, reading any URI, the activity log of changing calls and the graphs' pictures."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from ..catalog import changes_document, tool_title
from ..clock import iso
from ..tool_content import summary
from .contents import Contents, ResourceError, ResourceInfo, json_contents
from .datasets import PAGE_BYTES, DatasetReads
from .uris import (
    MAX_ID_DIGITS,
    MAX_URI_CHARS,
    SCHEME,
    dataset_uri,
    graph_label,
    graph_uri,
    page_of,
    unknown_uri,
    whole_number,
)

ACTIVITY_CALLS = 30  # codap://activity's calls, the latest; its "total" counts them all

TEMPLATES: list[dict[str, str]] = [
    {
        "uriTemplate": "codap://datasets/{name}",
        "name": "dataset",
        "title": "A CODAP dataset",
        "description": "One dataset: its collections and attributes (type, unit, formula, description, precision) "
        "and a few example cases.",
        "mimeType": "application/json",
    },
    {
        "uriTemplate": "codap://datasets/{name}/cases",
        "name": "dataset-cases",
        "title": "A CODAP dataset's cases (CSV)",
        "description": f"Every case of one dataset as CSV, one row per leaf case. Over {PAGE_BYTES:,} bytes it "
        "comes in pages: codap://datasets/{name}/cases?page=2 and so on; the first line of each page says how many "
        "there are and which to read next.",
        "mimeType": "text/csv",
    },
    {
        "uriTemplate": "codap://graphs/{name}/image",
        "name": "graph-image",
        "title": "A picture of a CODAP graph",
        "description": "The graph as CODAP draws it, as a PNG picture. Name it by its name, title or id.",
        "mimeType": "image/png",
    },
]


class DocumentReader(DatasetReads):
    """Reads the session's open CODAP document as resources: each read is one or two read-only tool calls."""

    # --- resources/list ------------------------------------------------------------------------------------

    async def listing(self) -> list[ResourceInfo]:
        fixed = [
            ResourceInfo(
                f"{SCHEME}://datasets",
                "datasets",
                "CODAP datasets",
                "Every dataset in the open CODAP document: collections, attribute count, case count.",
                "application/json",
            ),
            ResourceInfo(
                f"{SCHEME}://components",
                "components",
                "CODAP components",
                "Every component of the document (graphs, tables, text, sliders, maps) with id, title and dataset.",
                "application/json",
            ),
            ResourceInfo(
                f"{SCHEME}://activity",
                "activity",
                "Tool calls that changed the document",
                f"The last {ACTIVITY_CALLS} calls of tools that change the document, each with its status and what it "
                "did (the first line of CODAP's answer), and how many there were in all.",
                "application/json",
            ),
        ]
        if not self.relay.presence.is_connected(self.session):
            return fixed  # reading them says the plugin is not connected
        status = await self.status()
        out = list(fixed)
        for d in status.get("datasets", []):
            name = str(d.get("name", ""))
            cases = d.get("caseCount", 0)
            out.append(
                ResourceInfo(
                    dataset_uri(name),
                    f"dataset {name}",
                    f"Dataset {name}",
                    f"{name}: {cases} cases; attributes {', '.join(map(str, d.get('attributes', [])))}.",
                    "application/json",
                )
            )
            out.append(
                ResourceInfo(
                    dataset_uri(name, "/cases"),
                    f"cases of {name}",
                    f"Cases of {name} (CSV)",
                    f"The {cases} cases of {name} as CSV (in pages when over {PAGE_BYTES:,} bytes).",
                    "text/csv",
                )
            )
        for c in status.get("components", []):
            if c.get("type") != "graph":
                continue
            label = graph_label(c)
            axes = ", ".join(f"{k[0]} = {c[k]}" for k in ("xAttribute", "yAttribute") if c.get(k))
            out.append(
                ResourceInfo(
                    graph_uri(label),
                    f"graph {label}",
                    f"Graph {label}",
                    f"A picture (PNG) of the graph {label}"
                    + (f" of {c['dataset']}" if c.get("dataset") else "")
                    + (f" ({axes})" if axes else "")
                    + ".",
                    "image/png",
                )
            )
        return out

    # --- resources/read ------------------------------------------------------------------------------------

    async def read(self, uri: str) -> list[Contents]:
        if len(uri) > MAX_URI_CHARS:
            raise ResourceError(
                "invalid", f"A resource URI has at most {MAX_URI_CHARS} characters; this one has {len(uri)}."
            )
        parts = urlsplit(uri)
        segments = [unquote(s) for s in parts.path.split("/")[1:]] if parts.path else []
        if parts.scheme != SCHEME:
            raise unknown_uri(uri)
        if parts.netloc == "datasets" and not segments:
            return [json_contents(uri, await self.datasets())]
        if parts.netloc == "components" and not segments:
            status = await self.structured("get_codap_status", {"includeDatasets": False})
            return [json_contents(uri, {"components": status.get("components", [])})]
        if parts.netloc == "activity" and not segments:
            return [json_contents(uri, await self.activity())]
        if parts.netloc == "datasets" and len(segments) == 1 and segments[0]:
            return [json_contents(uri, await self.dataset(segments[0]))]
        if parts.netloc == "datasets" and len(segments) == 2 and segments[0] and segments[1] == "cases":
            return [await self.cases(uri, segments[0], page_of(uri, parts.query))]
        if parts.netloc == "graphs" and len(segments) == 2 and segments[0] and segments[1] == "image":
            return [await self.image(uri, segments[0])]
        raise unknown_uri(uri)

    async def activity(self) -> dict[str, Any]:
        """The session's calls of tools that change the document (not the reads, resources' own included), the last
        ACTIVITY_CALLS of them, each with what it did: the first line of CODAP's answer. Read from the relay, so
        it answers while the plugin is away too."""
        specs = {t["name"]: t for t in await self.relay.sessions.manifest(self.session)}
        items, total = await self.relay.log.recent(
            self.session.code,
            # the session's own tools only: the relay's own questions (an app asking to connect) are no calls
            keep=lambda r: r.tool in specs and changes_document(r.tool, specs[r.tool].get("annotations")),
            limit=ACTIVITY_CALLS,
        )
        return {
            "total": total,
            "calls": [
                {
                    "seq": item.request.seq,
                    "tool": item.request.tool,
                    "title": tool_title(specs.get(item.request.tool, {"name": item.request.tool})),
                    "status": item.status,
                    "queuedAt": iso(item.request.created_at),
                    "summary": summary(item.answer),
                    "error": item.request.error_code,
                }
                for item in items
            ],
        }

    async def image(self, uri: str, graph: str) -> Contents:
        number = whole_number(graph, MAX_ID_DIGITS)
        too_large = number is not None and number > 2**53 - 1
        if too_large or (number is None and graph.isascii() and graph.isdigit()):
            raise ResourceError("invalid", f"{uri}: a graph's id is a whole number below 2**53 ({graph[:20]!r}).")
        args: dict[str, Any] = {"graph": graph if number is None else number}  # else a name, whatever its letters
        try:
            result = await self.tool("get_codap_graph_image", args)
        except ResourceError as exc:
            if exc.kind == "codap_error" and exc.data.get("codapError") in ("invalid_arguments", "graph_not_found"):
                raise ResourceError("not_found", exc.message, **exc.data) from None
            raise
        for item in result.get("content", []):
            if isinstance(item, dict) and item.get("type") == "image":
                return Contents(uri, str(item.get("mimeType", "image/png")), blob=str(item.get("data", "")))
        raise ResourceError("codap_error", f"CODAP gave no picture of the graph {graph}.")
