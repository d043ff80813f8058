"""A class's graph asks in one call each, in the real CODAP app: a graph made with its statistics and settings, each
bar's count, a least-squares line's signed r, statistics on a histogram (which CODAP's adornmentList leaves out),
percents beside a legend, statistics computed again after an axis change, a filter's count, cases hidden in a graph
by a condition or by ids. Every outcome is read back from CODAP itself (``get component``, each adornment by type,
the dataset's items and CODAP's own search), never from the tool's answer alone."""

from __future__ import annotations

from collections.abc import Iterator
from statistics import correlation, mean
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS: list[dict[str, Any]] = [
    {"h": 150 + (i * 7) % 41, "w": 90 - i * 2 + (i * 5) % 7, "g": "AB"[i % 2] if i < 14 else "C",
     "band": "lo" if i < 8 else "hi"}
    for i in range(20)
]  # fmt: skip


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    codap.drop_what_was_made(before, components)


def dataset(codap: CodapPage, name: str) -> None:
    codap.done("create_codap_dataset", {"datasetName": name, "dataType": "custom", "customData": ROWS})


def adornment(codap: CodapPage, gid: int, codap_type: str) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{gid}].adornment[{codap_type}]"})
    return values


def component(codap: CodapPage, gid: int) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{gid}]"})
    return values


def status_of(codap: CodapPage, gid: int) -> tuple[dict[str, Any], str]:
    status = codap.done("get_codap_status", {})
    state = next(c["graph"] for c in status["structuredContent"]["components"] if c["id"] == gid)
    return state, status["content"][0]["text"]


def test_a_histogram_with_its_mean_and_box_plot_in_one_call(codap: CodapPage) -> None:
    dataset(codap, "hist")
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "hist", "graphType": "histogram", "xAttribute": "h", "adornments": ["mean", "box_plot"]},
    )
    gid = int(made["structuredContent"]["graphId"])
    assert component(codap, gid)["plotType"] == "histogram"
    # CODAP's list leaves the histogram's statistics out; each one's own get shows them drawn
    assert codap.ok({"action": "get", "resource": f"component[{gid}].adornmentList"}) == []
    held_mean, box = adornment(codap, gid, "Mean"), adornment(codap, gid, "Box Plot")
    assert held_mean["isVisible"] and box["isVisible"]
    assert held_mean["data"][0]["mean"] == pytest.approx(mean(r["h"] for r in ROWS))
    answered = {a["adornment"]: a["values"] for a in made["structuredContent"]["adornments"]}
    assert answered["mean"] == [{"mean": held_mean["data"][0]["mean"]}]
    assert answered["box_plot"] == box["data"]
    text = made["content"][0]["text"]
    assert "histogram" in text and f"mean {held_mean['data'][0]['mean']:g}" in text and "Not added" not in text
    state, said = status_of(codap, gid)
    assert {a["name"] for a in state["adornments"]} == {"mean", "box_plot"} and "with mean, box plot" in said
    taken = codap.done("remove_codap_adornment", {"graph": gid, "adornment": "box_plot"})
    assert not adornment(codap, gid, "Box Plot")["isVisible"] and taken["structuredContent"]["shown"] == ["mean"]


def test_a_bar_chart_in_percent_with_each_bars_count_and_the_legends_percent_explained(codap: CodapPage) -> None:
    dataset(codap, "bars")
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "bars", "graphType": "bar_chart", "xAttribute": "g", "legendAttribute": "band",
         "barChartScale": "percent", "adornments": ["percent"]},
    )  # fmt: skip
    gid = int(made["structuredContent"]["graphId"])
    held = component(codap, gid)
    assert (held["plotType"], held["barChartScale"], held["legendAttributeName"]) == ("barChart", "percent", "band")
    counting = adornment(codap, gid, "Count")
    assert counting["isVisible"] and counting["showPercent"] and not counting["showCount"]
    items = [i["values"] for i in codap.items("bars")]
    order = list(dict.fromkeys(v["g"] for v in items))  # the bars in the order the values first appear
    answer = made["structuredContent"]
    assert [c["categories"]["g"] for c in answer["categoryCounts"]] == order
    for cell in answer["categoryCounts"]:
        mine = [v for v in items if v["g"] == cell["categories"]["g"]]
        assert cell["count"] == len(mine) and cell["percent"] == pytest.approx(100 * len(mine) / len(items), abs=0.01)
        assert cell["byLegend"] == {b: sum(v["band"] == b for v in mine) for b in {v["band"] for v in mine}}
    assert [c["percent"] for c in answer["adornments"][0]["values"]] == [c["percent"] for c in counting["data"]]
    assert any(c["setting"] == "barChartScale" for c in answer["settings"]["changes"])
    text = made["content"][0]["text"]
    assert "not split by the legend band" in text and 'yAttribute "band"' in text and "bar scale percent" in text
    state, said = status_of(codap, gid)
    assert [a["name"] for a in state["adornments"]] == ["percent"] and "with percent" in said and "count" not in said

    # the percent split by band as the answer says: band on the y axis, each column's percents
    codap.done("update_codap_graph", {"graph": gid, "yAttribute": "band"})
    split = codap.done("add_codap_adornment", {"graph": gid, "adornment": "percent", "percentType": "column"})
    cells = adornment(codap, gid, "Count")["data"]
    a_lo = next(c for c in cells if c["categories"] == {"g": "A", "band": "lo"})
    a_rows = [v for v in items if v["g"] == "A"]
    assert float(a_lo["percent"]) == pytest.approx(100 * sum(v["band"] == "lo" for v in a_rows) / len(a_rows), abs=0.5)
    assert "not split by the legend" not in split["content"][0]["text"]


def test_a_least_squares_line_gives_its_signed_r(codap: CodapPage) -> None:
    dataset(codap, "lsrl")
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "lsrl", "graphType": "scatterplot", "xAttribute": "h", "yAttribute": "w",
         "adornments": ["least_squares_line"], "showR": True},
    )  # fmt: skip
    gid = int(made["structuredContent"]["graphId"])
    line = adornment(codap, gid, "LSRL")
    assert line["isVisible"] and line["showR"] is True
    held = line["data"][0]
    values = made["structuredContent"]["adornments"][0]["values"][0]
    r = correlation([float(v["h"]) for v in ROWS], [float(v["w"]) for v in ROWS])
    assert r < 0 and values["r"] == pytest.approx(r) and values["r"] ** 2 == pytest.approx(held["rSquared"])
    same = ("slope", "intercept", "rSquared")
    assert [values[k] for k in same] == [held[k] for k in same]
    assert f"r {float(f'{r:.6g}'):g}" in made["content"][0]["text"]


def test_after_an_axis_change_the_statistics_filter_and_hidden_cases_are_read_again(codap: CodapPage) -> None:
    dataset(codap, "again")
    gid = int(codap.done(
        "create_codap_graph",
        {"datasetName": "again", "graphType": "dot_plot", "xAttribute": "h", "adornments": ["mean"], "title": "again"},
    )["structuredContent"]["graphId"])  # fmt: skip
    moved = codap.done("update_codap_graph", {"graph": gid, "yAttribute": "g", "filterFormula": "h > 160"})
    held = adornment(codap, gid, "Mean")["data"]
    stats = moved["structuredContent"]["statistics"]
    assert stats[0]["adornment"] == "mean" and len(stats[0]["values"]) == len(held) == 3
    by_g = {c["categories"]["g"]: c["mean"] for c in held}
    assert {c["categories"]["g"]: c["mean"] for c in stats[0]["values"]} == by_g
    kept = codap.ok({"action": "get", "resource": "dataContext[again].collection[again].caseFormulaSearch[h > 160]"})
    assert f"The filter shows {len(kept)} of the {len(ROWS)} cases" in moved["content"][0]["text"]
    assert "CODAP's statistics now: mean:" in moved["content"][0]["text"]
    # the counts of what the graph shows: the cases CODAP's search keeps
    kept_rows = [r for r in codap.items("again") if r["values"]["h"] > 160]
    assert len(kept_rows) == len(kept)
    counts = {c["categories"]["g"]: c["count"] for c in moved["structuredContent"]["categoryCounts"]}
    assert counts == {g: n for g in "ABC" if (n := sum(r["values"]["g"] == g for r in kept_rows))}
    assert "include" not in moved["content"][0]["text"]

    # hide by a condition and by ids, with nothing selected
    codap.done("update_codap_graph", {"graph": gid, "filterFormula": ""})
    hidden = codap.done("update_codap_graph", {"graph": gid, "hideCasesWhere": 'g = "C"'})
    c_cases = codap.ok({"action": "get", "resource": 'dataContext[again].collection[again].caseFormulaSearch[g = "C"]'})
    assert sorted(component(codap, gid)["hiddenCases"]) == sorted(c["id"] for c in c_cases)
    assert codap.ok({"action": "get", "resource": "dataContext[again].selectionList"}) == []
    assert "cases hidden in the graph 0 → 6" in hidden["content"][0]["text"]
    assert {c["categories"]["g"] for c in hidden["structuredContent"]["categoryCounts"]} == {"A", "B"}
    first = codap.items("again")[0]
    codap.done("update_codap_graph", {"graph": gid, "hideCaseIds": [first["id"]]})
    now = component(codap, gid)["hiddenCases"]
    assert len(now) == len(c_cases) + 1
    (extra,) = set(now) - {c["id"] for c in c_cases}
    case = codap.ok({"action": "get", "resource": f"dataContext[again].itemByCaseID[{extra}]"})
    assert case["id"] == first["id"]
    wrong = codap.failed("update_codap_graph", {"graph": gid, "hideCasesWhere": "nosuch > 1"})
    assert wrong["code"] == "formula_error" and len(component(codap, gid)["hiddenCases"]) == len(now)


def test_a_bar_charts_bars_in_the_order_asked(codap: CodapPage) -> None:
    dataset(codap, "order")
    ids = [i["id"] for i in codap.items("order")]
    gid = int(codap.done(
        "create_codap_graph", {"datasetName": "order", "graphType": "bar_chart", "xAttribute": "g"}
    )["structuredContent"]["graphId"])  # fmt: skip
    order = {"action": "get", "resource": "dataContext[order].attribute[g]"}
    assert codap.ok(order)["_categoryMap"]["__order"] == ["A", "B", "C"]
    moved = codap.done("update_codap_graph", {"graph": gid, "categoryOrder": ["C", "A"]})
    assert codap.ok(order)["_categoryMap"]["__order"] == ["C", "A", "B"]
    assert component(codap, gid)["plotType"] == "barChart" and [i["id"] for i in codap.items("order")] == ids
    assert "order of g's categories A, B, C → C, A, B" in moved["content"][0]["text"]
    assert [c["categories"]["g"] for c in moved["structuredContent"]["categoryCounts"]] == ["C", "A", "B"]
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "order", "graphType": "bar_chart", "xAttribute": "band", "categoryOrder": ["hi", "lo"]},
    )["structuredContent"]
    band = codap.ok({"action": "get", "resource": "dataContext[order].attribute[band]"})
    assert band["_categoryMap"]["__order"] == ["hi", "lo"]  # the data has lo first
    assert [c["categories"]["band"] for c in made["categoryCounts"]] == ["hi", "lo"]
    wrong = codap.failed("update_codap_graph", {"graph": gid, "categoryOrder": ["Z"]})
    assert wrong["code"] == "invalid_arguments" and "no category Z; its categories: C, A, B" in wrong["message"]
    assert codap.ok(order)["_categoryMap"]["__order"] == ["C", "A", "B"]


def test_undo_takes_back_a_histogram_made_with_its_statistics_whole(codap: CodapPage) -> None:
    """One press of Undo takes back the graph, its bins and its statistics, though CODAP reports a binned plot's
    bounds just after a rebuild as 0 to 0 (which a plot set back must not be held to); Redo makes it all again."""
    dataset(codap, "undone")
    before = codap.component_ids()
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "undone", "graphType": "histogram", "xAttribute": "h", "adornments": ["mean", "box_plot"],
         "pointColor": "red"},
    )  # fmt: skip
    assert int(made["structuredContent"]["graphId"]) in codap.component_ids()
    back = codap.done("undo_codap", {"steps": 1})["structuredContent"]
    (call,) = back["toolCalls"]
    assert call["ok"] and call["tool"] == "create_codap_graph", call
    assert codap.component_ids() == before
    again = codap.done("redo_codap", {"steps": 1})["structuredContent"]
    assert again["toolCalls"][0]["ok"]
    (new,) = codap.component_ids() - before
    held = component(codap, new)
    assert (held["plotType"], held["pointColor"][:7]) == ("histogram", "#ff0000")
    assert adornment(codap, new, "Mean")["isVisible"] and adornment(codap, new, "Box Plot")["isVisible"]
