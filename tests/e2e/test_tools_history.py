"""CODAP's undo and redo in the real CODAP (a fresh document, so its undo history holds only this test's steps).

CODAP 3.1.0 records a person's changes in its undo history but not the changes plugins make through the Data
Interactive API: the tools press CODAP's own buttons, and a tool's change stays after an undo."""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import codap_pages

pytestmark = [pytest.mark.browser, pytest.mark.tools]


def position(codap: Any, cid: int) -> dict[str, Any]:
    found: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{cid}]"})["position"]
    return found


def test_undo_and_redo_a_persons_change_not_a_tools(browser: Any, codap_url: str, relay_url: str) -> None:
    with codap_pages(browser, codap_url) as pages:
        codap = pages(f"{relay_url}/plugin/")
        nothing = codap.done("undo_codap", {})
        assert nothing["structuredContent"]["undone"] == 0 and "nothing to undo" in nothing["content"][0]["text"]
        assert codap.done("redo_codap", {"steps": 3})["structuredContent"]["redone"] == 0

        # A tool's change is not in CODAP's undo history: undo leaves it.
        cid = codap.done("create_codap_text", {"text": "drag me", "title": "Dragged"})["structuredContent"][
            "componentId"
        ]
        codap.done("update_codap_component", {"component": cid, "position": {"left": 500, "top": 200}})
        assert codap.done("undo_codap", {})["structuredContent"]["undone"] == 0
        assert any(c["id"] == cid for c in codap.components()) and position(codap, cid) == {"left": 500, "top": 200}

        # The person drags the text box by its title bar: an undoable change.
        bar = codap.page.locator("[data-testid=component-title-bar]", has_text="Dragged").first
        box = bar.bounding_box()
        assert box is not None
        codap.page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
        codap.page.mouse.down()
        codap.page.mouse.move(box["x"] + 120, box["y"] + box["height"] / 2 + 80, steps=8)
        codap.page.mouse.up()
        moved = position(codap, cid)
        assert moved != {"left": 500, "top": 200}

        undone = codap.done("undo_codap", {"steps": 5})["structuredContent"]
        assert undone["undone"] == 1 and undone["requested"] == 5 and undone["canRedo"] is True
        assert position(codap, cid) == {"left": 500, "top": 200}
        redone = codap.done("redo_codap", {})["structuredContent"]
        assert redone["redone"] == 1 and redone["canRedo"] is False and redone["canUndo"] is True
        assert position(codap, cid) == moved


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
