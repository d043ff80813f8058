"""Pictures of graphs and saved traces, in the real CODAP app (v3.1.0 build) in headless chromium.

Pictures are asked for from the LLM side, over HTTP and MCP (those tests also run through local-api, the deployed
shape); the PNG is decoded and compared with what CODAP drew on the page: its size with the graph's plot area, its
points by colour. Traces are saved and replayed with the plugin's own buttons (Playwright's download and file
chooser), into a fresh CODAP document, across a reload of the plugin frame, and refused when they are not traces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codap_relay_tooling.testing import ARTIFACTS, web
from codap_relay_tooling.testing.pictures import picture, point_pixels
from codap_relay_tooling.testing.plugin_page import (
    McpClient,
    answer,
    call_tool,
    ok_result,
    plugin_storage,
    submit,
    wait_until,
)
from codap_relay_tooling.testing.real_codap import CodapPage, animation_frames, codap_pages

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def full_frame_rate() -> bool:
    """CODAP pages at the display's frame rate, as people's browsers run them. The plugin calls a picture settled
    when two taken 100 ms apart match, a few animation frames at a display's rate; at the other tests' 10 frames a
    second no frame may come between them, and a picture taken before CODAP drew the points came back without them
    (a loaded run saw 0 point pixels)."""
    return True


# --- helpers -------------------------------------------------------------------------------------------------


def tool(codap: CodapPage, name: str, args: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = call_tool(codap.relay, codap.code(), name, args)
    return body


def done(codap: CodapPage, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = ok_result(tool(codap, name, args))
    return result


def plot_areas(codap: CodapPage) -> list[tuple[int, int]]:
    """What CODAP drew of each graph: its plot area in device pixels (CSS size times the pixel ratio)."""
    sizes = codap.page.evaluate(
        """() => [...document.querySelectorAll('.graph-plot')].map(e => {
            const r = e.getBoundingClientRect();
            return [Math.ceil(r.width * devicePixelRatio), Math.ceil(r.height * devicePixelRatio)];
        })"""
    )
    return [(int(w), int(h)) for w, h in sizes]


def holdings(codap: CodapPage) -> tuple[list[str], list[tuple[str, Any, Any, Any]]]:
    """What a CODAP document holds: its datasets, and its graphs as (plot type, x, y, title)."""
    datasets = [d["name"] for d in codap.ok({"action": "get", "resource": "dataContextList"})]
    graphs = []
    for c in codap.components():
        if c["type"] == "graph":
            g = codap.ok({"action": "get", "resource": f"component[{c['id']}]"})
            graphs.append((g["plotType"], g["xAttributeName"], g["yAttributeName"], g["title"]))
    return datasets, graphs


def download_trace(codap: CodapPage, folder: Path) -> tuple[Path, dict[str, Any]]:
    with codap.page.expect_download() as info:
        codap.frame.locator("#download-trace").click()
    download = info.value
    assert re.fullmatch(r"codap-relay-trace-\d{4}-\d\d-\d\d-\d{4}\.json", download.suggested_filename)
    path = folder / download.suggested_filename
    download.save_as(path)
    trace: dict[str, Any] = json.loads(path.read_text())
    return path, trace


def choose_trace(codap: CodapPage, path: Path) -> None:
    with codap.page.expect_file_chooser() as chooser:
        codap.frame.locator("#replay-trace").click()
    chooser.value.set_files(str(path))


def replay_confirmed(codap: CodapPage, path: Path) -> str:
    """Choose a trace and say yes to the question every replay asks first; the question's text."""
    choose_trace(codap, path)
    question = wait_replay(codap, "confirm")
    codap.frame.locator("#confirm-replay").click()
    return question


def replay_text(codap: CodapPage) -> str:
    return str(codap.text("#replay-text"))


def replay_outcome(codap: CodapPage) -> str | None:
    cls = str(codap.frame.locator("#replay").get_attribute("class") or "")
    found = re.search(r"replay-(\w+)", cls)
    return found.group(1) if found else None


def wait_replay(codap: CodapPage, outcome: str, timeout: float = 60) -> str:
    wait_until(lambda: codap._safe(lambda: replay_outcome(codap)) == outcome, f"the replay to be {outcome}", timeout)
    return replay_text(codap)


# --- pictures from the LLM side ------------------------------------------------------------------------------


def test_graph_pictures_over_http_and_mcp_show_what_codap_drew(pages: Callable[..., CodapPage], relay_url: str) -> None:
    codap = pages(f"{relay_url}/plugin/")
    done(codap, "create_codap_dataset", {"datasetName": "students", "dataType": "sample_students", "recordCount": 50})
    made = done(
        codap,
        "create_codap_graph",
        {
            "datasetName": "students",
            "graphType": "scatterplot",
            "xAttribute": "grade",
            "yAttribute": "score",
            "includeImage": True,
        },
    )
    text, item = made["content"]
    assert item["type"] == "image" and item["mimeType"] == "image/png"
    first = picture(item["data"])
    assert first.format == "PNG"
    (drawn,) = plot_areas(codap)
    assert (
        first.size
        == drawn
        == (made["structuredContent"]["image"]["width"], made["structuredContent"]["image"]["height"])
    )
    assert f"PNG, {drawn[0]} \N{MULTIPLICATION SIGN} {drawn[1]} px" in text["text"]
    # all 50 students are in the picture, not a plot caught before its points were drawn (CODAP animates them in)
    assert point_pixels(first) > 50 * 25, point_pixels(first)
    graph_id = made["structuredContent"]["graphId"]

    # The graph made larger in CODAP: the picture follows what CODAP draws now.
    codap.ok(
        {
            "action": "update",
            "resource": f"component[{graph_id}]",
            "values": {"dimensions": {"width": 560, "height": 460}},
        }
    )
    wait_until(lambda: plot_areas(codap) != [drawn], "CODAP to draw the graph larger")
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as mcp:
        listed = {t.name: t for t in mcp.tools()}
        hints = listed["get_codap_graph_image"].annotations
        assert hints is not None and hints.read_only_hint is True and hints.destructive_hint is False
        assert "includeImage" in listed["create_codap_graph"].input_schema["properties"]
        # untitled: it shows its dataset's name
        larger = mcp.call_to_the_end("get_codap_graph_image", {"graph": "students"})
        assert larger.is_error is False, larger
        assert [c.type for c in larger.content] == ["text", "image"]
        big = picture(larger.content[1].data)
        (now_drawn,) = plot_areas(codap)
        assert big.size == now_drawn and big.size[0] > first.size[0]
        assert point_pixels(big) > 50 * 25
        small = mcp.call_to_the_end("get_codap_graph_image", {"graph": graph_id, "maxSize": 200})
        thumb = picture(small.content[1].data)
        assert max(thumb.size) == 200 and abs(thumb.size[0] / thumb.size[1] - big.size[0] / big.size[1]) < 0.02
        assert "scaled down to at most 200 px" in small.content[0].text
        assert small.structured_content["codapWidth"] == big.size[0]

    # Asking for what is not a graph changes nothing and names the graphs there are.
    before = codap.components()
    unknown = tool(codap, "get_codap_graph_image", {"graph": "Heights"})
    assert unknown["status"] == "failed" and unknown["error"]["code"] == "graph_not_found"
    assert unknown["error"]["message"].endswith(f'Graphs in CODAP: "students" (id {graph_id}).')
    (table,) = [c["id"] for c in before if c["type"] == "caseTable"]
    not_graph = tool(codap, "get_codap_graph_image", {"graph": table})
    assert not_graph["error"]["code"] == "not_a_graph" and "is a case table" in not_graph["error"]["message"]
    assert codap.components() == before
    codap.ok({"action": "update", "resource": f"component[{graph_id}]", "values": {"isVisible": False}})
    hidden = tool(codap, "get_codap_graph_image", {"graph": graph_id})  # CODAP would answer an empty "data:,"
    assert hidden["error"]["code"] == "graph_image_unavailable" and "is hidden in CODAP" in hidden["error"]["message"]
    codap.page.context.close()


@pytest.mark.in_process
def test_a_picture_in_codaps_default_webgl_graphs(browser: Any, codap_url: str, relay_url: str) -> None:
    """CODAP's defaults: points drawn with WebGL (in software here, which stalls CODAP for seconds per graph), and
    animation frames at the display's rate."""
    with codap_pages(browser, codap_url, webgl=True, full_frame_rate=True) as webgl_pages:
        codap = webgl_pages(f"{relay_url}/plugin/")
        done(codap, "create_codap_dataset", {"datasetName": "gl", "dataType": "random_numbers", "recordCount": 40})
        args = {
            "datasetName": "gl",
            "graphType": "scatterplot",
            "xAttribute": "x",
            "yAttribute": "y",
            "includeImage": True,
        }
        asked = submit(codap.relay, codap.code(), "create_codap_graph", args)
        made = ok_result(answer(codap.relay, codap.code(), asked, timeout=120))  # software WebGL: seconds per graph
        image = picture(made["content"][1]["data"])
        assert [image.size] == plot_areas(codap)
        assert point_pixels(image) > 40 * 25
        assert animation_frames(codap.page, 2.0) > 21  # more than a test page's cap allows (display rate: 60 a second)


# --- traces: download and replay with the plugin's buttons ----------------------------------------------------


@pytest.mark.in_process
def test_a_saved_trace_replays_into_a_fresh_document(
    pages: Callable[..., CodapPage], relay_url: str, tmp_path: Path
) -> None:
    lesson = pages(f"{relay_url}/plugin/")
    old_code = lesson.code()
    token = json.loads(next(v for k, v in plugin_storage(lesson.frame).items() if k.endswith(":session")))["token"]
    done(lesson, "create_codap_dataset", {"datasetName": "class", "dataType": "sample_students", "recordCount": 40})
    graph_args = {
        "datasetName": "class",
        "graphType": "scatterplot",
        "xAttribute": "study_hours",
        "yAttribute": "math_score",
        "title": "Study and maths",
    }
    done(lesson, "create_codap_graph", graph_args)
    done(
        lesson,
        "add_codap_cases",
        {"datasetName": "class", "cases": [{"name": "Nia K.", "study_hours": 9, "math_score": 97}]},
    )
    done(lesson, "get_codap_status", {})
    failed = tool(lesson, "add_codap_cases", {"datasetName": "nowhere", "cases": [{"x": 1}]})
    assert failed["status"] == "failed"
    # A new code ends the first session; its calls still go into the trace while the relay keeps its log.
    lesson.frame.locator("#new-code").click()
    wait_until(lambda: lesson.code() not in (old_code, "…") and lesson.status() == "Connected", "the plugin's new code")
    done(
        lesson,
        "create_codap_graph",
        {"datasetName": "class", "graphType": "bar_chart", "xAttribute": "favorite_subject"},
    )

    path, trace = download_trace(lesson, tmp_path)
    assert (trace["format"], trace["version"], trace["plugin"]) == ("codap-relay-trace", 1, "1.0.0")
    assert [(c["tool"], c["status"], c["via"]) for c in trace["calls"]] == [
        ("create_codap_dataset", "completed", "llm"),
        ("create_codap_graph", "completed", "llm"),
        ("add_codap_cases", "completed", "llm"),
        ("get_codap_status", "completed", "llm"),
        ("add_codap_cases", "failed", "llm"),
        ("create_codap_graph", "completed", "llm"),
    ]
    assert trace["calls"][1]["args"] == graph_args
    assert trace["calls"][4]["summary"].startswith('CODAP has no dataset named "nowhere"')
    text = path.read_text()
    for secret in (old_code, lesson.code(), token):
        assert secret not in text

    fresh = pages(f"{relay_url}/plugin/")
    assert holdings(fresh) == ([], [])
    assert replay_confirmed(fresh, path).startswith(f"{path.name} would make 4 calls in this CODAP document")
    message = wait_replay(fresh, "finished")
    assert fresh.frame.locator("#stop-replay").is_hidden() and fresh.frame.locator("#replay-trace").is_enabled()
    assert message == f"Replayed {path.name}: 4 calls run, 2 skipped (read-only, or failed when recorded)."
    assert holdings(fresh) == holdings(lesson)
    assert [i["values"] for i in fresh.items("class")] == [i["values"] for i in lesson.items("class")]
    entries = fresh.frame.evaluate("() => [...document.querySelectorAll('#log .entry-tool')].map(e => e.textContent)")
    assert entries[0] == "create_codap_graph · replay 6/6" and entries[-1] == "create_codap_dataset · replay 1/6"

    # The picture the LLM asks for next shows in the activity panel: the screenshot docs/plugin.md shows.
    done(fresh, "get_codap_graph_image", {"graph": "Study and maths", "maxSize": 400})
    wait_until(lambda: fresh.frame.locator("#log .entry-image").count() == 1, "the picture in the activity panel")
    fresh.frame.locator("#log").evaluate("(log) => { log.scrollTop = 0; }")
    plugin = fresh.page.locator(f"iframe[src^='{relay_url}/plugin/']")
    ARTIFACTS.mkdir(exist_ok=True)
    plugin.screenshot(path=str(ARTIFACTS / "real-codap-trace-replay.png"))  # docs/plugin-trace-replay.png

    # The replayed calls are in this tab's next trace, beside the LLM's own.
    _, again = download_trace(fresh, tmp_path)
    assert [(c["tool"], c["via"]) for c in again["calls"]] == [
        ("create_codap_dataset", "replay"),
        ("create_codap_graph", "replay"),
        ("add_codap_cases", "replay"),
        ("create_codap_graph", "replay"),
        ("get_codap_graph_image", "llm"),
    ]


def web_views(codap: CodapPage) -> list[Any]:
    """The components that show a web page (the plugin among them), by id."""
    return sorted(
        c["id"] for c in codap.components() if c["type"] in ("webView", "game", "guideView", "imageComponentView")
    )


def trace_file(folder: Path, name: str, calls: list[dict[str, Any]], **fields: Any) -> Path:
    """A trace file as docs/plugin.md documents it."""
    body = {
        "format": "codap-relay-trace",
        "version": 1,
        "exportedAt": "2026-05-04T10:00:00Z",
        "plugin": "1.0.0",
        "calls": calls,
        **fields,
    }
    path = folder / name
    path.write_text(json.dumps(body))
    return path


def call(tool_name: str, args: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {
        "tool": tool_name,
        "args": args,
        "status": status,
        "summary": None,
        "error": None,
        "at": "2026-05-04T10:00:00Z",
        "completedAt": None,
        "latencyMs": None,
        "via": "llm",
    }


@pytest.mark.in_process
def test_a_reload_mid_replay_runs_no_call_twice(
    pages: Callable[..., CodapPage], relay_url: str, tmp_path: Path
) -> None:
    adds = 40
    calls = [
        call(
            "create_codap_dataset",
            {"datasetName": "tally", "dataType": "custom", "recordCount": 1, "customData": [{"n": 0}]},
        )
    ]
    calls += [call("add_codap_cases", {"datasetName": "tally", "cases": [{"n": n}]}) for n in range(1, adds + 1)]
    path = trace_file(tmp_path, "tally.json", calls)
    codap = pages(f"{relay_url}/plugin/")
    code = codap.code()
    replay_confirmed(codap, path)
    wait_until(
        lambda: codap._safe(lambda: float(codap.frame.locator("#replay-progress").evaluate("p => p.value"))) >= 10,
        "ten calls replayed",
    )
    codap.reload_plugin()
    assert codap.wait_paired() == code
    stopped = wait_replay(codap, "stopped")
    assert "reloaded" in stopped and "choose the same file again" in stopped.lower()
    interrupted = re.search(r"call (\d+) \(add_codap_cases\) was running", stopped)
    replay_confirmed(codap, path)
    finished = wait_replay(codap, "finished")
    assert "continued: calls that ran before were not run again" in finished
    held = sorted(int(i["values"]["n"]) for i in codap.items("tally"))
    assert len(held) == len(set(held)), f"a call ran twice: {held}"
    missing = set(range(adds + 1)) - set(held)
    if interrupted:  # caught inside CODAP by the reload: it ran once or not at all, and was not run again
        assert missing <= {int(interrupted.group(1)) - 1}
    else:
        assert missing == set()


@pytest.mark.in_process
def test_files_that_are_not_traces_are_refused_and_change_nothing(
    pages: Callable[..., CodapPage], relay_url: str, tmp_path: Path
) -> None:
    codap = pages(f"{relay_url}/plugin/")
    done(codap, "create_codap_dataset", {"datasetName": "kept", "dataType": "random_numbers", "recordCount": 3})
    before = holdings(codap), codap.items("kept")
    notes = tmp_path / "notes.txt"
    notes.write_text("Lesson plan: scatter plots\n")
    package = tmp_path / "package.json"
    package.write_text(json.dumps({"name": "lesson", "version": "1.0.0"}))
    good = [call("create_codap_dataset", {"datasetName": "new", "dataType": "random_numbers", "recordCount": 2})]
    cases = [
        (notes, "it is not JSON"),
        (package, 'it has no "format": "codap-relay-trace"'),
        (trace_file(tmp_path, "future.json", good, version=2), "saved by a newer codap-relay plugin (trace version 2)"),
        (
            trace_file(tmp_path, "tools.json", [*good, call("delete_everything", {})]),
            'uses the tool "delete_everything"',
        ),
        (
            trace_file(tmp_path, "args.json", [*good, call("add_codap_cases", {"datasetName": "kept"})]),
            "args.cases is missing",
        ),
    ]
    for path, words in cases:
        choose_trace(codap, path)
        message = wait_replay(codap, "refused")
        assert message.startswith(f"{path.name} was not replayed: ") and words in message, message
        assert message.endswith("Nothing was changed.")
        assert (holdings(codap), codap.items("kept")) == before
        codap.frame.locator("#replay").evaluate("(box) => { box.className = 'replay'; }")  # the next one shows anew
    # A shared trace that deletes things runs only if the person says so.
    wipe = trace_file(tmp_path, "wipe.json", [call("codap_api", {"action": "delete", "resource": "dataContext[kept]"})])
    choose_trace(codap, wipe)
    question = wait_replay(codap, "confirm")
    assert question == (
        "wipe.json would make 1 call in this CODAP document (listed below); 1 call of codap_api can change or delete "
        "anything in it. A replay runs at most 500 calls. Replay it?"
    )
    assert codap.frame.locator("#replay-calls li").all_inner_texts() == ["codap_api · delete dataContext[kept]"]
    codap.frame.locator("#cancel-replay").click()
    assert wait_replay(codap, "refused").endswith("you cancelled it. Nothing was changed.")
    assert (holdings(codap), codap.items("kept")) == before
    # A trace holding a request the raw tool's policy refuses: marked in the list, never sent to CODAP.
    pages_before = web_views(codap)
    seen: list[str] = []
    codap.page.on("request", lambda request: seen.append(request.url))
    evil = "http://127.0.0.1:9/evil.html"
    mixed = trace_file(
        tmp_path,
        "mixed.json",
        [
            *good,
            call(
                "codap_api", {"action": "create", "resource": "component", "values": {"type": "webView", "URL": evil}}
            ),
            call(
                "codap_api",
                {
                    "action": "update",
                    "resource": "interactiveFrame",
                    "values": {"dimensions": {"width": 1, "height": 1}},
                },
            ),
        ],
    )
    codap.frame.locator("#replay").evaluate("(box) => { box.className = 'replay'; }")
    choose_trace(codap, mixed)
    question = wait_replay(codap, "confirm")
    assert "2 calls the plugin's policy refuses (marked) will be skipped and never sent to CODAP" in question, question
    listed = codap.frame.locator("#replay-calls li").all_inner_texts()
    assert listed[0].startswith("create_codap_dataset · ") and len(listed) == 3, listed
    assert "REFUSED by policy (safe_component_types): not sent" in listed[1], listed
    assert "REFUSED by policy (not_the_plugin): not sent" in listed[2], listed
    codap.frame.locator("#confirm-replay").click()
    finished = wait_replay(codap, "finished")
    assert finished.endswith(
        "1 call run, 0 skipped (read-only, or failed when recorded), "
        "2 refused by the plugin's policy (not sent to CODAP)."
    ), finished
    assert "new" in codap.dataset_names()
    assert web_views(codap) == pages_before
    assert not [u for u in seen if u.startswith("http://127.0.0.1:9/")], seen
    assert web.get(f"{relay_url}/api/sessions/{codap.code()}").json()["pending"] == 0
