"""CODAP's undo and redo in the real CODAP (a fresh document, so its undo history holds only this test's steps).

CODAP 3.1.0 records a person's changes in its undo history but not the changes plugins make through the Data
Interactive API: the plugin puts each changing tool call there itself, and takes it back (or makes it again) when
CODAP's Undo (or Redo) reaches it. Every state is read back through Data Interactive gets, not through the tools."""

from __future__ import annotations

import time
from typing import Any

import pytest

from codap_relay_tooling.testing.plugin_page import answer, ok_result, submit, wait_until
from codap_relay_tooling.testing.real_codap import codap_pages
from codap_relay_tooling.testing.slow_codap import SLOW_CODAP_REPLIES, slow_codap

pytestmark = [pytest.mark.browser, pytest.mark.tools]


def position(codap: Any, cid: int) -> dict[str, Any]:
    found: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{cid}]"})["position"]
    return found


def press(codap: Any, button: str) -> None:
    """A person presses CODAP's Undo or Redo button in its tool shelf, and CODAP is given a moment to finish."""
    codap.page.locator(f'[data-testid="tool-shelf-button-{button}"]').click()


def text_boxes(codap: Any) -> list[str]:
    return [str(c["title"]) for c in codap.components() if c["type"] == "text"]


def values_of(codap: Any, dataset: str, attr: str) -> list[Any]:
    return [item["values"][attr] for item in codap.items(dataset)]


def test_codaps_undo_and_redo_walk_through_the_models_and_the_persons_changes(
    browser: Any, codap_url: str, relay_url: str
) -> None:
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        nothing = codap.done("undo_codap", {})
        assert nothing["structuredContent"]["undone"] == 0 and "nothing to undo" in nothing["content"][0]["text"]
        assert codap.done("redo_codap", {"steps": 3})["structuredContent"]["redone"] == 0
        codap.ok(
            {
                "action": "create",
                "resource": "dataContext",
                "values": {"name": "Trees", "collections": [{"name": "Trees", "attrs": [{"name": "height"}]}]},
            }
        )
        codap.ok({"action": "create", "resource": "dataContext[Trees].item", "values": [{"height": 3}, {"height": 5}]})

        # The model adds a text box, the person drags the plugin's window, the model changes a case: three steps.
        # (A redone text box is a new component: CODAP's own later steps on the old one would no longer apply.)
        pid = int(codap.ok({"action": "get", "resource": "interactiveFrame"})["id"])
        codap.done("create_codap_text", {"text": "hello", "title": "Note"})
        placed = position(codap, pid)
        drag_title(codap, "CODAP Relay", 120, 80)
        moved = position(codap, pid)
        assert moved != placed
        codap.done("update_codap_cases", {"datasetName": "Trees", "values": {"height": 9}, "where": "height = 5"})
        assert values_of(codap, "Trees", "height") == [3, 9]

        # The person's Undo takes them back newest first: the case, the drag, the text box.
        press(codap, "undo")
        wait_until(lambda: values_of(codap, "Trees", "height") == [3, 5], "Undo to take the case change back")
        assert "Note" in text_boxes(codap) and position(codap, pid) == moved
        press(codap, "undo")
        wait_until(lambda: position(codap, pid) == placed, "Undo to take the person's drag back")
        press(codap, "undo")
        wait_until(lambda: text_boxes(codap) == [], "Undo to take the text box back")
        assert values_of(codap, "Trees", "height") == [3, 5]
        assert "Undo: took back the LLM's create_codap_text" in codap.shown("notice")

        # Redo brings them back, oldest first.
        press(codap, "redo")
        wait_until(lambda: text_boxes(codap) == ["Note"], "Redo to make the text box again")
        press(codap, "redo")
        wait_until(lambda: position(codap, pid) == moved, "Redo to make the person's drag again")
        press(codap, "redo")
        wait_until(lambda: values_of(codap, "Trees", "height") == [3, 9], "Redo to change the case again")

        # undo_codap right after the model's rename takes the rename back, and names the call.
        renamed = codap.tool("update_codap_attribute", {"datasetName": "Trees", "name": "height", "newName": "tall"})
        assert [
            a["name"]
            for a in codap.ok({"action": "get", "resource": "dataContext[Trees].collection[Trees].attributeList"})
        ] == ["tall"]
        undone = codap.done("undo_codap", {"steps": 1})
        structured = undone["structuredContent"]
        assert structured["undone"] == 1 and structured["canRedo"] is True
        (call,) = structured["toolCalls"]
        assert call["tool"] == "update_codap_attribute" and call["requestId"] == renamed["id"] and call["ok"] is True
        attrs = codap.ok({"action": "get", "resource": "dataContext[Trees].collection[Trees].attributeList"})
        assert [a["name"] for a in attrs] == ["height"] and values_of(codap, "Trees", "height") == [3, 9]
        assert "update_codap_attribute" in undone["content"][0]["text"]
        redone = codap.done("redo_codap", {})["structuredContent"]
        assert redone["redone"] == 1 and redone["toolCalls"][0]["tool"] == "update_codap_attribute"
        attrs = codap.ok({"action": "get", "resource": "dataContext[Trees].collection[Trees].attributeList"})
        assert [a["name"] for a in attrs] == ["tall"]


def test_codaps_undo_refuses_a_call_a_person_changed_since(browser: Any, codap_url: str, relay_url: str) -> None:
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        codap.done("create_codap_text", {"text": "mine", "title": "Boxed"})
        cid = next(c["id"] for c in codap.components() if c["title"] == "Boxed")
        # A change CODAP's history does not hold (another plugin's request): Undo would take it along, so it refuses.
        codap.ok({"action": "update", "resource": f"component[{cid}]", "values": {"title": "Retitled"}})
        undone = codap.done("undo_codap", {})["structuredContent"]
        (call,) = undone["toolCalls"]
        assert (
            call["ok"] is False
            and 'component "Retitled" changed' in call["text"]
            and "nothing was changed" in call["text"]
        )
        assert text_boxes(codap) == ["Retitled"]
        assert "did not take back the LLM's create_codap_text" in codap.shown("notice")


def globals_named(codap: Any) -> list[str]:
    return [str(g["name"]) for g in codap.ok({"action": "get", "resource": "globalList"})]


def drag_title(codap: Any, title: str, dx: float, dy: float) -> None:
    """A person drags a component by its title bar in CODAP's own page."""
    bar = codap.page.locator("[data-testid=component-title-bar]", has_text=title).first
    box = bar.bounding_box()
    assert box is not None
    codap.page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
    codap.page.mouse.down()
    codap.page.mouse.move(box["x"] + 20 + dx, box["y"] + box["height"] / 2 + dy, steps=8)
    codap.page.mouse.up()


def test_take_back_tool_calls_and_refuse_over_a_persons_change(browser: Any, codap_url: str, relay_url: str) -> None:
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        pid = int(codap.ok({"action": "get", "resource": "interactiveFrame"})["id"])
        first = codap.tool("create_codap_text", {"text": "kept", "title": "Kept"})
        second = codap.tool("create_codap_slider", {"name": "speed", "value": 1, "min": 0, "max": 9})
        codap.done("update_codap_component", {"component": "Kept", "position": {"left": 450, "top": 300}})
        assert first["status"] == second["status"] == "completed"
        assert len(codap.components()) == 3 and "speed" in globals_named(codap)

        back = codap.done("undo_codap_tool_calls", {"sinceRequestId": second["id"]})
        taken = back["structuredContent"]["undone"]
        assert [c["tool"] for c in taken] == ["create_codap_slider", "update_codap_component"]
        assert taken[0]["requestId"] == second["id"] and back["structuredContent"]["finished"] is True
        kept = [c for c in codap.components() if c["id"] != pid]
        assert [(c["type"], c["title"]) for c in kept] == [("text", "Kept")]
        assert "speed" not in globals_named(codap)  # the slider's global value went with it
        assert codap.status() == "Connected" and any(c["id"] == pid for c in codap.components())

        codap.done("undo_codap_tool_calls", {"lastCalls": 1})
        assert [c["id"] for c in codap.components()] == [pid]

        unknown = codap.failed("undo_codap_tool_calls", {"sinceRequestId": "no-such-call"})
        assert unknown["code"] == "call_not_found" and "no-such-call" in unknown["message"]
        too_many = codap.failed("undo_codap_tool_calls", {"lastCalls": 5})
        assert too_many["code"] == "call_not_found"

        # The person drags a tool's text box: taking the call back would undo the drag too, so it is refused.
        made = codap.tool("create_codap_text", {"text": "mine now", "title": "Dragged by person"})
        cid = made["result"]["structuredContent"]["componentId"]
        drag_title(codap, "Dragged by person", 150, 90)
        moved = codap.ok({"action": "get", "resource": f"component[{cid}]"})["position"]
        refused = codap.failed("undo_codap_tool_calls", {"sinceRequestId": made["id"]})
        assert refused["code"] == "changed_outside", refused
        assert (
            'component "Dragged by person" changed' in refused["message"]
            and "nothing was changed" in refused["message"]
        )
        assert codap.ok({"action": "get", "resource": f"component[{cid}]"})["position"] == moved

        # Another plugin-like channel (codap.ok) adds a dataset after a tool call: refused as well.
        codap.done("create_codap_text", {"text": "later", "title": "Later"})
        codap.ok(
            {
                "action": "create",
                "resource": "dataContext",
                "values": {"name": "ByHand", "collections": [{"name": "ByHand", "attrs": [{"name": "v"}]}]},
            }
        )
        refused = codap.failed("undo_codap_tool_calls", {"lastCalls": 1})
        assert refused["code"] == "changed_outside" and 'dataset "ByHand" added' in refused["message"]
        assert "ByHand" in codap.dataset_names() and any(c["title"] == "Later" for c in codap.components())


def test_a_persons_action_while_a_call_runs_is_never_taken_back_with_it(
    browser: Any, codap_url: str, relay_url: str
) -> None:
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/", init_script=SLOW_CODAP_REPLIES)
        slow_codap(codap.frame, 1500)  # the call's first reply from CODAP is held back: it is still running
        request_id = submit(codap.relay, codap.code(), "create_codap_text", {"text": "x", "title": "During"})
        time.sleep(0.5)
        # An action CODAP logs, as it logs each of a person's (a drag logs "Moved component ..."); CODAP's busy
        # overlay keeps the mouse off the page while the call runs, so the test logs it through CODAP's API.
        codap.ok({"action": "notify", "resource": "logMessage", "values": {"formatStr": "Edited a cell by hand"}})
        ok_result(answer(codap.relay, codap.code(), request_id))
        undone = codap.done("undo_codap", {})["structuredContent"]
        (call,) = undone["toolCalls"]
        assert call["ok"] is False and call["requestId"] == request_id
        assert "a person changed the document" in call["text"] and "Edited a cell by hand" in call["text"]
        assert text_boxes(codap) == ["During"]
        refused = codap.failed("undo_codap_tool_calls", {"lastCalls": 1})
        assert refused["code"] == "changed_outside" and "Edited a cell by hand" in refused["message"]
        assert text_boxes(codap) == ["During"]
