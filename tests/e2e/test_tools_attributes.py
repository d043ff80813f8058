"""The attributes family inside the real CODAP app: add, change and delete attributes (formulas checked by CODAP),
delete datasets, import CSV text or an https CSV file. Every effect is read back from CODAP with ``codap.ok``
(requests from the plugin's frame that bypass the plugin's code), never taken from the tool's own answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from codap_relay_tooling.testing.real_codap import CodapPage, self_signed_certificate
from codap_relay_tooling.testing.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.tools]

CSV = 'name,zip,height,note\r\nAnn,007,1.50,"likes ""tea"", cake"\r\nBo,010,172,"two\r\nlines"\r\nCy,,-3,\r\n'


@pytest.fixture(scope="module")
def browser_args() -> list[str]:
    """The test's CSV server on loopback has a self-signed certificate: accept it, as a real site's is."""
    return ["--ignore-certificate-errors"]


@pytest.fixture(scope="module")
def csv_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """An https server of CSV files: /data.csv allows cross-origin reads (CORS), /closed.csv does not,
    /page.csv is a web page, anything else is missing (404, readable). Yields its base URL and the paths it was
    asked for."""
    asked: list[str] = []

    async def data(request: Request) -> Response:
        asked.append(request.url.path)
        return PlainTextResponse(CSV, media_type="text/csv", headers={"Access-Control-Allow-Origin": "*"})

    async def closed(request: Request) -> Response:
        asked.append(request.url.path)
        return PlainTextResponse(CSV, media_type="text/csv")

    async def page(request: Request) -> Response:
        asked.append(request.url.path)
        return Response("<html></html>", media_type="text/html", headers={"Access-Control-Allow-Origin": "*"})

    async def missing(request: Request) -> Response:
        asked.append(request.url.path)
        return PlainTextResponse("not here", status_code=404, headers={"Access-Control-Allow-Origin": "*"})

    app = Starlette(
        routes=[
            Route("/data.csv", data),
            Route("/closed.csv", closed),
            Route("/page.csv", page),
            Route("/{path:path}", missing),
        ]
    )
    tls = self_signed_certificate(tmp_path_factory.mktemp("csv_tls"))
    with serve_app(app, tls=tls) as url:
        yield url, asked


# --- helpers -------------------------------------------------------------------------------------------------


def dataset_id(codap: CodapPage, name: str) -> int:
    (found,) = [d["id"] for d in codap.ok({"action": "get", "resource": "dataContextList"}) if d["name"] == name]
    return int(found)


def collections(codap: CodapPage, dataset: str) -> list[dict[str, Any]]:
    """Each collection of a dataset with its attributes as CODAP describes them (formula, unit, type, …)."""
    did = dataset_id(codap, dataset)
    listed = codap.ok({"action": "get", "resource": f"dataContext[{did}].collectionList"})
    out = []
    for c in listed:
        full = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[{c['id']}]"})
        out.append({"name": c["name"], "id": c["id"], "attrs": full["attrs"]})
    return out


def attributes(codap: CodapPage, dataset: str) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for c in collections(codap, dataset) for a in c["attrs"]}


def column(codap: CodapPage, dataset: str, attr: str) -> list[Any]:
    """An attribute's values in the child-most collection's case order, as CODAP holds them."""
    did = dataset_id(codap, dataset)
    last = collections(codap, dataset)[-1]["id"]
    cases = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[{last}].allCases"})["cases"]
    return [c["case"]["values"].get(attr) for c in cases]


def make(codap: CodapPage, name: str, rows: list[dict[str, Any]]) -> None:
    codap.done(
        "create_codap_dataset",
        {"datasetName": name, "dataType": "custom", "recordCount": len(rows), "customData": rows},
    )


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


ROWS = [{"x": 1, "g": "a"}, {"x": 2, "g": "a"}, {"x": 5, "g": "b"}]


# --- add_codap_attribute -------------------------------------------------------------------------------------


def test_add_attribute_with_a_formula_shows_the_values_codap_computed(codap: CodapPage) -> None:
    make(codap, "AddF", ROWS)
    result = codap.done(
        "add_codap_attribute",
        {
            "datasetName": "AddF",
            "name": "double",
            "formula": "x * 2",
            "type": "numeric",
            "unit": "m",
            "description": "twice x",
            "precision": 1,
        },
    )
    attr = attributes(codap, "AddF")["double"]
    assert (attr["formula"], attr["unit"], attr["type"], attr["precision"], attr["description"]) == (
        "x * 2",
        "m",
        "numeric",
        1,
        "twice x",
    )
    assert column(codap, "AddF", "double") == [2, 4, 10]
    assert result["structuredContent"]["firstValues"] == [2, 4, 10]
    assert "2, 4, 10" in text(result) and "Document now:" in text(result)

    plain = codap.done("add_codap_attribute", {"datasetName": "AddF", "name": "notes", "type": "categorical"})
    assert attributes(codap, "AddF")["notes"]["type"] == "categorical"
    assert column(codap, "AddF", "notes") == ["", "", ""]
    assert "empty" in text(plain)


def test_add_attribute_refuses_a_formula_codap_cannot_evaluate_and_leaves_nothing(codap: CodapPage) -> None:
    make(codap, "AddBad", ROWS)
    before = list(attributes(codap, "AddBad"))
    syntax = codap.failed("add_codap_attribute", {"datasetName": "AddBad", "name": "y", "formula": "x +* 2"})
    assert syntax["code"] == "formula_error" and '"x +* 2"' in syntax["message"], syntax
    assert "Value expected" in syntax["data"]["codapError"] or "Syntax" in syntax["data"]["codapError"], syntax
    unknown = codap.failed("add_codap_attribute", {"datasetName": "AddBad", "name": "y", "formula": "nosuch + 1"})
    assert unknown["code"] == "formula_error" and "Undefined symbol nosuch" in unknown["message"], unknown
    function = codap.failed("add_codap_attribute", {"datasetName": "AddBad", "name": "y", "formula": "nofunc(x)"})
    assert "Undefined function nofunc" in function["message"], function
    assert list(attributes(codap, "AddBad")) == before  # nothing left behind

    exists = codap.failed("add_codap_attribute", {"datasetName": "AddBad", "name": "x"})
    assert exists["code"] == "attribute_exists" and "update_codap_attribute" in exists["message"], exists
    missing = codap.failed("add_codap_attribute", {"datasetName": "NoSuchSet", "name": "y"})
    assert missing["code"] == "dataset_not_found" and "AddBad" in missing["data"]["available"], missing
    coll = codap.failed("add_codap_attribute", {"datasetName": "AddBad", "name": "y", "collection": "nope"})
    assert coll["code"] == "collection_not_found" and coll["data"]["available"] == ["AddBad"], coll
    assert list(attributes(codap, "AddBad")) == before


def test_add_attribute_to_a_parent_collection_and_the_child_most_by_default(codap: CodapPage) -> None:
    make(codap, "Hier", ROWS)
    did = dataset_id(codap, "Hier")
    # Group by g: CODAP moves g into a new parent collection.
    codap.ok(
        {
            "action": "create",
            "resource": f"dataContext[{did}].collection",
            "values": [{"name": "groups", "parent": "_root", "attrs": []}],
        }
    )
    groups = next(c for c in collections(codap, "Hier") if c["name"] == "groups")
    codap.ok(
        {
            "action": "update",
            "resource": f"dataContext[{did}].attributeLocation[g]",
            "values": {"collection": groups["id"], "position": 0},
        }
    )
    assert collections(codap, "Hier")[0]["name"] == "groups"

    codap.done("add_codap_attribute", {"datasetName": "Hier", "name": "sq", "formula": "x * x"})
    codap.done(
        "add_codap_attribute", {"datasetName": "Hier", "name": "total", "formula": "sum(x)", "collection": "groups"}
    )
    layout = {c["name"]: [a["name"] for a in c["attrs"]] for c in collections(codap, "Hier")}
    assert "total" in layout["groups"] and "sq" in layout["Hier"], layout
    parent_cases = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[{groups['id']}].allCases"})
    assert sorted(c["case"]["values"]["total"] for c in parent_cases["cases"]) == [3, 5]

    # A parent formula that reads a child attribute without an aggregate: CODAP's error, nothing left.
    wrong = codap.failed(
        "add_codap_attribute", {"datasetName": "Hier", "name": "bad", "formula": "x + 1", "collection": "groups"}
    )
    assert wrong["code"] == "formula_error", wrong
    assert "bad" not in attributes(codap, "Hier")


# --- update_codap_attribute ----------------------------------------------------------------------------------


def test_update_attribute_changes_what_is_asked_and_says_before_and_after(codap: CodapPage) -> None:
    make(codap, "Upd", ROWS)
    codap.done("add_codap_attribute", {"datasetName": "Upd", "name": "y", "formula": "x + 1"})
    result = codap.done(
        "update_codap_attribute",
        {
            "datasetName": "Upd",
            "name": "y",
            "newName": "z",
            "formula": "x * 10",
            "unit": "kg",
            "precision": 0,
            "description": "ten x",
            "hidden": True,
        },
    )
    attr = attributes(codap, "Upd")["z"]
    assert (attr["formula"], attr["unit"], attr["precision"], attr["description"], attr["hidden"]) == (
        "x * 10",
        "kg",
        0,
        "ten x",
        True,
    )
    assert "y" not in attributes(codap, "Upd")
    assert column(codap, "Upd", "z") == [10, 20, 50]
    changes = result["structuredContent"]["changes"]
    assert changes["name"] == {"before": "y", "after": "z"}
    assert changes["formula"] == {"before": "x + 1", "after": "x * 10"}
    assert changes["hidden"] == {"before": False, "after": True}
    assert '"x + 1" → "x * 10"' in text(result)

    # Formula removed: CODAP keeps the last values as ordinary ones.
    removed = codap.done("update_codap_attribute", {"datasetName": "Upd", "name": "z", "formula": "", "hidden": False})
    attr = attributes(codap, "Upd")["z"]
    assert not attr["formula"] and attr["hidden"] is False
    assert column(codap, "Upd", "z") == [10, 20, 50]
    assert removed["structuredContent"]["changes"]["formula"]["after"] is None

    retyped = codap.done("update_codap_attribute", {"datasetName": "Upd", "name": "x", "type": "categorical"})
    assert attributes(codap, "Upd")["x"]["type"] == "categorical"
    assert retyped["structuredContent"]["changes"]["type"]["after"] == "categorical"


def test_update_attribute_errors_change_nothing(codap: CodapPage) -> None:
    make(codap, "UpdBad", ROWS)
    codap.done("add_codap_attribute", {"datasetName": "UpdBad", "name": "y", "formula": "x + 1"})
    before = attributes(codap, "UpdBad")
    bad = codap.failed(
        "update_codap_attribute", {"datasetName": "UpdBad", "name": "y", "formula": "nosuch * 2", "unit": "m"}
    )
    assert bad["code"] == "formula_error" and "Undefined symbol nosuch" in bad["message"], bad
    syntax = codap.failed("update_codap_attribute", {"datasetName": "UpdBad", "name": "y", "formula": "(x"})
    assert syntax["code"] == "formula_error" and '"(x"' in syntax["message"], syntax
    after = attributes(codap, "UpdBad")
    assert list(after) == list(before)  # no scratch attribute left
    assert after["y"]["formula"] == "x + 1" and not after["y"]["unit"]
    assert column(codap, "UpdBad", "y") == [2, 3, 6]

    # A cycle (x from y, y from x) shows only on x itself: all put back, x's own values included.
    cycle = codap.failed(
        "update_codap_attribute", {"datasetName": "UpdBad", "name": "x", "formula": "y * 2", "unit": "cm"}
    )
    assert cycle["code"] == "formula_error" and "Nothing was changed" in cycle["message"], cycle
    assert "Circular reference" in cycle["data"]["codapError"], cycle
    after = attributes(codap, "UpdBad")
    assert not after["x"]["formula"] and not after["x"]["unit"], after["x"]
    assert column(codap, "UpdBad", "x") == [1, 2, 5]
    assert column(codap, "UpdBad", "y") == [2, 3, 6]

    clash = codap.failed("update_codap_attribute", {"datasetName": "UpdBad", "name": "y", "newName": "x"})
    assert clash["code"] == "attribute_exists", clash
    unknown = codap.failed("update_codap_attribute", {"datasetName": "UpdBad", "name": "Y", "unit": "m"})
    assert unknown["code"] == "attribute_not_found" and '"y"' in unknown["message"], unknown
    assert set(unknown["data"]["available"]) == {"x", "g", "y"}
    nothing = codap.failed("update_codap_attribute", {"datasetName": "UpdBad", "name": "y"})
    assert nothing["code"] == "invalid_arguments" and "newName" in nothing["message"], nothing


# --- delete_codap_attribute and delete_codap_dataset ---------------------------------------------------------


def test_delete_attribute_says_what_remains_and_keeps_the_last_one(codap: CodapPage) -> None:
    make(codap, "Del", ROWS)
    codap.done("add_codap_attribute", {"datasetName": "Del", "name": "y", "formula": "x + 1"})
    result = codap.done("delete_codap_attribute", {"datasetName": "Del", "name": "x"})
    assert list(attributes(codap, "Del")) == ["g", "y"]
    assert result["structuredContent"]["brokenFormulas"] == ["y"]
    assert "g, y" in text(result) and '"y"' in text(result)
    codap.done("delete_codap_attribute", {"datasetName": "Del", "name": "y"})
    last = codap.failed("delete_codap_attribute", {"datasetName": "Del", "name": "g"})
    assert last["code"] == "last_attribute" and "delete_codap_dataset" in last["message"], last
    assert list(attributes(codap, "Del")) == ["g"]
    unknown = codap.failed("delete_codap_attribute", {"datasetName": "Del", "name": "x"})
    assert unknown["code"] == "attribute_not_found" and unknown["data"]["available"] == ["g"], unknown


def test_delete_dataset_says_what_it_removed_and_what_remains(codap: CodapPage) -> None:
    make(codap, "Gone", ROWS)
    make(codap, "Stays", ROWS)
    tables = [c for c in codap.components() if c["type"] == "caseTable"]
    result = codap.done("delete_codap_dataset", {"datasetName": "Gone"})
    names = codap.dataset_names()
    assert "Gone" not in names and "Stays" in names
    removed = result["structuredContent"]["removed"]
    assert removed["cases"] == 3 and removed["attributes"] == ["x", "g"]
    assert "Stays" in result["structuredContent"]["remainingDatasets"]
    # CODAP closed the case table of the deleted dataset, and only that one.
    closed = {c["id"] for c in result["structuredContent"]["closedComponents"]}
    gone = {c["id"] for c in tables} - {c["id"] for c in codap.components()}
    assert len(gone) == 1 and closed == gone, (closed, gone)
    assert "3 cases" in text(result) and "Stays" in text(result)
    missing = codap.failed("delete_codap_dataset", {"datasetName": "Gone"})
    assert missing["code"] == "dataset_not_found" and "Stays" in missing["data"]["available"], missing


# --- import_codap_data ---------------------------------------------------------------------------------------


def check_imported(codap: CodapPage, name: str) -> None:
    items = [i["values"] for i in codap.items(name)]
    assert [i["name"] for i in items] == ["Ann", "Bo", "Cy"]
    assert items[0]["note"] == 'likes "tea", cake' and items[1]["note"] == "two\r\nlines"
    assert [i["height"] for i in items] == [1.5, 172, -3]
    assert items[2]["zip"] == "" and items[2]["note"] == ""
    attrs = attributes(codap, name)
    assert attrs["zip"]["type"] == "categorical" and list(attrs) == ["name", "zip", "height", "note"]
    # CODAP keeps the text as written ("007"): its category map shows it.
    assert "007" in attrs["zip"]["_categoryMap"]["__order"], attrs["zip"]


def test_import_csv_text(codap: CodapPage) -> None:
    result = codap.done("import_codap_data", {"datasetName": "FromText", "csv": CSV})
    check_imported(codap, "FromText")
    assert result["structuredContent"]["rowCount"] == 3 and "3 rows" in text(result)
    assert result["structuredContent"]["caseTableId"] in {c["id"] for c in codap.components()}

    exists = codap.failed("import_codap_data", {"datasetName": "FromText", "csv": CSV})
    assert exists["code"] == "dataset_exists", exists
    broken = codap.failed("import_codap_data", {"datasetName": "Broken", "csv": 'a,b\n1,"open'})
    assert broken["code"] == "invalid_csv" and "line 2" in broken["message"], broken
    both = codap.failed("import_codap_data", {"datasetName": "Both", "csv": "a\n1", "url": "https://example.org/a.csv"})
    assert both["code"] == "invalid_arguments" and "exactly one" in both["message"], both
    assert not {"Broken", "Both"} & set(codap.dataset_names())


def test_import_from_an_https_url_shows_the_host_in_the_activity_log(
    codap: CodapPage, csv_server: tuple[str, list[str]]
) -> None:
    base, _ = csv_server
    result = codap.done("import_codap_data", {"datasetName": "FromUrl", "url": f"{base}/data.csv"})
    check_imported(codap, "FromUrl")
    host = base.split("//", 1)[1]
    assert result["structuredContent"]["source"] == {"url": f"{base}/data.csv", "host": host}
    entries = codap.frame.locator("#log li .entry-args").all_text_contents()
    assert f"FromUrl · from {host}" in entries, entries

    closed = codap.failed("import_codap_data", {"datasetName": "NoCors", "url": f"{base}/closed.csv"})
    assert closed["code"] == "url_fetch_failed" and "CORS" in closed["message"], closed
    page = codap.failed("import_codap_data", {"datasetName": "Page", "url": f"{base}/page.csv"})
    assert page["code"] == "url_not_csv", page
    missing = codap.failed("import_codap_data", {"datasetName": "Missing", "url": f"{base}/none.csv"})
    assert missing["code"] == "url_fetch_failed" and "404" in missing["message"], missing
    assert not {"NoCors", "Page", "Missing"} & set(codap.dataset_names())


def test_import_refuses_every_scheme_but_https_without_a_request(
    codap: CodapPage, csv_server: tuple[str, list[str]]
) -> None:
    base, asked = csv_server
    requests: list[str] = []
    codap.page.on("request", lambda r: requests.append(r.url))
    http_url = base.replace("https://", "http://") + "/data.csv"
    count = len(asked)
    for url in [http_url, "file:///etc/passwd", "data:text/csv,a%0A1", "javascript:alert(1)", "ftp://127.0.0.1/a.csv"]:
        refused = codap.failed("import_codap_data", {"datasetName": "Refused", "url": url})
        assert refused["code"] == "url_refused" and "Only https" in refused["message"], refused
    codap.page.wait_for_timeout(100)
    assert not [u for u in requests if "/data.csv" in u or u.startswith(("file:", "data:text/csv", "ftp:"))], requests
    assert len(asked) == count and "Refused" not in codap.dataset_names()
    entries = codap.frame.locator("#log li .entry-args").all_text_contents()
    host = base.split("//", 1)[1]
    assert f"Refused · from {host}" in entries, entries


# --- where a new dataset's case table goes -------------------------------------------------------------------


def shown_boxes(codap: CodapPage) -> dict[int, tuple[int, int, int, int]]:
    """Every shown component's (left, top, width, height), read from CODAP."""
    boxes = {}
    for c in codap.components():
        if not c.get("hidden"):
            shown = codap.ok({"action": "get", "resource": f"component[{c['id']}]"})
            p, d = shown["position"], shown["dimensions"]
            boxes[int(c["id"])] = (p["left"], p["top"], d["width"], d["height"])
    return boxes


def covering(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def check_table_placed(codap: CodapPage, result: dict[str, Any]) -> tuple[int, int, int, int]:
    """The new dataset's table covers no shown component, and the answer says where it is as CODAP has it."""
    facts = result["structuredContent"]
    tid = facts["caseTableId"]
    boxes = shown_boxes(codap)
    table = boxes.pop(tid)
    assert not [o for o, b in boxes.items() if covering(table, b)], (table, boxes)
    width, height = codap.frame.evaluate("() => [outerWidth, outerHeight]")
    beyond = table[0] + table[2] > width or table[1] + table[3] > height - 117  # CODAP's header takes 117 px
    placed = facts["placement"]
    assert placed["position"] == {"left": table[0], "top": table[1]}
    assert placed["size"] == {"width": table[2], "height": table[3]}
    assert placed["overlaps"] == [] and placed["beyondVisibleCanvas"] is beyond
    assert f"at ({table[0]}, {table[1]}), {table[2]} \u00d7 {table[3]} px" in text(result)
    return table


def test_a_new_datasets_table_goes_to_a_free_spot_and_the_answer_says_where(codap: CodapPage) -> None:
    # a text box over the whole canvas the person sees: CODAP puts a new table on top of it
    height = codap.page.evaluate("() => document.getElementsByClassName('free-tile-row')[0].clientHeight")
    whole = {"position": {"left": 0, "top": 0}, "dimensions": {"width": 1400, "height": height}}
    wall = codap.ok({"action": "create", "resource": "component", "values": {"type": "text", "text": "wall", **whole}})
    try:
        made = codap.done("create_codap_dataset", {"datasetName": "Placed", "dataType": "custom", "customData": ROWS})
        first = check_table_placed(codap, made)
        assert "movedFrom" in made["structuredContent"]["placement"]  # CODAP had put it over the wall
        imported = codap.done("import_codap_data", {"datasetName": "PlacedCsv", "csv": "a,b\n1,2\n3,4\n"})
        check_table_placed(codap, imported)
        beside = codap.done("import_codap_data", {"datasetName": "BelowCsv", "csv": "c\n5\n", "place": "below",
                                                  "relativeTo": made["structuredContent"]["caseTableId"]})  # fmt: skip
        below = check_table_placed(codap, beside)
        asked = beside["structuredContent"]["placement"]["asked"]
        assert asked["taken"] is True and asked["wanted"] == {"left": first[0], "top": first[1] + first[3] + 10}
        assert below[:2] == (first[0], first[1] + first[3] + 10)
        lonely = codap.failed("create_codap_dataset", {"datasetName": "Lonely", "dataType": "custom",
                                                       "customData": ROWS, "place": "below"})  # fmt: skip
        assert lonely["code"] == "invalid_arguments" and "Lonely" not in codap.dataset_names()
    finally:
        codap.ok({"action": "delete", "resource": f"component[{wall['id']}]"})
