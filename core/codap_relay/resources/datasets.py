"""A dataset as resources: every dataset in brief (codap://datasets), one with its attributes as CODAP describes
them and a few example cases (codap://datasets/{name}), and its cases as CSV, in pages when large
(codap://datasets/{name}/cases)."""

from __future__ import annotations

from typing import Any

from .contents import Contents, ResourceError
from .reader import PluginReads
from .uris import dataset_uri, page_uri

PAGE_BYTES = 200_000  # a CSV larger than this (UTF-8) comes in pages of at most this size each
EXAMPLE_CASES = 5
DETAILS = ("formula", "description", "precision")


class DatasetReads(PluginReads):
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
        exported = await self.export(name, {"format": "json", "includeMetadata": True})
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
        exported = await self.export(name, {"format": "csv"})
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


def attribute(column: dict[str, Any], detail: dict[str, Any]) -> dict[str, Any]:
    """An attribute for codap://datasets/{name}: the export's name, type, unit, title, and CODAP's formula,
    description and precision where it has them."""
    out = {k: v for k, v in column.items() if k != "collection"}
    for key in DETAILS:
        value = detail.get(key)
        if value not in (None, ""):
            out[key] = value
    return out


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
