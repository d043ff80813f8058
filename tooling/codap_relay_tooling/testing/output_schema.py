"""Checks a typed tool's structuredContent against the outputSchema its definition declares (MCP typed results)."""

from __future__ import annotations

from typing import Any

from codap_relay.catalog import plugin_tool, plugin_tools


def typed_tools() -> list[str]:
    """The plugin's tools that declare an outputSchema (every typed tool; codap_api stays untyped)."""
    return [t["name"] for t in plugin_tools() if "outputSchema" in t]


def check_output(name: str, structured: Any) -> None:
    """Raise AssertionError naming the path and rule when ``structured`` does not match ``name``'s outputSchema."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    spec = plugin_tool(name)
    assert spec is not None, f"the plugin has no tool {name}"
    schema = spec.get("outputSchema")
    if schema is None:
        return
    error = best_match(Draft202012Validator(schema).iter_errors(structured))
    if error is not None:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(root)"
        raise AssertionError(f"{name} structuredContent{path}: {error.message}")
