"""The plugin's tool definitions, read from the files the plugin itself loads (``plugin/js/tools/*.json`` in the
order ``catalog.json`` lists them), so a tool's name, title, annotations and schema are written once."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TOOLS_DIR = Path(__file__).resolve().parent / "plugin" / "js" / "tools"


@cache
def plugin_tools() -> tuple[dict[str, Any], ...]:
    """Every tool the codap-relay plugin registers, in its order."""
    families = json.loads((TOOLS_DIR / "catalog.json").read_text("utf-8"))["families"]
    tools: list[dict[str, Any]] = []
    for family in families:
        tools.extend(json.loads((TOOLS_DIR / f"{family}.json").read_text("utf-8")))
    return tuple(tools)


@cache
def plugin_manifest_id() -> str:
    """The content address of the manifest the plugin registers (its definitions, as shipped with the relay)."""
    from .records import manifest_id

    return manifest_id(list(plugin_tools()))


@cache
def plugin_tool(name: str) -> dict[str, Any] | None:
    """The plugin's definition of ``name``, or None for a tool it does not have."""
    return next((t for t in plugin_tools() if t["name"] == name), None)


def tool_title(spec: dict[str, Any]) -> str:
    title = spec.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    name: str = spec["name"]
    known = plugin_tool(name)
    if known is not None:
        return str(known["title"])
    words = name.replace("_", " ").strip()
    return (words[:1].upper() + words[1:]).replace("codap", "CODAP") or name


def declared_annotations(name: str, declared: Any = None) -> dict[str, Any] | None:
    """A tool's annotations: what its manifest declares (the one source of truth, which the plugin's trace replay
    reads too), else what the plugin's definitions say of the same tool; None for a tool nothing is known of."""
    if isinstance(declared, dict):
        return declared
    known = plugin_tool(name)
    return known["annotations"] if known is not None else None


def changes_document(name: str, declared: Any = None) -> bool:
    """Whether a call of the tool may change what the person sees in CODAP: every tool not declared read-only
    (one nothing is known of is assumed able to change anything)."""
    annotations = declared_annotations(name, declared)
    return not (isinstance(annotations, dict) and annotations.get("readOnlyHint") is True)


@cache
def headings() -> dict[str, str]:
    """Each family's heading, for the documents that list the tools."""
    catalog = json.loads((TOOLS_DIR / "catalog.json").read_text("utf-8"))
    return {f: str(catalog.get("headings", {}).get(f, f)) for f in catalog["families"]}


def by_family() -> list[tuple[str, list[dict[str, Any]]]]:
    """(heading, tools) for each family, in catalog order."""
    out = []
    for family, heading in headings().items():
        tools = json.loads((TOOLS_DIR / f"{family}.json").read_text("utf-8"))
        if tools:
            out.append((heading, tools))
    return out


def tools_text() -> str:
    """The tools as plain lines for /llms.txt: a heading per family, then ``name: title`` lines."""
    lines = []
    for heading, tools in by_family():
        lines.append(f"{heading}:")
        lines.extend(f"- {t['name']}: {t['title']}" for t in tools)
    return "\n".join(lines)
