"""Every tool end to end: the LLM posts over HTTP, the plugin runs it in (the test host's) CODAP, the LLM reads it.

What each tool does is tested once (the tools marker); pairing and the error path also run through local-api."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay.catalog import plugin_tools
from codap_relay.manifest import DEFAULT_TOOLS
from codap_relay_tooling.testing import ARTIFACTS, web
from codap_relay_tooling.testing.plugin_page import (
    CLASS_ROWS,
    CLASSES,
    MORE_CLASS_ROWS,
    PluginPage,
    call_tool,
    ok_result,
    wait_until,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def plugin(open_plugin: Any, relay_url: str) -> Iterator[PluginPage]:
    yield open_plugin(relay_url)


def tool(plugin: PluginPage, name: str, args: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = call_tool(plugin.relay, plugin.code(), name, args)
    return answer


def test_pairing_registers_the_manifest_and_sets_up_the_frame(plugin: PluginPage) -> None:
    meta = web.get(f"{plugin.relay}/metadata", params={"code": plugin.code()}).json()
    names = [t["name"] for t in meta["tools"]]
    assert names == [t["name"] for t in plugin_tools()]  # the plugin's own definitions, in catalog order
    assert {t["name"] for t in DEFAULT_TOOLS} <= set(names)
    frame = plugin.host("state.frame")
    assert frame["title"] == "CODAP Relay" and frame["dimensions"] == {"width": 380, "height": 600}
    assert {"success": True} in plugin.host("host.pluginReplies")  # it answered CODAP's own call
    status = web.get(f"{plugin.relay}/api/sessions/{plugin.code()}").json()
    assert status["connected"] is True
    assert "Expires in" in plugin.text("#time-left")


@pytest.mark.tools
def test_create_dataset_each_generator_opens_a_case_table(plugin: PluginPage) -> None:
    for data_type, count in (("random_numbers", 30), ("sample_students", 12), ("time_series", 1000)):
        name = f"gen {data_type}"
        result = ok_result(
            tool(plugin, "create_codap_dataset", {"datasetName": name, "dataType": data_type, "recordCount": count})
        )
        data = result["structuredContent"]
        assert data["recordCount"] == count
        ds = plugin.host(f"dataset({json.dumps(name)})")
        assert len(ds["items"]) == count
        assert [a["name"] for a in ds["collections"][0]["attrs"]] == [a["name"] for a in data["attributes"]]
        tables = [c for c in plugin.host("state.components") if c["type"] == "caseTable" and c["dataContext"] == name]
        assert len(tables) == 1
    time_attrs = {a["name"]: a["type"] for a in plugin.host('dataset("gen time_series")')["collections"][0]["attrs"]}
    assert time_attrs["date"] == "date"


@pytest.mark.tools
def test_create_custom_dataset_infers_types_and_refuses_duplicates(plugin: PluginPage) -> None:
    rows = [
        {"city": "Oslo", "temp": "4.5", "when": "2024-03-01", "tags": ["cold", "north"]},
        {"city": 'Quote "City", Inc', "temp": 21, "when": "2024-03-02", "tags": None},
    ]
    args = {"datasetName": "weather.v2 (test)", "dataType": "custom", "recordCount": 2, "customData": rows}
    result = ok_result(tool(plugin, "create_codap_dataset", args))
    types = {a["name"]: a["type"] for a in result["structuredContent"]["attributes"]}
    assert types == {"city": "categorical", "temp": "numeric", "when": "date", "tags": "categorical"}
    ds = plugin.host('dataset("weather.v2 (test)")')
    assert ds["items"][0]["values"]["tags"] == '["cold","north"]'
    again = tool(plugin, "create_codap_dataset", args)
    assert again["status"] == "failed" and again["error"]["code"] == "dataset_exists"
    assert plugin.host('count("create", "dataContext")') == 1
    assert ds["items"][1]["values"]["temp"] == 21 and ds["items"][0]["values"]["temp"] == 4.5  # CODAP reads numbers


@pytest.mark.tools
def test_add_cases_reports_the_new_total_and_ignored_fields(plugin: PluginPage) -> None:
    ok_result(
        tool(plugin, "create_codap_dataset", {"datasetName": "adds", "dataType": "random_numbers", "recordCount": 5})
    )
    cases = [{"index": 6, "x": 1.5, "y": 2, "group": "A", "colour": "red"}, {"index": 7, "x": 3, "y": 4, "group": "B"}]
    result = ok_result(tool(plugin, "add_codap_cases", {"datasetName": "adds", "cases": cases}))
    data = result["structuredContent"]
    assert data["added"] == 2 and data["totalCases"] == 7 and data["ignoredFields"] == ["colour"]
    assert "colour" in result["content"][0]["text"]
    assert len(plugin.host('dataset("adds")')["items"]) == 7


@pytest.mark.tools
def test_get_datasets_lists_names_attributes_and_counts(plugin: PluginPage) -> None:
    ok_result(
        tool(plugin, "create_codap_dataset", {"datasetName": "one", "dataType": "sample_students", "recordCount": 4})
    )
    result = ok_result(tool(plugin, "get_codap_datasets", {}))
    (one,) = [d for d in result["structuredContent"]["datasets"] if d["name"] == "one"]
    assert one["caseCount"] == 4 and "math_score" in one["attributes"]
    assert "one: 4 cases" in result["content"][0]["text"]


@pytest.mark.tools
def test_graphs_map_to_what_codap_draws(plugin: PluginPage) -> None:
    ok_result(
        tool(
            plugin, "create_codap_dataset", {"datasetName": "pupils", "dataType": "sample_students", "recordCount": 20}
        )
    )
    scatter = ok_result(
        tool(
            plugin,
            "create_codap_graph",
            {
                "datasetName": "pupils",
                "graphType": "scatterplot",
                "xAttribute": "study_hours",
                "yAttribute": "math_score",
                "title": "Hours vs score",
            },
        )
    )["structuredContent"]
    assert scatter["made"] == "scatter plot"
    line = ok_result(
        tool(
            plugin,
            "create_codap_graph",
            {"datasetName": "pupils", "graphType": "line_graph", "xAttribute": "age", "yAttribute": "height_cm"},
        )
    )["structuredContent"]
    assert "connecting lines" in line["made"]
    bars = ok_result(
        tool(
            plugin,
            "create_codap_graph",
            {"datasetName": "pupils", "graphType": "bar_chart", "xAttribute": "favorite_subject"},
        )
    )["structuredContent"]
    assert bars["made"].startswith("bar chart")
    hist = ok_result(
        tool(
            plugin,
            "create_codap_graph",
            {"datasetName": "pupils", "graphType": "histogram", "xAttribute": "math_score", "yAttribute": "age"},
        )
    )["structuredContent"]
    assert hist["made"].startswith("dot plot") and hist["notes"]
    graphs = {c["id"]: c for c in plugin.host("state.components") if c["type"] == "graph"}
    assert graphs[scatter["graphId"]]["xAttributeName"] == "study_hours"
    assert graphs[scatter["graphId"]]["yAttributeName"] == "math_score"
    assert graphs[scatter["graphId"]]["title"] == "Hours vs score"
    assert graphs[line["graphId"]]["showConnectingLines"] is True
    assert graphs[bars["graphId"]]["fused"] is True
    assert graphs[hist["graphId"]].get("yAttributeName") is None
    # CODAP itself would draw an empty graph for a wrong attribute; the tool refuses and lists the real ones
    bad = tool(
        plugin,
        "create_codap_graph",
        {"datasetName": "pupils", "graphType": "scatterplot", "xAttribute": "grade", "yAttribute": "shoe_size"},
    )
    assert bad["status"] == "failed" and bad["error"]["code"] == "attribute_not_found"
    assert "math_score" in bad["error"]["message"]
    assert len(graphs) == 4 == len([c for c in plugin.host("state.components") if c["type"] == "graph"])


@pytest.mark.tools
def test_status_lists_datasets_components_and_version(plugin: PluginPage) -> None:
    ok_result(
        tool(plugin, "create_codap_dataset", {"datasetName": "st", "dataType": "random_numbers", "recordCount": 3})
    )
    data = ok_result(tool(plugin, "get_codap_status", {}))["structuredContent"]
    assert data["codapVersion"] == "3.1.0-test-host"
    assert [d["name"] for d in data["datasets"]] == ["st"]
    assert [(c["type"], c.get("thisPlugin")) for c in data["components"]] == [("game", True), ("caseTable", None)]
    slim = ok_result(tool(plugin, "get_codap_status", {"includeDatasets": False, "includeComponents": False}))
    assert "datasets" not in slim["structuredContent"] and "components" not in slim["structuredContent"]


@pytest.mark.tools
def test_export_json_csv_tsv_with_quoting_and_hierarchy(plugin: PluginPage) -> None:
    rows = [{"name": 'Pat "PJ" O\'Neil', "note": "a,b\nc", "score": 7}, {"name": "Tab\there", "note": "", "score": 9.5}]
    ok_result(
        tool(
            plugin,
            "create_codap_dataset",
            {"datasetName": "ex", "dataType": "custom", "recordCount": 2, "customData": rows},
        )
    )
    as_json = ok_result(tool(plugin, "export_codap_data", {"datasetName": "ex"}))["structuredContent"]
    assert as_json["rows"] == rows and "metadata" not in as_json
    csv = ok_result(tool(plugin, "export_codap_data", {"datasetName": "ex", "format": "csv"}))["structuredContent"][
        "data"
    ]
    assert csv == 'name,note,score\r\n"Pat ""PJ"" O\'Neil","a,b\nc",7\r\nTab\there,,9.5'
    tsv = ok_result(tool(plugin, "export_codap_data", {"datasetName": "ex", "format": "tsv", "includeMetadata": True}))
    assert tsv["structuredContent"]["data"].split("\r\n")[2] == '"Tab\there"\t\t9.5'
    assert tsv["structuredContent"]["metadata"]["attributes"][2] == {
        "name": "score",
        "collection": "ex",
        "type": "numeric",
    }

    # a two-level dataset made through codap_api: rows are leaf cases carrying their parent's values
    ok_result(tool(plugin, "codap_api", CLASSES))
    rows = CLASS_ROWS + MORE_CLASS_ROWS
    ok_result(tool(plugin, "codap_api", {"action": "create", "resource": "dataContext[classes].item", "values": rows}))
    out = ok_result(
        tool(plugin, "export_codap_data", {"datasetName": "classes", "format": "csv", "includeMetadata": True})
    )
    assert out["structuredContent"]["data"] == "room,who,mark\r\nA1,Ann,3\r\nA1,Ben,4\r\nB2,Cy,5"
    assert "hierarchical" in out["content"][0]["text"]
    listed = ok_result(tool(plugin, "get_codap_datasets", {}))["structuredContent"]["datasets"]
    (classes,) = [d for d in listed if d["name"] == "classes"]
    assert [c["caseCount"] for c in classes["collections"]] == [2, 3]


@pytest.mark.tools
def test_codap_api_updates_and_deletes_items(plugin: PluginPage) -> None:
    ok_result(
        tool(plugin, "create_codap_dataset", {"datasetName": "raw", "dataType": "random_numbers", "recordCount": 3})
    )
    items = ok_result(tool(plugin, "codap_api", {"action": "get", "resource": "dataContext[raw].itemSearch[*]"}))
    first = items["structuredContent"]["values"][0]["id"]
    ok_result(
        tool(
            plugin,
            "codap_api",
            {"action": "update", "resource": f"dataContext[raw].itemByID[{first}]", "values": {"group": "Z"}},
        )
    )
    assert plugin.host('dataset("raw")')["items"][0]["values"]["group"] == "Z"
    ok_result(tool(plugin, "codap_api", {"action": "delete", "resource": f"dataContext[raw].itemByID[{first}]"}))
    assert len(plugin.host('dataset("raw")')["items"]) == 2


def test_codap_errors_reach_the_llm_with_codaps_message(plugin: PluginPage) -> None:
    missing = tool(plugin, "add_codap_cases", {"datasetName": "nowhere", "cases": [{"a": 1}]})
    assert missing["status"] == "failed" and missing["error"]["code"] == "dataset_not_found"
    assert 'CODAP has no dataset named "nowhere"' in missing["error"]["message"]
    raw = tool(plugin, "codap_api", {"action": "get", "resource": "dataContext[nowhere].collectionList"})
    assert raw["status"] == "failed" and raw["error"]["code"] == "codap_error"
    assert raw["error"]["message"].endswith("DataContext not found")
    unsupported = tool(plugin, "codap_api", {"action": "notify", "resource": "dataContextList"})
    assert "Unsupported action: notify/dataContextList" in unsupported["error"]["message"]
    blank = tool(plugin, "create_codap_dataset", {"datasetName": " ", "dataType": "random_numbers", "recordCount": 1})
    assert blank["error"]["code"] == "invalid_arguments"
    # the activity log shows each request with its summary and its error
    entries = wait_until(
        lambda: [e for e in plugin.log_entries() if e["state"].startswith("error")], "errors in the log"
    )
    assert any("Error: CODAP refused" in e["result"] and e["args"] == "notify dataContextList" for e in entries)


def test_screenshot_of_the_plugin_in_its_default_frame(plugin: PluginPage) -> None:
    ok_result(
        tool(plugin, "create_codap_dataset", {"datasetName": "shot", "dataType": "sample_students", "recordCount": 8})
    )
    ok_result(
        tool(
            plugin,
            "create_codap_graph",
            {"datasetName": "shot", "graphType": "scatterplot", "xAttribute": "age", "yAttribute": "height_cm"},
        )
    )
    tool(plugin, "add_codap_cases", {"datasetName": "missing", "cases": [{"a": 1}]})
    plugin.frame.locator("[data-copy=mcp]").click()
    wait_until(lambda: "copied" in plugin.text("#notice").lower() or "blocked" in plugin.text("#notice"), "copy notice")
    copied = plugin.frame.locator("#copied").input_value()
    assert copied == f"{plugin.relay}/mcp/{plugin.code()}"
    ARTIFACTS.mkdir(exist_ok=True)
    box = plugin.page.locator("#plugin").bounding_box()
    assert box["width"] == 380 and box["height"] == 600
    # everything fits the frame: no horizontal scrolling
    assert plugin.frame.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    plugin.page.locator("#plugin").screenshot(path=str(ARTIFACTS / "plugin.png"))
