"""CODAP's graph menus through the tools, in the real CODAP app: the Configuration menu (plot types, bins, fused
bars, bar scale), the Format menu (points, stroke, background, legend colours), the Hide/Show menu, the axes
(bounds, rescale, splits, several y attributes, treat as categorical), the Measure menu's statistics and switches
CODAP's plugin API cannot create, a line graph with a legend, and get_codap_status's state of each graph. Every
outcome is read back from CODAP itself: ``get component``, its adornments, the legend attribute and CODAP's saved
document (codap_document.read_document), never the tool's answer alone."""

from __future__ import annotations

from collections.abc import Iterator
from statistics import mean, median, quantiles, stdev
from typing import Any

import pytest

from codap_relay.catalog import plugin_tool
from codap_relay_tooling.testing.codap_document import graph_storage, plot_storage, read_document
from codap_relay_tooling.testing.plugin_page import wait_until
from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS: list[dict[str, Any]] = [
    {"h": 150 + (i * 7) % 41, "w": 45 + (i * 11) % 31, "g": "AB"[i % 2], "band": "lo" if i < 10 else "hi", "t": i}
    for i in range(20)
]
HEIGHTS = [float(r["h"]) for r in ROWS]


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    """Deletes the datasets a test made: CODAP gives and rebuilds its whole document for each setting its plugin
    API cannot reach, so each test starts from a small one."""
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    codap.drop_what_was_made(before, components)


def dataset(codap: CodapPage, name: str, rows: list[dict[str, Any]] = ROWS) -> None:
    codap.done("create_codap_dataset", {"datasetName": name, "dataType": "custom", "customData": rows})


def graph(codap: CodapPage, **args: Any) -> int:
    return int(codap.done("create_codap_graph", args)["structuredContent"]["graphId"])


def update(codap: CodapPage, gid: int, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = codap.done("update_codap_graph", {"graph": gid, **args})
    return answer


def component(codap: CodapPage, gid: int) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{gid}]"})
    return values


def adornment(codap: CodapPage, gid: int, codap_type: str) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{gid}].adornment[{codap_type}]"})
    return values


def shown(codap: CodapPage, gid: int) -> set[str]:
    listed = codap.ok({"action": "get", "resource": f"component[{gid}].adornmentList"})
    return {a["type"] for a in listed if a["isVisible"]}


def changed(answer: dict[str, Any]) -> dict[str, Any]:
    return {c["setting"]: c["after"] for c in answer["structuredContent"]["changes"]}


def test_histograms_bins_and_plot_types_of_the_configuration_menu(codap: CodapPage) -> None:
    dataset(codap, "bins")
    items = [i["id"] for i in codap.items("bins")]
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "bins", "graphType": "histogram", "xAttribute": "h", "binWidth": 5, "binAlignment": 150},
    )["structuredContent"]
    gid = int(made["graphId"])
    assert (component(codap, gid)["plotType"], component(codap, gid)["pointsAreFusedIntoBars"]) == ("histogram", True)
    saved = plot_storage(codap, gid)
    assert (saved["plotClass"], saved["width"], saved["alignment"], saved["dotsAreFused"]) == (
        "DG.BinnedPlotModel", 5, 150, True,
    )  # fmt: skip
    assert made["state"]["bins"]["width"] == 5 and "bins of 5 from 150" in made["made"]
    # CODAP rebuilt the document to bin it: the rows keep their ids (the caseIds the tools hand out)
    assert [i["id"] for i in codap.items("bins")] == items

    wider = update(codap, gid, binWidth=10)
    assert plot_storage(codap, gid)["width"] == 10 and changed(wider)["binWidth"] == 10
    update(codap, gid, plotType="binned_dot_plot")
    assert (component(codap, gid)["plotType"], plot_storage(codap, gid)["dotsAreFused"]) == ("binnedDotPlot", False)
    update(codap, gid, plotType="bar_for_each_point")
    assert component(codap, gid)["plotType"] == "linePlot"
    assert plot_storage(codap, gid)["plotClass"] == "DG.LinePlotModel"
    update(codap, gid, plotType="dot_plot")
    assert component(codap, gid)["plotType"] == "dotPlot"
    fused = update(codap, gid, pointsAreFusedIntoBars=True)  # a numeric dot plot's dots fused: a histogram
    assert component(codap, gid)["plotType"] == "histogram" and changed(fused)["plotType"] == "histogram"

    # a category: dot chart and bar chart with its scale; a numeric attribute is treated as categorical for it
    update(codap, gid, plotType="bar_chart")
    held = component(codap, gid)
    assert (held["plotType"], held["xAttributeType"]) == ("barChart", "categorical")
    update(codap, gid, barChartScale="percent")
    assert component(codap, gid)["barChartScale"] == "percent"
    update(codap, gid, barChartScale="formula", barChartFormula="mean(w)")
    held = component(codap, gid)
    assert (held["barChartScale"], held["barChartFormula"]) == ("formula", "mean(w)")

    scatter = graph(codap, datasetName="bins", graphType="scatterplot", xAttribute="h", yAttribute="w")
    wrong = codap.failed("update_codap_graph", {"graph": scatter, "plotType": "histogram"})
    assert wrong["code"] == "plot_type_not_possible" and "scatter plot" in wrong["message"]
    assert component(codap, scatter)["plotType"] == "scatterPlot"


def test_a_histogram_keeps_each_attributes_decimals_and_type(codap: CodapPage) -> None:
    # imported CSV: numbers whose type CODAP infers (no precision: shown as entered), one typed with 1 decimal
    lines = [f"{9 + i % 4},{150.125 + i * 1.5},{7.25 + (i % 3) / 4}" for i in range(12)]
    codap.done("import_codap_data", {"datasetName": "decimals", "csv": "\n".join(["grade,armspan,sleep", *lines])})
    codap.ok({"action": "update", "resource": "dataContext[decimals].attribute[sleep]",
              "values": {"type": "numeric", "precision": 1}})  # fmt: skip
    names = ("grade", "armspan", "sleep")

    def attributes() -> dict[str, tuple[Any, Any]]:
        got = [codap.ok({"action": "get", "resource": f"dataContext[decimals].attribute[{n}]"}) for n in names]
        return {n: (a.get("precision"), a.get("type")) for n, a in zip(names, got, strict=True)}

    before = attributes()
    assert before["grade"][0] in (None, "") and before["sleep"] == (1, "numeric")
    made = codap.done(
        "create_codap_graph", {"datasetName": "decimals", "graphType": "histogram", "xAttribute": "armspan"}
    )
    assert component(codap, int(made["structuredContent"]["graphId"]))["plotType"] == "histogram"
    assert attributes() == before
    assert "also changed" not in made["content"][0]["text"]


def test_create_treats_a_numeric_attribute_as_categories(codap: CodapPage) -> None:
    rows = [{"sleep_hr": 6 + (i * 3) % 7 / 2, "grade": 9 + i % 4} for i in range(16)]
    dataset(codap, "sleepers", rows)
    asked = {"datasetName": "sleepers", "graphType": "dot_plot", "xAttribute": "sleep_hr", "yAttribute": "grade"}
    refused = codap.failed("create_codap_graph", asked)
    assert 'yAttributeType "categorical"' in refused["message"]
    assert refused["data"]["instead"] == {"yAttributeType": "categorical"}
    made = codap.done("create_codap_graph", {**asked, "yAttributeType": "categorical"})["structuredContent"]
    held = component(codap, int(made["graphId"]))
    assert (held["plotType"], held["yAttributeName"], held["yAttributeType"]) == ("dotPlot", "grade", "categorical")
    assert made["plotType"] == "dotPlot" and "Not set" not in " ".join(made["notes"])
    # and the other way round: x numbers as categories, a legend as a colour scale of categories
    bars = graph(codap, datasetName="sleepers", graphType="dot_plot", xAttribute="grade", xAttributeType="categorical",
                 legendAttribute="grade", legendAttributeType="categorical")  # fmt: skip
    held = component(codap, bars)
    assert (held["xAttributeType"], held["plotType"]) == ("categorical", "dotChart")
    assert graph_storage(codap, bars)["legendAttributeType"] == 2  # CODAP's categorical


def test_format_menu_points_stroke_background_and_legend_colours(codap: CodapPage) -> None:
    dataset(codap, "format")
    gid = graph(codap, datasetName="format", graphType="scatterplot", xAttribute="h", yAttribute="w")
    answer = update(
        codap, gid, pointColor="red", pointOpacity=0.5, pointSize=2, strokeColor="navy", backgroundColor="#ffffe0",
        transparentBackground=True,
    )  # fmt: skip
    held = component(codap, gid)
    assert (held["pointColor"], held["pointSize"], held["strokeColor"]) == ("#ff000080", 2, "#000080")
    assert (held["backgroundColor"], held["transparent"]) == ("#ffffe0", True)
    assert changed(answer) == {
        "pointColor": "#ff0000", "pointOpacity": 0.5, "pointSize": 2, "strokeColor": "#000080",
        "backgroundColor": "#ffffe0", "transparentBackground": True,
    }  # fmt: skip
    update(codap, gid, strokeSameAsFill=True, legendAttribute="g", legendColors={"A": "green", "B": "#ffa500"})
    assert component(codap, gid)["strokeSameAsFill"] is True
    colours = codap.ok({"action": "get", "resource": "dataContext[format].attribute[g]"})["_categoryMap"]
    assert (colours["A"], colours["B"]) == ("#008000", "#ffa500")
    update(codap, gid, legendAttribute="t", legendColorRange={"low": "white", "high": "darkblue"})
    scale = codap.ok({"action": "get", "resource": "dataContext[format].attribute[t]"})["_categoryMap"]
    assert (scale["low-attribute-color"], scale["high-attribute-color"]) == ("#ffffff", "#00008b")
    image = "https://codap.concord.org/images/codap-logo.png"
    update(codap, gid, legendAttributeType="categorical", backgroundImage=image, backgroundImageLockedToAxes=True)
    saved = graph_storage(codap, gid)
    assert (saved["legendAttributeType"], saved["plotBackgroundImage"]) == (2, image)  # 2: CODAP's categorical
    assert saved["plotBackgroundImageLockInfo"]["locked"] is True
    update(codap, gid, backgroundImage="")
    assert "plotBackgroundImage" not in {k for k, v in graph_storage(codap, gid).items() if v is not None}
    bad = codap.failed("update_codap_graph", {"graph": gid, "pointColor": "sparkly"})
    assert bad["code"] == "invalid_arguments" and "sparkly" in bad["message"]
    assert component(codap, gid)["pointColor"] == "#ff000080"


def test_hide_show_menu(codap: CodapPage) -> None:
    dataset(codap, "shows")
    gid = graph(codap, datasetName="shows", graphType="dot_plot", xAttribute="h")
    empty = update(codap, gid, displayOnlySelectedCases=True)
    assert "No case is selected now" in empty["content"][0]["text"]
    update(codap, gid, showAllCases=True)
    nothing = codap.failed("update_codap_graph", {"graph": gid, "hideCases": "selected"})
    assert nothing["code"] == "nothing_to_hide" and "select" in nothing["message"]
    codap.done("select_codap_cases", {"datasetName": "shows", "where": "h < 165"})
    picked = sum(1 for h in HEIGHTS if h < 165)
    hidden = update(codap, gid, hideCases="selected")
    assert len(component(codap, gid)["hiddenCases"]) == picked == changed(hidden)["hideCases"]
    update(codap, gid, showAllCases=True)
    assert component(codap, gid)["hiddenCases"] == []
    update(codap, gid, hideCases="unselected")
    assert len(component(codap, gid)["hiddenCases"]) == len(ROWS) - picked
    update(codap, gid, displayOnlySelectedCases=True)
    assert component(codap, gid)["displayOnlySelectedCases"] is True
    update(codap, gid, showAllCases=True)
    held = component(codap, gid)
    assert not held["displayOnlySelectedCases"] and held["hiddenCases"] == []
    update(codap, gid, filterFormula="h > 170", showMeasuresForSelection=True, showParentToggles=True)
    held = component(codap, gid)
    assert held["filterFormula"] == "h > 170"
    assert held["showMeasuresForSelection"] is True and held["enableNumberToggle"] is True
    update(codap, gid, filterFormula="", showOnlyLastCase=True)
    held = component(codap, gid)
    assert not held["filterFormula"] and held["numberToggleLastMode"] is True


def test_axes_bounds_rescale_splits_and_several_y_attributes(codap: CodapPage) -> None:
    dataset(codap, "axes")
    gid = graph(codap, datasetName="axes", graphType="scatterplot", xAttribute="h", yAttribute="w")
    update(codap, gid, xAxisMin=100, xAxisMax=250)
    assert (component(codap, gid)["xLowerBound"], component(codap, gid)["xUpperBound"]) == (100, 250)
    rescaled = update(codap, gid, rescale=True)
    held = component(codap, gid)
    assert 100 < held["xLowerBound"] <= min(HEIGHTS) and max(HEIGHTS) <= held["xUpperBound"] < 250
    assert {"xAxisMin", "xAxisMax"} <= set(changed(rescaled))
    update(codap, gid, yAttributes=["w", "t"])
    assert component(codap, gid)["yAttributeNames"] == ["w", "t"]
    update(codap, gid, yAttribute="w", y2Attribute="t", topSplitAttribute="g", rightSplitAttribute="band")
    held = component(codap, gid)
    assert (held["y2AttributeName"], held["topSplitAttributeName"], held["rightSplitAttributeName"]) == (
        "t", "g", "band",
    )  # fmt: skip
    update(codap, gid, y2Attribute=None, topSplitAttribute="", rightSplitAttribute=None, xAttributeType="categorical")
    held = component(codap, gid)
    assert (held["y2AttributeName"], held["topSplitAttributeName"]) == (None, None)
    assert held["xAttributeType"] == "categorical"


def test_the_measure_menu_beyond_what_codaps_api_creates(codap: CodapPage) -> None:
    dataset(codap, "measures")
    dots = graph(codap, datasetName="measures", graphType="dot_plot", xAttribute="h")
    box = codap.done("add_codap_adornment", {"graph": dots, "adornment": "box_plot", "showOutliers": True})
    (held,) = adornment(codap, dots, "Box Plot")["data"]
    q1, q2, q3 = quantiles(HEIGHTS, n=4, method="inclusive")
    assert (held["lowerQuartile"], held["median"], held["upperQuartile"]) == pytest.approx((q1, q2, q3))
    assert adornment(codap, dots, "Box Plot")["showOutliers"] is True and box["structuredContent"]["added"] is True
    codap.done("add_codap_adornment", {"graph": dots, "adornment": "normal_curve"})
    (curve,) = adornment(codap, dots, "Normal Curve")["data"]
    assert (curve["mean"], curve["standardDeviation"]) == pytest.approx((mean(HEIGHTS), stdev(HEIGHTS)))
    codap.done("add_codap_adornment", {"graph": dots, "adornment": "standard_error", "numberOfStandardErrors": 2})
    error = adornment(codap, dots, "Standard Error")
    assert error["_numStErrs"] == 2 and error["data"][0]["standardError"] == pytest.approx(stdev(HEIGHTS) / 20**0.5)
    codap.done("add_codap_adornment", {"graph": dots, "adornment": "mean_absolute_deviation"})
    (mad,) = adornment(codap, dots, "Mean Absolute Deviation")["data"]
    deviation = mean(abs(h - mean(HEIGHTS)) for h in HEIGHTS)
    assert (mad["min"], mad["max"]) == pytest.approx((mean(HEIGHTS) - deviation, mean(HEIGHTS) + deviation))
    codap.done("add_codap_adornment", {"graph": dots, "adornment": "movable_value", "value": 170})
    assert adornment(codap, dots, "Movable Value")["data"] == [{"movableValues": [170]}]
    update(codap, dots, showMeasureLabels=True)
    saved = plot_storage(codap, dots)
    assert saved["showMeasureLabels"] is True and saved["adornments"]["plottedBoxPlot"]["isVisible"] is True
    assert {"Box Plot", "Normal Curve", "Standard Error", "Mean Absolute Deviation"} <= shown(codap, dots)

    scatter = graph(codap, datasetName="measures", graphType="scatterplot", xAttribute="h", yAttribute="w")
    line = {"graph": scatter, "adornment": "movable_line", "slope": 0.5, "intercept": -20}
    codap.done("add_codap_adornment", line)
    assert adornment(codap, scatter, "Movable Line")["data"] == [{"slope": 0.5, "intercept": -20}]
    point = codap.done("add_codap_adornment", {"graph": scatter, "adornment": "movable_point"})["structuredContent"]
    assert point["values"] == adornment(codap, scatter, "Movable Point")["data"]
    assert set(point["values"][0]) == {"h", "w"}
    codap.done("add_codap_adornment", {"graph": scatter, "adornment": "plotted_function", "formula": "0.3 * x + 10"})
    assert adornment(codap, scatter, "Plotted Function")["formula"] == '"0.3 * x + 10"'
    bad = codap.failed("add_codap_adornment", {"graph": scatter, "adornment": "plotted_function", "formula": "nope(x)"})
    assert bad["code"] == "formula_error" and "nope" in bad["message"]
    kept = adornment(codap, scatter, "Plotted Function")
    assert (kept["formula"], kept["isVisible"]) == ('"0.3 * x + 10"', True)  # put back as it was
    codap.done("add_codap_adornment", {"graph": scatter, "adornment": "least_squares_line", "showR": True})
    assert adornment(codap, scatter, "LSRL")["showR"] is True
    update(codap, scatter, showSquaresOfResiduals=True, lockIntercept=True)
    saved = plot_storage(codap, scatter)
    assert saved["areSquaresVisible"] is True and saved["movableLineStorage"]["isInterceptLocked"] is True
    codap.done("remove_codap_adornment", {"graph": scatter, "adornment": "movable_line"})
    assert "Movable Line" not in shown(codap, scatter) and "Plotted Function" in shown(codap, scatter)


def test_statistics_with_their_values_written_on_the_graph_in_one_call(codap: CodapPage) -> None:
    dataset(codap, "labels")
    dots = graph(codap, datasetName="labels", graphType="dot_plot", xAttribute="h")
    added = codap.done(
        "add_codap_adornment", {"graph": dots, "adornments": ["mean", "median"], "showMeasureLabels": True}
    )
    assert plot_storage(codap, dots)["showMeasureLabels"] is True and {"Mean", "Median"} <= shown(codap, dots)
    assert added["structuredContent"]["measureLabels"] is True and "written on the graph" in added["content"][0]["text"]
    assert adornment(codap, dots, "Mean")["data"][0]["mean"] == pytest.approx(mean(HEIGHTS))
    off = codap.done("add_codap_adornment", {"graph": dots, "adornment": "mean", "showMeasureLabels": False})
    assert plot_storage(codap, dots).get("showMeasureLabels") is not True
    assert off["structuredContent"]["measureLabels"] is False


def test_several_statistics_in_one_call_each_read_back_and_undone_in_one_step(codap: CodapPage) -> None:
    dataset(codap, "several")
    dots = graph(codap, datasetName="several", graphType="dot_plot", xAttribute="h")
    both = codap.done("add_codap_adornment", {"graph": dots, "adornments": ["mean", "median"]})
    facts = both["structuredContent"]["adornments"]
    assert [(a["adornment"], a["added"]) for a in facts] == [("mean", True), ("median", True)]
    ((held_mean,), (held_median,)) = adornment(codap, dots, "Mean")["data"], adornment(codap, dots, "Median")["data"]
    assert (held_mean["mean"], held_median["median"]) == pytest.approx((mean(HEIGHTS), median(HEIGHTS)))
    assert (
        facts[0]["values"][0]["mean"] == pytest.approx(mean(HEIGHTS))
        and "Added the mean and the median" in (both["content"][0]["text"])
    )
    # the measures CODAP's API cannot create come in one rebuild, with one it creates; one Undo takes all back
    three = ["box_plot", "normal_curve", "standard_deviation"]
    codap.done("add_codap_adornment", {"graph": dots, "adornments": three, "showOutliers": True})
    assert {"Box Plot", "Normal Curve", "Standard Deviation"} <= shown(codap, dots)
    assert adornment(codap, dots, "Box Plot")["showOutliers"] is True
    (call,) = codap.done("undo_codap", {})["structuredContent"]["toolCalls"]
    assert call["ok"] and call["tool"] == "add_codap_adornment"
    assert shown(codap, dots) & {"Box Plot", "Normal Curve", "Standard Deviation"} == set()
    assert {"Mean", "Median"} <= shown(codap, dots)
    removed = codap.done("remove_codap_adornment", {"graph": dots, "adornments": ["mean", "median"]})
    assert removed["structuredContent"]["removed"] == ["mean", "median"] and not {"Mean", "Median"} & shown(codap, dots)
    # a kind the plot cannot take: nothing is added, the error names it
    bad = codap.failed("add_codap_adornment", {"graph": dots, "adornments": ["mean", "least_squares_line"]})
    assert bad["code"] == "adornment_not_supported_by_plot" and "least-squares line" in bad["message"]
    assert "Mean" not in shown(codap, dots)


def test_a_line_graph_with_a_legend_draws_one_line_per_group(codap: CodapPage) -> None:
    growth: list[dict[str, Any]] = [
        {"day": d, "height": 10 + d * (2 if kid == "A" else 3), "kid": kid} for d in range(5) for kid in "AB"
    ]
    dataset(codap, "growth", growth)
    made = codap.done(
        "create_codap_graph",
        {"datasetName": "growth", "graphType": "line_graph", "xAttribute": "day", "yAttribute": "height",
         "legendAttribute": "kid"},
    )  # fmt: skip
    collections = codap.ok({"action": "get", "resource": "dataContext[growth].collectionList"})
    parent = f"dataContext[growth].collection[{collections[0]['id']}]"
    attrs = codap.ok({"action": "get", "resource": f"{parent}.attributeList"})
    # CODAP joins a graph's points within the parent collection's groups: grouped by kid, one line per kid
    assert len(collections) == 2 and [a["name"] for a in attrs] == ["kid"]
    assert component(codap, made["structuredContent"]["graphId"])["showConnectingLines"] is True
    assert "one line per kid" in made["content"][0]["text"]

    dataset(codap, "single", [{**row, "day": 4 - row["day"]} for row in growth])
    one = codap.done(
        "create_codap_graph",
        {"datasetName": "single", "graphType": "line_graph", "xAttribute": "day", "yAttribute": "height",
         "legendAttribute": "kid", "groupLinesByLegend": False},
    )  # fmt: skip
    assert len(codap.ok({"action": "get", "resource": "dataContext[single].collectionList"})) == 1
    text = one["content"][0]["text"]
    assert "one line, across the kid groups" in text and "not the order of day" in text and "sort_codap_cases" in text


# Each update_codap_graph setting and where get_codap_status's state of a graph holds it.
SETTING_PATHS = {
    "title": "title", "plotType": "plotType", "xAttribute": "x.attribute", "xAttributeType": "x.type",
    "xAxisMin": "x.min", "xAxisMax": "x.max", "yAttribute": "y.attribute", "yAttributes": "y.attributes",
    "yAttributeType": "y.type", "yAxisMin": "y.min", "yAxisMax": "y.max", "y2Attribute": "y2.attribute",
    "y2AxisMin": "y2.min", "y2AxisMax": "y2.max", "topSplitAttribute": "topSplit", "rightSplitAttribute": "rightSplit",
    "legendAttribute": "legend.attribute", "legendAttributeType": "legend.type", "legendColors": "legend.colors",
    "legendColorRange": "legend.range", "backgroundImage": "background.image",
    "backgroundImageLockedToAxes": "background.imageLocked",
    "binWidth": "bins.width",
    "binAlignment": "bins.alignment", "pointsAreFusedIntoBars": "fusedIntoBars", "barChartScale": "barChart.scale",
    "barChartFormula": "barChart.formula", "showConnectingLines": "connectingLines", "pointColor": "points.color",
    "pointOpacity": "points.opacity", "pointSize": "points.size", "strokeColor": "points.strokeColor",
    "strokeSameAsFill": "points.strokeSameAsFill", "backgroundColor": "background.color",
    "transparentBackground": "background.transparent", "displayOnlySelectedCases": "shows.onlySelected",
    "hideCases": "shows.hiddenCases", "hideCasesWhere": "shows.hiddenCases", "hideCaseIds": "shows.hiddenCases",
    "showAllCases": "shows.hiddenCases", "filterFormula": "shows.filterFormula",
    "showParentToggles": "shows.parentToggles", "showOnlyLastCase": "shows.onlyLastCase",
    "showMeasuresForSelection": "shows.measuresForSelection", "showMeasureLabels": "measures.labels",
    "showSquaresOfResiduals": "measures.squaresOfResiduals", "lockIntercept": "measures.interceptLocked",
    "groupLinesByLegend": "connectingLines", "rescale": "x.min", "categoryOrder": "x.attribute",
}  # fmt: skip


def at(state: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        state = state.get(key) if isinstance(state, dict) else None  # type: ignore[assignment]
    return state


def state_from_codap(codap: CodapPage, gid: int, document: dict[str, Any]) -> dict[str, Any]:
    """What CODAP holds for each setting, read by this test from CODAP itself."""
    c = component(codap, gid)
    (storage,) = [x["componentStorage"] for x in document["components"] if int(x["guid"]) == gid]
    plot = storage["plotModels"][0].get("plotModelStorage", {})
    colour = c["pointColor"]
    legend = None
    if c["legendAttributeName"]:
        name = c["legendAttributeName"]
        attribute = codap.ok({"action": "get", "resource": f"dataContext[{c['dataContext']}].attribute[{name}]"})
        colours = attribute["_categoryMap"]
        treated = {1: "numeric", 2: "categorical"}[storage["legendAttributeType"]]
        legend = {"attribute": name, "type": treated}
        if treated == "numeric":
            legend["range"] = {end: colours[f"{end}-attribute-color"] for end in ("low", "high")}
        else:
            legend["colors"] = {k: colours[k] for k in "AB"}
    set_aside = [len(d.get("setAsideItems", [])) for d in document["contexts"] if d["name"] == c["dataContext"]]
    line = plot.get("movableLineStorage", plot.get("multipleLSRLsStorage", {}))
    return {
        "title": c["title"] or c["name"] or "", "plotType": c["plotType"], "fusedIntoBars": c["pointsAreFusedIntoBars"],
        "x": {"attribute": c["xAttributeName"], "type": c["xAttributeType"],
              "min": c["xLowerBound"], "max": c["xUpperBound"]},
        "y": {"attribute": c["yAttributeName"],
              "attributes": [n for n in c["yAttributeNames"] if n != c["y2AttributeName"]],
              "type": c["yAttributeType"], "min": c["yLowerBound"], "max": c["yUpperBound"]},
        "y2": {"attribute": c["y2AttributeName"], "min": c["y2LowerBound"], "max": c["y2UpperBound"]},
        "topSplit": c["topSplitAttributeName"], "rightSplit": c["rightSplitAttributeName"], "legend": legend,
        "bins": {"width": plot["width"], "alignment": plot["alignment"]} if "width" in plot else None,
        "barChart": {"scale": c.get("barChartScale"), "formula": c.get("barChartFormula")}
                    if c["plotType"] == "barChart" else None,
        "connectingLines": c["showConnectingLines"],
        "points": {"color": colour[:7], "opacity": round(int(colour[7:] or "ff", 16) / 255, 2), "size": c["pointSize"],
                   "strokeColor": c["strokeColor"], "strokeSameAsFill": c["strokeSameAsFill"]},
        "background": {"color": c["backgroundColor"], "transparent": c["transparent"],
                       "image": storage.get("plotBackgroundImage"),
                       "imageLocked": bool((storage.get("plotBackgroundImageLockInfo") or {}).get("locked"))},
        "shows": {"onlySelected": c["displayOnlySelectedCases"] is True, "hiddenCases": len(c["hiddenCases"]),
                  "filterFormula": c["filterFormula"] or None, "parentToggles": c["enableNumberToggle"] is True,
                  "onlyLastCase": c["numberToggleLastMode"] is True,
                  "measuresForSelection": c["showMeasuresForSelection"] is True, "setAsideCases": set_aside[0]},
        "measures": {"labels": plot.get("showMeasureLabels", False),
                     "squaresOfResiduals": plot.get("areSquaresVisible", False),
                     "interceptLocked": bool(line.get("isInterceptLocked"))},
    }  # fmt: skip


def test_the_status_gives_each_graphs_whole_state_as_codap_holds_it(codap: CodapPage) -> None:
    schema = plugin_tool("update_codap_graph")
    assert schema is not None
    assert set(SETTING_PATHS) == set(schema["inputSchema"]["properties"]) - {"graph"}
    dataset(codap, "status")
    codap.done("set_aside_codap_cases", {"datasetName": "status", "where": "t > 17"})
    histogram = graph(codap, datasetName="status", graphType="histogram", xAttribute="h", binWidth=4, title="Heights")
    update(codap, histogram, pointColor="#1f77b4", pointOpacity=0.7, filterFormula="h > 150", showMeasureLabels=True)
    legend = graph(codap, datasetName="status", graphType="dot_plot", xAttribute="w", legendAttribute="h")
    update(
        codap,
        legend,
        legendColorRange={"low": "#eeeeee", "high": "purple"},
        backgroundImage="https://example.org/a.png",
    )
    scatter = graph(codap, datasetName="status", graphType="line_graph", xAttribute="h", yAttribute="w")
    update(
        codap, scatter, y2Attribute="t", legendAttribute="g", legendColors={"A": "teal"}, pointSize=1.5,
        strokeSameAsFill=True, backgroundColor="beige", displayOnlySelectedCases=True, showParentToggles=True,
        xAxisMin=140, xAxisMax=200,
    )  # fmt: skip
    codap.done("add_codap_adornment", {"graph": scatter, "adornment": "least_squares_line"})
    update(codap, scatter, lockIntercept=True, showSquaresOfResiduals=True)
    status = codap.done("get_codap_status", {})
    states = {c["id"]: c["graph"] for c in status["structuredContent"]["components"] if c["type"] == "graph"}
    document = read_document(codap)
    for gid in (histogram, legend, scatter):
        state, held = states[gid], state_from_codap(codap, gid, document)
        for setting, path in SETTING_PATHS.items():
            want = at(held, path)
            assert at(state, path) == want, (gid, setting, path)
    assert states[histogram]["shows"]["setAsideCases"] == 2 and states[histogram]["bins"]["width"] == 4
    assert {a["name"] for a in states[scatter]["adornments"]} == {"least_squares_line"}
    text = status["content"][0]["text"]
    assert "histogram, x = h" in text and "bins of width 4" in text and "2 cases set aside" in text
    assert "coloured by g" in text and "only the selected cases" in text and "least squares line" in text


def test_undo_takes_back_graph_settings_and_rows_keep_their_ids(codap: CodapPage) -> None:
    """CODAP's Undo (undo_codap) and undo_codap_tool_calls on graph changes, as real CODAP does them: a setting
    made through CODAP's plugin API is set back by the plugin, one made by rebuilding the document is taken back
    with it in the same press (CODAP's own step), Redo makes them again, and the rows keep their ids throughout."""
    dataset(codap, "undo")
    ids = [i["id"] for i in codap.items("undo")]
    gid = graph(codap, datasetName="undo", graphType="dot_plot", xAttribute="h")
    start = component(codap, gid)
    update(codap, gid, pointColor="red", xAxisMin=100, xAxisMax=250, legendAttribute="g", pointSize=2)
    codap.done("add_codap_adornment", {"graph": gid, "adornment": "mean"})
    undone = codap.done("undo_codap", {"steps": 2})["structuredContent"]
    assert [c["tool"] for c in undone["toolCalls"]] == ["add_codap_adornment", "update_codap_graph"]
    assert all(c["ok"] for c in undone["toolCalls"]) and "Mean" not in shown(codap, gid)
    settings = ("pointColor", "xLowerBound", "xUpperBound", "legendAttributeName", "pointSize")
    assert {k: component(codap, gid)[k] for k in settings} == {k: start[k] for k in settings}
    codap.done("redo_codap", {"steps": 1})
    held = component(codap, gid)
    assert (held["pointColor"], held["xLowerBound"], held["legendAttributeName"]) == ("#ff0000", 100, "g")

    # bins and a plot type need a rebuild: one press takes the call back whole, and Redo makes it again
    update(codap, gid, plotType="histogram", binWidth=5, pointColor="green")
    assert (component(codap, gid)["plotType"], plot_storage(codap, gid)["width"]) == ("histogram", 5)
    back = codap.done("undo_codap", {"steps": 1})
    (call,) = back["structuredContent"]["toolCalls"]
    assert call["ok"] and call["tool"] == "update_codap_graph" and "steps CODAP keeps" in call["text"]
    held = component(codap, gid)
    assert (held["plotType"], held["pointColor"]) == ("dotPlot", "#ff0000") and "width" not in plot_storage(codap, gid)
    codap.done("redo_codap", {"steps": 1})
    assert (component(codap, gid)["plotType"], component(codap, gid)["pointColor"]) == ("histogram", "#008000")
    assert [i["id"] for i in codap.items("undo")] == ids

    # what no request puts back (a deletion): undo_codap says so, undo_codap_tool_calls rebuilds the document with
    # the rows' ids kept, the deleted rows' too
    codap.done("delete_codap_cases", {"datasetName": "undo", "where": "t < 5"})
    pressed = codap.done("undo_codap", {"steps": 1})
    assert len(codap.items("undo")) == len(ROWS) - 5 and "cannot take back" in pressed["content"][0]["text"]
    codap.done("undo_codap_tool_calls", {"lastCalls": 2})
    assert [i["id"] for i in codap.items("undo")] == ids
    held = component(codap, gid)
    assert (held["plotType"], held["pointColor"], held["legendAttributeName"]) == ("dotPlot", "#ff0000", "g")


def test_changing_the_plot_type_leaves_each_attributes_decimals_as_they_were(codap: CodapPage) -> None:
    """Each plot type change below rebuilds CODAP's document; an imported number (type inferred, shown as entered),
    one typed with 3 decimals and a formula keep their decimals and type, read back from CODAP."""
    lines = [f"{3.14159 + i / 7},{10 + i},{1.23456 + i / 11}" for i in range(15)]
    codap.done("import_codap_data", {"datasetName": "precise", "csv": "\n".join(["len,n,three", *lines])})
    codap.ok({"action": "update", "resource": "dataContext[precise].attribute[three]",
              "values": {"type": "numeric", "precision": 3}})  # fmt: skip
    codap.done("add_codap_attribute", {"datasetName": "precise", "name": "twice", "formula": "len * 2"})
    names = ("len", "n", "three", "twice")

    def attributes() -> dict[str, tuple[Any, Any]]:
        got = [codap.ok({"action": "get", "resource": f"dataContext[precise].attribute[{n}]"}) for n in names]
        return {n: (a.get("precision"), a.get("type")) for n, a in zip(names, got, strict=True)}

    before = attributes()
    assert before["len"][0] in (None, "") and before["three"] == (3, "numeric")
    gid = graph(codap, datasetName="precise", graphType="dot_plot", xAttribute="len")
    for args in ({"plotType": "binned_dot_plot"}, {"plotType": "dot_plot", "showMeasureLabels": True}):
        answer = update(codap, gid, **args)
        assert attributes() == before, answer["content"][0]["text"]
        assert "also changed" not in answer["content"][0]["text"]
    assert component(codap, gid)["plotType"] == "dotPlot"


def test_a_rebuild_keeps_components_sizes_and_says_random_columns_were_drawn_anew(codap: CodapPage) -> None:
    slider = codap.done("create_codap_slider", {"name": "p", "value": 0.6, "min": 0, "max": 1})["structuredContent"]
    sid = slider["componentId"]
    # A slider drawn taller, as a person's drag or CODAP's own slider (98 px) leaves it.
    codap.ok(
        {"action": "update", "resource": f"component[{sid}]", "values": {"dimensions": {"width": 300, "height": 98}}}
    )
    sized = component(codap, sid)["dimensions"]
    assert sized == {"width": 300, "height": 98}
    dataset(codap, "rebuilt")
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext[rebuilt].collection[rebuilt].attribute",
            "values": [{"name": "coin", "formula": 'if(random() < p, "heads", "tails")'}],
        }
    )
    flips = [c["values"]["coin"] for c in codap.items("rebuilt")]
    scatter = graph(codap, datasetName="rebuilt", graphType="scatterplot", xAttribute="h", yAttribute="w")
    listed = codap.ok({"action": "get", "resource": "componentList"})
    sizes = {c["id"]: component(codap, c["id"])["dimensions"] for c in listed}
    answer = codap.done("add_codap_adornment", {"graph": scatter, "adornment": "plotted_function", "formula": "x / 2"})
    # Every component keeps its size (CODAP alone would give the slider its default 73 px).
    assert component(codap, sid)["dimensions"] == sized
    assert {c["id"]: component(codap, c["id"])["dimensions"] for c in listed} == sizes
    # CODAP draws the random column anew when it reads the rebuilt document; the answer says so in plain words.
    assert [c["values"]["coin"] for c in codap.items("rebuilt")] != flips
    text = answer["content"][0]["text"]
    assert 'the random values of "coin" of dataset "rebuilt" were drawn anew' in text
    assert 'slider "p"' not in text  # nothing else is said to have changed
    # CODAP's Undo takes the rebuild back; the slider keeps its size then too.
    codap.done("undo_codap", {})
    assert "Plotted Function" not in shown(codap, scatter)
    assert component(codap, sid)["dimensions"] == sized
    # A plotted value's formula is tried on a scratch attribute first, which draws the column anew too: said.
    dots = graph(codap, datasetName="rebuilt", graphType="dot_plot", xAttribute="h")
    flips = [c["values"]["coin"] for c in codap.items("rebuilt")]
    value = codap.done("add_codap_adornment", {"graph": dots, "adornment": "plotted_value", "formula": "mean(h)"})
    assert [c["values"]["coin"] for c in codap.items("rebuilt")] != flips
    assert any("CODAP drew the random values of rebuilt.coin anew" in n for n in value["structuredContent"]["notes"])


def axis_labels(codap: CodapPage, gid: int) -> list[str]:
    """The labels CODAP's page draws in a graph (its axes' ticks or bins, then the attributes' names)."""
    labels: list[str] = codap.page.evaluate(
        """(id) => [...[...document.getElementsByClassName('free-tile-component')]
                     .find((t) => t.id.endsWith(String(id))).querySelectorAll('text')]
                   .map((e) => e.textContent).filter(Boolean)""",
        gid,
    )
    return labels


def test_binning_the_dots_does_not_say_the_axis_runs_from_0_to_0(codap: CodapPage) -> None:
    """CODAP gives a binned axis's bounds as 0 to 0 (it draws the bins instead): the answer names the bins, not
    an axis from 0 to 0."""
    dataset(codap, "binaxis")
    gid = graph(codap, datasetName="binaxis", graphType="dot_plot", xAttribute="h")
    answer = update(codap, gid, plotType="binned_dot_plot")
    held = component(codap, gid)
    assert (held["plotType"], held["xLowerBound"], held["xUpperBound"]) == ("binnedDotPlot", 0, 0)
    # what the person sees: CODAP's bins, 5 wide from 150, once CODAP has drawn the rebuilt graph (a loaded run
    # read the page before it had drawn its axis)
    wait_until(
        lambda: "[150, 155)" in axis_labels(codap, gid),
        "CODAP to draw the bins on the axis",
        explain=lambda: f"the graph's labels: {axis_labels(codap, gid)}",
    )
    text = answer["content"][0]["text"]
    assert "x axis from" not in text and "x axis to" not in text and "bin width" in text
    x = answer["structuredContent"]["state"]["x"]
    assert (x["min"], x["max"]) == (None, None) and answer["structuredContent"]["state"]["bins"]["width"] == 5
