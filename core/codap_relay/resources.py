"""The open CODAP document as read-only resources, read live through the plugin.

Each read queues a call of one of the plugin's read-only tools (status, datasets, export, graph image) and waits
for CODAP's answer, as ``tools/call`` does: the relay keeps nothing of the document. Transport-free: the MCP
endpoint (mcp/server.py through mcp/resources.py) and the HTTP routes (``GET /resources``, ``…/read``) use it.

URIs (names are URL-encoded):

- ``codap://datasets``: every dataset with its collections, attribute count and case count (JSON).
- ``codap://components``: every component of the document (JSON).
- ``codap://activity``: the session's calls of tools that change the document, each with what it did (JSON; read
  from the relay, not the plugin).
- ``codap://datasets/{name}``: one dataset's collections, attributes (type, unit, formula...), example cases.
- ``codap://datasets/{name}/cases``: every case as CSV; over ``PAGE_BYTES`` it comes in pages
  (``…/cases?page=2``), each saying on its first line which page it is, how many there are and the next one.
- ``codap://graphs/{name}/image``: the graph as CODAP draws it (PNG).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from . import errors as e
from .catalog import changes_document, tool_title
from .clock import iso
from .jsonvalues import dumps
from .manifest import find_tool
from .records import SessionRecord
from .relay import Relay
from .tool_content import summary

SCHEME = "codap"
MAX_URI_CHARS = 2048  # a resource URI longer than this is refused (names are titles, not documents)
MAX_DIGITS = 9  # a page number: ASCII digits, at most this many
# CODAP v3's component ids are large (15 digits seen); JavaScript holds whole numbers exactly up to 2**53 - 1.
MAX_ID_DIGITS = 16
PAGE_BYTES = 200_000  # a CSV larger than this (UTF-8) comes in pages of at most this size each
EXAMPLE_CASES = 5
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


class ResourceError(Exception):
    """A read that cannot be answered: ``kind`` is not_found, not_connected, timeout, codap_error or invalid."""

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.data = data


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    size: int | None = None


@dataclass(frozen=True)
class Contents:
    uri: str
    mime_type: str
    text: str | None = None
    blob: str | None = None  # base64
    meta: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if self.text is not None:
            out["text"] = self.text
        if self.blob is not None:
            out["blob"] = self.blob
        if self.meta:
            out["_meta"] = self.meta
        return out


def dataset_uri(name: str, part: str = "") -> str:
    return f"{SCHEME}://datasets/{quote(name, safe='')}{part}"


def graph_uri(name: str) -> str:
    return f"{SCHEME}://graphs/{quote(name, safe='')}/image"


def graph_label(component: dict[str, Any]) -> str:
    """What a graph is called in its URI: its title as CODAP shows it, else its name, else its id."""
    for key in ("title", "name"):
        value = component.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return str(component.get("id", ""))


@dataclass
class DocumentReader:
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
            raise _unknown_uri(uri)
        if parts.netloc == "datasets" and not segments:
            return [self._json(uri, await self.datasets())]
        if parts.netloc == "components" and not segments:
            status = await self.structured("get_codap_status", {"includeDatasets": False})
            return [self._json(uri, {"components": status.get("components", [])})]
        if parts.netloc == "activity" and not segments:
            return [self._json(uri, await self.activity())]
        if parts.netloc == "datasets" and len(segments) == 1 and segments[0]:
            return [self._json(uri, await self.dataset(segments[0]))]
        if parts.netloc == "datasets" and len(segments) == 2 and segments[0] and segments[1] == "cases":
            return [await self.cases(uri, segments[0], _page_of(uri, parts.query))]
        if parts.netloc == "graphs" and len(segments) == 2 and segments[0] and segments[1] == "image":
            return [await self.image(uri, segments[0])]
        raise _unknown_uri(uri)

    @staticmethod
    def _json(uri: str, value: Any) -> Contents:
        return Contents(uri, "application/json", text=dumps(value, ensure_ascii=False, indent=1))

    async def activity(self) -> dict[str, Any]:
        """The session's calls of tools that change the document (not the reads, resources' own included), the last
        ACTIVITY_CALLS of them, each with what it did: the first line of CODAP's answer. Read from the relay, so
        it answers while the plugin is away too."""
        specs = {t["name"]: t for t in await self.relay.sessions.manifest(self.session)}
        items, total = await self.relay.log.recent(
            self.session.code,
            keep=lambda r: changes_document(r.tool, specs.get(r.tool, {}).get("annotations")),
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

    async def datasets(self) -> dict[str, Any]:
        listed = await self.structured("get_codap_datasets", {})
        return {
            "datasets": [
                {
                    "name": d.get("name"),
                    "title": d.get("title"),
                    "caseCount": d.get("caseCount"),
                    "attributeCount": len(d.get("attributes", [])),
                    "collections": [
                        {
                            "name": c.get("name"),
                            "caseCount": c.get("caseCount"),
                            "attributeCount": len(c.get("attributes", [])),
                        }
                        for c in d.get("collections", [])
                    ],
                    "uri": dataset_uri(str(d.get("name"))),
                    "casesUri": dataset_uri(str(d.get("name")), "/cases"),
                }
                for d in listed.get("datasets", [])
            ]
        }

    async def dataset(self, name: str) -> dict[str, Any]:
        exported = await self._export(name, {"format": "json", "includeMetadata": True})
        found = str(exported.get("datasetName", name))
        metadata = exported.get("metadata", {})
        columns = {c.get("name"): c for c in metadata.get("attributes", [])}
        details = await self._attribute_details(found)
        rows = exported.get("rows", [])
        collections = [
            {
                "name": c.get("name"),
                "attributes": [
                    attribute(columns.get(a, {"name": a}), details.get(a, {})) for a in c.get("attributes", [])
                ],
            }
            for c in metadata.get("collections", [])
        ]
        return {
            "name": found,
            "title": metadata.get("title"),
            "caseCount": exported.get("rowCount", len(rows)),
            "collections": collections,
            "exampleCases": rows[:EXAMPLE_CASES],
            "casesUri": dataset_uri(found, "/cases"),
        }

    async def _attribute_details(self, dataset: str) -> dict[str, dict[str, Any]]:
        """Each attribute as CODAP describes it (formula, description, precision), read with ``codap_api``
        (``get dataContext[…]``: collections and attributes, no cases). Empty where the session's plugin has no
        codap_api or CODAP refuses the name: the export's types and units still stand."""
        if not any(t.get("name") == "codap_api" for t in await self.relay.sessions.manifest(self.session)):
            return {}
        try:
            got = await self.structured("codap_api", {"action": "get", "resource": f"dataContext[{dataset}]"})
        except ResourceError as exc:
            if exc.kind in ("not_connected", "timeout"):
                raise
            return {}
        values = got.get("values", got)
        collections = values.get("collections", []) if isinstance(values, dict) else []
        return {
            str(a.get("name")): a
            for c in collections
            if isinstance(c, dict)
            for a in c.get("attrs", [])
            if isinstance(a, dict)
        }

    async def cases(self, uri: str, name: str, page: int) -> Contents:
        exported = await self._export(name, {"format": "csv"})
        data = exported.get("data", "")
        found = str(exported.get("datasetName", name))
        rows = int(exported.get("rowCount", 0))
        pages = paginate(data)
        if page > len(pages):
            raise ResourceError(
                "not_found",
                f"{found} has {rows} cases in {len(pages)} page(s) of CSV; there is no page {page}. Read "
                f"{page_uri(found, 1)} first.",
                pages=len(pages),
            )
        if len(pages) == 1:
            return Contents(uri, "text/csv", text=data, meta={"rows": rows, "page": 1, "pages": 1})
        first, last, text = pages[page - 1]
        next_uri = page_uri(found, page + 1) if page < len(pages) else None
        note = (
            f"# {found}: page {page} of {len(pages)}, rows {first}-{last} of {rows} (CSV over {PAGE_BYTES:,} bytes "
            "comes in pages). " + (f"Next: {next_uri}" if next_uri else "This is the last page.")
        )
        meta: dict[str, Any] = {"rows": rows, "page": page, "pages": len(pages), "firstRow": first, "lastRow": last}
        if next_uri:
            meta["next"] = next_uri
        return Contents(uri, "text/csv", text=f"{note}\r\n{text}", meta=meta)

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

    async def _export(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return await self.structured("export_codap_data", {"datasetName": name, **args})


DETAILS = ("formula", "description", "precision")


def attribute(column: dict[str, Any], detail: dict[str, Any]) -> dict[str, Any]:
    """An attribute for codap://datasets/{name}: the export's name, type, unit, title, and CODAP's formula,
    description and precision where it has them."""
    out = {k: v for k, v in column.items() if k != "collection"}
    for key in DETAILS:
        value = detail.get(key)
        if value not in (None, ""):
            out[key] = value
    return out


def page_uri(dataset: str, page: int) -> str:
    return dataset_uri(dataset, "/cases") + ("" if page == 1 else f"?page={page}")


def paginate(csv: str, limit: int = PAGE_BYTES) -> list[tuple[int, int, str]]:
    """The CSV whole when it fits in ``limit`` bytes, else pages of whole rows, each with the header:
    ``(first row, last row, text)`` (rows counted from 1). A page holds at least one row."""
    if len(csv.encode("utf-8")) <= limit:
        return [(1, max(0, csv.count("\r\n")), csv)]
    header, _, body = csv.partition("\r\n")
    lines = body.split("\r\n")
    pages: list[tuple[int, int, str]] = []
    start = 0
    size = len(header.encode("utf-8"))
    chunk: list[str] = []
    for i, line in enumerate(lines):
        cost = len(line.encode("utf-8")) + 2
        if chunk and size + cost > limit:
            pages.append((start + 1, i, "\r\n".join([header, *chunk])))
            start, chunk, size = i, [], len(header.encode("utf-8"))
        chunk.append(line)
        size += cost
    pages.append((start + 1, len(lines), "\r\n".join([header, *chunk])))
    return pages


def _page_of(uri: str, query: str) -> int:
    if not query:
        return 1
    page = whole_number(parse_qs(query).get("page", [""])[-1])
    if page is None or page < 1:
        raise ResourceError("invalid", f"{uri}: page must be a whole number from 1 (digits 0-9, at most {MAX_DIGITS}).")
    return page


def whole_number(raw: str, max_digits: int = MAX_DIGITS) -> int | None:
    """``raw`` as a number if it is 1 to ``max_digits`` ASCII digits; else None. ``str.isdigit`` alone also takes
    ``²`` and other digits ``int`` refuses, and ``int`` refuses more than 4,300 digits."""
    if not 0 < len(raw) <= max_digits or not raw.isascii() or not raw.isdigit():
        return None
    return int(raw)


def _unknown_uri(uri: str) -> ResourceError:
    return ResourceError(
        "not_found",
        f"No resource {uri}. The relay serves codap://datasets, codap://components, codap://activity, "
        "codap://datasets/NAME, "
        "codap://datasets/NAME/cases and codap://graphs/NAME/image (names URL-encoded); resources/list gives them "
        "for the open document.",
    )
