"""A class session played end to end through the typed tools only, in the real CODAP build.

A teacher's asks, as a model meets them in a lesson on body measurements: build the class's data, fix it, add a
computed column, ask for statistics, graph it with a legend and adornments, select and group cases, add a text box
and a slider, undo, import a second dataset. Each ask is done in at most two tool calls and never through the raw
``codap_api``; after each, the test reads CODAP's state itself (a Data Interactive request from the plugin's frame
that bypasses the plugin's code) and checks the ask was done.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from codap_relay_tooling.testing.output_schema import check_output
from codap_relay_tooling.testing.real_codap import CodapPage, codap_pages

pytestmark = [pytest.mark.browser, pytest.mark.tools]

CLASS = [
    {"name": "Ana", "gender": "F", "height": 158, "arm_span": 156},
    {"name": "Ben", "gender": "M", "height": 171, "arm_span": 174},
    {"name": "Chloe", "gender": "F", "height": 163, "arm_span": 160},
    {"name": "Dev", "gender": "M", "height": 180, "arm_span": 183},
    {"name": "Eli", "gender": "M", "height": 167, "arm_span": 165},
    {"name": "Fay", "gender": "F", "height": 152, "arm_span": 150},
    {"name": "Gus", "gender": "M", "height": 175, "arm_span": 178},
    {"name": "Maya", "gender": "F", "height": 125, "arm_span": 151},  # 125: a typo for 152
    {"name": "test", "gender": "", "height": 1, "arm_span": 1},  # a row left from trying the table
]
LATE = [
    {"name": "Hana", "gender": "F", "height": 160, "arm_span": 162},
    {"name": "Ivo", "gender": "M", "height": 184, "arm_span": 186},
    {"name": "Jo", "gender": "F", "height": 149, "arm_span": 147},
]
PLANTS_CSV = "species,height_m,leaf_cm\r\noak,21.5,12\r\nbirch,15,7\r\nwillow,9.25,11\r\n"


def numbers_in(value: Any) -> list[float]:
    """Every number anywhere in a tool's structured answer."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers_in(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers_in(v)]
    return []


def reports(answer: dict[str, Any], expected: float) -> bool:
    """Whether the answer carries ``expected`` (to CODAP's full precision: the numbers are CODAP's own)."""
    return any(n == pytest.approx(expected, rel=1e-9) for n in numbers_in(answer))


@dataclass
class Lesson:
    """The LLM's side of the session: every tool call it makes, per ask."""

    codap: CodapPage
    calls: dict[str, list[str]] = field(default_factory=dict)
    ask: str = ""

    def __call__(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        assert tool != "codap_api", "the class session uses typed tools only"
        self.calls.setdefault(self.ask, []).append(tool)
        structured: dict[str, Any] = self.codap.done(tool, args)["structuredContent"]
        check_output(tool, structured)  # typed results: the answer follows the tool's outputSchema
        return structured

    # --- CODAP's state, read past the plugin ---------------------------------------------------------------

    def rows(self, dataset: str = "class") -> list[dict[str, Any]]:
        return [dict(item["values"]) for item in self.codap.items(dataset)]

    def column(self, attribute: str, dataset: str = "class") -> list[Any]:
        return [row[attribute] for row in self.rows(dataset)]

    def attribute(self, name: str, dataset: str = "class") -> dict[str, Any]:
        for coll in self.collections(dataset):
            for attr in self.codap.ok(
                {"action": "get", "resource": f"dataContext[{dataset}].collection[{coll['name']}].attributeList"}
            ):
                if attr["name"] == name:
                    found: dict[str, Any] = self.codap.ok(
                        {
                            "action": "get",
                            "resource": f"dataContext[{dataset}].collection[{coll['name']}].attribute[{name}]",
                        }
                    )
                    return found
        raise AssertionError(f"CODAP has no attribute {name} in {dataset}")

    def collections(self, dataset: str = "class") -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.codap.ok(
            {"action": "get", "resource": f"dataContext[{dataset}].collectionList"}
        )
        return listed

    def component(self, title: str) -> dict[str, Any]:
        for c in self.codap.components():
            detail: dict[str, Any] = self.codap.ok({"action": "get", "resource": f"component[{c['id']}]"})
            if detail.get("title") == title or c.get("title") == title or c.get("name") == title:
                return {**c, **detail}
        raise AssertionError(f"CODAP has no component titled {title!r}")

    def adornments(self, graph_id: int) -> set[str]:
        listed = self.codap.ok({"action": "get", "resource": f"component[{graph_id}].adornmentList"})
        return {a["type"] for a in listed if a.get("isVisible", True)}

    def selected(self, dataset: str = "class") -> list[Any]:
        listed: list[Any] = self.codap.ok({"action": "get", "resource": f"dataContext[{dataset}].selectionList"})
        return listed


@pytest.fixture(scope="module")
def lesson(browser: Any, codap_url: str, relay_url: str) -> Iterator[Lesson]:
    with codap_pages(browser, codap_url) as pages:
        yield Lesson(pages(f"{relay_url}/plugin/"))


def _asks(lesson: Lesson) -> list[tuple[str, Callable[[], None]]]:
    call = lesson

    def build() -> None:
        call(
            "create_codap_dataset",
            {"datasetName": "class", "dataType": "custom", "recordCount": len(CLASS), "customData": CLASS},
        )
        assert lesson.column("name") == [r["name"] for r in CLASS]

    def late_students() -> None:
        call("add_codap_cases", {"datasetName": "class", "cases": LATE})
        assert len(lesson.rows()) == len(CLASS) + len(LATE)

    def fix_typo() -> None:
        call("update_codap_cases", {"datasetName": "class", "where": 'name = "Maya"', "values": {"height": 152}})
        (maya,) = [r for r in lesson.rows() if r["name"] == "Maya"]
        assert maya["height"] == 152

    def drop_test_row() -> None:
        call("delete_codap_cases", {"datasetName": "class", "where": 'name = "test"'})
        names = lesson.column("name")
        assert "test" not in names and len(names) == len(CLASS) + len(LATE) - 1

    def ratio_column() -> None:
        call("add_codap_attribute", {"datasetName": "class", "name": "ratio", "formula": "arm_span / height"})
        assert lesson.attribute("ratio")["formula"] == "arm_span / height"
        for row in lesson.rows():
            assert row["ratio"] == pytest.approx(row["arm_span"] / row["height"])

    def rename_ratio() -> None:
        call(
            "update_codap_attribute", {"datasetName": "class", "name": "ratio", "newName": "span_ratio", "precision": 2}
        )
        attr = lesson.attribute("span_ratio")
        assert attr["precision"] == 2 and attr["formula"] == "arm_span / height"

    def mean_median() -> None:
        out = call(
            "compute_codap_statistics",
            {"datasetName": "class", "attributes": ["height"], "statistics": ["mean", "median"]},
        )
        heights = [float(h) for h in lesson.column("height")]
        assert reports(out, statistics.mean(heights)) and reports(out, statistics.median(heights)), out

    def mean_by_gender() -> None:
        out = call(
            "compute_codap_statistics",
            {"datasetName": "class", "attributes": ["height"], "statistics": ["mean"], "groupBy": "gender"},
        )
        for gender in ("F", "M"):
            heights = [float(r["height"]) for r in lesson.rows() if r["gender"] == gender]
            assert reports(out, statistics.mean(heights)), (gender, out)

    def scatter() -> None:
        call(
            "create_codap_graph",
            {
                "datasetName": "class",
                "graphType": "scatterplot",
                "xAttribute": "height",
                "yAttribute": "arm_span",
                "title": "Span vs height",
            },
        )
        graph = lesson.component("Span vs height")
        assert (graph["xAttributeName"], graph["yAttributeName"]) == ("height", "arm_span")

    def legend() -> None:
        call("update_codap_graph", {"graph": "Span vs height", "legendAttribute": "gender"})
        assert lesson.component("Span vs height")["legendAttributeName"] == "gender"

    def fit_line() -> None:
        call("add_codap_adornment", {"graph": "Span vs height", "adornment": "least_squares_line"})
        assert "LSRL" in lesson.adornments(lesson.component("Span vs height")["id"])

    def dot_plot_with_mean() -> None:
        call(
            "create_codap_graph",
            {"datasetName": "class", "graphType": "dot_plot", "xAttribute": "height", "title": "Heights"},
        )
        call("add_codap_adornment", {"graph": "Heights", "adornment": "mean"})
        graph = lesson.component("Heights")
        assert graph["xAttributeName"] == "height" and "Mean" in lesson.adornments(graph["id"])

    def median_too() -> None:
        out = call("add_codap_adornment", {"graph": "Heights", "adornment": "median"})
        assert {"Mean", "Median"} <= lesson.adornments(lesson.component("Heights")["id"])
        assert reports(out, statistics.median(float(h) for h in lesson.column("height"))), out

    def split_dot_plot() -> None:
        call(
            "create_codap_graph",
            {
                "datasetName": "class",
                "graphType": "dot_plot",
                "xAttribute": "height",
                "yAttribute": "gender",
                "title": "Heights by gender",
            },
        )
        graph = lesson.component("Heights by gender")
        assert (graph["plotType"], graph["xAttributeName"], graph["yAttributeName"]) == ("dotPlot", "height", "gender")

    def select_tall() -> None:
        call("select_codap_cases", {"datasetName": "class", "where": "height > 165"})
        tall = [r for r in lesson.rows() if r["height"] > 165]
        assert len(lesson.selected()) == len(tall) > 0

    def how_many_selected() -> None:
        out = call("get_codap_selection", {"datasetName": "class"})
        assert reports(out, len(lesson.selected())), out

    def group_by_gender() -> None:
        call("group_codap_cases", {"datasetName": "class", "attributes": ["gender"]})
        colls = lesson.collections()
        assert len(colls) == 2
        parent = lesson.codap.ok(
            {"action": "get", "resource": f"dataContext[class].collection[{colls[0]['name']}].attributeList"}
        )
        assert [a["name"] for a in parent] == ["gender"]

    def ungroup() -> None:
        call("group_codap_cases", {"datasetName": "class", "attributes": ["gender"], "ungroup": True})
        assert len(lesson.collections()) == 1

    def sort_tallest_first() -> None:
        call("sort_codap_cases", {"datasetName": "class", "attribute": "height", "descending": True})
        coll = lesson.collections()[0]["name"]
        cases = lesson.codap.ok({"action": "get", "resource": f"dataContext[class].collection[{coll}].allCases"})[
            "cases"
        ]
        heights = [c["case"]["values"]["height"] for c in cases]
        assert heights == sorted(heights, reverse=True)

    def question_text() -> None:
        call("create_codap_text", {"text": "Is arm span about the same as height?", "title": "Question"})
        assert lesson.component("Question")["type"] == "text"

    def threshold_slider() -> None:
        call("create_codap_slider", {"name": "threshold", "value": 160, "min": 120, "max": 200})
        assert lesson.codap.ok({"action": "get", "resource": "global[threshold]"})["value"] == 160

    def tall_column() -> None:
        call("add_codap_attribute", {"datasetName": "class", "name": "tall", "formula": "height > threshold"})
        for row in lesson.rows():
            assert str(row["tall"]).lower() == str(row["height"] > 160).lower()

    def move_question() -> None:
        call(
            "update_codap_component",
            {"component": "Question", "title": "Our question", "position": {"left": 10, "top": 10}},
        )
        moved = lesson.component("Our question")
        assert moved["position"]["left"] == 10 and moved["position"]["top"] == 10

    def try_formula() -> None:
        out = call("evaluate_codap_formula", {"formula": "mean(height)", "datasetName": "class"})
        heights = [float(h) for h in lesson.column("height")]
        assert reports(out, statistics.mean(heights)), out

    def remove_question() -> None:
        call("delete_codap_component", {"component": "Our question"})
        assert all(c["type"] != "text" for c in lesson.codap.components())

    def undo_that() -> None:
        call("undo_codap_tool_calls", {"lastCalls": 1})
        assert lesson.component("Our question")["type"] == "text"

    def import_plants() -> None:
        call("import_codap_data", {"datasetName": "plants", "csv": PLANTS_CSV})
        assert lesson.column("species", "plants") == ["oak", "birch", "willow"]
        assert lesson.column("height_m", "plants") == [21.5, 15, 9.25]

    def plants_table() -> None:
        call("create_codap_table", {"datasetName": "plants", "title": "Plants table"})
        assert lesson.component("Plants table")["type"] == "caseTable"

    def drop_plants() -> None:
        call("delete_codap_dataset", {"datasetName": "plants"})
        assert "plants" not in lesson.codap.dataset_names()

    def export_clean() -> None:
        out = call("export_codap_data", {"datasetName": "class", "format": "csv"})
        rows = list(csv.DictReader(io.StringIO(out["data"], newline="")))
        assert out["rowCount"] == len(rows) == len(CLASS) + len(LATE) - 1
        assert [r["height"] for r in rows if r["name"] == "Maya"] == ["152"]

    return [
        ("make a dataset of our class's measurements", build),
        ("three students came late: add them", late_students),
        ("Maya's height is 152, not 125", fix_typo),
        ("remove the test row", drop_test_row),
        ("add a column: arm span divided by height", ratio_column),
        ("call it span_ratio, two decimals", rename_ratio),
        ("what are the mean and median heights?", mean_median),
        ("mean height by gender", mean_by_gender),
        ("graph arm span against height", scatter),
        ("colour the points by gender", legend),
        ("add a least-squares line", fit_line),
        ("a dot plot of heights with the mean", dot_plot_with_mean),
        ("show the median too", median_too),
        ("the heights again, one row per gender", split_dot_plot),
        ("select the students taller than 165", select_tall),
        ("how many are selected?", how_many_selected),
        ("group the cases by gender", group_by_gender),
        ("put them back in one list", ungroup),
        ("sort tallest first", sort_tallest_first),
        ("add a text box with our question", question_text),
        ("a slider for a height threshold, 120 to 200, at 160", threshold_slider),
        ("a column saying who is taller than the threshold", tall_column),
        ("retitle the question and move it to the top left", move_question),
        ("try the formula mean(height) before we use it", try_formula),
        ("delete the question", remove_question),
        ("oops, undo that", undo_that),
        ("import this CSV of plants", import_plants),
        ("show the plants in a table", plants_table),
        ("we don't need the plants after all", drop_plants),
        ("export the cleaned class data", export_clean),
    ]


def test_a_class_session_through_typed_tools_only(lesson: Lesson) -> None:
    asks = _asks(lesson)
    assert len(asks) >= 20
    for ask, do in asks:
        lesson.ask = ask
        do()
        assert 1 <= len(lesson.calls[ask]) <= 2, (ask, lesson.calls[ask])
    calls = sum(len(c) for c in lesson.calls.values())
    assert calls / len(asks) <= 1.1, f"{calls} calls for {len(asks)} asks"
