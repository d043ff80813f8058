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
