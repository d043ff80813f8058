"""The tool catalog as the documents show it: docs/tools.md and /llms.txt are written from the definitions."""

from __future__ import annotations

from codap_relay.catalog import plugin_tools, tools_text
from codap_relay_tooling.tools_doc import COMMAND, TOOLS_MD, main, tools_markdown


def test_docs_tools_md_is_written_from_the_definitions_and_the_coverage_rows() -> None:
    assert TOOLS_MD.read_text("utf-8") == tools_markdown(), f"docs/tools.md is out of date: run `{COMMAND}`"
    assert main(["--check"]) == 0


def test_every_tool_is_listed_once_for_http_models_and_in_the_docs() -> None:
    text, markdown = tools_text(), tools_markdown()
    for tool in plugin_tools():
        assert text.count(f"- {tool['name']}: ") == 1, tool["name"]
        assert markdown.count(f"### `{tool['name']}`") == 1, tool["name"]
