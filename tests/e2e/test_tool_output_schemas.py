"""Typed results in the real CODAP: each typed tool the class session does not call, called once on a small
dataset, answers structuredContent that validates against its outputSchema. With test_class_session.py (whose
Lesson validates every answer) every tool that declares an outputSchema is covered; the last test checks that."""

from __future__ import annotations

import concurrent.futures
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay.catalog import plugin_tool, plugin_tools
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.output_schema import check_output, typed_tools
from codap_relay_tooling.testing.plugin_page import McpClient
from codap_relay_tooling.testing.real_codap import CodapPage, codap_pages

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
    call("compute_codap_statistics", {"datasetName": "more shapes", "attributes": ["side"],
                                      "groups": {"big": "side > 2", "small": "side <= 2"}})  # fmt: skip
    fixes = [{"where": "side > 2", "values": {"side": 5}}, {"where": 'kind = "hexagon"', "values": {"side": 2}}]
    call("update_codap_cases", {"datasetName": "more shapes", "updates": fixes})
    call("delete_codap_cases", {"datasetName": "more shapes", "where": 'kind = "hexagon"'})
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
    call("update_codap_map", {"map": "Where", "zoom": 3, "baseMap": "streets"})
    call("create_codap_slider", {"name": "scale", "value": 1, "min": 0, "max": 2})
    call("update_codap_slider", {"slider": "scale", "value": 0})
    call("create_codap_calculator", {})
    call("undo_codap", {})
    call("redo_codap", {"steps": 2})
    call("codap_api_help", {})
    call("codap_api_help", {"topic": "graphs"})
    call("set_aside_codap_cases", {"datasetName": "shapes", "where": "side > 4"})
    call("set_aside_codap_cases", {"datasetName": "shapes", "restore": True})
    call("update_codap_dataset", {"datasetName": "shapes", "title": "Shapes", "description": "polygons"})
    call("update_codap_table", {"datasetName": "shapes", "hideAttributes": ["lat"], "indexColumn": False})
    call("update_codap_table", {"datasetName": "shapes", "collapsed": True})
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
        mcp.call_to_the_end("create_codap_dataset", {
            "datasetName": "typed over mcp", "dataType": "random_numbers", "recordCount": 4,
        })  # fmt: skip
        asked = {"datasetName": "typed over mcp", "attributes": ["x", "y"]}
        stats = mcp.call_to_the_end("compute_codap_statistics", asked)
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


def sse_messages(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def streamed_call(url: str, rpc_id: str, name: str, args: dict[str, Any]) -> httpx.Response:
    call = {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": args, "_meta": {"progressToken": rpc_id}},
    }
    return web.post(url, json=call, headers=HEADERS, timeout=30)


def cancel(url: str, rpc_id: str) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rpc_id}}
    assert web.post(url, json=note, headers=HEADERS, timeout=10).status_code == 202


def test_progress_while_codap_runs_a_held_call_and_a_started_call_is_not_withdrawn(
    browser: Any, codap_url: str, relay_url: str
) -> None:
    """The browser goes offline after the plugin's stream is open: the request reaches the plugin, CODAP runs it,
    but its answer cannot reach the relay until the browser is back. Meanwhile the call's progress says where the
    request stands (queued, then delivered and running in CODAP) every 2 s. The client's cancellation comes too
    late to withdraw it: the plugin had it, so it finishes and its answer is kept."""
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        url = f"{relay_url}/mcp/{codap.code()}"
        args = {"datasetName": "made offline", "dataType": "random_numbers", "recordCount": 3}
        codap.page.context.set_offline(True)
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(streamed_call, url, "held-1", "create_codap_dataset", args)
                time.sleep(4.5)
                cancel(url, "held-1")
                time.sleep(1)
                codap.page.context.set_offline(False)
                answered = waiting.result(30)
        finally:
            codap.page.context.set_offline(False)
        assert answered.headers["content-type"].startswith("text/event-stream")
        messages = sse_messages(answered.text)
        progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        assert len(progress) >= 3 and all(p["progressToken"] == "held-1" for p in progress), messages
        assert "Queued" in progress[0]["message"] and "running in CODAP" in progress[-1]["message"], progress
        assert [p["progress"] for p in progress] == sorted({p["progress"] for p in progress})
        result = messages[-1]["result"]
        assert result.get("isError") is not True, result
        check_output("create_codap_dataset", result["structuredContent"])
        assert len(codap.items("made offline")) == 3


def test_a_cancelled_call_the_plugin_never_received_never_changes_codap(
    browser: Any, codap_url: str, relay_url: str
) -> None:
    """The plugin frame reloads while its stream cannot connect: the relay still counts the plugin as connected
    (seen moments ago), so a call is queued and waits, with progress saying so. The client cancels it; once the
    stream can connect again the plugin reconnects and never receives it: its activity log shows the call as
    withdrawn, CODAP has no such dataset, and the next call runs as usual."""
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        code = codap.code()
        url = f"{relay_url}/mcp/{code}"
        context = codap.page.context
        context.route("**/stream?**", lambda route: route.abort())
        # The reloading page's detach is lost too (as on a flaky network), so the relay still counts the plugin as
        # connected for a moment and queues the call; a delivered detach would have the call refused at once.
        context.route("**/detach?**", lambda route: route.abort())
        try:
            codap.reload_plugin()
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                args = {"datasetName": "never made", "dataType": "random_numbers", "recordCount": 3}
                waiting = pool.submit(streamed_call, url, "queued-1", "create_codap_dataset", args)
                time.sleep(4.5)
                cancel(url, "queued-1")
                answered = waiting.result(20)
        finally:
            context.unroute("**/stream?**")
            context.unroute("**/detach?**")
        messages = sse_messages(answered.text)
        progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        assert len(progress) >= 2 and all("Queued" in p["message"] for p in progress), progress
        result = messages[-1]["result"]
        assert result["isError"] is True and result["structuredContent"]["error"] == "cancelled", result
        assert codap.wait_paired() == code  # the same session, its stream open again
        # the plugin never received it, yet its activity log says what became of it
        row = codap.frame.locator("#log li.state-withdrawn")
        row.wait_for(timeout=15_000)
        assert "create_codap_dataset" in row.inner_text() and "never made" in row.inner_text()
        assert "withdrawn by the model before it ran" in row.inner_text()
        time.sleep(1)
        assert "never made" not in codap.dataset_names()
        assert codap.done("get_codap_datasets", {})["structuredContent"]["datasets"] == []
        assert "never made" not in codap.dataset_names()
