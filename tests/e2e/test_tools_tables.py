"""What CODAP's case table and card offer beyond the cases, driven by the tools in the real CODAP app (v3.1.0): cases
set aside and brought back, the export that says so, a dataset's title, hidden attributes and the table's view.

Every effect is read back from CODAP itself with ``CodapPage.ok`` (a Data Interactive request from the plugin's
frame that bypasses the plugin's code); each test names its own datasets on one shared page.
"""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

PUPILS = [
    {"name": "Ann", "height": 150, "weight": 41},
    {"name": "Bo", "height": 162, "weight": 50},
    {"name": "Cy", "height": 171, "weight": 63},
    {"name": "Di", "height": 193, "weight": 80},
    {"name": "Ed", "height": 201, "weight": 92},
]


def make(codap: CodapPage, name: str, rows: list[dict[str, Any]] = PUPILS) -> None:
    codap.done("create_codap_dataset", {"datasetName": name, "dataType": "custom", "customData": rows})


def set_aside(codap: CodapPage, dataset: str) -> dict[int, str]:
    """The set-aside items of a dataset as CODAP holds them: item id → name."""
    values = codap.ok({"action": "get", "resource": f"dataContext[{dataset}]"})
    return {int(i["id"]): i["values"]["name"] for i in values["setAsideItems"]}


def shown(codap: CodapPage, dataset: str) -> list[str]:
    return [i["values"]["name"] for i in codap.items(dataset)]


def ids_by_name(codap: CodapPage, dataset: str) -> dict[str, int]:
    return {i["values"]["name"]: int(i["id"]) for i in codap.items(dataset)}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def test_set_aside_by_condition_ids_and_selection_and_bring_back(codap: CodapPage) -> None:
    make(codap, "Aside")
    ids = ids_by_name(codap, "Aside")
    tall = codap.done("set_aside_codap_cases", {"datasetName": "Aside", "where": "height > 190"})
    assert set_aside(codap, "Aside") == {ids["Di"]: "Di", ids["Ed"]: "Ed"}
    assert shown(codap, "Aside") == ["Ann", "Bo", "Cy"]
    facts = tall["structuredContent"]
    assert sorted(facts["setAside"]) == sorted([ids["Di"], ids["Ed"]])
    assert (facts["setAsideNow"], facts["shown"]) == (2, 3)
    assert "Set aside 2 cases" in text(tall) and "restore true" in text(tall)

    # The statistics leave them out, as CODAP does.
    stats = codap.done("compute_codap_statistics", {"datasetName": "Aside", "attributes": ["height"]})
    assert stats["structuredContent"]["caseCount"] == 3

    codap.done("set_aside_codap_cases", {"datasetName": "Aside", "caseIds": [ids["Ann"]]})
    assert set(set_aside(codap, "Aside")) == {ids["Ann"], ids["Di"], ids["Ed"]}
    codap.done("select_codap_cases", {"datasetName": "Aside", "where": 'name = "Bo"'})
    codap.done("set_aside_codap_cases", {"datasetName": "Aside", "selection": "unselected"})
    assert shown(codap, "Aside") == ["Bo"]

    back = codap.done("set_aside_codap_cases", {"datasetName": "Aside", "restore": True, "where": "height > 195"})
    assert back["structuredContent"]["restored"] == [ids["Ed"]] and "Ed" not in set_aside(codap, "Aside").values()
    codap.done("set_aside_codap_cases", {"datasetName": "Aside", "restore": True, "caseIds": [ids["Cy"]]})
    assert sorted(shown(codap, "Aside")) == ["Bo", "Cy", "Ed"]
    every = codap.done("set_aside_codap_cases", {"datasetName": "Aside", "restore": True})
    assert set_aside(codap, "Aside") == {} and len(shown(codap, "Aside")) == 5
    assert sorted(every["structuredContent"]["restored"]) == sorted([ids["Ann"], ids["Di"]])

    nothing = codap.failed("set_aside_codap_cases", {"datasetName": "Aside", "restore": True})
    assert nothing["code"] == "empty_selection"
    unasked = codap.failed("set_aside_codap_cases", {"datasetName": "Aside"})
    assert unasked["code"] == "invalid_arguments" and "restore true" in unasked["message"]
    codap.done("select_codap_cases", {"datasetName": "Aside", "mode": "clear"})
    none = codap.failed("set_aside_codap_cases", {"datasetName": "Aside", "selection": "selected"})
    assert none["code"] == "empty_selection" and set_aside(codap, "Aside") == {}


def test_export_says_what_is_set_aside_and_can_include_it_and_undo_brings_it_back(codap: CodapPage) -> None:
    make(codap, "Export aside")
    codap.done("set_aside_codap_cases", {"datasetName": "Export aside", "where": "weight > 70"})
    plain = codap.done("export_codap_data", {"datasetName": "Export aside", "format": "csv"})
    facts = plain["structuredContent"]
    assert facts["setAside"] == 2 and facts["rowCount"] == 3 and "Di" not in facts["data"]
    assert "2 cases are set aside" in text(plain) and "includeSetAside" in text(plain)
    whole = codap.done("export_codap_data", {"datasetName": "Export aside", "includeSetAside": True})
    rows = whole["structuredContent"]["rows"]
    assert [(r["name"], r["set aside"]) for r in rows] == [
        ("Ann", False),
        ("Bo", False),
        ("Cy", False),
        ("Di", True),
        ("Ed", True),
    ]
    assert rows[3]["height"] == 193  # values as CODAP holds them
    assert set(set_aside(codap, "Export aside").values()) == {"Di", "Ed"}  # an export changes nothing

    # CODAP's Undo takes the set-aside back (the plugin's own inverse), and Redo sets them aside again.
    ann = ids_by_name(codap, "Export aside")["Ann"]
    codap.done("set_aside_codap_cases", {"datasetName": "Export aside", "caseIds": [ann]})
    assert len(set_aside(codap, "Export aside")) == 3
    undone = codap.done("undo_codap", {})
    assert "set_aside_codap_cases" in text(undone)
    assert set(set_aside(codap, "Export aside").values()) == {"Di", "Ed"}
    codap.done("redo_codap", {})
    assert set(set_aside(codap, "Export aside").values()) == {"Ann", "Di", "Ed"}


def listed(codap: CodapPage, name: str) -> dict[str, Any]:
    (found,) = [d for d in codap.ok({"action": "get", "resource": "dataContextList"}) if d["name"] == name]
    return dict(found)


def test_a_new_title_is_the_word_every_later_call_can_use(codap: CodapPage) -> None:
    make(codap, "h1")
    renamed = codap.done("update_codap_dataset", {"datasetName": "h1", "title": "Heights", "description": "class 7"})
    assert (listed(codap, "h1")["title"], listed(codap, "h1")["name"]) == ("Heights", "h1")
    whole = codap.ok({"action": "get", "resource": "dataContext[h1]"})
    assert whole["metadata"]["description"] == "class 7"
    facts = renamed["structuredContent"]
    assert facts["changes"]["title"] == {"before": "h1", "after": "Heights"} and facts["datasetName"] == "h1"
    assert "cannot change a dataset's name" in text(renamed) and '"Heights" or "h1"' in text(renamed)

    # Every later call may use the new word.
    codap.done("add_codap_cases", {"datasetName": "Heights", "cases": [{"name": "Flo", "height": 140, "weight": 35}]})
    assert len(codap.items("h1")) == 6
    codap.done("set_aside_codap_cases", {"datasetName": "Heights", "where": "height < 145"})
    assert list(set_aside(codap, "h1").values()) == ["Flo"]
    stats = codap.done("compute_codap_statistics", {"datasetName": "Heights", "attributes": ["height"]})
    assert stats["structuredContent"]["caseCount"] == 5
    graph = codap.done("create_codap_graph", {"datasetName": "Heights", "graphType": "scatterplot",
                                              "xAttribute": "height", "yAttribute": "weight"})  # fmt: skip
    shown_graph = codap.ok({"action": "get", "resource": f"component[{graph['structuredContent']['graphId']}]"})
    assert shown_graph["dataContext"] == "h1"
    status = codap.done("get_codap_status", {"includeComponents": False})
    assert 'h1 (titled "Heights"' in text(status)
    missing = codap.failed("export_codap_data", {"datasetName": "Weights"})
    assert missing["code"] == "dataset_not_found" and 'h1 (titled "Heights")' in missing["message"]

    make(codap, "h2")
    clash = codap.failed("update_codap_dataset", {"datasetName": "h2", "title": "Heights"})
    assert clash["code"] == "dataset_exists" and listed(codap, "h2")["title"] == "h2"


def test_rerandomize_draws_again_and_says_so(codap: CodapPage) -> None:
    make(codap, "dice")
    codap.done(
        "add_codap_attribute", {"datasetName": "dice", "name": "roll", "formula": "randomPick(1,2,3,4,5,6,7,8,9)"}
    )
    before = [i["values"]["roll"] for i in codap.items("dice")]
    for _ in range(3):  # nine faces, five cases: the same rolls three times over is a chance of 1 in 9^15
        done = codap.done("update_codap_dataset", {"datasetName": "dice", "rerandomize": True})
        after = [i["values"]["roll"] for i in codap.items("dice")]
        if after != before:
            break
    assert after != before
    (rolled,) = done["structuredContent"]["rerandomized"]
    assert rolled["attribute"] == "roll" and rolled["after"] == after[:3]
    nothing = codap.failed("update_codap_dataset", {"datasetName": "dice", "rerandomize": False})
    assert nothing["code"] == "invalid_arguments"
    make(codap, "no dice")
    fixed = codap.failed("update_codap_dataset", {"datasetName": "no dice", "rerandomize": True})
    assert fixed["code"] == "invalid_arguments" and "random()" in fixed["message"]


def attribute(codap: CodapPage, dataset: str, name: str) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].attribute[{name}]"})
    return values


def tables_of(codap: CodapPage, dataset: str) -> dict[str, dict[str, Any]]:
    """The dataset's table and card (type → {id, hidden, isIndexHidden}), as CODAP lists them."""
    out = {}
    for c in codap.components():
        if c["type"] in ("caseTable", "caseCard"):
            detail = codap.ok({"action": "get", "resource": f"component[{c['id']}]"})
            if detail["dataContext"] == dataset:
                out[c["type"]] = {"id": c["id"], "hidden": c["hidden"], "isIndexHidden": detail.get("isIndexHidden")}
    return out


def test_table_view_hides_and_shows_columns_switches_to_the_card_and_back(codap: CodapPage) -> None:
    make(codap, "View", [{"id": i, **p} for i, p in enumerate(PUPILS)])
    hid = codap.done(
        "update_codap_table", {"datasetName": "View", "hideAttributes": ["id", "weight"], "indexColumn": False}
    )
    assert (attribute(codap, "View", "id")["hidden"], attribute(codap, "View", "weight")["hidden"]) == (True, True)
    assert tables_of(codap, "View")["caseTable"]["isIndexHidden"] is True
    facts = hid["structuredContent"]
    assert (facts["view"], facts["hiddenAttributes"], facts["indexColumn"]) == ("table", ["id", "weight"], False)
    assert "formulas still use them" in text(hid)

    card = codap.done("update_codap_table", {"datasetName": "View", "view": "card"})
    shown = tables_of(codap, "View")
    assert shown["caseCard"]["hidden"] is False and shown["caseTable"]["hidden"] is True
    assert card["structuredContent"]["componentId"] == shown["caseCard"]["id"]
    refused = codap.failed("update_codap_table", {"datasetName": "View", "fitColumns": True})
    assert refused["code"] == "invalid_arguments" and "view table" in refused["message"]

    back = codap.done("update_codap_table", {"datasetName": "View", "view": "table", "showAllAttributes": True,
                                             "indexColumn": True, "fitColumns": True})  # fmt: skip
    shown = tables_of(codap, "View")
    assert shown["caseTable"]["hidden"] is False and shown["caseCard"]["hidden"] is True
    assert shown["caseTable"]["isIndexHidden"] is False
    assert not attribute(codap, "View", "id")["hidden"] and not attribute(codap, "View", "weight")["hidden"]
    assert back["structuredContent"]["hiddenAttributes"] == [] and back["structuredContent"]["columnWidths"]
    unknown = codap.failed("update_codap_table", {"datasetName": "View", "hideAttributes": ["ID"]})
    assert unknown["code"] == "attribute_not_found" and "id" in unknown["data"]["available"]


def test_an_attribute_protected_from_editing_and_moved_as_the_table_does(codap: CodapPage) -> None:
    make(codap, "Props")
    locked = codap.done("update_codap_attribute", {"datasetName": "Props", "name": "height", "editable": False})
    assert attribute(codap, "Props", "height")["editable"] is False
    assert locked["structuredContent"]["changes"]["editable"] == {"before": True, "after": False}
    codap.done("update_codap_attribute", {"datasetName": "Props", "name": "height", "editable": True, "position": 0})
    assert attribute(codap, "Props", "height")["editable"] is True
    order = codap.ok({"action": "get", "resource": "dataContext[Props].collection[Props].attributeList"})
    assert [a["name"] for a in order] == ["height", "name", "weight"]
    codap.done("update_codap_attribute", {"datasetName": "Props", "name": "height", "position": 2})
    order = codap.ok({"action": "get", "resource": "dataContext[Props].collection[Props].attributeList"})
    assert [a["name"] for a in order] == ["name", "weight", "height"]


def collapsed_in_codap(codap: CodapPage, table_id: int) -> list[int]:
    """The parent cases the table shows collapsed, from CODAP's own document (read in the plugin's frame)."""
    state: dict[str, Any] = codap.frame.evaluate(
        """() => new Promise((resolve) => {
            function on(e) {
              let d = e.data; if (typeof d === "string") { try { d = JSON.parse(d); } catch { return; } }
              const c = d && d.content;
              if (c && c.messageType === "call" && c.value && c.value.resource === "document") {
                removeEventListener("message", on); resolve(c.value.values.state);
              }
            }
            addEventListener("message", on);
            parent.postMessage({type: "data-interactive", content: {messageType: "call", uuid: "doc-" + Date.now(),
              value: {action: "get", resource: "document"}}}, "*");
        })"""
    )
    (table,) = [c for c in state["components"] if c["guid"] == table_id]
    nodes = (table["componentStorage"].get("_links_") or {}).get("collapsedNodes") or []
    return [int(n["id"]) for n in (nodes if isinstance(nodes, list) else [nodes])]


def test_grouped_cases_collapse_and_expand_and_a_collection_gets_a_title(codap: CodapPage) -> None:
    make(codap, "Groups", [{**p, "team": "red" if i % 2 else "blue"} for i, p in enumerate(PUPILS)])
    codap.done("group_codap_cases", {"datasetName": "Groups", "attributes": ["team"]})
    table = tables_of(codap, "Groups")["caseTable"]["id"]
    folded = codap.done("update_codap_table", {"datasetName": "Groups", "collapsed": True})
    parents = codap.ok({"action": "get", "resource": "dataContext[Groups].collection[team groups].allCases"})["cases"]
    assert sorted(collapsed_in_codap(codap, table)) == sorted(c["case"]["id"] for c in parents)
    assert folded["structuredContent"]["collapsedCases"] == 2 and len(codap.items("Groups")) == 5
    codap.done("update_codap_table", {"datasetName": "Groups", "collapsed": False})
    assert collapsed_in_codap(codap, table) == []

    titled = codap.done("update_codap_dataset", {"datasetName": "Groups", "collection": "team groups",
                                                 "collectionTitle": "Teams"})  # fmt: skip
    held = codap.ok({"action": "get", "resource": "dataContext[Groups].collection[team groups]"})
    assert (held["name"], held["title"]) == ("team groups", "Teams")
    assert titled["structuredContent"]["changes"]["collectionTitle"] == {"before": "team groups", "after": "Teams"}
    # the tools take the collection's new title
    picked = codap.done("get_codap_selection", {"datasetName": "Groups", "collectionName": "Teams"})
    assert picked["structuredContent"]["collectionName"] == "team groups"
    make(codap, "Flat")
    flat = codap.failed("update_codap_table", {"datasetName": "Flat", "collapsed": True})
    assert flat["code"] == "invalid_arguments" and "one collection" in flat["message"]
