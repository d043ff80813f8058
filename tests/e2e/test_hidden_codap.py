"""CODAP behind the chat: its tab hidden behind another for three minutes, as a teacher's browser hides it while they
type in the chat's tab, with the real CODAP build and the relay through ``codap-relay serve`` (SSE) and through
``codap-relay local-api`` (the push WebSocket).

The browsers are started here and reached without Playwright (hidden_tab.py): Debian's chromium headed under Xvfb
over plain CDP, one per channel, and firefox-esr over WebDriver BiDi through serve. Each test first checks that
CODAP's page really is hidden, and the long test measures that its timers really are slowed (Chromium: once a
minute after its first minute hidden) and that no animation frame ran. The three channels share the wait: they
are hidden one after another, and the calls of the three minutes go round them.

The figures (call times in front and hidden, pictures' point pixels, channels opened, the timers) are written to
test-artifacts/hidden_codap.json.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay_tooling.testing import ARTIFACTS, engines
from codap_relay_tooling.testing.chromium import chromium_path
from codap_relay_tooling.testing.class_period import ANSWER_SECONDS, Channel, start_channels
from codap_relay_tooling.testing.hidden_tab import CHROME_GRACE_SECONDS
from codap_relay_tooling.testing.pictures import result_point_pixels
from codap_relay_tooling.testing.real_parts import missing, need

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.dynamodb_local]

CHANNELS = ["serve", "local_api", "firefox"]
HIDDEN_SECONDS = 180.0  # how long every channel stays hidden before it is brought back
ROUND_SECONDS = 20.0  # one call on each channel this often while hidden
STUDENTS = 50
# The plugin's push pings, 20 s apart here (90 s by default): a ping every 20 s that Chrome ran once a minute in a
# hidden tab made the plugin take its socket for dead and reopen it.
PUSH_PING_SECONDS = 20.0


@pytest.fixture(scope="module")
def channels(codap_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Channel]]:
    """The three CODAP tabs, paired: Chromium through serve, Chromium through local-api (push), Firefox through
    serve. Each browser and relay is the real program, started here (class_period.start_channels)."""
    for program in engines.missing("firefox"):
        missing(engines.PART[program])
    need(chromium_path(), "Chromium")
    need(shutil.which(engines.XVFB), "Xvfb")
    folder = tmp_path_factory.mktemp("class-period")
    with contextlib.ExitStack() as stack:
        found = start_channels(stack, codap_url, folder, tuple(CHANNELS), push_ping_seconds=PUSH_PING_SECONDS)
        yield found
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "hidden_codap.json").write_text(json.dumps({n: c.figures() for n, c in found.items()}, indent=1))


def codap_students(c: Channel) -> list[dict[str, Any]]:
    """The students as CODAP holds them (a Data Interactive read, not the tools' answer)."""
    return [i["values"] for i in c.tab.items("students")]


# --- in front, then hidden: a graph made behind the chat ------------------------------------------------------


@pytest.mark.parametrize("name", CHANNELS)
def test_a_graph_made_behind_the_chat_is_described_from_data_not_pictured(
    channels: dict[str, Channel], name: str
) -> None:
    c = channels[name]
    c.browser.wait_visibility("visible")
    students = {"datasetName": "students", "dataType": "sample_students", "recordCount": STUDENTS}
    c.result("create_codap_dataset", students, c.front)
    scatter = {"datasetName": "students", "graphType": "scatterplot", "xAttribute": "grade", "yAttribute": "score"}
    made = c.result("create_codap_graph", {**scatter, "includeImage": True}, c.front)
    c.pixels["front"] = result_point_pixels(made)
    assert (c.pixels["front"] or 0) > STUDENTS * 25, "in front, CODAP draws every point"
    c.graphs["scatter"] = made["structuredContent"]["graphId"]
    for n, (tool, args) in enumerate(ROUND):  # the calls of the hidden minutes, timed in front first
        c.result(tool, args(-1 - n), c.front)
        c.added += tool == "add_codap_cases"
    time.sleep(2)  # CODAP's notices of the changes come in the next second or two

    c.hide()
    assert c.browser.visibility() == {"page": "hidden", "frame": "hidden"}, "the harness must really hide CODAP"

    # a graph made now: CODAP does not draw it, and the answer says so and tells what it holds from CODAP's data
    dots = {"datasetName": "students", "graphType": "dot_plot", "xAttribute": "score", "includeImage": True}
    body = c.hidden_call("create_codap_graph", dots)
    assert body["status"] == "completed", body
    result = body["result"]
    c.graphs["madeHidden"] = result["structuredContent"]["graphId"]
    assert [item["type"] for item in result["content"]] == ["text"], "no picture of an undrawn graph"
    text = result["content"][0]["text"]
    assert "CODAP has not drawn graph" in text and "Bring CODAP's browser tab to the front" in text, text
    sc = result["structuredContent"]
    assert "image" not in sc and sc["imageNotDrawn"]["reason"] == "codap_hidden", sc
    scores = [s["score"] for s in codap_students(c)]
    held = sc["graphData"]
    assert [held["dataset"], held["cases"], held["plotted"]] == ["students", len(scores), len(scores)]
    (x,) = held["attributes"]
    assert [x["attribute"], x["type"], x["min"], x["max"]] == ["score", "numeric", min(scores), max(scores)]
    assert f'{len(scores)} cases of "students"' in text and f"numbers from {min(scores)} to {max(scores)}" in text

    # the graph CODAP drew before its tab was hidden keeps its picture, with its points
    body = c.hidden_call("get_codap_graph_image", {"graph": c.graphs["scatter"]})
    assert body["status"] == "completed", body
    c.pixels["drawnBeforeHidden"] = result_point_pixels(body["result"])
    assert body["result"]["structuredContent"]["codapHidden"] is True
    assert (c.pixels["drawnBeforeHidden"] or 0) > STUDENTS * 25


# --- three minutes hidden: calls go round the channels ---------------------------------------------------------


def late_student(n: int) -> dict[str, Any]:
    return {"datasetName": "students", "cases": [{"name": f"late {n}", "grade": 9, "score": 60}]}


# What each round asks, in turn: a change (a case added), then reads.
ROUND = [
    ("add_codap_cases", late_student),
    ("get_codap_datasets", lambda n: {}),
    ("get_codap_status", lambda n: {}),
    ("export_codap_data", lambda n: {"datasetName": "students", "format": "csv"}),
]


def test_three_minutes_hidden_lose_nothing_reopen_no_channel_and_answer_as_in_front(
    channels: dict[str, Channel],
) -> None:
    hidden = [c for c in channels.values() if c.hidden_at is not None]
    assert len(hidden) == len(CHANNELS), "every channel was hidden by the test before"
    n = 0
    while min(c.hidden_for() for c in hidden) < HIDDEN_SECONDS:
        started = time.monotonic()
        for c in hidden:
            tool, args = ROUND[n % len(ROUND)]
            body = c.hidden_call(tool, args(n))
            assert body["status"] == "completed", (c.name, body)
            said = body["result"]["content"][0]["text"]
            assert "Graphics Acceleration" not in said, f"{c.name}: a hidden tab's slowness blamed on drawing: {said}"
            c.added += tool == "add_codap_cases"
            c.statuses.append(c.connected())
        n += 1
        for c in hidden:  # the browsers' own connections are read meanwhile
            c.browser.idle(max(0.0, ROUND_SECONDS - (time.monotonic() - started)) / len(hidden))

    for c in hidden:
        # a graph made past the grace, with the tab's timers at once a minute: still answered, still not pictured
        ages = {"datasetName": "students", "graphType": "histogram", "xAttribute": "age", "includeImage": True}
        body = c.hidden_call("create_codap_graph", ages)
        assert body["status"] == "completed" and body["result"]["structuredContent"]["imageNotDrawn"], body

    for c in hidden:
        # answered as in front: Chromium answers a hidden tab's messages at once; Firefox runs CODAP's queue of
        # plugin messages (a setTimeout(0) each) a second later at the soonest, so its calls take seconds more.
        # The slack: a hidden tab's timers fire on whole seconds, a graph's creation waits on several of them, and a
        # loaded run stretches each (10.5 s hidden against 2.3 s in front, once); what this guards against, a
        # channel taken for dead while hidden, held a call 60 s.
        for call in c.hidden:
            usual = c.front.get(call["tool"])
            if usual is not None and c.browser.name == "chromium":
                assert call["seconds"] <= 3 * usual + 10, f"{c.name}: {call} hidden, {usual} s in front"
            assert call["seconds"] < ANSWER_SECONDS
        # nothing lost: every case added while hidden is in CODAP, read back from CODAP itself
        names = [s["name"] for s in codap_students(c)]
        assert len(names) == STUDENTS + c.added and all(f"late {i}" in names for i in range(0, n, len(ROUND)))
        # no channel reopened: the plugin's frame opened its one stream (or socket) when it paired, and no other;
        # the stream did not reconnect by itself either
        kind = "WebSocket" if c.name == "local_api" else "EventSource"
        assert [o["kind"] for o in c.browser.channels()] == [kind, f"{kind} open"], c.browser.channels()
        assert all(c.statuses), f"{c.name}: the relay counted the plugin as gone in {c.statuses.count(False)} polls"
        # the page was hidden all along, without a frame, its timers slowed as a person's browser slows them
        page, frame = c.browser.read_probe(frame=False, stop=False), c.browser.read_probe(frame=True, stop=False)
        c.read_timers()
        for r in (page, frame):
            assert r.visibility == "hidden" and r.span >= HIDDEN_SECONDS - 5
            if c.browser.name == "chromium":  # Firefox: recorded (a few frames; timers once a second, or less loaded)
                assert r.frames == 0, "Chromium runs no animation frame in a hidden page"
                assert r.per_minute(0, 50) >= 25, "hidden, timers first run once a second (or about)"
                slowed = r.slowed_at()
                assert slowed is not None and CHROME_GRACE_SECONDS - 15 <= slowed <= CHROME_GRACE_SECONDS + 20, slowed
                assert r.per_minute(90) <= 2.5, "after its first minute hidden, a chain of timers runs once a minute"


# --- back in front --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHANNELS)
def test_back_in_front_the_same_code_and_the_graph_drawn(channels: dict[str, Channel], name: str) -> None:
    c = channels[name]
    assert "madeHidden" in c.graphs, "the graph made hidden (the first test) is needed"
    c.browser.show()
    shown = c.tab.shown()
    assert shown["code"] == c.code and shown["status"] == "Connected", shown
    image = c.result("get_codap_graph_image", {"graph": c.graphs["madeHidden"]}, c.again)
    c.pixels["afterShown"] = result_point_pixels(image)
    assert image["structuredContent"]["drawn"] is True and image["structuredContent"]["codapHidden"] is False
    assert (c.pixels["afterShown"] or 0) > STUDENTS * 25, "shown again, CODAP draws the graph made while hidden"
    c.result("get_codap_status", {}, c.again)
    c.result("add_codap_cases", late_student(-1), c.again)
    assert len(c.browser.channels()) == 2, "still the one channel it opened when it paired, opened once"
