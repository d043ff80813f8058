"""The analysis tools inside the real CODAP app: statistics, formulas and the selection.

Every number is checked independently of the tool: the values are read back from CODAP (``codap.ok``) and the
statistics computed here with Python's ``statistics`` module, using CODAP's definitions (v3.1.0,
models/formula/functions/univariate-stats-functions.ts): stdDev and variance are the sample ones (n-1, mathjs
``std``); median is the middle value or the mean of the two middle ones; percentile(x, p) interpolates linearly at
index (n-1)*p of the sorted numbers (utilities/math-utils.ts quantileOfSortedArray: Python's
``quantiles(method="inclusive")``); mad is the median of the absolute deviations from the median, unscaled;
count(x) counts the non-empty values; numeric aggregates ignore values that are not numbers.
"""

from __future__ import annotations

import statistics as st
from collections.abc import Callable
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS: list[dict[str, Any]] = [
    {"height": 151.5, "arm span": 150, "group": "a", "name": "Ann"},
    {"height": 162.25, "arm span": 160, "group": "b", "name": "Bo"},
    {"height": 170, "arm span": 171, "group": "a", "name": "Cy"},
    {"height": 148.75, "arm span": 149, "group": "c", "name": "Di"},
    {"height": 181, "arm span": 183, "group": "b", "name": "Ed"},
    {"height": "", "arm span": 158, "group": "a", "name": "Flo"},
    {"height": 159.5, "arm span": 161, "group": "", "name": "Gus"},
    {"height": 166, "arm span": 164, "group": "b", "name": "Hal"},
]


def make_dataset(codap: CodapPage, name: str, rows: list[dict[str, Any]] = ROWS) -> None:
    attrs = [{"name": k} for k in rows[0]]
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext",
            "values": {"name": name, "collections": [{"name": "people", "attrs": attrs}]},
        }
    )
    codap.ok({"action": "create", "resource": f"dataContext[{name}].item", "values": rows})


def cases(codap: CodapPage, dataset: str, coll: str = "people") -> list[dict[str, Any]]:
    """Every case of a collection as CODAP holds it: ``[{id, values}]``."""
    values = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].collection[{coll}].allCases"})
    return [{"id": c["case"]["id"], "values": c["case"]["values"]} for c in values["cases"]]


def rows(codap: CodapPage, dataset: str) -> list[dict[str, Any]]:
    """Every row (item) as CODAP holds it: ``[{id, values}]``, ids being item ids (the tools' caseIds)."""
    return [{"id": i["id"], "values": i["values"]} for i in codap.items(dataset)]


def numbers(values: list[Any]) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def codap_stats(xs: list[float], p: float = 90) -> dict[str, float]:
    """The statistics by CODAP's definitions (see the module docstring), computed here."""
    q1, _, q3 = st.quantiles(xs, n=4, method="inclusive")
    s = sorted(xs)
    i = (len(s) - 1) * p / 100
    lo, hi = int(i), min(int(i) + 1, len(s) - 1)
    med = st.median(xs)
    return {
        "mean": st.mean(xs),
        "median": med,
        "sd": st.stdev(xs),
        "variance": st.variance(xs),
        "min": min(xs),
        "max": max(xs),
        "sum": sum(xs),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "range": max(xs) - min(xs),
        "mad": st.median([abs(x - med) for x in xs]),
        "percentile": s[lo] + (s[hi] - s[lo]) * (i - lo),
    }


def attribute_names(codap: CodapPage, dataset: str) -> list[str]:
    listed = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].collection[people].attributeList"})
    return [a["name"] for a in listed]


ALL = [
    "count",
    "mean",
    "median",
    "sd",
    "variance",
    "min",
    "max",
    "sum",
    "q1",
    "q3",
    "iqr",
    "range",
    "mad",
    "percentile",
]


# --- compute_codap_statistics -------------------------------------------------------------------------------


def test_statistics_are_codaps_and_leave_the_document_and_undo_history_as_they_were(
    pages: Callable[..., CodapPage],
    relay_url: str,
) -> None:
    codap = pages(f"{relay_url}/plugin/")  # a fresh page: its undo history holds nothing of other tests
    make_dataset(codap, "Heights")
    before = codap.ok({"action": "get", "resource": "dataContext[Heights].collection[people].attributeList"})
    out = codap.done(
        "compute_codap_statistics",
        {
            "datasetName": "Heights",
            "attributes": ["height", "arm span"],
            "statistics": ALL,
            "percentile": 90,
        },
    )
    rows = out["structuredContent"]["rows"]
    assert [r["attribute"] for r in rows] == ["height", "arm span"]
    held = cases(codap, "Heights")
    for row in rows:
        values = [c["values"][row["attribute"]] for c in held]
        xs = numbers(values)
        assert row["cases"] == len(held) == 8
        assert row["count"] == len([v for v in values if v != ""])
        for stat, expected in codap_stats(xs).items():
            assert row[stat] == pytest.approx(expected, rel=1e-12, abs=1e-12), (row["attribute"], stat)
    text = out["content"][0]["text"]
    assert "height | 8 | 7 | " in text and "sd and variance divide by n\u22121" in text
    # The temporary formula attributes are gone, the others untouched; nothing went on the undo or redo stack.
    after = codap.ok({"action": "get", "resource": "dataContext[Heights].collection[people].attributeList"})
    assert after == before
    undo = codap.ok({"action": "notify", "resource": "undoChangeNotice", "values": {"operation": "undoButtonPress"}})
    assert undo == {"canUndo": False, "canRedo": False}
    # A value CODAP gives through a formula of its own agrees.
    mean = codap.done("evaluate_codap_formula", {"datasetName": "Heights", "formula": "mean(height)", "cases": 1})
    assert mean["structuredContent"]["results"][0]["value"] == rows[0]["mean"]


def test_statistics_grouped_and_filtered(codap: CodapPage) -> None:
    make_dataset(codap, "Grouped")
    where = "`arm span` >= 150"
    out = codap.done(
        "compute_codap_statistics",
        {
            "datasetName": "Grouped",
            "attributes": ["height"],
            "groupBy": "group",
            "where": where,
            "statistics": ["count", "mean", "median", "sd", "q1", "q3"],
        },
    )
    data = out["structuredContent"]
    held = [c["values"] for c in cases(codap, "Grouped") if c["values"]["arm span"] >= 150]
    assert data["casesMatched"] == len(held) == 7
    expected_groups = ["a", "b", "(no value)"]  # "c" (Di, arm span 149) matches no case
    assert [r["group"] for r in data["rows"]] == expected_groups
    assert data["groupsWithoutCases"] == ["c"]
    for row in data["rows"]:
        members = [v for v in held if v["group"] == ("" if row["group"] == "(no value)" else row["group"])]
        xs = numbers([v["height"] for v in members])
        assert row["cases"] == len(members) and row["percent"] == pytest.approx(100 * len(members) / len(held))
        assert row["count"] == len(xs)
        assert row["mean"] == pytest.approx(st.mean(xs), rel=1e-12)
        assert row["median"] == pytest.approx(st.median(xs), rel=1e-12)
        if len(xs) > 1:
            assert row["sd"] == pytest.approx(st.stdev(xs), rel=1e-12)
            q = codap_stats(xs)
            assert (row["q1"], row["q3"]) == (pytest.approx(q["q1"]), pytest.approx(q["q3"]))
        else:
            assert row["sd"] == 0  # CODAP's stdDev of one value (mathjs std)
    group_a = data["rows"][0]
    assert group_a["cases"] == 3 and group_a["count"] == 2  # Flo has no height
    assert "Groups with no matching case: c." in out["content"][0]["text"]
    assert "group | attribute | cases | % of cases | count" in out["content"][0]["text"]
    assert attribute_names(codap, "Grouped") == ["height", "arm span", "group", "name"]


def test_statistics_per_named_group_and_per_formula_group_in_one_call(codap: CodapPage) -> None:
    """Two condition-groups in one ask ("median height of a or b vs the rest"), and a formula as groupBy, each
    checked against the values read back from CODAP; groups may overlap, and the answer says so."""
    make_dataset(codap, "Groups")
    held = [c["values"] for c in cases(codap, "Groups")]
    named = {"a or b": 'group = "a" or group = "b"', "tall": "height > 165", "rest": 'group != "a" and group != "b"'}
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "Groups", "attributes": ["height"], "statistics": ["count", "median"], "groups": named},
    )
    members = {
        "a or b": [v for v in held if v["group"] in ("a", "b")],
        "tall": [v for v in held if isinstance(v["height"], (int, float)) and v["height"] > 165],
        "rest": [v for v in held if v["group"] not in ("a", "b")],
    }
    rows = out["structuredContent"]["rows"]
    assert [r["group"] for r in rows] == list(named)
    for row in rows:
        xs = numbers([v["height"] for v in members[row["group"]]])
        assert (row["cases"], row["count"]) == (len(members[row["group"]]), len(xs))
        assert row["median"] == pytest.approx(st.median(xs), rel=1e-12), row["group"]
    text = out["content"][0]["text"]
    assert "group | attribute | cases | % of cases | count | median" in text and "more than one group" in text
    assert out["structuredContent"]["casesMatched"] == 8
    # With where: each group's cases are those matching both.
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "Groups", "attributes": ["height"], "statistics": ["count"], "where": "`arm span` > 155",
         "groups": {"a or b": named["a or b"]}},
    )  # fmt: skip
    wide = [v for v in members["a or b"] if v["arm span"] > 155]
    assert out["structuredContent"]["rows"][0]["cases"] == len(wide) == 5
    assert out["structuredContent"]["casesMatched"] == len([v for v in held if v["arm span"] > 155])
    assert "in no group" in out["content"][0]["text"]
    # A formula as groupBy: one row per value CODAP gives it.
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "Groups", "attributes": ["arm span"], "statistics": ["mean"],
         "groupBy": 'if(group = "a" or group = "b", "ab", "other")'},
    )  # fmt: skip
    by = {r["group"]: r for r in out["structuredContent"]["rows"]}
    assert set(by) == {"ab", "other"}
    for label, vs in (("ab", members["a or b"]), ("other", members["rest"])):
        assert by[label]["cases"] == len(vs)
        assert by[label]["mean"] == pytest.approx(st.mean(v["arm span"] for v in vs), rel=1e-12)
    base = {"datasetName": "Groups", "attributes": ["height"]}
    bad = codap.failed("compute_codap_statistics", {**base, "groups": {"x": 'colour = "red"'}})
    assert bad["code"] == "formula_error" and bad["data"]["group"] == "x"
    assert "Undefined symbol colour" in bad["message"]
    bad = codap.failed("compute_codap_statistics", {**base, "groupBy": "round(weight)"})
    assert bad["code"] == "formula_error" and "Undefined symbol weight" in bad["message"]
    both = codap.failed("compute_codap_statistics", {**base, "groupBy": "group", "groups": named})
    assert both["code"] == "invalid_arguments"
    assert attribute_names(codap, "Groups") == ["height", "arm span", "group", "name"]


def test_statistics_errors_name_what_exists(codap: CodapPage) -> None:
    make_dataset(codap, "Errs")
    base = {"datasetName": "Errs", "attributes": ["height"]}
    err = codap.failed("compute_codap_statistics", {**base, "datasetName": "Nope"})
    assert err["code"] == "dataset_not_found" and "Errs" in err["data"]["available"]
    err = codap.failed("compute_codap_statistics", {**base, "attributes": ["height", "weight"]})
    assert err["code"] == "attribute_not_found" and "weight" in err["message"] and "arm span" in err["message"]
    err = codap.failed("compute_codap_statistics", {**base, "groupBy": "colour"})
    assert err["code"] == "attribute_not_found" and "groupBy" in err["message"]
    err = codap.failed("compute_codap_statistics", {**base, "attributes": ["name"], "statistics": ["count", "mean"]})
    assert err["code"] == "non_numeric_attribute"
    assert "mean do not apply" in err["message"] and "count" in err["message"]
    assert err["data"]["applicable"] == ["count"]
    err = codap.failed("compute_codap_statistics", {**base, "where": "weight > 3"})
    assert err["code"] == "formula_error" and "Undefined symbol weight" in err["message"]
    assert "weight > 3" in err["message"]
    err = codap.failed("compute_codap_statistics", {**base, "where": "height >"})
    assert err["code"] == "formula_error" and "Syntax error" in err["message"], err
    err = codap.failed("compute_codap_statistics", {**base, "where": "height > 1000"})
    assert err["code"] == "no_matching_cases" and "8 cases checked" in err["message"]
    err = codap.failed("compute_codap_statistics", {**base, "statistics": ["percentile"]})
    assert err["code"] == "invalid_arguments" and "percentile" in err["message"]
    # A where combining conditions with `and` (CODAP's `and` fails inside an aggregate's filter; not here).
    out = codap.done("compute_codap_statistics", {**base, "where": 'height > 150 and group = "b"'})
    xs = [
        c["values"]["height"]
        for c in cases(codap, "Errs")
        if c["values"]["group"] == "b"
        and isinstance(c["values"]["height"], (int, float))
        and c["values"]["height"] > 150
    ]
    row = out["structuredContent"]["rows"][0]
    assert (row["cases"], row["count"]) == (len(xs), len(xs)) == (3, 3)
    assert row["mean"] == pytest.approx(st.mean(xs), rel=1e-12) and row["sd"] == pytest.approx(st.stdev(xs), rel=1e-12)
    # Only count of a text attribute is fine.
    out = codap.done("compute_codap_statistics", {**base, "attributes": ["name"], "statistics": ["count"]})
    assert out["structuredContent"]["rows"][0]["count"] == 8
    assert attribute_names(codap, "Errs") == ["height", "arm span", "group", "name"]


def test_statistics_of_a_child_collection_are_per_parent_case(codap: CodapPage) -> None:
    """In a grouped dataset CODAP's aggregates of a child collection work per parent case: the statistics come a row
    per parent case, equal to CODAP's own formula in the parent collection; a grouping CODAP cannot do is refused."""
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext",
            "values": {
                "name": "Nested",
                "collections": [
                    {"name": "classes", "attrs": [{"name": "class"}]},
                    {"name": "pupils", "parent": "classes", "attrs": [{"name": "score"}]},
                ],
            },
        }
    )
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext[Nested].item",
            "values": [{"class": "A", "score": 3}, {"class": "A", "score": 5}, {"class": "B", "score": 9}],
        }
    )
    out = codap.done(
        "compute_codap_statistics",
        {
            "datasetName": "Nested",
            "attributes": ["score"],
            "statistics": ["count", "mean", "max"],
            "where": "score > 3",
        },
    )
    own = [{"name": "m", "formula": "mean(score, score > 3)"}, {"name": "n", "formula": "count()"}]
    codap.ok({"action": "create", "resource": "dataContext[Nested].collection[classes].attribute", "values": own})
    parents = codap.ok({"action": "get", "resource": "dataContext[Nested].collection[classes].allCases"})["cases"]
    assert (
        [(r["group"], r["cases"], r["mean"], r["max"]) for r in out["structuredContent"]["rows"]]
        == [(c["case"]["values"]["class"], 1, c["case"]["values"]["m"], c["case"]["values"]["m"]) for c in parents]
        == [("A", 1, 5, 5), ("B", 1, 9, 9)]
    )
    assert out["structuredContent"]["perCaseOf"] == "classes" and out["structuredContent"]["casesMatched"] == 2
    assert "class | attribute | cases | % of cases | count | mean | max" in out["content"][0]["text"]
    same = codap.done(
        "compute_codap_statistics", {"datasetName": "Nested", "attributes": ["score"], "groupBy": "class"}
    )
    assert [r["cases"] for r in same["structuredContent"]["rows"]] == [c["case"]["values"]["n"] for c in parents]
    err = codap.failed(
        "compute_codap_statistics", {"datasetName": "Nested", "attributes": ["score"], "groupBy": "score"}
    )
    assert err["code"] == "hierarchical_dataset" and "per parent case" in err["message"] and "ungroup" in err["message"]
    err = codap.failed("compute_codap_statistics", {"datasetName": "Nested", "attributes": ["score", "class"]})
    assert err["code"] == "hierarchical_dataset" and "different collections" in err["message"]


# --- evaluate_codap_formula ---------------------------------------------------------------------------------


def test_evaluate_formula_without_and_with_a_dataset(codap: CodapPage) -> None:
    out = codap.done("evaluate_codap_formula", {"formula": "round(sqrt(2), 3)"})
    assert out["structuredContent"]["value"] == 1.414
    err = codap.failed("evaluate_codap_formula", {"formula": "mean(height)"})
    assert err["code"] == "formula_error" and "datasetName" in err["message"] and "mean(height)" in err["message"]
    err = codap.failed("evaluate_codap_formula", {"formula": "2 +* 3"})
    assert err["code"] == "formula_error" and "Value expected" in err["message"]

    make_dataset(codap, "Formulas")
    held = rows(codap, "Formulas")  # a flat dataset: rows in the cases' order
    assert [c["values"] for c in held] == [c["values"] for c in cases(codap, "Formulas")]
    args = {"datasetName": "Formulas", "formula": "`arm span` - height", "cases": 3}
    out = codap.done("evaluate_codap_formula", args)
    results = out["structuredContent"]["results"]
    assert [r["caseId"] for r in results] == [c["id"] for c in held[:3]]
    for r, c in zip(results, held[:3], strict=True):
        assert r["value"] == pytest.approx(c["values"]["arm span"] - c["values"]["height"])
        assert r["values"] == c["values"]
    out = codap.done(
        "evaluate_codap_formula",
        {
            "datasetName": "Formulas",
            "formula": "height > mean(height)",
            "caseIds": [held[4]["id"], held[3]["id"]],
        },
    )
    # CODAP stores a condition's value in an attribute as text.
    assert [r["value"] for r in out["structuredContent"]["results"]] == ["true", "false"]  # Ed 181, Di 148.75
    err = codap.failed("evaluate_codap_formula", {"datasetName": "Formulas", "formula": "height * weight"})
    assert err["code"] == "formula_error" and "Undefined symbol weight" in err["message"]
    assert "height * weight" in err["message"] and "arm span" in err["message"]
    err = codap.failed("evaluate_codap_formula", {"datasetName": "Formulas", "formula": "1", "caseIds": [1]})
    assert err["code"] == "case_not_found" and "includeCaseIds" in err["message"]
    # A case id is not a row id.
    case_id = cases(codap, "Formulas")[0]["id"]
    err = codap.failed("evaluate_codap_formula", {"datasetName": "Formulas", "formula": "1", "caseIds": [case_id]})
    assert err["code"] == "case_not_found"
    err = codap.failed("evaluate_codap_formula", {"datasetName": "Formulas", "formula": "1", "collectionName": "x"})
    assert err["code"] == "collection_not_found" and err["data"]["available"] == ["people"]
    assert attribute_names(codap, "Formulas") == ["height", "arm span", "group", "name"]


# --- select_codap_cases and get_codap_selection -------------------------------------------------------------


def selected_ids(codap: CodapPage, dataset: str, coll: str = "people") -> set[int]:
    """The item ids of the selected rows, as CODAP holds them (selectionList's cases, mapped to their items)."""
    values = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].collection[{coll}].selectionList"})
    return {
        codap.ok({"action": "get", "resource": f"dataContext[{dataset}].itemByCaseID[{s['caseID']}]"})["id"]
        for s in values
    }


def test_select_cases_by_where_and_ids_then_read_the_selection(codap: CodapPage) -> None:
    make_dataset(codap, "Sel")
    held = rows(codap, "Sel")
    tall = {c["id"] for c in held if isinstance(c["values"]["height"], (int, float)) and c["values"]["height"] > 160}
    out = codap.done("select_codap_cases", {"datasetName": "Sel", "where": "height > 160"})
    assert selected_ids(codap, "Sel") == tall
    data = out["structuredContent"]
    assert (data["selectedCount"], data["caseCount"], data["matched"]) == (len(tall), 8, len(tall))
    assert f"{len(tall)} of 8 cases" in out["content"][0]["text"]
    # The rows selected are listed, as CODAP holds them, in its order: no second call to read them.
    assert data["cases"] == [{"caseId": c["id"], "values": c["values"]} for c in held if c["id"] in tall]
    assert data["caseIds"] == [c["caseId"] for c in data["cases"]] and data["truncated"] is False
    least = codap.done("select_codap_cases", {"datasetName": "Sel", "where": "height = min(height)"})
    assert least["structuredContent"]["cases"] == [{"caseId": held[3]["id"], "values": held[3]["values"]}]  # Di
    assert f'{held[3]["id"]}: {{"height":148.75,"arm span":149,"group":"c","name":"Di"}}' in least["content"][0]["text"]
    capped = codap.done("select_codap_cases", {"datasetName": "Sel", "where": "height > 160", "maxCases": 1})
    assert len(capped["structuredContent"]["cases"]) == 1 and capped["structuredContent"]["truncated"] is True
    assert f"… and {len(tall) - 1} more ({len(tall)} in all)" in capped["content"][0]["text"]

    ann = held[0]["id"]
    out = codap.done("select_codap_cases", {"datasetName": "Sel", "caseIds": [ann, 999], "mode": "extend"})
    assert selected_ids(codap, "Sel") == tall | {ann}
    assert out["structuredContent"]["notCases"] == [999] and out["structuredContent"]["selectedCount"] == len(tall) + 1
    assert out["structuredContent"]["cases"] == [{"caseId": ann, "values": held[0]["values"]}]

    shown = codap.done("get_codap_selection", {"datasetName": "Sel", "maxCases": 2})["structuredContent"]
    assert shown["selectedCount"] == len(tall) + 1 and shown["caseCount"] == 8 and shown["truncated"] is True
    by_id = {c["id"]: c["values"] for c in held}
    assert len(shown["cases"]) == 2
    for c in shown["cases"]:
        assert c["caseId"] in tall | {ann} and c["values"] == by_id[c["caseId"]]
    assert shown["caseIds"] == [c["caseId"] for c in shown["cases"]]

    # A where that matches nothing changes nothing, and says so.
    err = codap.failed("select_codap_cases", {"datasetName": "Sel", "where": "height > 500"})
    assert err["code"] == "no_matching_cases" and f"{len(tall) + 1} of 8 selected" in err["message"]
    assert selected_ids(codap, "Sel") == tall | {ann}
    err = codap.failed("select_codap_cases", {"datasetName": "Sel", "where": "weight > 5"})
    assert err["code"] == "formula_error" and "Undefined symbol weight" in err["message"]
    err = codap.failed("select_codap_cases", {"datasetName": "Sel", "where": "height >* 5"})
    assert err["code"] == "formula_error" and "Value expected" in err["message"], err
    err = codap.failed("select_codap_cases", {"datasetName": "Sel", "caseIds": [1, 2]})
    assert err["code"] == "case_not_found" and "includeCaseIds" in err["message"]
    case_ids = [c["id"] for c in cases(codap, "Sel")]  # CODAP's case ids are not the rows' ids
    err = codap.failed("select_codap_cases", {"datasetName": "Sel", "caseIds": case_ids[:2]})
    assert err["code"] == "case_not_found"
    err = codap.failed("select_codap_cases", {"datasetName": "Sel"})
    assert err["code"] == "invalid_arguments"
    assert selected_ids(codap, "Sel") == tall | {ann}

    out = codap.done("select_codap_cases", {"datasetName": "Sel", "caseIds": [ann]})
    assert selected_ids(codap, "Sel") == {ann} and out["structuredContent"]["selectedCount"] == 1
    out = codap.done("select_codap_cases", {"datasetName": "Sel", "mode": "clear"})
    assert selected_ids(codap, "Sel") == set() and out["structuredContent"]["selectedCount"] == 0
    shown = codap.done("get_codap_selection", {"datasetName": "Sel"})
    assert shown["structuredContent"]["selectedCount"] == 0 and shown["structuredContent"]["cases"] == []
    err = codap.failed("get_codap_selection", {"datasetName": "Nope"})
    assert err["code"] == "dataset_not_found" and "Sel" in err["data"]["available"]


# --- the same ids in every tool --------------------------------------------------------------------------------


def test_row_ids_carry_between_tools_also_after_grouping(codap: CodapPage) -> None:
    make_dataset(codap, "Carry")
    exported = codap.done("export_codap_data", {"datasetName": "Carry", "includeCaseIds": True})["structuredContent"]
    row_id = {r["name"]: i for i, r in zip(exported["caseIds"], exported["rows"], strict=True)}
    assert sorted(row_id.values()) == sorted(r["id"] for r in rows(codap, "Carry"))
    assert not set(row_id.values()) & {c["id"] for c in cases(codap, "Carry")}  # item ids, not case ids

    def changed_rows(attr: str, value: Any) -> set[int]:
        return {r["id"] for r in rows(codap, "Carry") if r["values"][attr] == value}

    # export -> select -> get_codap_selection -> update, evaluate: the same rows.
    picked = [row_id["Bo"], row_id["Ed"]]
    out = codap.done("select_codap_cases", {"datasetName": "Carry", "caseIds": picked})
    assert selected_ids(codap, "Carry") == set(picked) and out["structuredContent"]["selectedCount"] == 2
    shown = codap.done("get_codap_selection", {"datasetName": "Carry"})["structuredContent"]
    assert sorted(shown["caseIds"]) == sorted(picked) and shown["selectedCount"] == 2
    assert {c["caseId"]: c["values"]["name"] for c in shown["cases"]} == {row_id["Bo"]: "Bo", row_id["Ed"]: "Ed"}
    out = codap.done(
        "update_codap_cases", {"datasetName": "Carry", "caseIds": shown["caseIds"], "values": {"group": "z"}}
    )
    assert sorted(out["structuredContent"]["caseIds"]) == sorted(picked)
    assert changed_rows("group", "z") == set(picked)
    ev = codap.done("evaluate_codap_formula", {"datasetName": "Carry", "formula": "name", "caseIds": picked})
    assert [(r["caseId"], r["value"]) for r in ev["structuredContent"]["results"]] == [
        (row_id["Bo"], "Bo"),
        (row_id["Ed"], "Ed"),
    ]
    first = codap.done("evaluate_codap_formula", {"datasetName": "Carry", "formula": "name", "cases": 2})
    assert [r["caseId"] for r in first["structuredContent"]["results"]] == [row_id["Ann"], row_id["Bo"]]

    # Grouping rebuilds CODAP's cases; the row ids stay valid.
    codap.done("group_codap_cases", {"datasetName": "Carry", "attributes": ["group"], "collectionName": "groups"})
    again = codap.done("export_codap_data", {"datasetName": "Carry", "includeCaseIds": True})["structuredContent"]
    assert {r["name"]: i for i, r in zip(again["caseIds"], again["rows"], strict=True)} == row_id
    group_a = [row_id["Ann"], row_id["Cy"], row_id["Flo"]]
    out = codap.done("select_codap_cases", {"datasetName": "Carry", "caseIds": group_a})
    assert selected_ids(codap, "Carry") == set(group_a)
    shown = codap.done("get_codap_selection", {"datasetName": "Carry"})["structuredContent"]
    assert shown["collectionName"] == "people" and sorted(shown["caseIds"]) == sorted(group_a)
    assert {c["values"]["group"] for c in shown["cases"]} == {"a"}  # a row's values hold its parent's
    # The parent collection: CODAP counts group "a" selected (all its rows are); listed by values, no ids.
    parent = codap.done("get_codap_selection", {"datasetName": "Carry", "collectionName": "groups"})
    data = parent["structuredContent"]
    assert (data["selectedCount"], data["cases"]) == (1, [{"values": {"group": "a"}}]) and "caseIds" not in data
    assert "rows' ids are not given" in parent["content"][0]["text"]
    out = codap.done(
        "update_codap_cases", {"datasetName": "Carry", "caseIds": shown["caseIds"], "values": {"arm span": 1}}
    )
    assert changed_rows("arm span", 1) == set(group_a)
    # A row in a parent collection gives its case's value.
    ev = codap.done(
        "evaluate_codap_formula",
        {
            "datasetName": "Carry",
            "formula": "count(name)",
            "collectionName": "groups",
            "caseIds": [row_id["Cy"], row_id["Bo"]],
        },
    )
    assert [(r["caseId"], r["value"]) for r in ev["structuredContent"]["results"]] == [
        (row_id["Cy"], 3),
        (row_id["Bo"], 2),
    ]  # group a: Ann, Cy, Flo; group z: Bo, Ed
    # Selecting by row ids with a parent collection named: the rows are selected, the parent counted.
    out = codap.done(
        "select_codap_cases",
        {"datasetName": "Carry", "collectionName": "groups", "caseIds": [row_id["Bo"], row_id["Ed"]]},
    )
    assert selected_ids(codap, "Carry") == {row_id["Bo"], row_id["Ed"]}
    assert out["structuredContent"]["selectedCount"] == 1 and "all its rows" in out["content"][0]["text"]


def test_correlation_and_the_least_squares_line_of_two_attributes(codap: CodapPage) -> None:
    """The statistics of two attributes, checked against Python's (Pearson's r, the least-squares line of arm span on
    height over the cases with both values) and against CODAP's own correlation() in an attribute read back here."""
    make_dataset(codap, "Pairs")
    both = [(r["height"], r["arm span"]) for r in ROWS if r["height"] != ""]
    xs, ys = [float(x) for x, _ in both], [float(y) for _, y in both]
    line = st.linear_regression(xs, ys)
    asked = {"datasetName": "Pairs", "attributes": ["height"], "pairedWith": "arm span",
             "statistics": ["correlation", "rSquared", "slope", "intercept"]}  # fmt: skip
    (row,) = codap.done("compute_codap_statistics", asked)["structuredContent"]["rows"]
    r = st.correlation(xs, ys)
    assert row["correlation"] == pytest.approx(r) and row["rSquared"] == pytest.approx(r * r)
    assert row["slope"] == pytest.approx(line.slope) and row["intercept"] == pytest.approx(line.intercept)
    codap.ok({"action": "create", "resource": "dataContext[Pairs].collection[people].attribute",
              "values": [{"name": "r", "formula": "correlation(height, `arm span`)"}]})  # fmt: skip
    assert [i["values"]["r"] for i in codap.items("Pairs")] == [pytest.approx(row["correlation"])] * len(ROWS)
    alone = codap.failed("compute_codap_statistics", {"datasetName": "Pairs", "attributes": ["height"],
                                                      "statistics": ["correlation"]})  # fmt: skip
    assert alone["code"] == "invalid_arguments" and "pairedWith" in alone["message"]
    help_text = codap.done("codap_api_help", {"topic": "formulas"})["content"][0]["text"]
    assert "correlation(x, y)" in help_text


# --- random formulas: read-only tools leave the drawn values as the class sees them --------------------------


def make_coin_flips(codap: CodapPage, name: str, flips: int = 200) -> None:
    """A dataset whose ``result`` is drawn by random() against a slider's global ``p``, as a class simulates."""
    codap.ok({"action": "create", "resource": "global", "values": {"name": "p", "value": 0.7}})
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext",
            "values": {
                "name": name,
                "collections": [{"name": "people", "attrs": [{"name": "flip"}, {"name": "size"}]}],
            },
        }
    )
    codap.ok(
        {
            "action": "create",
            "resource": f"dataContext[{name}].item",
            "values": [{"flip": i + 1, "size": "big" if i % 3 else "small"} for i in range(flips)],
        }
    )
    codap.ok(
        {
            "action": "create",
            "resource": f"dataContext[{name}].collection[people].attribute",
            "values": [
                {"name": "result", "formula": 'if(random() < p, "heads", "tails")'},
                {"name": "draw", "formula": "randomNormal(50, 10)"},
            ],
        }
    )


def test_statistics_and_formulas_leave_random_columns_as_drawn(codap: CodapPage) -> None:
    make_coin_flips(codap, "CoinFlips")
    before = cases(codap, "CoinFlips")
    heads = sum(c["values"]["result"] == "heads" for c in before)
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "CoinFlips", "attributes": ["result"], "statistics": ["count"], "groupBy": "result"},
    )
    after = cases(codap, "CoinFlips")
    assert after == before  # no flip re-drawn
    counts = {r["group"]: r["cases"] for r in out["structuredContent"]["rows"]}
    assert counts == {"heads": heads, "tails": len(before) - heads}
    draws = [c["values"]["draw"] for c in before]
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "CoinFlips", "attributes": ["draw"], "statistics": ["mean", "median", "sd", "q1", "mad"]},
    )
    assert cases(codap, "CoinFlips") == before
    row = out["structuredContent"]["rows"][0]
    expected = codap_stats(draws)
    for stat in ("mean", "median", "sd", "q1", "mad"):
        assert row[stat] == pytest.approx(expected[stat], rel=1e-12), stat
    # Where, named groups and the bivariate statistics: the cases matching are CODAP's (its case search).
    out = codap.done(
        "compute_codap_statistics",
        {
            "datasetName": "CoinFlips",
            "attributes": ["draw"],
            "statistics": ["count", "mean", "slope"],
            "pairedWith": "flip",
            "where": "flip > 20",
            "groups": {"small heads": 'size = "small" and result = "heads"', "big": 'size = "big"'},
        },
    )
    assert cases(codap, "CoinFlips") == before
    assert out["structuredContent"]["computedFrom"] == "held values"
    got = {r["group"]: r for r in out["structuredContent"]["rows"]}
    small = [c["values"] for c in before if c["values"]["flip"] > 20 and c["values"]["size"] == "small"]
    small = [v for v in small if v["result"] == "heads"]
    assert got["small heads"]["cases"] == len(small)
    assert got["small heads"]["mean"] == pytest.approx(st.mean(v["draw"] for v in small), rel=1e-12)
    slope = st.linear_regression([v["draw"] for v in small], [v["flip"] for v in small]).slope
    assert got["small heads"]["slope"] == pytest.approx(slope, rel=1e-9)
    assert got["big"]["cases"] == sum(c["values"]["flip"] > 20 and c["values"]["size"] == "big" for c in before)
    bad = {"datasetName": "CoinFlips", "attributes": ["draw"], "where": "weight > 3"}
    err = codap.failed("compute_codap_statistics", bad)
    assert err["code"] == "formula_error" and err["data"]["where"] == "weight > 3" and "weight" in err["message"]
    assert cases(codap, "CoinFlips") == before
    # A formula needs a hidden attribute: CODAP draws the random columns anew, and the answer says so plainly.
    out = codap.done(
        "compute_codap_statistics",
        {"datasetName": "CoinFlips", "attributes": ["flip"], "statistics": ["count"], "groupBy": "round(flip / 100)"},
    )
    assert cases(codap, "CoinFlips") != before
    assert out["structuredContent"]["computedFrom"] == "formula"
    assert {c["attribute"] for c in out["structuredContent"]["redrawnRandomColumns"]} == {"result", "draw"}
    assert "drew the random values of CoinFlips.result, CoinFlips.draw anew" in out["content"][0]["text"]
    before = cases(codap, "CoinFlips")
    heads = sum(c["values"]["result"] == "heads" for c in before)
    out = codap.done("evaluate_codap_formula", {"datasetName": "CoinFlips", "formula": 'count(result = "heads")'})
    now = cases(codap, "CoinFlips")
    assert now != before  # what CODAP really does
    data = out["structuredContent"]
    assert data["results"][0]["value"] == heads  # the draws held when the call began
    assert {c["attribute"] for c in data["redrawnRandomColumns"]} == {"result", "draw"}
    assert "CoinFlips.result, CoinFlips.draw anew" in out["content"][0]["text"]
    shown_now = {c["id"]: c["values"] for c in now}
    for r in data["results"]:  # flat dataset: row ids are the case ids' items; compare by values read now
        assert r["nowShown"] in [{"result": v["result"], "draw": v["draw"]} for v in shown_now.values()]
