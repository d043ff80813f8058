"""The cases tools inside the real CODAP app (v3.1.0): change, delete, sort and group cases, and the data fidelity
of the dataset tools that create them (a user's `id` or `__id__` column is an ordinary column).

Every effect is read back from CODAP itself with ``CodapPage.ok`` (a Data Interactive request from the plugin's
frame that bypasses the plugin's code); each test names its own datasets on one shared page.
"""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]


# --- helpers -------------------------------------------------------------------------------------------------


def dataset_id(codap: CodapPage, name: str) -> str:
    (found,) = [d["id"] for d in codap.ok({"action": "get", "resource": "dataContextList"}) if d["name"] == name]
    return str(found)


def held(codap: CodapPage, name: str) -> list[dict[str, Any]]:
    """The values of every item, in CODAP's order."""
    return [item["values"] for item in codap.items(dataset_id(codap, name))]


def collections(codap: CodapPage, name: str) -> list[tuple[str, int, list[str]]]:
    """(name, case count, attribute names) of each collection, parents first, as CODAP holds them."""
    did = dataset_id(codap, name)
    out = []
    for c in codap.ok({"action": "get", "resource": f"dataContext[{did}].collectionList"}):
        base = f"dataContext[{did}].collection[{c['id']}]"
        count = codap.ok({"action": "get", "resource": f"{base}.caseCount"})
        attrs = [a["name"] for a in codap.ok({"action": "get", "resource": f"{base}.attributeList"})]
        out.append((c["name"], count, attrs))
    return out


def custom(codap: CodapPage, name: str, rows: list[dict[str, Any]]) -> None:
    codap.done(
        "create_codap_dataset",
        {"datasetName": name, "dataType": "custom", "recordCount": len(rows), "customData": rows},
    )


TREES = [
    {"species": "oak", "height": 190, "girth": 3.1},
    {"species": "ash", "height": 150, "girth": 1.2},
    {"species": "oak", "height": 185, "girth": 2.7},
    {"species": "elm", "height": 120, "girth": ""},
    {"species": "ash", "height": 170, "girth": 1.9},
]


# --- data fidelity of the dataset tools ----------------------------------------------------------------------


def test_a_users_id_column_is_an_ordinary_column_and_an_add_overwrites_nothing(codap: CodapPage) -> None:
    custom(codap, "ids", [{"id": 1, "v": 10}, {"id": 2, "v": 20}, {"id": 3, "v": 30}])
    added = codap.done("add_codap_cases", {"datasetName": "ids", "cases": [{"id": 3, "v": 31}, {"id": 4, "v": 40}]})
    assert added["structuredContent"]["totalCases"] == 5
    # The new rows' ids, in the order given, are CODAP's item ids of the last two rows.
    new_rows = codap.items(dataset_id(codap, "ids"))[3:]
    assert added["structuredContent"]["caseIds"] == [i["id"] for i in new_rows]
    assert [i["values"]["v"] for i in new_rows] == [31, 40]
    assert f"{new_rows[0]['id']}, {new_rows[1]['id']}" in added["content"][0]["text"]
    pairs = [(r["id"], r["v"]) for r in held(codap, "ids")]
    assert pairs == [(1, 10), (2, 20), (3, 30), (3, 31), (4, 40)]
    out = codap.done("export_codap_data", {"datasetName": "ids", "format": "csv"})["structuredContent"]
    assert out["data"].split("\r\n") == ["id,v", "1,10", "2,20", "3,30", "3,31", "4,40"]
    # A second dataset with the same ids keeps its own rows too (item ids are not taken from the column).
    custom(codap, "ids again", [{"id": 1, "v": "a"}, {"id": "x", "v": "b"}, {"id": "x", "v": "c"}])
    assert [(r["id"], r["v"]) for r in held(codap, "ids again")] == [(1, "a"), ("x", "b"), ("x", "c")]
    assert [(r["id"], r["v"]) for r in held(codap, "ids")][:3] == [(1, 10), (2, 20), (3, 30)]


ODD = ["ID", "my height (cm)", "größe", "名前", "values", "__id__", "parent", "caseIndex", "collection"]


def test_any_column_name_even_codaps_own_keeps_its_values_through_create_add_and_export(codap: CodapPage) -> None:
    rows: list[dict[str, Any]] = [
        {
            "ID": 7,
            "my height (cm)": 180.5,
            "größe": "groß",
            "名前": "花子",
            "values": "v1",
            "__id__": "u-1",
            "parent": "p",
            "caseIndex": 0,
            "collection": "c",
        },
        {
            "ID": 8,
            "my height (cm)": "",
            "größe": "klein",
            "名前": "",
            "values": 2,
            "__id__": 17,
            "parent": "",
            "caseIndex": 1,
            "collection": "",
        },
    ]
    custom(codap, "odd names", rows)
    more: list[dict[str, Any]] = [{"ID": 9, "__id__": "u-3", "values": "v3"}, {"größe": "mittel"}]
    codap.done("add_codap_cases", {"datasetName": "odd names", "cases": more})
    blank: dict[str, Any] = dict.fromkeys(ODD, "")
    expected = [*rows, {**blank, **more[0]}, {**blank, **more[1]}]
    assert held(codap, "odd names") == expected
    out = codap.done("export_codap_data", {"datasetName": "odd names"})["structuredContent"]
    assert out["columns"] == ODD and out["rows"] == expected


# --- update_codap_cases --------------------------------------------------------------------------------------


def test_update_by_condition_and_by_ids_changes_exactly_those_cases(codap: CodapPage) -> None:
    custom(codap, "trees upd", TREES)
    result = codap.done(
        "update_codap_cases",
        {"datasetName": "trees upd", "where": "height > 180", "values": {"species": "tall oak", "girth": 3}},
    )
    facts = result["structuredContent"]
    items = codap.items(dataset_id(codap, "trees upd"))
    tall = [i["id"] for i in items if i["values"]["height"] > 180]
    assert facts["changed"] == 2 and sorted(facts["caseIds"]) == sorted(tall)
    assert facts["attributes"] == ["species", "girth"]
    assert [(i["values"]["species"], i["values"]["girth"]) for i in items] == [
        ("tall oak", 3),
        ("ash", 1.2),
        ("tall oak", 3),
        ("elm", ""),
        ("ash", 1.9),
    ]
    assert "Changed 2 cases" in result["content"][0]["text"]
    # What the cells held before: the values CODAP had (TREES), by row.
    assert facts["before"] == [
        {"caseId": tall[0], "values": {"species": "oak", "girth": 3.1}},
        {"caseId": tall[1], "values": {"species": "oak", "girth": 2.7}},
    ]
    assert f'{tall[0]}: species "oak", girth 3.1' in result["content"][0]["text"]

    exported = codap.done("export_codap_data", {"datasetName": "trees upd", "includeCaseIds": True})
    ids = exported["structuredContent"]["caseIds"]
    assert ids == [i["id"] for i in items] and str(ids[3]) in exported["content"][0]["text"]
    text_match = codap.done(
        "update_codap_cases", {"datasetName": "trees upd", "where": 'species = "ash"', "values": {"girth": None}}
    )["structuredContent"]
    assert text_match["changed"] == 2
    decimal = codap.done(
        "update_codap_cases", {"datasetName": "trees upd", "where": "girth >= 2.95", "values": {"girth": 3}}
    )
    assert decimal["structuredContent"]["changed"] == 2  # the two tall oaks, girth 3 now
    by_id = codap.done(
        "update_codap_cases", {"datasetName": "trees upd", "caseIds": [ids[3]], "values": {"height": 121}}
    )
    assert by_id["structuredContent"]["caseIds"] == [ids[3]]
    assert [(r["height"], r["girth"]) for r in held(codap, "trees upd")] == [
        (190, 3),
        (150, ""),
        (185, 3),
        (121, ""),
        (170, ""),
    ]


def test_a_list_of_updates_is_one_change_one_undo_step_and_answers_per_update(codap: CodapPage) -> None:
    custom(codap, "trees list", TREES)
    did = dataset_id(codap, "trees list")
    ids = [i["id"] for i in codap.items(did)]
    updates = [
        {"where": 'species = "ash"', "values": {"girth": 2}},
        {"caseIds": [ids[3]], "values": {"girth": 0.8, "species": "old elm"}},
        {"where": "height >= 170", "values": {"height": 200}},  # overlaps the first at ids[4]
    ]
    result = codap.done("update_codap_cases", {"datasetName": "trees list", "updates": updates})
    facts = result["structuredContent"]
    assert [(r["height"], r["species"], r["girth"]) for r in held(codap, "trees list")] == [
        (200, "oak", 3.1),
        (150, "ash", 2),
        (200, "oak", 2.7),
        (120, "old elm", 0.8),
        (200, "ash", 2),
    ]
    assert sorted(facts["caseIds"]) == sorted(ids) and facts["changed"] == 5
    assert [(u["changed"], u["caseIds"]) for u in facts["updates"]] == [
        (2, [ids[1], ids[4]]),
        (1, [ids[3]]),
        (3, [ids[0], ids[2], ids[4]]),
    ]
    assert facts["updates"][1]["before"] == [{"caseId": ids[3], "values": {"girth": "", "species": "elm"}}]
    text = result["content"][0]["text"]
    assert "in 3 updates, as one change" in text and "2. with the given ids: set girth = 0.8" in text
    assert f"1 case ({ids[4]}) is in more than one update" in text
    # One step of CODAP's Undo takes back all three.
    codap.done("undo_codap", {"steps": 1})
    assert held(codap, "trees list") == TREES

    # An update that matches nothing, or names an unknown attribute, changes nothing at all.
    base = {"datasetName": "trees list"}
    none = codap.failed(
        "update_codap_cases", {**base, "updates": [updates[0], {"where": "height > 900", "values": {"girth": 1}}]}
    )
    assert none["code"] == "empty_selection" and none["data"]["update"] == 1
    assert (
        none["message"].startswith("Update 2 of 2 (matching height > 900): ")
        and "Nothing was changed" in none["message"]
    )
    unknown = codap.failed("update_codap_cases", {**base, "updates": [{"where": "true", "values": {"age": 1}}]})
    assert unknown["code"] == "attribute_not_found" and unknown["data"]["update"] == 0
    both = codap.failed("update_codap_cases", {**base, "updates": updates, "values": {"girth": 1}, "where": "true"})
    assert both["code"] == "invalid_arguments" and "not both" in both["message"]
    assert held(codap, "trees list") == TREES


def test_update_sets_a_users_id_column_like_any_other(codap: CodapPage) -> None:
    custom(codap, "ids upd", [{"id": 1, "v": 10}, {"id": 2, "v": 20}])
    codap.done("update_codap_cases", {"datasetName": "ids upd", "where": "v = 20", "values": {"id": 1, "v": 21}})
    assert held(codap, "ids upd") == [{"id": 1, "v": 10}, {"id": 1, "v": 21}]


def test_update_errors_name_what_exists_and_change_nothing(codap: CodapPage) -> None:
    custom(codap, "trees err", TREES)
    before = held(codap, "trees err")
    base = {"datasetName": "trees err"}

    unknown = codap.failed("update_codap_cases", {**base, "where": "height > 1", "values": {"colour": "red"}})
    assert unknown["code"] == "attribute_not_found" and unknown["data"]["available"] == ["species", "height", "girth"]
    assert "species, height, girth" in unknown["message"]

    bad = codap.failed("update_codap_cases", {**base, "where": "heigth > 180", "values": {"height": 1}})
    assert bad["code"] == "formula_error" and bad["data"]["formula"] == "heigth > 180"
    assert "heigth > 180" in bad["message"] and "Undefined symbol heigth" in bad["message"]
    unparsable = codap.failed("update_codap_cases", {**base, "where": "height >", "values": {"height": 1}})
    assert unparsable["code"] == "formula_error" and "height >" in unparsable["message"]

    empty = codap.failed("update_codap_cases", {**base, "where": "height > 1000", "values": {"height": 1}})
    assert empty["code"] == "empty_selection" and empty["data"]["caseCount"] == 5
    assert "5 cases" in empty["message"] and "height > 1000" in empty["message"]

    both = codap.failed("update_codap_cases", {**base, "where": "true", "caseIds": [1], "values": {"height": 1}})
    assert both["code"] == "invalid_arguments" and "exactly one" in both["message"]
    neither = codap.failed("update_codap_cases", {**base, "values": {"height": 1}})
    assert neither["code"] == "invalid_arguments"

    missing = codap.failed("update_codap_cases", {**base, "caseIds": [12345], "values": {"height": 1}})
    assert missing["code"] == "case_not_found" and missing["data"]["missing"] == [12345]
    assert "includeCaseIds" in missing["message"]

    nowhere = codap.failed("update_codap_cases", {"datasetName": "no such trees", "where": "true", "values": {"a": 1}})
    assert nowhere["code"] == "dataset_not_found" and "trees err" in nowhere["data"]["available"]

    did = dataset_id(codap, "trees err")
    coll = codap.ok({"action": "get", "resource": f"dataContext[{did}].collectionList"})[0]["id"]
    codap.ok(
        {
            "action": "create",
            "resource": f"dataContext[{did}].collection[{coll}].attribute",
            "values": [{"name": "double", "formula": "height * 2"}],
        }
    )
    computed = codap.failed("update_codap_cases", {**base, "where": "true", "values": {"double": 1}})
    assert computed["code"] == "attribute_has_formula" and "height * 2" in computed["message"]
    assert [{k: r[k] for k in ("species", "height", "girth")} for r in held(codap, "trees err")] == before


# --- delete_codap_cases --------------------------------------------------------------------------------------


def test_delete_by_condition_and_by_ids_reports_what_remains(codap: CodapPage) -> None:
    custom(codap, "trees del", TREES)
    gone = codap.done("delete_codap_cases", {"datasetName": "trees del", "where": 'species = "oak"'})
    facts = gone["structuredContent"]
    assert facts["deleted"] == 2 and facts["remaining"] == 3 == len(codap.items(dataset_id(codap, "trees del")))
    assert [c["values"] for c in facts["cases"]] == [TREES[0], TREES[2]]
    assert [c["caseId"] for c in facts["cases"]] == facts["caseIds"]
    assert '"height":185' in gone["content"][0]["text"]
    assert "Deleted 2 cases" in gone["content"][0]["text"] and "3 cases remain" in gone["content"][0]["text"]
    assert [r["species"] for r in held(codap, "trees del")] == ["ash", "elm", "ash"]

    items = codap.items(dataset_id(codap, "trees del"))
    by_id = codap.done("delete_codap_cases", {"datasetName": "trees del", "caseIds": [items[1]["id"]]})
    assert by_id["structuredContent"]["caseIds"] == [items[1]["id"]]
    assert by_id["structuredContent"]["remaining"] == 2
    assert by_id["structuredContent"]["cases"] == [{"caseId": items[1]["id"], "values": items[1]["values"]}]
    assert [r["species"] for r in held(codap, "trees del")] == ["ash", "ash"]

    empty = codap.failed("delete_codap_cases", {"datasetName": "trees del", "where": 'species = "oak"'})
    assert empty["code"] == "empty_selection" and "2 cases" in empty["message"]
    missing = codap.failed("delete_codap_cases", {"datasetName": "trees del", "caseIds": [items[1]["id"]]})
    assert missing["code"] == "case_not_found"
    assert len(codap.items(dataset_id(codap, "trees del"))) == 2


def test_change_and_delete_the_cases_selected_in_codap(codap: CodapPage) -> None:
    custom(codap, "trees picked", TREES)
    base = {"datasetName": "trees picked"}
    nothing = codap.failed("delete_codap_cases", {**base, "selection": "selected"})
    assert nothing["code"] == "empty_selection" and "select_codap_cases" in nothing["message"]
    codap.done("select_codap_cases", {**base, "where": 'species = "oak"'})
    others = codap.done("update_codap_cases", {**base, "selection": "unselected", "values": {"girth": 0}})
    assert (
        others["structuredContent"]["changed"] == 3 and "that were unselected in CODAP" in others["content"][0]["text"]
    )
    assert [r["girth"] for r in held(codap, "trees picked")] == [3.1, 0, 2.7, 0, 0]
    gone = codap.done("delete_codap_cases", {**base, "selection": "selected"})
    assert [c["values"]["height"] for c in gone["structuredContent"]["cases"]] == [190, 185]
    assert [r["species"] for r in held(codap, "trees picked")] == ["ash", "elm", "ash"]
    both = codap.failed("delete_codap_cases", {**base, "selection": "selected", "where": "true"})
    assert both["code"] == "invalid_arguments" and "exactly one" in both["message"]


# --- sort_codap_cases ----------------------------------------------------------------------------------------


def test_sort_reorders_the_cases_in_codap_both_ways(codap: CodapPage) -> None:
    custom(codap, "trees sort", TREES)
    up = codap.done("sort_codap_cases", {"datasetName": "trees sort", "attribute": "height"})["structuredContent"]
    heights = [r["height"] for r in held(codap, "trees sort")]
    assert heights == [120, 150, 170, 185, 190] and up["firstValues"] == heights
    # The rows in the new order, as CODAP holds them: the top 2 by height is one call.
    top = codap.done(
        "sort_codap_cases", {"datasetName": "trees sort", "attribute": "height", "descending": True, "maxCases": 2}
    )
    items = codap.items(dataset_id(codap, "trees sort"))
    assert top["structuredContent"]["cases"] == [{"caseId": i["id"], "values": i["values"]} for i in items[:2]]
    assert [i["values"]["height"] for i in items[:2]] == [190, 185] and "… and 3 more" in top["content"][0]["text"]
    down = codap.done("sort_codap_cases", {"datasetName": "trees sort", "attribute": "species", "descending": True})
    assert [r["species"] for r in held(codap, "trees sort")] == ["oak", "oak", "elm", "ash", "ash"]
    assert down["structuredContent"]["firstValues"] == ["oak", "oak", "elm", "ash", "ash"]
    unknown = codap.failed("sort_codap_cases", {"datasetName": "trees sort", "attribute": "age"})
    assert unknown["code"] == "attribute_not_found" and unknown["data"]["available"] == ["species", "height", "girth"]


# --- group_codap_cases ---------------------------------------------------------------------------------------


def test_group_moves_attributes_into_a_new_parent_collection_and_ungroup_moves_them_back(codap: CodapPage) -> None:
    custom(codap, "trees grp", TREES)
    grouped = codap.done("group_codap_cases", {"datasetName": "trees grp", "attributes": ["species"]})
    after = collections(codap, "trees grp")
    assert after == [("species groups", 3, ["species"]), ("trees grp", 5, ["height", "girth"])]
    did = dataset_id(codap, "trees grp")
    parents = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[species groups].allCases"})
    assert (
        grouped["structuredContent"]["groups"]
        == [{"values": c["case"]["values"], "cases": len(c["case"]["children"])} for c in parents["cases"]]
        == [{"values": {"species": s}, "cases": n} for s, n in (("oak", 2), ("ash", 2), ("elm", 1))]
    )
    said = "how many trees grp cases each holds: species oak: 2 cases; species ash: 2 cases; species elm: 1 case."
    assert said in grouped["content"][0]["text"]
    assert grouped["structuredContent"]["collections"] == [
        {"name": n, "caseCount": c, "attributes": a} for n, c, a in after
    ]
    assert "species groups (3 cases: species) > trees grp (5 cases: height, girth)" in grouped["content"][0]["text"]
    # a formula in the parent collection works per group ("mean by group")
    codap.ok(
        {
            "action": "create",
            "resource": f"dataContext[{did}].collection[species groups].attribute",
            "values": [{"name": "mean height", "formula": "mean(height)"}],
        }
    )
    parents = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[species groups].allCases"})
    means = {c["case"]["values"]["species"]: c["case"]["values"]["mean height"] for c in parents["cases"]}
    assert means == {"oak": 187.5, "ash": 160, "elm": 120}

    not_leaf = codap.failed(
        "group_codap_cases", {"datasetName": "trees grp", "attributes": ["height"], "ungroup": True}
    )
    assert not_leaf["code"] == "not_grouped" and not_leaf["data"]["available"] == ["species", "mean height"]
    back = codap.done(
        "group_codap_cases", {"datasetName": "trees grp", "attributes": ["species", "mean height"], "ungroup": True}
    )
    flat = collections(codap, "trees grp")
    assert flat == [("trees grp", 5, ["species", "mean height", "height", "girth"])]
    assert back["structuredContent"]["collections"] == [
        {"name": n, "caseCount": c, "attributes": a} for n, c, a in flat
    ]
    assert [r["species"] for r in held(codap, "trees grp")] == [t["species"] for t in TREES]


def test_group_by_two_attributes_under_an_existing_parent_and_its_errors(codap: CodapPage) -> None:
    custom(codap, "trees grp2", [{**t, "site": "N" if i % 2 else "S"} for i, t in enumerate(TREES)])
    codap.done("group_codap_cases", {"datasetName": "trees grp2", "attributes": ["site"], "collectionName": "sites"})
    codap.done("group_codap_cases", {"datasetName": "trees grp2", "attributes": ["species", "girth"]})
    assert collections(codap, "trees grp2") == [
        ("sites", 2, ["site"]),
        ("species & girth groups", 5, ["species", "girth"]),
        ("trees grp2", 5, ["height"]),
    ]
    everything = codap.failed("group_codap_cases", {"datasetName": "trees grp2", "attributes": ["height"]})
    assert everything["code"] == "invalid_arguments" and "keep at least one" in everything["message"].lower()
    taken = codap.failed(
        "group_codap_cases", {"datasetName": "trees grp2", "attributes": ["girth"], "collectionName": "sites"}
    )
    assert taken["code"] == "collection_exists" and "sites" in taken["data"]["available"]
    unknown = codap.failed("group_codap_cases", {"datasetName": "trees grp2", "attributes": ["age"]})
    assert unknown["code"] == "attribute_not_found" and "site" in unknown["data"]["available"]
    assert len(collections(codap, "trees grp2")) == 3


def test_conditions_sort_and_delete_in_a_grouped_dataset(codap: CodapPage) -> None:
    custom(codap, "trees tree", TREES)
    codap.done("group_codap_cases", {"datasetName": "trees tree", "attributes": ["species"]})
    # a condition on the child-most collection sees the parent's attributes too
    changed = codap.done(
        "update_codap_cases", {"datasetName": "trees tree", "where": 'species = "ash"', "values": {"girth": 2}}
    )
    assert changed["structuredContent"]["changed"] == 2
    assert [r["girth"] for r in held(codap, "trees tree")] == [3.1, 2, 2.7, "", 2]
    # a child attribute sorts within each parent case: the groups keep their order (oak, ash, elm)
    sorted_ = codap.done("sort_codap_cases", {"datasetName": "trees tree", "attribute": "height"})
    did = dataset_id(codap, "trees tree")
    leaf = codap.ok({"action": "get", "resource": f"dataContext[{did}].collection[trees tree].allCases"})
    heights = [c["case"]["values"]["height"] for c in leaf["cases"]]
    assert heights == [185, 190, 150, 170, 120] and sorted_["structuredContent"]["firstValues"] == heights
    assert "within each species groups case" in sorted_["content"][0]["text"]
    gone = codap.done("delete_codap_cases", {"datasetName": "trees tree", "where": "height < 160"})
    assert gone["structuredContent"]["collections"] == [
        {"name": "species groups", "caseCount": 2},
        {"name": "trees tree", "caseCount": 3},
    ]
    assert [c[:2] for c in collections(codap, "trees tree")] == [("species groups", 2), ("trees tree", 3)]
