"""CODAP's undo and redo in the real CODAP (a fresh document, so its undo history holds only this test's steps).

CODAP 3.1.0 records a person's changes in its undo history but not the changes plugins make through the Data
Interactive API: the tools press CODAP's own buttons, and a tool's change stays after an undo."""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay.testing.real_codap import codap_pages

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
