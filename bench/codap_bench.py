"""Tool time inside the real CODAP: what each tool costs in the plugin, from its event to the POST of its answer.

Headless chromium opens the real CODAP build (v3.1.0) with the plugin, the relay runs as in the other sections,
and an LLM-side client calls the tools over HTTP. The plugin records each request as a User Timing measure
(runner.js) and each message to CODAP as another (codap.js): so each tool's time, its messages and how much of its
time it waited for CODAP's answers. The document
is the issue's realistic size: 3 datasets of 1,000 cases, 5 components (3 case tables, 2 graphs); the first call
of each tool is reported apart from the later ones. Then a 10,000-case dataset is exported. Last, with CODAP's
default WebGL graphs (software-rendered here: this machine has no GPU), the first get_codap_status after a new
graph is timed against CODAP's "disable graphics acceleration" setting, which the rest of the section uses.

The baseline is one Data Interactive message (``get interactiveFrame``) from the plugin's frame to CODAP and back,
measured in the same page: the least any tool can cost.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.server import run_target
from bench.stats import ratio

# The plugin's own User Timing: one measure per request (runner.js) and one per message to CODAP (codap.js).
TIMELINE = """
() => performance.getEntriesByType("measure")
  .filter((m) => m.name.startsWith("codap-relay "))
  .map((m) => ({ name: m.name, start: m.startTime, duration: m.duration, detail: m.detail }))
"""

ONE_MESSAGE = """
async (n) => {
  const times = [];
  for (let i = 0; i < n; i++) {
    const uuid = "bench-" + i + "-" + Math.random();
    const t0 = performance.now();
    await new Promise((resolve) => {
      function on(e) {
        const d = e.data;
        if (d && d.content && d.content.uuid === uuid) { removeEventListener("message", on); resolve(); }
      }
      addEventListener("message", on);
      parent.postMessage({ type: "data-interactive",
        content: { messageType: "call", uuid, value: { action: "get", resource: "interactiveFrame" } } }, "*");
    });
    times.push(performance.now() - t0);
  }
  return times;
}
"""


@dataclass
class Timings:
    """One tool (or one variant of it): the plugin's time per call, first call apart."""

    label: str
    plugin_ms: list[float] = field(default_factory=list)
    llm_ms: list[float] = field(default_factory=list)
    messages: list[int] = field(default_factory=list)
    codap_ms: list[float] = field(default_factory=list)
    typed: bool = False  # one of issue 19's typed tools, held to its goal

    def report(self, baseline_ms: float | None) -> dict[str, Any]:
        later = self.plugin_ms[1:]
        out: dict[str, Any] = {
            "label": self.label,
            "typed": self.typed,
            "calls": len(self.plugin_ms),
            "first_ms": round(self.plugin_ms[0], 1) if self.plugin_ms else None,
            "later_p50_ms": round(statistics.median(later), 1) if later else None,
            "later_max_ms": round(max(later), 1) if later else None,
            "messages": max(self.messages) if self.messages else None,
            "codap_share": round(sum(self.codap_ms) / sum(self.plugin_ms), 2) if sum(self.plugin_ms) else None,
            "llm_p50_ms": round(statistics.median(self.llm_ms), 1) if self.llm_ms else None,
        }
        out["first_ratio"] = coarse(ratio(out["first_ms"], baseline_ms))
        out["later_ratio"] = coarse(ratio(out["later_p50_ms"], baseline_ms))
        return out


def coarse(value: float | None) -> float | None:
    """Ratios in the hundreds are shown whole: their decimals are noise."""
    return None if value is None else float(round(value)) if value >= 100 else value


def waiting_ms(tool: dict[str, Any], messages: list[dict[str, Any]]) -> float:
    """How long the call waited for CODAP: the union of its messages' times within the call. Messages may overlap
    (the journal's restore point after a call is in flight while the digest is read) and may outlast the call."""
    end = tool["start"] + tool["duration"]
    spans = sorted((m["start"], min(m["start"] + m["duration"], end)) for m in messages)
    total, reach = 0.0, float("-inf")
    for start, stop in spans:
        start = max(start, reach)
        if stop > start:
            total += stop - start
            reach = stop
    return total


class Session:
    """The LLM side of one paired CODAP page, reading the plugin's own timings after each call."""

    def __init__(self, codap: Any) -> None:
        self.codap = codap
        self.timings: dict[str, Timings] = {}

    def call(self, label: str, tool: str, args: dict[str, Any], *, typed: bool = False) -> dict[str, Any]:
        from codap_relay_tooling.testing.plugin_page import call_tool, ok_result

        started = time.perf_counter()
        body = call_tool(self.codap.relay, self.codap.code(), tool, args)
        llm_ms = (time.perf_counter() - started) * 1000
        structured: dict[str, Any] = ok_result(body)["structuredContent"]
        tool_measure, messages = self._measures(body["id"])
        entry = self.timings.setdefault(label, Timings(label, typed=typed))
        entry.plugin_ms.append(tool_measure["duration"])
        entry.llm_ms.append(llm_ms)
        entry.messages.append(len(messages))
        entry.codap_ms.append(waiting_ms(tool_measure, messages))
        return structured

    def _measures(self, request_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The request's measure and the measures of the messages to CODAP sent while it ran."""
        from codap_relay_tooling.testing.plugin_page import wait_until

        def find() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
            entries: list[dict[str, Any]] = self.codap.frame.evaluate(TIMELINE)
            tool = next((m for m in entries if (m["detail"] or {}).get("id") == request_id), None)
            if tool is None:
                return None
            end = tool["start"] + tool["duration"]
            messages = [
                m
                for m in entries
                if m["name"].startswith("codap-relay message ") and tool["start"] <= m["start"] <= end
            ]
            return tool, messages

        found: tuple[dict[str, Any], list[dict[str, Any]]] = wait_until(find, f"the plugin's timing of {request_id}")
        return found

    def one_message_ms(self, n: int) -> float:
        times: list[float] = self.codap.frame.evaluate(ONE_MESSAGE, n)
        return float(statistics.median(times))

    def delete_component(self, component_id: int) -> None:
        self.codap.ok({"action": "delete", "resource": f"component[{component_id}]"})


@contextlib.contextmanager
def codap_session(browser: Any, codap_url: str, relay: str, *, webgl: bool = False) -> Iterator[Session]:
    from codap_relay_tooling.testing.real_codap import codap_pages

    with codap_pages(browser, codap_url, webgl=webgl, full_frame_rate=True) as open_page:
        yield Session(open_page(f"{relay}/plugin/"))


@contextlib.contextmanager
def environment() -> Iterator[tuple[Any, str] | str]:
    """(browser, CODAP URL) or a string saying why the section cannot run here."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    from codap_relay_tooling.testing.chromium import CHROMIUM_ARGS, chromium_path
    from codap_relay_tooling.testing.real_codap import HOW_TO_GET, codap_dist
    from codap_relay_tooling.testing.servers import serve_app

    dist = codap_dist()
    executable = chromium_path()
    if dist is None or executable is None:
        yield (
            f"the real CODAP build is not here: {HOW_TO_GET}"
            if dist is None
            else "Debian chromium is not installed (scripts/install-test-deps)"
        )
        return
    from playwright.sync_api import sync_playwright

    app = Starlette(routes=[Mount("/", app=StaticFiles(directory=dist, html=True))])
    with serve_app(app) as codap_url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser, codap_url
        finally:
            browser.close()


def students(n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [{"name": f"student {offset + i}", "grade": 9 + i % 4, "score": 50 + i % 50} for i in range(n)]


def measure_document(session: Session, *, cases: int, repeats: int, big_adds: int, big_add_size: int) -> None:
    """The realistic document, every tool on it, then the large export."""
    call = session.call
    for i in range(3):
        call(
            "create_codap_dataset",
            "create_codap_dataset",
            {"datasetName": f"s{i}", "dataType": "sample_students", "recordCount": cases},
        )
    call(
        "create_codap_graph",
        "create_codap_graph",
        {"datasetName": "s0", "graphType": "scatterplot", "xAttribute": "grade", "yAttribute": "score"},
    )
    call(
        "create_codap_graph",
        "create_codap_graph",
        {"datasetName": "s1", "graphType": "bar_chart", "xAttribute": "favorite_subject"},
    )
    for _ in range(1 + repeats):
        call("get_codap_status", "get_codap_status", {})
    for _ in range(1 + repeats):
        call("get_codap_datasets", "get_codap_datasets", {})
    for fmt in ("json", "csv"):
        for _ in range(1 + repeats):
            call(
                f"export_codap_data ({fmt}, {cases:,} rows)", "export_codap_data", {"datasetName": "s2", "format": fmt}
            )
    for r in range(1 + repeats):
        call("add_codap_cases (100 cases)", "add_codap_cases", {"datasetName": "s2", "cases": students(100, 100 * r)})
    for _ in range(1 + repeats):
        call("codap_api (get dataContextList)", "codap_api", {"action": "get", "resource": "dataContextList"})
    for _ in range(1 + repeats):  # a graph drawn long ago: the picture is taken twice to see that it settled
        call("get_codap_graph_image (a drawn graph)", "get_codap_graph_image", {"graph": "s0"})
    for _ in range(max(1, repeats)):  # a new graph's picture waits for CODAP to finish animating its points
        made = call(
            "create_codap_graph (includeImage)",
            "create_codap_graph",
            {
                "datasetName": "s2",
                "graphType": "scatterplot",
                "xAttribute": "age",
                "yAttribute": "score",
                "includeImage": True,
            },
        )
        session.delete_component(made["graphId"])
    # More graphs, each removed again so the document keeps its 5 components (a quick run has timed two already).
    for _ in range(repeats):
        made = call(
            "create_codap_graph",
            "create_codap_graph",
            {"datasetName": "s2", "graphType": "scatterplot", "xAttribute": "age", "yAttribute": "height_cm"},
        )
        session.delete_component(made["graphId"])

    measure_typed_tools(session, cases=cases, repeats=repeats)

    call(
        "create_codap_dataset (big)",
        "create_codap_dataset",
        {"datasetName": "big", "dataType": "random_numbers", "recordCount": cases},
    )
    total = cases + big_adds * big_add_size
    for r in range(big_adds):
        cases_ = [
            {"index": cases + r * big_add_size + i, "x": i % 97, "y": r, "group": "ABC"[i % 3]}
            for i in range(big_add_size)
        ]
        label = f"add_codap_cases ({big_add_size:,} cases at a time, {cases:,} → {total:,})"
        call(label, "add_codap_cases", {"datasetName": "big", "cases": cases_})
    for fmt in ("csv", "json"):
        for _ in range(1 + repeats):
            call(
                f"export_codap_data ({fmt}, {total:,} rows)", "export_codap_data", {"datasetName": "big", "format": fmt}
            )


MCP_READ_GOAL_MS = 500


def measure_mcp_read(session: Session, dataset: str, rows: int, *, repeats: int) -> dict[str, Any]:
    """MCP ``resources/read`` of a dataset's cases (CSV) as an LLM client sees it: the official SDK client over
    Streamable HTTP, from the request to the whole answer (relay, plugin and CODAP included)."""
    from codap_relay_tooling.testing.plugin_page import McpClient

    codap = session.codap
    uri = f"codap://datasets/{dataset}/cases"
    times: list[float] = []
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as mcp:
        for _ in range(1 + repeats):
            started = time.perf_counter()
            (contents,) = mcp.read(uri)
            times.append((time.perf_counter() - started) * 1000)
    meta = contents.meta or {}
    later = times[1:] or times
    return {
        "label": f"MCP resources/read {uri} ({rows:,} rows)",
        "rows": rows,
        "bytes": len(contents.text.encode("utf-8")),
        "pages": meta.get("pages", 1),
        "first_ms": round(times[0], 1),
        "p50_ms": round(statistics.median(later), 1),
        "goal_ms": MCP_READ_GOAL_MS,
    }


def csv_text(rows: int) -> str:
    lines = ["name,grade,score"] + [f"student {i},{9 + i % 4},{50 + i % 50}" for i in range(rows)]
    return "\r\n".join(lines) + "\r\n"


def measure_typed_tools(session: Session, *, cases: int, repeats: int) -> None:
    """Every typed tool on the document of 3 datasets (s0, s1, s2), each call undone by the next where it
    changes the document, so every repeat meets the same document. Only the tool named first in a label is timed
    under that label; the calls that set a repeat up are timed under labels of their own."""

    def call(label: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return session.call(label, tool, args, typed=not label.startswith("add_codap_cases"))

    runs = range(1 + repeats)  # a quick run (the smoke test, repeats 0) calls each tool once
    for r in runs:
        call(
            "update_codap_cases (where, 1/4 of the cases)",
            "update_codap_cases",
            {"datasetName": "s0", "where": "grade = 9", "values": {"study_hours": r}},
        )
    for r in runs:
        call(
            "update_codap_cases (updates: 3 conditions, 3/4 of the cases)",
            "update_codap_cases",
            {
                "datasetName": "s0",
                "updates": [
                    {"where": f"grade = {grade}", "values": {"study_hours": r + i}}
                    for i, grade in enumerate((10, 11, 12))
                ],
            },
        )
    for r in runs:
        call(
            "add_codap_cases (1 case, to delete)",
            "add_codap_cases",
            {"datasetName": "s0", "cases": [{"name": f"bench {r}", "grade": 9, "score": 1}]},
        )
        call(
            "delete_codap_cases (where, 1 case)",
            "delete_codap_cases",
            {"datasetName": "s0", "where": f'name = "bench {r}"'},
        )
    for r in runs:
        call(
            "sort_codap_cases",
            "sort_codap_cases",
            {"datasetName": "s0", "attribute": "score", "descending": r % 2 == 0},
        )
    for _ in runs:
        call("group_codap_cases", "group_codap_cases", {"datasetName": "s1", "attributes": ["grade"]})
        call(
            "group_codap_cases (ungroup)",
            "group_codap_cases",
            {"datasetName": "s1", "attributes": ["grade"], "ungroup": True},
        )
    for r in runs:
        call(
            "add_codap_attribute (formula)",
            "add_codap_attribute",
            {"datasetName": "s0", "name": f"half{r}", "formula": "score / 2"},
        )
        call(
            "update_codap_attribute (unit, precision)",
            "update_codap_attribute",
            {"datasetName": "s0", "name": f"half{r}", "unit": "points", "precision": 1},
        )
        call("delete_codap_attribute", "delete_codap_attribute", {"datasetName": "s0", "name": f"half{r}"})
    for r in runs:
        call(
            f"import_codap_data (csv, {cases:,} rows)",
            "import_codap_data",
            {"datasetName": f"imported{r}", "csv": csv_text(cases)},
        )
        call(f"delete_codap_dataset ({cases:,} cases)", "delete_codap_dataset", {"datasetName": f"imported{r}"})
    for _ in runs:
        call(
            "compute_codap_statistics (2 attributes, 4 statistics, by grade)",
            "compute_codap_statistics",
            {
                "datasetName": "s0",
                "attributes": ["score", "height_cm"],
                "statistics": ["count", "mean", "median", "sd"],
                "groupBy": "grade",
            },
        )
    for _ in runs:
        call(
            "compute_codap_statistics (2 attributes, 4 statistics, 2 groups by condition)",
            "compute_codap_statistics",
            {
                "datasetName": "s0",
                "attributes": ["score", "height_cm"],
                "statistics": ["count", "mean", "median", "sd"],
                "groups": {"lower": "grade = 9 or grade = 10", "upper": "grade = 11 or grade = 12"},
            },
        )
    for _ in runs:
        call("evaluate_codap_formula (mean)", "evaluate_codap_formula", {"formula": "mean(score)", "datasetName": "s0"})
    for _ in runs:
        call("select_codap_cases (where)", "select_codap_cases", {"datasetName": "s0", "where": "score > 80"})
        call("get_codap_selection", "get_codap_selection", {"datasetName": "s0"})
    for r in runs:
        call(
            "update_codap_graph (legend)",
            "update_codap_graph",
            {"graph": "s0", "legendAttribute": "favorite_subject" if r % 2 == 0 else None},
        )
    for _ in runs:
        call(
            "add_codap_adornment (least-squares line)",
            "add_codap_adornment",
            {"graph": "s0", "adornment": "least_squares_line"},
        )
        call("remove_codap_adornment", "remove_codap_adornment", {"graph": "s0", "adornment": "least_squares_line"})
    for r in runs:
        call("create_codap_text", "create_codap_text", {"text": f"note {r}", "title": f"note {r}"})
        call(
            "update_codap_component (move)",
            "update_codap_component",
            {"component": f"note {r}", "position": {"left": 20 + r, "top": 20}},
        )
        call("delete_codap_component", "delete_codap_component", {"component": f"note {r}"})
    for r in runs:
        call("create_codap_slider", "create_codap_slider", {"name": f"level{r}", "value": 5, "min": 0, "max": 10})
        call("create_codap_table", "create_codap_table", {"datasetName": "s1", "title": f"table {r}"})
        call("create_codap_map", "create_codap_map", {"datasetName": "s1", "title": f"map {r}"})
        call("delete_codap_component (table)", "delete_codap_component", {"component": f"table {r}"})
        call("delete_codap_component (map)", "delete_codap_component", {"component": f"map {r}"})
    for r in runs:
        call("update_codap_slider (value, max)", "update_codap_slider", {"slider": f"level{r}", "value": 7, "max": 20})
        call("create_codap_calculator", "create_codap_calculator", {"title": f"calculator {r}"})
        call("delete_codap_component (calculator)", "delete_codap_component", {"component": f"calculator {r}"})
    for r in runs:
        call(
            "set_aside_codap_cases (where, 1/4 of the cases)",
            "set_aside_codap_cases",
            {"datasetName": "s1", "where": "grade = 9"},
        )
        call("set_aside_codap_cases (restore all)", "set_aside_codap_cases", {"datasetName": "s1", "restore": True})
        call(
            "update_codap_table (hide an attribute)",
            "update_codap_table",
            {"datasetName": "s1", "hideAttributes": ["height_cm"]},
        )
        call("update_codap_table (show all)", "update_codap_table", {"datasetName": "s1", "showAllAttributes": True})
        call("update_codap_dataset (title)", "update_codap_dataset", {"datasetName": "s1", "title": f"Students {r}"})
    measure_map_tools(session, runs)
    # Restore points are kept only for documents up to 300 KB of JSON (tools/journal.js): the quick run's small
    # document has them, the full size does not, and there the tool says so instead.
    for r in runs if cases <= 100 else ():
        call("create_codap_text (to take back)", "create_codap_text", {"text": f"undo me {r}"})
        call("undo_codap_tool_calls (the last call)", "undo_codap_tool_calls", {"lastCalls": 1})
    # CODAP's own undo here takes back the bench's last sort or grouping of 1,000 cases: at full size that ran past
    # the answer wait (30 s) in CODAP itself, so undo and redo are timed on the quick run's small document only.
    for _ in runs if cases <= 100 else ():
        call("undo_codap", "undo_codap", {})
        call("redo_codap", "redo_codap", {})
    for _ in runs:
        call("codap_api_help (overview)", "codap_api_help", {"topic": "overview"})


# 20 places with coordinates, for the map: the sample students have none.
PLACES = [
    {"place": f"p{i}", "lat": 35 + (i * 7) % 25, "long": -10 + (i * 11) % 40, "population": 1000 * (i + 1)}
    for i in range(20)
]


def measure_map_tools(session: Session, runs: range) -> None:
    """update_codap_map's kinds of change on a map of 20 places: its View menu (hide the selected cases, show all,
    a filter formula) and its legend and base map rebuild CODAP's document; centre and zoom do not."""
    call = session.call
    call(
        "create_codap_dataset (places)",
        "create_codap_dataset",
        {"datasetName": "places", "dataType": "custom", "customData": PLACES},
    )
    call("create_codap_map (places)", "create_codap_map", {"datasetName": "places", "title": "places map"})
    for r in runs:
        call(
            "update_codap_map (centre, zoom)",
            "update_codap_map",
            {"map": "places map", "center": {"latitude": 45, "longitude": 10 + r}, "zoom": 4},
        )
        call(
            "select_codap_cases (places)", "select_codap_cases", {"datasetName": "places", "where": "population < 5000"}
        )
        call("update_codap_map (hide selected)", "update_codap_map", {"map": "places map", "hideCases": "selected"})
        call("update_codap_map (show all)", "update_codap_map", {"map": "places map", "showAllCases": True})
        call(
            "update_codap_map (filter formula)",
            "update_codap_map",
            {"map": "places map", "filterFormula": f"population > {1000 * r}"},
        )
        call(
            "update_codap_map (legend, base map)",
            "update_codap_map",
            {"map": "places map", "legendAttribute": "population", "baseMap": "streets" if r % 2 else "oceans"},
        )
    call("delete_codap_component (places map)", "delete_codap_component", {"component": "places map"})
    call("delete_codap_dataset (places)", "delete_codap_dataset", {"datasetName": "places"})


def measure_webgl(browser: Any, codap_url: str, relay: str, *, cases: int) -> dict[str, Any]:
    """The first get_codap_status after a new graph, with CODAP's WebGL graphs and with its canvas setting."""
    out: dict[str, Any] = {}
    for mode, webgl in (("webgl", True), ("canvas", False)):
        with codap_session(browser, codap_url, relay, webgl=webgl) as session:
            session.call(
                "create",
                "create_codap_dataset",
                {"datasetName": "s", "dataType": "sample_students", "recordCount": cases},
            )
            session.call(
                "graph",
                "create_codap_graph",
                {"datasetName": "s", "graphType": "scatterplot", "xAttribute": "grade", "yAttribute": "score"},
            )
            for _ in range(2):
                session.call("status", "get_codap_status", {})
            for _ in range(3):
                session.call("picture", "get_codap_graph_image", {})
            status = session.timings["status"]
            out[mode] = {
                "graph_ms": round(session.timings["graph"].plugin_ms[0], 1),
                "first_status_ms": round(status.plugin_ms[0], 1),
                "next_status_ms": round(status.plugin_ms[1], 1),
                "picture_ms": round(statistics.median(session.timings["picture"].plugin_ms), 1),
            }
    return out


def run(*, quick: bool, webgl: bool, log: Callable[[str], None]) -> dict[str, Any]:
    # A quick run (the smoke test) calls every tool once: it proves each one runs and is timed, not how fast.
    cases, repeats = (50, 0) if quick else (1000, 5)
    big_adds, big_add_size = (1, 200) if quick else (5, 1800)
    with environment() as env:
        if isinstance(env, str):
            return {"skipped": env}
        browser, codap_url = env
        with run_target("memory:") as relay:
            log("real CODAP: the document …")
            with codap_session(browser, codap_url, relay.base) as session:
                baseline = session.one_message_ms(20)
                measure_document(session, cases=cases, repeats=repeats, big_adds=big_adds, big_add_size=big_add_size)
                rows = [t.report(baseline) for t in session.timings.values()]
                log("real CODAP: MCP resources/read of the big dataset's cases …")
                total = cases + big_adds * big_add_size
                mcp_read = measure_mcp_read(session, "big", total, repeats=max(1, repeats))  # a later read too
            result: dict[str, Any] = {
                "codap": "3.1.0 (static build, headless chromium, CODAP's 'disable graphics acceleration' on)",
                "document": f"3 datasets of {cases:,} cases, 5 components (3 case tables, 2 graphs)",
                "baseline_one_message_ms": round(baseline, 2),
                "rows": rows,
                "mcp_read": mcp_read,
            }
            if webgl:
                log("real CODAP: WebGL graphs (software) against the canvas setting …")
                result["webgl"] = measure_webgl(browser, codap_url, relay.base, cases=cases)
    return result
