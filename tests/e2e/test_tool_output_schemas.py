"""Typed results in the real CODAP: each typed tool the class session does not call, called once on a small
dataset, answers structuredContent that validates against its outputSchema. With test_class_session.py (whose
Lesson validates every answer) every tool that declares an outputSchema is covered; the last test checks that."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codap_relay.catalog import plugin_tool, plugin_tools
from codap_relay.testing.output_schema import check_output, typed_tools
from codap_relay.testing.plugin_page import McpClient
from codap_relay.testing.real_codap import CodapPage, codap_pages

pytestmark = [pytest.mark.browser, pytest.mark.tools]

CLASS_SESSION = Path(__file__).with_name("test_class_session.py")
CALLED: set[str] = set()


@pytest.fixture(scope="module")
def codap(browser: Any, codap_url: str, relay_url: str) -> Iterator[CodapPage]:
    with codap_pages(browser, codap_url) as pages:
        yield pages(f"{relay_url}/plugin/")


def typed(codap: CodapPage) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        structured: dict[str, Any] = codap.done(name, args)["structuredContent"]
        check_output(name, structured)
        CALLED.add(name)
        return structured

    return call


def test_each_remaining_typed_tool_answers_its_output_schema(codap: CodapPage) -> None:
    call = typed(codap)
    call("get_codap_status", {})
    call("get_codap_status", {"includeDatasets": False, "includeComponents": False})
    call("create_codap_dataset", {
        "datasetName": "shapes",
        "dataType": "custom",
        "recordCount": 3,
        "customData": [
            {"kind": "square", "side": 2, "lat": 42.3, "long": -71.1},
            {"kind": "square", "side": 3, "lat": 40.7, "long": -74.0},
            {"kind": "circle", "side": 5, "lat": 37.8, "long": -122.4},
        ],
    })  # fmt: skip
    call("get_codap_datasets", {})
    call("get_codap_status", {})
    call("sort_codap_cases", {"datasetName": "shapes", "attribute": "side", "descending": True})
    call("add_codap_attribute", {"datasetName": "shapes", "name": "area", "formula": "side * side"})
    call("delete_codap_attribute", {"datasetName": "shapes", "name": "area"})
    call("import_codap_data", {"datasetName": "more shapes", "csv": "kind,side\ntriangle,4\nhexagon,1\n"})
    call("group_codap_cases", {"datasetName": "shapes", "attributes": ["kind"]})
    call("select_codap_cases", {"datasetName": "shapes", "where": "side > 2"})
    call("get_codap_selection", {"datasetName": "shapes"})
    call("get_codap_selection", {"datasetName": "shapes", "collectionName": codap_parent(codap)})
    call("select_codap_cases", {"datasetName": "shapes", "mode": "clear"})
    call("get_codap_selection", {"datasetName": "shapes"})
    dots = {"datasetName": "shapes", "graphType": "dot_plot", "xAttribute": "side", "title": "Sides"}
    call("create_codap_graph", dots)
    call("update_codap_graph", {"graph": "Sides", "pointSize": 2, "xAxisMin": 0, "xAxisMax": 10})
    call("add_codap_adornment", {"graph": "Sides", "adornment": "mean"})
    call("remove_codap_adornment", {"graph": "Sides", "adornment": "mean"})
    call("get_codap_graph_image", {"graph": "Sides", "maxSize": 300})
    call("create_codap_map", {"datasetName": "shapes", "title": "Where"})
    call("undo_codap", {})
    call("redo_codap", {"steps": 2})
    call("codap_api_help", {})
    call("codap_api_help", {"topic": "graphs"})
    # The digest of a changing tool: CODAP's document as it stands.
    final = call("delete_codap_dataset", {"datasetName": "more shapes"})
    assert {d["name"] for d in final["document"]["datasets"]} == {"shapes"}


def codap_parent(codap: CodapPage) -> str:
    collections = codap.ok({"action": "get", "resource": "dataContext[shapes].collectionList"})
    assert len(collections) == 2, collections
    return str(collections[0]["name"])


def test_every_typed_tool_is_checked_here_or_in_the_class_session() -> None:
    """The union of this module's calls and the class session's covers every tool with an outputSchema, and
    codap_api alone stays untyped."""
    assert CALLED, "run with the test above"
    session = CLASS_SESSION.read_text("utf-8")
    in_session = {name for name in typed_tools() if f'"{name}"' in session}
    assert set(typed_tools()) - CALLED - in_session == set()
    assert [t["name"] for t in plugin_tools() if "outputSchema" not in t] == ["codap_api"]


def test_typed_results_over_mcp_with_the_sdk_client(codap: CodapPage) -> None:
    """The official SDK client lists each tool's outputSchema, validates a typed call's structured_content itself
    (it raises on a mismatch), and an error result carries isError and the structured body {error, message, …}."""
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as mcp:
        listed = {t.name: t for t in mcp.tools()}
        assert {n: t.output_schema for n, t in listed.items()} == {
            t["name"]: t.get("outputSchema") for t in plugin_tools()
        }
        mcp.call("create_codap_dataset", {
            "datasetName": "typed over mcp", "dataType": "random_numbers", "recordCount": 4,
        })  # fmt: skip
        stats = mcp.call("compute_codap_statistics", {"datasetName": "typed over mcp", "attributes": ["x", "y"]})
        assert stats.is_error is False
        check_output("compute_codap_statistics", stats.structured_content)
        assert stats.structured_content["caseCount"] == 4 == len(codap.items("typed over mcp"))
        schema = plugin_tool("compute_codap_statistics")
        assert schema is not None and set(schema["outputSchema"]["required"]) <= set(stats.structured_content)

        failed = mcp.call("export_codap_data", {"datasetName": "no such data"})
        assert failed.is_error is True
        body = failed.structured_content
        assert body["error"] == "dataset_not_found" and "typed over mcp" in body["available"]
        assert "no such data" in body["message"] and "no such data" in failed.content[0].text
