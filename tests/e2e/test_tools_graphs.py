"""The graph tools inside the real CODAP app: a legend and a dot plot on create_codap_graph, update_codap_graph,
and CODAP's adornments (add_codap_adornment, remove_codap_adornment). Every outcome is read back from CODAP with
``codap.ok`` (the component, its adornment list and each adornment's values), never taken from the tool's answer.
"""

from __future__ import annotations

from statistics import mean, median
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS: list[dict[str, Any]] = [
    {"h": 150, "w": 50, "g": "A"},
    {"h": 160, "w": 55, "g": "A"},
    {"h": 170, "w": 70, "g": "B"},
    {"h": 180, "w": 80, "g": "B"},
    {"h": 175, "w": 65, "g": "A"},
]
HEIGHTS = [float(r["h"]) for r in ROWS]
WEIGHTS = [float(r["w"]) for r in ROWS]


def dataset(codap: CodapPage, name: str) -> None:
    codap.done(
        "create_codap_dataset",
        {"datasetName": name, "dataType": "custom", "recordCount": len(ROWS), "customData": ROWS},
    )


def graph(codap: CodapPage, **args: Any) -> int:
    made = codap.done("create_codap_graph", args)["structuredContent"]
    return int(made["graphId"])


def component(codap: CodapPage, graph_id: int) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{graph_id}]"})
    return values


def shown(codap: CodapPage, graph_id: int) -> set[str]:
    """The adornments CODAP lists as visible on a graph (its own type names)."""
    listed = codap.ok({"action": "get", "resource": f"component[{graph_id}].adornmentList"})
    return {a["type"] for a in listed if a["isVisible"]}


def adornment(codap: CodapPage, graph_id: int, codap_type: str) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{graph_id}].adornment[{codap_type}]"})
    return values


def test_a_dot_plot_split_by_a_category_in_one_call(codap: CodapPage) -> None:
    # recordCount is left out for custom rows: every row is used.
    made = codap.done("create_codap_dataset", {"datasetName": "split data", "dataType": "custom", "customData": ROWS})
    assert made["structuredContent"]["recordCount"] == len(ROWS) and len(codap.items("split data")) == len(ROWS)
    split = graph(codap, datasetName="split data", graphType="dot_plot", xAttribute="h", yAttribute="g")
    held = component(codap, split)
    assert (held["plotType"], held["xAttributeName"], held["yAttributeName"]) == ("dotPlot", "h", "g")
    both_numeric = codap.failed(
        "create_codap_graph",
        {"datasetName": "split data", "graphType": "dot_plot", "xAttribute": "h", "yAttribute": "w"},
    )
    assert both_numeric["code"] == "invalid_arguments" and "graphType scatterplot" in both_numeric["message"]
    no_count = codap.failed("create_codap_dataset", {"datasetName": "generated", "dataType": "random_numbers"})
    assert no_count["code"] == "invalid_arguments" and "give recordCount" in no_count["message"]
    assert "generated" not in codap.dataset_names()


def test_create_graph_colours_by_a_legend_and_makes_dot_plots(codap: CodapPage) -> None:
    dataset(codap, "legend data")
    dots = graph(codap, datasetName="legend data", graphType="dot_plot", xAttribute="h", legendAttribute="g")
    held = component(codap, dots)
    assert (held["plotType"], held["xAttributeName"], held["legendAttributeName"]) == ("dotPlot", "h", "g")
    assert held["yAttributeName"] is None and held["pointsAreFusedIntoBars"] is False
    chart = graph(codap, datasetName="legend data", graphType="dot_plot", xAttribute="g")
    held = component(codap, chart)
    assert (held["plotType"], held["pointsAreFusedIntoBars"]) == ("dotChart", False)
    answer = codap.done(
        "create_codap_graph",
        {
            "datasetName": "legend data",
            "graphType": "scatterplot",
            "xAttribute": "h",
            "yAttribute": "w",
            "legendAttribute": "g",
        },
    )
    made = answer["structuredContent"]
    held = component(codap, made["graphId"])
    assert (
        (held["plotType"], held["legendAttributeName"])
        == ("scatterPlot", "g")
        == (made["plotType"], made["legendAttribute"])
    )
    assert "coloured by g" in answer["content"][0]["text"]
    # a call valid before legends existed still makes what it made
    old = graph(codap, datasetName="legend data", graphType="bar_chart", xAttribute="g")
    held = component(codap, old)
    assert (held["plotType"], held["legendAttributeName"]) == ("barChart", None)

    before = len(codap.components())
    wrong = codap.failed(
        "create_codap_graph",
        {"datasetName": "legend data", "graphType": "dot_plot", "xAttribute": "h", "legendAttribute": "colour"},
    )
    assert wrong["code"] == "attribute_not_found" and "legend" in wrong["message"]
    assert set(wrong["data"]["available"]) == {"h", "w", "g"}
    assert len(codap.components()) == before


def test_update_graph_changes_what_codap_shows_and_says_what_changed(codap: CodapPage) -> None:
    dataset(codap, "update data")
    gid = graph(
        codap, datasetName="update data", graphType="scatterplot", xAttribute="h", yAttribute="w", title="Sizes"
    )
    answer = codap.done(
        "update_codap_graph",
        {
            "graph": "Sizes",
            "legendAttribute": "g",
            "title": "Sizes by group",
            "pointSize": 1.5,
            "pointColor": "#ff0000",
            "showMeasuresForSelection": True,
        },
    )
    held = component(codap, gid)
    assert held["legendAttributeName"] == "g" and held["title"] == "Sizes by group"
    assert held["pointSize"] == 1.5 and held["pointColor"] == "#ff0000"
    assert held["showMeasuresForSelection"] is True
    result = answer["structuredContent"]
    changed = {c["setting"]: c["after"] for c in result["changes"]}
    assert changed["legendAttribute"] == "g" and changed["title"] == "Sizes by group" and changed["pointSize"] == 1.5
    bounds = codap.done("update_codap_graph", {"graph": gid, "xAxisMin": 100, "yAxisMax": 200})
    held = component(codap, gid)
    assert (held["xLowerBound"], held["yUpperBound"]) == (100, 200)
    assert {c["setting"]: c["after"] for c in bounds["structuredContent"]["changes"]} == {
        "xAxisMin": 100,
        "yAxisMax": 200,
    }
    assert "legend (none) → g" in answer["content"][0]["text"]

    lines = codap.done("update_codap_graph", {"graph": gid, "showConnectingLines": True})
    assert component(codap, gid)["showConnectingLines"] is True and "halves" in lines["content"][0]["text"]

    # "" takes the legend off, null the y attribute: CODAP then plots h alone as a dot plot
    answer = codap.done("update_codap_graph", {"graph": gid, "legendAttribute": "", "yAttribute": None})
    held = component(codap, gid)
    assert (held["legendAttributeName"], held["yAttributeName"], held["plotType"]) == (None, None, "dotPlot")
    changed = {c["setting"]: c["after"] for c in answer["structuredContent"]["changes"]}
    assert changed == {"legendAttribute": None, "yAttribute": None, "plotType": "dotPlot"} | {
        k: v for k, v in changed.items() if k.startswith(("xAxis", "yAxis"))
    }
    # a numeric dot plot's dots fused are a histogram: CODAP fuses only binned dots, so they are binned first
    fused = codap.done("update_codap_graph", {"graph": gid, "pointsAreFusedIntoBars": True})
    assert (component(codap, gid)["plotType"], component(codap, gid)["pointsAreFusedIntoBars"]) == ("histogram", True)
    assert "binned dot plot" not in fused["content"][0]["text"] and "histogram" in fused["content"][0]["text"]
    codap.done("update_codap_graph", {"graph": gid, "pointsAreFusedIntoBars": False})
    assert component(codap, gid)["plotType"] == "binnedDotPlot"
    codap.done("update_codap_graph", {"graph": gid, "xAttribute": "g"})
    codap.done("update_codap_graph", {"graph": gid, "pointsAreFusedIntoBars": True})
    assert (component(codap, gid)["plotType"], component(codap, gid)["pointsAreFusedIntoBars"]) == ("barChart", True)
    codap.done(
        "update_codap_graph", {"graph": gid, "pointsAreFusedIntoBars": False, "xAttribute": "h", "yAttribute": "w"}
    )
    assert component(codap, gid)["plotType"] == "scatterPlot"

    # errors: fusing a scatter plot, an unknown attribute, an unknown graph, nothing to change
    fuse = codap.failed("update_codap_graph", {"graph": gid, "pointsAreFusedIntoBars": True})
    assert "scatter plot" in fuse["message"] and "fusing" in fuse["message"]
    assert component(codap, gid)["pointsAreFusedIntoBars"] is False
    wrong = codap.failed("update_codap_graph", {"graph": gid, "xAttribute": "height"})
    assert wrong["code"] == "attribute_not_found" and set(wrong["data"]["available"]) == {"h", "w", "g"}
    assert component(codap, gid)["xAttributeName"] == "h"
    lost = codap.failed("update_codap_graph", {"graph": "No such graph", "title": "x"})
    assert lost["code"] == "graph_not_found" and any("Sizes by group" in g for g in lost["data"]["available"])
    empty = codap.failed("update_codap_graph", {"graph": gid})
    assert empty["code"] == "invalid_arguments" and "xAttribute" in empty["message"]


def test_adornments_on_a_dot_plot_report_what_codap_computed(codap: CodapPage) -> None:
    dataset(codap, "measure data")
    gid = graph(codap, datasetName="measure data", graphType="dot_plot", xAttribute="h", title="Heights")
    added = codap.done("add_codap_adornment", {"graph": "Heights", "adornment": "mean"})["structuredContent"]
    held = adornment(codap, gid, "Mean")
    assert held["data"] == [{"mean": mean(HEIGHTS)}] == added["values"] and added["added"] is True
    med = codap.done("add_codap_adornment", {"graph": gid, "adornment": "median"})
    assert adornment(codap, gid, "Median")["data"] == [{"median": median(HEIGHTS)}]
    assert f"median {median(HEIGHTS):g}" in med["content"][0]["text"]
    sd = codap.done("add_codap_adornment", {"graph": gid, "adornment": "standard_deviation"})["structuredContent"]
    assert sd["values"] == adornment(codap, gid, "Standard Deviation")["data"]
    count = codap.done("add_codap_adornment", {"graph": gid, "adornment": "count"})["structuredContent"]
    assert count["values"] == [{"count": len(ROWS)}] == adornment(codap, gid, "Count")["data"]
    plotted = codap.done("add_codap_adornment", {"graph": gid, "adornment": "plotted_value", "formula": "mean(h) + 1"})
    held = adornment(codap, gid, "Plotted Value")
    assert held["data"] == [{"plottedValue": mean(HEIGHTS) + 1}] and held["formula"] == '"mean(h) + 1"'
    assert plotted["structuredContent"]["formula"] == "mean(h) + 1"
    assert {"Mean", "Median", "Standard Deviation", "Count", "Plotted Value"} <= shown(codap, gid)

    # split by a category on y: one mean per cell
    codap.done("update_codap_graph", {"graph": gid, "yAttribute": "g"})
    again = codap.done("add_codap_adornment", {"graph": gid, "adornment": "mean"})["structuredContent"]
    cells = {c["categories"]["g"]: c["mean"] for c in adornment(codap, gid, "Mean")["data"]}
    assert cells == pytest.approx({"A": mean([150, 160, 175]), "B": mean([170, 180])})
    assert again["added"] is False and {c["categories"]["g"]: c["mean"] for c in again["values"]} == cells

    # a formula CODAP cannot compute on a graph without one: refused, and not left on the graph
    fresh = graph(codap, datasetName="measure data", graphType="dot_plot", xAttribute="w")
    bad = codap.failed("add_codap_adornment", {"graph": fresh, "adornment": "plotted_value", "formula": "mean(nope)"})
    assert bad["code"] == "formula_error" and "mean(nope)" in bad["message"] and "nope" in bad["data"]["codapError"]
    assert "Plotted Value" not in shown(codap, fresh)
    listed = codap.ok({"action": "get", "resource": f"component[{fresh}].adornmentList"})
    assert "Plotted Value" not in {a["type"] for a in listed}  # not even hidden: nothing of the attempt is left
    # an adornment the plot cannot take, and one CODAP's API cannot create
    lsrl = codap.failed("add_codap_adornment", {"graph": gid, "adornment": "least_squares_line"})
    assert lsrl["code"] == "adornment_not_supported_by_plot"
    assert "scatter plot" in lsrl["message"] and "dot plot" in lsrl["message"]
    # CODAP's API cannot create a box plot: the tool rebuilds the graph's saved form with one
    box = codap.done("add_codap_adornment", {"graph": gid, "adornment": "box_plot"})["structuredContent"]
    held_box = {c["categories"]["g"]: c for c in adornment(codap, gid, "Box Plot")["data"]}
    assert "Box Plot" in shown(codap, gid) and {c["categories"]["g"]: c for c in box["values"]} == held_box
    quartiles = (held_box["A"]["lowerQuartile"], held_box["A"]["median"], held_box["A"]["upperQuartile"])
    assert quartiles == (155, 160, 167.5)

    removed = codap.done("remove_codap_adornment", {"graph": gid, "adornment": "mean"})["structuredContent"]
    assert "Mean" not in shown(codap, gid) and "Median" in shown(codap, gid)
    assert "mean" not in removed["shown"] and "median" in removed["shown"]
    missing = codap.failed("remove_codap_adornment", {"graph": gid, "adornment": "mean"})
    assert missing["code"] == "adornment_not_found"
    assert set(missing["data"]["available"]) == {"median", "standard_deviation", "count", "plotted_value", "box_plot"}
    assert "median" in missing["message"]
    lost = codap.failed("add_codap_adornment", {"graph": "Weights", "adornment": "mean"})
    assert lost["code"] == "graph_not_found" and any("Heights" in g for g in lost["data"]["available"])


def test_least_squares_line_and_percents(codap: CodapPage) -> None:
    dataset(codap, "line data")
    gid = graph(codap, datasetName="line data", graphType="scatterplot", xAttribute="h", yAttribute="w")
    answer = codap.done("add_codap_adornment", {"graph": gid, "adornment": "least_squares_line", "showRSquared": True})
    held = adornment(codap, gid, "LSRL")
    (line,) = held["data"]
    xs, ys = HEIGHTS, WEIGHTS
    mx, my = mean(xs), mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    assert line["slope"] == pytest.approx(sxy / sxx) and line["intercept"] == pytest.approx(my - sxy / sxx * mx)
    assert line["rSquared"] == pytest.approx(sxy**2 / (sxx * syy)) and held["showRSquared"] is True
    (reported,) = answer["structuredContent"]["values"]
    assert reported["slope"] == line["slope"] and reported["rSquared"] == line["rSquared"]
    assert "slope" in answer["content"][0]["text"]

    nope = codap.failed("add_codap_adornment", {"graph": gid, "adornment": "percent"})
    assert nope["code"] == "adornment_not_supported_by_plot" and "categorical" in nope["message"]
    bars = graph(codap, datasetName="line data", graphType="dot_plot", xAttribute="g")
    pct = codap.done("add_codap_adornment", {"graph": bars, "adornment": "percent"})["structuredContent"]
    held_pct = {c["categories"]["g"]: c["percent"] for c in adornment(codap, bars, "Percent")["data"]}
    assert held_pct == {"A": "60", "B": "40"} == {c["categories"]["g"]: c["percent"] for c in pct["values"]}
    assert shown(codap, bars) == {"Percent"}
    codap.done("remove_codap_adornment", {"graph": bars, "adornment": "percent"})
    assert shown(codap, bars) == set()
    codap.done("remove_codap_adornment", {"graph": gid, "adornment": "least_squares_line"})
    assert "LSRL" not in shown(codap, gid)


def test_the_adornment_requests_codap_api_help_shows_are_the_ones_codap_takes(codap: CodapPage) -> None:
    """codap_api_help's adornments topic, each request it shows sent to CODAP as the raw tool would."""
    help_text = codap.done("codap_api_help", {"topic": "adornments"})["content"][0]["text"]
    dataset(codap, "help data")
    dots = graph(codap, datasetName="help data", graphType="dot_plot", xAttribute="h")
    scatter = graph(codap, datasetName="help data", graphType="scatterplot", xAttribute="h", yAttribute="w")
    base = f"component[{dots}].adornment"
    made = codap.di(
        {"action": "create", "resource": base, "values": {"type": "Plotted Value", "expression": "mean(h) + 1"}}
    )
    assert made["success"] is True and made["values"]["data"] == [{"plottedValue": mean(HEIGHTS) + 1}]
    for kind in ("Count", "Mean", "Median", "Standard Deviation", "Movable Value"):
        assert codap.di({"action": "create", "resource": base, "values": {"type": kind}})["success"] is True, kind
    update = {"action": "update", "resource": base, "values": {"type": "Count", "percentType": "row"}}
    assert codap.di(update)["success"] is True
    assert codap.di({"action": "delete", "resource": base, "values": {"type": "Mean"}})["success"] is True
    assert adornment(codap, dots, "Mean")["isVisible"] is False and "Mean" not in shown(codap, dots)
    lsrl = {"type": "LSRL", "showConfidenceBands": True}
    assert codap.di({"action": "create", "resource": f"component[{scatter}].adornment", "values": lsrl})["success"]
    # The ones the topic says CODAP cannot create: refused as it says.
    assert "does not currently support create" in help_text
    for kind, on in (
        ("Plotted Function", scatter),
        ("Box Plot", dots),
        ("Normal Curve", dots),
        ("Movable Line", scatter),
    ):
        refused = codap.di({"action": "create", "resource": f"component[{on}].adornment", "values": {"type": kind}})
        assert refused["success"] is False and "does not currently support create" in refused["values"]["error"], kind
        assert f'"{kind}"' in help_text or kind in help_text
