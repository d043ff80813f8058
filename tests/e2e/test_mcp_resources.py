"""MCP resources, prompts and completion against the plugin in the real CODAP app, with the official Python SDK
client, and the same resources over plain HTTP (``GET /resources``, ``/resources/read``). Every content is checked
against CODAP's own state read back with ``codap.ok``. Runs in process and through local-api (the deployed shape).
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from mcp.shared.exceptions import MCPError

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.plugin_page import McpClient
from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser]

PNG = b"\x89PNG\r\n\x1a\n"
ROWS = [
    {"name": "Ann", "height": 150, "group": "A"},
    {"name": "Bo", "height": 162, "group": "B"},
    {"name": "Cy", "height": 171, "group": "A"},
    {"name": "Di", "height": 158, "group": "B"},
]


@pytest.fixture(scope="module")
def codap(pages: Callable[..., CodapPage], relay_url: str) -> CodapPage:
    page = pages(f"{relay_url}/plugin/")
    page.done(
        "create_codap_dataset",
        {"datasetName": "class data", "dataType": "custom", "recordCount": 4, "customData": ROWS},
    )
    page.done("add_codap_attribute", {"datasetName": "class data", "name": "tall", "formula": "height > 160"})
    page.done(
        "update_codap_attribute",
        {"datasetName": "class data", "name": "height", "unit": "cm", "description": "standing height", "precision": 1},
    )
    page.done(
        "create_codap_graph",
        {"datasetName": "class data", "graphType": "dot_plot", "xAttribute": "height", "title": "Heights"},
    )
    return page


@pytest.fixture(scope="module")
def mcp(codap: CodapPage) -> Iterator[McpClient]:
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as client:
        yield client


def collections_of(codap: CodapPage, dataset: str) -> list[dict[str, Any]]:
    listed = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].collectionList"})
    return [codap.ok({"action": "get", "resource": f"dataContext[{dataset}].collection[{c['name']}]"}) for c in listed]


def big_dataset(codap: CodapPage, name: str, width: int) -> list[list[str]]:
    """10,000 cases in chunks; each case has an index and a text `width` characters long."""
    rows = [{"i": i, "t": f"{i:05d}" + "x" * (width - 5)} for i in range(1, 10_001)]
    chunk = min(1000, 150_000 // (width + 20))
    codap.done(
        "create_codap_dataset",
        {"datasetName": name, "dataType": "custom", "recordCount": chunk, "customData": rows[:chunk]},
    )
    for start in range(chunk, 10_000, chunk):
        codap.done("add_codap_cases", {"datasetName": name, "cases": rows[start : start + chunk]})
    assert codap.ok({"action": "get", "resource": f"dataContext[{name}].itemCount"}) == 10_000
    return [[str(r["i"]), str(r["t"])] for r in rows]


def rows_of(text: str) -> list[list[str]]:
    lines = [line for line in text.split("\r\n") if not line.startswith("# ")]
    return list(csv.reader(io.StringIO("\r\n".join(lines))))


def test_list_and_templates_come_from_the_document(codap: CodapPage, mcp: McpClient) -> None:
    listed = {r.uri: r for r in mcp.resources()}
    held = codap.ok({"action": "get", "resource": "dataContextList"})
    for d in held:
        assert f"codap://datasets/{quote(d['name'], safe='')}" in listed
        assert listed[f"codap://datasets/{quote(d['name'], safe='')}/cases"].mime_type == "text/csv"
    assert "codap://datasets/class%20data" in listed  # names URL-encoded
    graphs = [c for c in codap.ok({"action": "get", "resource": "componentList"}) if c["type"] == "graph"]
    assert graphs and all(f"codap://graphs/{quote(g['title'], safe='')}/image" in listed for g in graphs)
    assert {"codap://datasets", "codap://components"} <= set(listed)
    templates = {t.uri_template: t.mime_type for t in mcp.resource_templates()}
    assert templates == {
        "codap://datasets/{name}": "application/json",
        "codap://datasets/{name}/cases": "text/csv",
        "codap://graphs/{name}/image": "image/png",
    }


def test_datasets_and_components_match_codap(codap: CodapPage, mcp: McpClient) -> None:
    (read,) = mcp.read("codap://datasets")
    datasets = {d["name"]: d for d in json.loads(read.text)["datasets"]}
    held = codap.ok({"action": "get", "resource": "dataContextList"})
    assert set(datasets) == {d["name"] for d in held}
    mine = datasets["class data"]
    assert mine["caseCount"] == codap.ok({"action": "get", "resource": "dataContext[class data].itemCount"}) == 4
    assert mine["attributeCount"] == sum(len(c["attrs"]) for c in collections_of(codap, "class data")) == 4
    (comps,) = mcp.read("codap://components")
    shown = {c["id"]: c for c in json.loads(comps.text)["components"]}
    assert set(shown) == {c["id"] for c in codap.ok({"action": "get", "resource": "componentList"})}


def test_one_dataset_has_attribute_details_and_example_cases(codap: CodapPage, mcp: McpClient) -> None:
    (read,) = mcp.read("codap://datasets/class%20data")
    assert read.mime_type == "application/json"
    described = json.loads(read.text)
    attrs = {a["name"]: a for c in described["collections"] for a in c["attributes"]}
    held = {a["name"]: a for c in collections_of(codap, "class data") for a in c["attrs"]}
    assert set(attrs) == set(held)
    assert attrs["height"]["unit"] == held["height"]["unit"] == "cm"
    assert attrs["height"]["description"] == held["height"]["description"] == "standing height"
    assert attrs["height"]["precision"] == held["height"]["precision"] == 1
    assert attrs["tall"]["formula"] == held["tall"]["formula"] == "height > 160"
    assert attrs["height"]["type"] == held["height"]["type"]
    assert [c["name"] for c in described["exampleCases"]] == ["Ann", "Bo", "Cy", "Di"]
    assert described["caseCount"] == 4


def test_unknown_dataset_and_graph_name_what_exists(mcp: McpClient) -> None:
    with pytest.raises(MCPError) as raised:
        mcp.read("codap://datasets/nope/cases")
    assert raised.value.error.code == -32002 and "class data" in raised.value.error.message
    with pytest.raises(MCPError) as raised:
        mcp.read("codap://graphs/nope/image")
    assert raised.value.error.code == -32002 and "Heights" in raised.value.error.message
    with pytest.raises(MCPError) as raised:
        mcp.read("codap://elsewhere")
    assert "codap://datasets" in raised.value.error.message


def test_cases_csv_whole_when_small_and_the_graph_is_a_png(codap: CodapPage, mcp: McpClient) -> None:
    (read,) = mcp.read("codap://datasets/class%20data/cases")
    assert read.mime_type == "text/csv"
    rows = rows_of(read.text)
    items = codap.ok({"action": "get", "resource": "dataContext[class data].itemSearch[*]"})
    assert rows[0] == ["name", "height", "group", "tall"]
    assert [r[:3] for r in rows[1:]] == [[str(i["values"][k]) for k in ("name", "height", "group")] for i in items]
    (picture,) = mcp.read("codap://graphs/Heights/image")
    assert picture.mime_type == "image/png" and base64.b64decode(picture.blob).startswith(PNG)


def test_10000_cases_whole_or_in_linked_pages(codap: CodapPage, mcp: McpClient) -> None:
    narrow = big_dataset(codap, "narrow", 6)
    (whole,) = mcp.read("codap://datasets/narrow/cases")
    assert not whole.text.startswith("#")
    assert rows_of(whole.text) == [["i", "t"], *narrow]
    wide = big_dataset(codap, "wide", 60)  # ~700 kB of CSV: pages
    got: list[list[str]] = []
    uri: str | None = "codap://datasets/wide/cases"
    pages = 0
    while uri is not None:
        (page,) = mcp.read(uri)
        pages += 1
        first = page.text.split("\r\n", 1)[0]
        assert first.startswith(f"# wide: page {pages} of ") and "rows" in first
        assert len(page.text.encode()) <= 200_500
        rows = rows_of(page.text)
        assert rows[0] == ["i", "t"]
        got.extend(rows[1:])
        uri = page.meta.get("next") if page.meta else None
        assert (uri is None) == ("last page" in first)
        if uri:
            assert f"Next: {uri}" in first
    assert pages == page.meta["pages"] > 1
    assert got == wide
    with pytest.raises(MCPError) as raised:
        mcp.read(f"codap://datasets/wide/cases?page={pages + 1}")
    assert f"{pages} page(s)" in raised.value.error.message


def test_completion_offers_the_documents_names(codap: CodapPage, mcp: McpClient) -> None:
    names = {d["name"] for d in codap.ok({"action": "get", "resource": "dataContextList"})}
    assert set(mcp.complete("codap://datasets/{name}", "name")) == names
    assert mcp.complete("codap://datasets/{name}/cases", "name", "cla") == ["class data"]
    assert mcp.complete("codap://graphs/{name}/image", "name", "He") == ["Heights"]
    assert set(mcp.complete("explore_dataset", "datasetName")) == names
    offered = mcp.complete("fit_line", "xAttribute", "", {"datasetName": "class data"})
    assert set(offered) == {"name", "height", "group", "tall"}


def test_six_prompts_list_and_render_with_completed_arguments(mcp: McpClient) -> None:
    prompts = {p.name: p for p in mcp.prompts()}
    assert len(prompts) >= 6
    dataset = mcp.complete("explore_dataset", "datasetName", "class")[0]
    args = {
        "explore_dataset": {"datasetName": dataset},
        "compare_groups": {"datasetName": dataset, "measureAttribute": "height", "groupAttribute": "group"},
        "fit_line": {"datasetName": dataset, "xAttribute": "height", "yAttribute": "height"},
        "clean_data": {"datasetName": dataset},
        "graph_for_question": {"datasetName": dataset, "question": "Are group A taller?"},
        "explain_screen": {"graph": mcp.complete("explain_screen", "graph", "H")[0]},
    }
    tools = {
        "explore_dataset": "compute_codap_statistics",
        "compare_groups": "groupBy group",
        "fit_line": "least_squares_line",
        "clean_data": "update_codap_cases",
        "graph_for_question": "get_codap_graph_image",
        "explain_screen": "codap://graphs/Heights/image",
    }
    for name, given in args.items():
        required = {a.name for a in prompts[name].arguments or [] if a.required}
        assert required <= set(given)
        got = mcp.prompt(name, given)
        (message,) = got.messages
        assert message.role == "user" and tools[name] in message.content.text
        assert len(message.content.text) < 1200
    with pytest.raises(MCPError) as raised:
        mcp.prompt("fit_line", {"datasetName": dataset})
    assert "xAttribute" in raised.value.error.message


def test_http_routes_give_the_same(codap: CodapPage, mcp: McpClient) -> None:
    code = codap.code()
    listed = web.get(f"{codap.relay}/resources", params={"code": code}, timeout=30)
    assert listed.status_code == 200
    assert {r["uri"] for r in listed.json()["resources"]} == {r.uri for r in mcp.resources()}
    assert len(listed.json()["prompts"]) >= 6
    for uri in ("codap://datasets/class%20data", "codap://datasets/class%20data/cases"):
        read = web.get(f"{codap.relay}/resources/read", params={"code": code, "uri": uri}, timeout=30)
        assert read.status_code == 200
        (via_mcp,) = mcp.read(uri)
        (item,) = read.json()["contents"]
        assert item["mimeType"] == via_mcp.mime_type and item["text"] == via_mcp.text
    picture = web.get(
        f"{codap.relay}/resources/read", params={"code": code, "uri": "codap://graphs/Heights/image"}, timeout=30
    ).json()["contents"][0]
    assert picture["mimeType"] == "image/png" and base64.b64decode(picture["blob"]).startswith(PNG)
    missing = web.get(f"{codap.relay}/resources/read", params={"code": code, "uri": "codap://datasets/nope"})
    assert missing.status_code == 404 and "class data" in missing.json()["message"]
    text = web.get(f"{codap.relay}/llms.txt", params={"code": code}).text
    assert "GET " in text and "/resources/read?code=" in text and "fit_line(" in text
