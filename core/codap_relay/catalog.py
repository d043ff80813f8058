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
def plugin_tool(name: str) -> dict[str, Any] | None:
    """The plugin's definition of ``name``, or None for a tool it does not have."""
    return next((t for t in plugin_tools() if t["name"] == name), None)
