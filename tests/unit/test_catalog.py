"""The tool catalog as the documents show it: docs/tools.md and /llms.txt are written from the definitions."""

from __future__ import annotations

from pathlib import Path

from codap_relay.catalog import plugin_tools, tools_markdown, tools_text

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_tools_md_is_written_from_the_definitions() -> None:
    assert (DOCS / "tools.md").read_text("utf-8") == tools_markdown(), (
        "docs/tools.md is out of date: run `python -m codap_relay.catalog > docs/tools.md`"
    )


def test_every_tool_is_listed_once_for_http_models_and_in_the_docs() -> None:
    text, markdown = tools_text(), tools_markdown()
    for tool in plugin_tools():
        assert text.count(f"- {tool['name']}: ") == 1, tool["name"]
        assert markdown.count(f"### `{tool['name']}`") == 1, tool["name"]
