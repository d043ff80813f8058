"""Component tools in the real CODAP: tables, text boxes, sliders and maps made, any component but the plugin's own
window moved, resized, retitled, hidden, shown and closed. Every outcome is read back from CODAP with codap.ok."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay_tooling.testing.plugin_page import wait_until
from codap_relay_tooling.testing.real_codap import CodapPage, animation_frames

pytestmark = [pytest.mark.browser, pytest.mark.tools]


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    """Deletes the datasets a test made (its components first): a map shows every dataset with coordinates, so a
    test's map would otherwise hold the points of the tests before it."""
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    made = [n for n in codap.dataset_names() if n not in before]
    if made:
        codap.close_components(keep=components)
        codap.di([{"action": "delete", "resource": f"dataContext[{n}]"} for n in made])


def make_dataset(codap: CodapPage, name: str, rows: list[dict[str, Any]]) -> None:
    attrs = [{"name": k} for k in rows[0]]
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext",
            "values": {"name": name, "collections": [{"name": name, "attrs": attrs}]},
        }
    )
    codap.ok({"action": "create", "resource": f"dataContext[{name}].item", "values": rows})


def component(codap: CodapPage, cid: int) -> dict[str, Any]:
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{cid}]"})
    return values


def listed(codap: CodapPage, cid: int) -> dict[str, Any] | None:
    return next((c for c in codap.components() if c["id"] == cid), None)


def plugin_id(codap: CodapPage) -> int:
    return int(codap.ok({"action": "get", "resource": "interactiveFrame"})["id"])


def test_table_and_card(codap: CodapPage) -> None:
    make_dataset(codap, "CompTable", [{"x": 1}, {"x": 2}])
    made = codap.done("create_codap_table", {"datasetName": "CompTable", "title": "Table of x"})
    cid = made["structuredContent"]["componentId"]
    shown = component(codap, cid)
    assert shown["type"] == "caseTable" and shown["dataContext"] == "CompTable" and shown["title"] == "Table of x"
    assert "Document now:" in made["content"][0]["text"]

    make_dataset(codap, "CompCard", [{"y": 1}])
    card = codap.done("create_codap_table", {"datasetName": "CompCard", "asCard": True})["structuredContent"]
    assert component(codap, card["componentId"])["type"] == "caseCard"

    error = codap.failed("create_codap_table", {"datasetName": "NoSuchData"})
    assert error["code"] == "dataset_not_found" and "CompTable" in error["data"]["available"]


def test_a_card_asked_for_a_dataset_with_a_table_says_the_card_shows_and_the_table_is_hidden(codap: CodapPage) -> None:
    """CODAP shows a dataset's case card in place of its table, hiding the table: the answer says a card is shown,
    that the table is hidden and how to show it again."""
    codap.done("create_codap_dataset", {"datasetName": "CardOver", "dataType": "custom", "customData": [{"y": 1}]})
    (table,) = [c["id"] for c in codap.components() if c["type"] == "caseTable" and not c["hidden"]]
    made = codap.done("create_codap_table", {"datasetName": "CardOver", "asCard": True})
    card, text = made["structuredContent"]["componentId"], made["content"][0]["text"]
    now = {c["id"]: c for c in codap.components()}
    assert now[card]["type"] == "caseCard" and not now[card]["hidden"] and now[table]["hidden"]
    assert component(codap, card)["dataContext"] == "CardOver"
    assert made["structuredContent"]["type"] == "caseCard" and made["structuredContent"]["hiddenInstead"] == table
    assert "in a case card" in text and f"case table (id {table}) is hidden" in text and 'view "table"' in text


def test_text(codap: CodapPage) -> None:
    made = codap.done("create_codap_text", {"text": "Heights rise with age.\nSecond line", "title": "Note"})
    cid = made["structuredContent"]["componentId"]
    shown = component(codap, cid)
    assert shown["type"] == "text" and shown["title"] == "Note"
    words = str(shown["text"])
    assert "Heights rise with age." in words and "Second line" in words
    assert made["structuredContent"]["text"] == "Heights rise with age.\nSecond line"


LONG_NOTE = (
    "Students who sleep more tend to have higher quiz scores, but the pattern is weak. Three students with less than "
    "six hours of sleep scored above 90, so sleep is not the whole story. Next we will look at study time and screen "
    "time to see whether they explain the rest."
)


def text_fits(codap: CodapPage, title: str) -> dict[str, int]:
    """The text box's content area as CODAP's page draws it: its height and the height of what it holds, once
    CODAP has drawn it (a loaded page draws a new component a moment after the plugin's answer)."""
    found: dict[str, int] = wait_until(lambda: drawn_text(codap, title), f"CODAP to draw the text box {title!r}")
    return found


def drawn_text(codap: CodapPage, title: str) -> dict[str, int] | None:
    found: dict[str, int] | None = codap.page.evaluate(
        """(title) => {
          for (const c of document.querySelectorAll('.codap-component.codap-text')) {
            if (!(c.textContent || '').includes(title)) continue;
            const area = c.querySelector('.codap-text-content');
            if (!area) return null;
            return { shown: area.clientHeight, held: area.scrollHeight };
          }
          return null;
        }""",
        title,
    )
    return found if found and found["held"] > 0 else None


def test_a_long_text_gets_a_box_that_shows_all_of_it(codap: CodapPage) -> None:
    made = codap.done("create_codap_text", {"text": LONG_NOTE, "title": "Sleep findings"})
    cid = made["structuredContent"]["componentId"]
    fits = text_fits(codap, "Sleep findings")
    assert fits["held"] <= fits["shown"], fits  # CODAP's default 300 x 100 box held 96 px of text in 66 px
    size = component(codap, cid)["dimensions"]
    assert size["height"] > 100 and not made["structuredContent"]["textScrolls"]
    fitted = f"The box is {size['width']} \N{MULTIPLICATION SIGN} {size['height']} px, sized to show the whole text."
    assert fitted in made["content"][0]["text"]
    short = codap.done("create_codap_text", {"text": "A short note.", "title": "Short"})
    short_size = component(codap, short["structuredContent"]["componentId"])["dimensions"]
    assert short_size == {"width": 300, "height": 100}
    assert "sized to show" not in short["content"][0]["text"]
    very_long = codap.done("create_codap_text", {"text": " ".join([LONG_NOTE] * 12), "title": "Essay"})
    assert very_long["structuredContent"]["textScrolls"] and "scrolls inside it" in very_long["content"][0]["text"]


def test_slider_makes_a_global_that_formulas_use(codap: CodapPage) -> None:
    args = {"name": "slope", "value": 2, "min": 0, "max": 5, "step": 0.5, "title": "Slope", "animationMode": "nonStop"}
    made = codap.done("create_codap_slider", args)["structuredContent"]
    shown = component(codap, made["componentId"])
    assert shown["type"] == "slider" and shown["globalValueName"] == "slope"
    assert (shown["lowerBound"], shown["upperBound"], shown["multipleOf"]) == (0, 5, 0.5)
    assert shown["animationMode"] == 0  # nonStop
    assert codap.ok({"action": "get", "resource": "global[slope]"})["value"] == 2
    # a formula sees the global value by name
    make_dataset(codap, "CompSlide", [{"x": 1}, {"x": 3}])
    codap.ok(
        {
            "action": "create",
            "resource": "dataContext[CompSlide].collection[CompSlide].attribute",
            "values": [{"name": "y", "formula": "slope * x"}],
        }
    )
    assert sorted(i["values"]["y"] for i in codap.items("CompSlide")) == [2, 6]

    again = codap.failed("create_codap_slider", {"name": "slope", "value": 1, "min": 0, "max": 2})
    assert again["code"] == "global_exists" and "slope" in again["data"]["available"]
    bad = codap.failed("create_codap_slider", {"name": "k", "value": 1, "min": 3, "max": 2})
    assert bad["code"] == "invalid_arguments" and "min" in bad["message"]


def test_map_says_when_there_is_nothing_to_place(codap: CodapPage) -> None:
    make_dataset(codap, "CompPlaces", [{"city": "Oslo", "Latitude": 59.9, "lng": 10.7}])
    made = codap.done("create_codap_map", {"datasetName": "CompPlaces", "title": "Cities"})["structuredContent"]
    assert (made["latitude"], made["longitude"], made["notes"]) == ("Latitude", "lng", [])
    shown = component(codap, made["componentId"])
    assert shown["type"] == "map" and shown["title"] == "Cities"

    make_dataset(codap, "CompNoGeo", [{"a": 1}])
    bare = codap.done("create_codap_map", {"datasetName": "CompNoGeo"})
    assert component(codap, bare["structuredContent"]["componentId"])["type"] == "map"
    assert (
        "no latitude or longitude" in bare["content"][0]["text"] and "latitude (or lat)" in bare["content"][0]["text"]
    )


def test_update_moves_resizes_retitles_hides_and_shows(codap: CodapPage) -> None:
    cid = codap.done("create_codap_text", {"text": "move me", "title": "Mover"})["structuredContent"]["componentId"]
    done = codap.done(
        "update_codap_component",
        {
            "component": "Mover",
            "title": "Moved",
            "position": {"left": 420, "top": 260},
            "size": {"width": 300, "height": 180},
        },
    )["structuredContent"]
    shown = component(codap, cid)
    assert shown["title"] == "Moved"
    assert shown["position"] == {"left": 420, "top": 260} and shown["dimensions"] == {"width": 300, "height": 180}
    assert done["position"] == shown["position"] and done["size"] == shown["dimensions"]

    codap.done("update_codap_component", {"component": cid, "hidden": True})
    assert listed(codap, cid)["hidden"] is True  # type: ignore[index]
    codap.done("update_codap_component", {"component": "moved", "hidden": False})  # titles match without case
    assert listed(codap, cid)["hidden"] is False  # type: ignore[index]

    missing = codap.failed("update_codap_component", {"component": "Nowhere", "hidden": True})
    assert missing["code"] == "component_not_found" and any("Moved" in a for a in missing["data"]["available"])
    assert "Nowhere" in missing["message"] and "Moved" in missing["message"]
    nothing = codap.failed("update_codap_component", {"component": cid})
    assert nothing["code"] == "invalid_arguments"


def test_a_component_moved_or_resized_past_the_window_is_said_to_lie_beyond_it(codap: CodapPage) -> None:
    """The person sees the canvas up to the window's edge: a component moved or grown past it is out of sight
    until they scroll, and the answer says so, as the create tools' do."""
    cid = codap.done("create_codap_text", {"text": "far away", "title": "Far"})["structuredContent"]["componentId"]
    window = codap.page.evaluate("() => ({width: window.innerWidth, height: window.innerHeight})")
    moved = codap.done(
        "update_codap_component", {"component": cid, "position": {"left": window["width"] + 200, "top": 40}}
    )
    assert component(codap, cid)["position"]["left"] == window["width"] + 200

    def drawn_left() -> float:
        left: float = codap.page.evaluate(
            "(id) => [...document.getElementsByClassName('free-tile-component')]"
            ".find((t) => t.id.endsWith(String(id))).getBoundingClientRect().left",
            cid,
        )
        return left

    # CODAP slides a moved tile to its place (a 0.4 s CSS transition of left and top): a read during the slide saw
    # 1,361 px of the way to 1,600 on a loaded run. The tile must end past the window's edge.
    wait_until(
        lambda: drawn_left() > window["width"],
        "CODAP to draw the tile past the window",
        explain=lambda: f"left {drawn_left()}",
    )
    assert moved["structuredContent"]["beyondVisibleCanvas"] is True
    assert "beyond the canvas the person sees" in moved["content"][0]["text"]
    back = codap.done("update_codap_component", {"component": cid, "position": {"left": 10, "top": 10}})
    assert component(codap, cid)["position"] == {"left": 10, "top": 10}
    assert back["structuredContent"]["beyondVisibleCanvas"] is False and "beyond" not in back["content"][0]["text"]
    grown = codap.done(
        "update_codap_component", {"component": cid, "size": {"width": 300, "height": window["height"] + 100}}
    )
    assert component(codap, cid)["dimensions"]["height"] == window["height"] + 100
    assert grown["structuredContent"]["beyondVisibleCanvas"] is True


def test_delete_closes_a_component(codap: CodapPage) -> None:
    cid = codap.done("create_codap_text", {"text": "bye", "title": "Doomed"})["structuredContent"]["componentId"]
    gone = codap.done("delete_codap_component", {"component": "Doomed"})["structuredContent"]
    assert gone["outcome"] == "closed" and listed(codap, cid) is None
    again = codap.failed("delete_codap_component", {"component": "Doomed"})
    assert again["code"] == "component_not_found"


def test_the_plugin_itself_is_never_changed_or_closed(codap: CodapPage) -> None:
    pid = plugin_id(codap)
    before = component(codap, pid)
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("update_codap_component", {"component": pid, "hidden": True}),
        ("update_codap_component", {"component": "CODAP Relay", "position": {"left": 900, "top": 900}}),
        ("delete_codap_component", {"component": pid}),
        ("delete_codap_component", {"component": "plugin"}),
    ]
    for name, args in attempts:
        error = codap.failed(name, args)
        assert error["code"] == "plugin_protected" and "plugin" in error["message"], error
        assert all(str(pid) not in a for a in error["data"]["available"])
    after = component(codap, pid)
    assert (after["position"], after["dimensions"]) == (before["position"], before["dimensions"])
    assert listed(codap, pid)["hidden"] is False  # type: ignore[index]


def test_a_shared_page_closes_what_a_test_opened_and_keeps_the_rest(codap: CodapPage) -> None:
    """The tidy after each test on a module's shared page (CodapPage.close_components): everything opened since
    goes but what it is told to keep; the plugin and the datasets stay."""
    before = codap.component_ids()
    make_dataset(codap, "Tidy", [{"x": 1}, {"x": 2}])
    kept = int(codap.done("create_codap_table", {"datasetName": "Tidy"})["structuredContent"]["componentId"])
    codap.done("create_codap_graph", {"datasetName": "Tidy", "graphType": "dot_plot", "xAttribute": "x"})
    opened = codap.component_ids() - before
    assert kept in opened and len(opened) >= 2
    assert codap.close_components(keep=before | {kept}) == len(opened) - 1
    assert codap.component_ids() == before | {kept}  # read back from CODAP
    assert plugin_id(codap) in before and "Tidy" in codap.dataset_names()


def test_a_test_page_runs_codaps_animation_frames_ten_a_second(codap: CodapPage) -> None:
    """Test pages cap CODAP's animation frames (its idle frame loop cost CPU all run long; see real_codap.py): the
    frames still come, at most ten a second. The webgl picture test counts a page at the display's rate."""
    frames = animation_frames(codap.page, 2.0)
    assert 1 <= frames <= 21, frames


def box(codap: CodapPage, cid: int) -> tuple[int, int, int, int]:
    shown = component(codap, cid)
    return (
        shown["position"]["left"],
        shown["position"]["top"],
        shown["dimensions"]["width"],
        shown["dimensions"]["height"],
    )


def overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def test_status_gives_each_components_place_and_size_and_the_documents_name(codap: CodapPage) -> None:
    make_dataset(codap, "CompWhere", [{"x": 1}, {"x": 2}])
    table = codap.done("create_codap_table", {"datasetName": "CompWhere", "title": "Where table"})
    tid = table["structuredContent"]["componentId"]
    codap.done("update_codap_component", {"component": tid, "position": {"left": 400, "top": 20}})
    status = codap.done("get_codap_status", {"includeDatasets": False})
    facts = status["structuredContent"]
    assert facts["document"]["name"] == "Untitled Document"  # CODAP's name for a new document
    listed_ids = [c["id"] for c in codap.components()]
    assert [c["id"] for c in facts["components"]] == listed_ids
    for c in facts["components"]:
        left, top, width, height = box(codap, c["id"])
        assert c["position"] == {"left": left, "top": top} and c["size"] == {"width": width, "height": height}
    (mine,) = [c for c in facts["components"] if c["id"] == tid]
    assert (
        f"(id {tid}) at (400, 20), {mine['size']['width']} \u00d7 {mine['size']['height']} px"
        in status["content"][0]["text"]
    )


def test_place_beside_below_and_instead_without_covering_a_third(codap: CodapPage) -> None:
    make_dataset(codap, "CompPlace", [{"x": 1, "y": 2}, {"x": 2, "y": 3}])
    tid = codap.done("create_codap_table", {"datasetName": "CompPlace", "title": "Place table"})["structuredContent"][
        "componentId"
    ]
    codap.done("update_codap_component", {"component": tid, "position": {"left": 400, "top": 20}})
    table = box(codap, tid)
    # A note sits where "right of the table" would be; the graph goes beside the table without covering it.
    note = codap.done("create_codap_text", {"text": "in the way", "title": "Blocker"})["structuredContent"][
        "componentId"
    ]
    codap.done("update_codap_component", {"component": note, "position": {"left": table[0] + table[2] + 10, "top": 20}})
    graph = codap.done(
        "create_codap_graph",
        {"datasetName": "CompPlace", "graphType": "scatterplot", "xAttribute": "x", "yAttribute": "y"},
    )["structuredContent"]["graphId"]
    placed = codap.done(
        "update_codap_component", {"component": graph, "place": "right_of", "relativeTo": "Place table"}
    )
    facts = placed["structuredContent"]
    g = box(codap, graph)
    others = [box(codap, c) for c in codap.component_ids() - {graph} if not listed(codap, c)["hidden"]]  # type: ignore[index]
    assert not any(overlap(g, o) for o in others), (g, others)
    assert facts["placement"]["blockedBy"] == [note] and facts["covers"] == []
    assert facts["position"] == {"left": g[0], "top": g[1]}
    assert "Blocker" in placed["content"][0]["text"] and "nearest free place" in placed["content"][0]["text"]

    # Below the table the graph's new place is in the way too: the note goes to the nearest free place under it.
    below = codap.done("update_codap_component", {"component": note, "place": "below", "relativeTo": tid})
    n = box(codap, note)
    assert below["structuredContent"]["placement"]["wanted"] == {"left": table[0], "top": table[1] + table[3] + 10}
    assert below["structuredContent"]["placement"]["blockedBy"] == [graph] and n[0] == table[0]
    assert not any(overlap(n, box(codap, c)) for c in codap.component_ids() - {note})

    instead = codap.done("update_codap_component", {"component": note, "place": "instead_of", "relativeTo": graph})
    assert box(codap, note) == g and listed(codap, graph)["hidden"] is True  # type: ignore[index]
    assert instead["structuredContent"]["hiddenInstead"] == graph and "hidden false" in instead["content"][0]["text"]

    plugin = plugin_id(codap)
    beside = codap.done("update_codap_component", {"component": tid, "place": "right_of", "relativeTo": plugin})
    assert beside["structuredContent"]["covers"] == [] and not overlap(box(codap, tid), box(codap, plugin))
    refused = codap.failed("update_codap_component", {"component": tid, "place": "instead_of", "relativeTo": plugin})
    assert refused["code"] == "plugin_protected" and listed(codap, plugin)["hidden"] is False  # type: ignore[index]
    lonely = codap.failed("update_codap_component", {"component": tid, "place": "below"})
    assert lonely["code"] == "invalid_arguments" and "relativeTo" in lonely["message"]


def document_state(codap: CodapPage) -> dict[str, Any]:
    """CODAP's whole document as it sends it to a plugin subscribed to documents (read in the plugin's frame)."""
    state: dict[str, Any] = codap.frame.evaluate(
        """() => new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error("no document")), 10000);
            function on(e) {
              let d = e.data; if (typeof d === "string") { try { d = JSON.parse(d); } catch { return; } }
              const c = d && d.content;
              if (c && c.messageType === "call" && c.value && c.value.resource === "document") {
                removeEventListener("message", on); clearTimeout(timer); resolve(c.value.values.state);
              }
            }
            addEventListener("message", on);
            parent.postMessage({type: "data-interactive", content: {messageType: "call", uuid: "doc-" + Date.now(),
              value: {action: "get", resource: "document"}}}, "*");
        })"""
    )
    return state


def stored(codap: CodapPage, cid: int) -> dict[str, Any]:
    (found,) = [c for c in document_state(codap)["components"] if c["guid"] == cid]
    return dict(found)


def test_slider_value_range_step_and_animation_change_and_formulas_follow(codap: CodapPage) -> None:
    made = codap.done("create_codap_slider", {"name": "gain", "value": 2, "min": 0, "max": 5, "title": "Gain"})
    sid = made["structuredContent"]["componentId"]
    make_dataset(codap, "CompGain", [{"x": 1}, {"x": 3}])
    codap.ok({"action": "create", "resource": "dataContext[CompGain].collection[CompGain].attribute",
              "values": [{"name": "y", "formula": "gain * x"}]})  # fmt: skip
    changed = codap.done(
        "update_codap_slider",
        {"slider": "gain", "value": 0, "max": 10, "step": 0.5, "animationDirection": "backAndForth",
         "animationMode": "nonStop", "maxPerSecond": 5},
    )  # fmt: skip
    shown = component(codap, sid)
    assert (shown["value"], shown["upperBound"], shown["multipleOf"]) == (0, 10, 0.5)
    assert (shown["animationDirection"], shown["animationMode"], shown["animationRate"]) == (0, 0, 5)
    assert sorted(i["values"]["y"] for i in codap.items("CompGain")) == [0, 0]  # formulas see 0
    facts = changed["structuredContent"]
    assert facts["changes"]["value"] == {"before": 2, "after": 0} and facts["max"] == 10
    bad = codap.failed("update_codap_slider", {"slider": "Gain", "min": 20})
    assert bad["code"] == "invalid_arguments" and component(codap, sid)["lowerBound"] == 0
    missing = codap.failed("update_codap_slider", {"slider": "loss", "value": 1})
    assert missing["code"] == "component_not_found" and any("Gain" in a for a in missing["data"]["available"])


def test_map_centre_zoom_base_map_legend_and_layers(codap: CodapPage) -> None:
    make_dataset(codap, "CompGeo", [{"city": "Oslo", "lat": 59.9, "long": 10.7, "pop": 700},
                                    {"city": "Rome", "lat": 41.9, "long": 12.5, "pop": 2800}])  # fmt: skip
    mid = codap.done("create_codap_map", {"datasetName": "CompGeo", "title": "Cities"})["structuredContent"][
        "componentId"
    ]
    codap.done("update_codap_map", {"map": "Cities", "center": {"latitude": 50, "longitude": 11}, "zoom": 2})
    model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
    assert (model["center"], model["zoom"]) == ({"lat": 50, "lng": 11}, 2)
    styled = codap.done("update_codap_map", {"map": mid, "baseMap": "oceans", "legendAttribute": "pop", "grid": True})
    model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
    geo = codap.ok({"action": "get", "resource": "dataContext[CompGeo]"})["id"]
    # the map shows every dataset with coordinates on the shared page, a layer each
    (layer,) = [m for m in model["layerModels"] if m["_links_"]["context"]["id"] == geo]
    pop = codap.ok({"action": "get", "resource": "dataContext[CompGeo].attribute[pop]"})["id"]
    assert model["baseMapLayerName"] == "Oceans" and layer["_links_"]["legendAttr"]["id"] == pop
    assert layer["grid"]["isVisible"] is True
    assert (
        styled["structuredContent"]["legendAttribute"] == "pop"
        and "points coloured by pop" in styled["content"][0]["text"]
    )
    plain = codap.done("update_codap_map", {"map": mid, "legendAttribute": None, "grid": False, "points": False})
    layers = stored(codap, mid)["componentStorage"]["mapModelStorage"]["layerModels"]
    (layer,) = [m for m in layers if m["_links_"]["context"]["id"] == geo]
    assert "legendAttr" not in layer["_links_"] and layer["grid"]["isVisible"] is False
    assert layer["pointsShouldBeVisible"] is False and plain["structuredContent"]["points"] is False
    fitted = codap.done("update_codap_map", {"map": mid, "fit": True})
    model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
    assert fitted["structuredContent"]["zoom"] == model["zoom"] != 2


def settled_view(codap: CodapPage, mid: int) -> tuple[Any, Any]:
    """The map's centre and zoom as CODAP saves them once it stops moving the map (two reads 300 ms apart agree)."""
    seen: list[tuple[Any, Any]] = []
    for _ in range(20):
        model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
        seen.append((model.get("center"), model.get("zoom")))
        if len(seen) > 1 and seen[-1] == seen[-2] and isinstance(seen[-1][1], int | float) and seen[-1][1] >= 0:
            break
        time.sleep(0.3)
    return seen[-1]


def test_map_answers_give_where_codap_fitted_it(codap: CodapPage) -> None:
    """CODAP fits a new map to its points, and a fit, over a moment after answering: the answer gives the map as it
    then is, not the world view CODAP starts from, and a fit that moved it says so."""
    make_dataset(codap, "FitUS", [{"city": "Boston", "lat": 42.4, "long": -71.1, "band": "east"},
                                  {"city": "Denver", "lat": 39.7, "long": -105.0, "band": "west"},
                                  {"city": "Austin", "lat": 30.3, "long": -97.7, "band": "south"}])  # fmt: skip
    made = codap.done("create_codap_map", {"datasetName": "FitUS", "legendAttribute": "band"})
    mid, content = made["structuredContent"]["componentId"], made["structuredContent"]
    center, zoom = settled_view(codap, mid)
    assert 25 < center["lat"] < 50 and -125 < center["lng"] < -65 and zoom > 0  # CODAP shows the US
    assert (content["center"], content["zoom"]) == ({"latitude": center["lat"], "longitude": center["lng"]}, zoom)
    assert "centre 0.000, 0.000" not in made["content"][0]["text"]

    codap.done("update_codap_map", {"map": mid, "center": {"latitude": 0, "longitude": 0}, "zoom": 1})
    fitted = codap.done("update_codap_map", {"map": mid, "fit": True})
    center, zoom = settled_view(codap, mid)
    assert 25 < center["lat"] < 50 and zoom > 1
    assert {"center", "zoom"} <= set(fitted["structuredContent"]["changes"])
    assert fitted["structuredContent"]["zoom"] == zoom and "Nothing changed" not in fitted["content"][0]["text"]


def test_a_fit_after_the_person_moved_the_map_says_from_where_it_moved(codap: CodapPage) -> None:
    """A person panning or zooming a map tells the plugin nothing: a fit then must compare with the view CODAP
    shows, not with the one the tools last read, or it answers "Nothing changed" while the map jumps back."""
    make_dataset(codap, "FitBack", [{"city": "Boston", "lat": 42.4, "long": -71.1},
                                    {"city": "Denver", "lat": 39.7, "long": -105.0}])  # fmt: skip
    mid = codap.done("create_codap_map", {"datasetName": "FitBack"})["structuredContent"]["componentId"]
    codap.done("update_codap_map", {"map": mid, "fit": True})
    # as the person's own pan and zoom: sent to CODAP from the plugin's frame, not through the plugin
    codap.ok({"action": "update", "resource": f"component[{mid}]", "values": {"center": [10, 20], "zoom": 2}})
    assert settled_view(codap, mid) == ({"lat": 10, "lng": 20}, 2)
    fitted = codap.done("update_codap_map", {"map": mid, "fit": True})
    center, zoom = settled_view(codap, mid)
    assert 35 < center["lat"] < 45 and zoom > 3
    changes = fitted["structuredContent"]["changes"]
    assert changes["center"]["before"] == {"latitude": 10, "longitude": 20} and changes["zoom"]["before"] == 2
    assert changes["zoom"]["after"] == zoom and "Nothing changed" not in fitted["content"][0]["text"]
    # and the status gives the view the person left it at
    codap.ok({"action": "update", "resource": f"component[{mid}]", "values": {"center": [-20, 30], "zoom": 3}})
    assert settled_view(codap, mid) == ({"lat": -20, "lng": 30}, 3)
    status = codap.done("get_codap_status", {"includeDatasets": False})["structuredContent"]
    (listed_map,) = [c for c in status["components"] if c["id"] == mid]
    assert (listed_map["map"]["center"], listed_map["map"]["zoom"]) == ({"latitude": -20, "longitude": 30}, 3)


def test_a_card_left_by_a_deleted_dataset_does_not_stop_a_maps_settings(codap: CodapPage) -> None:
    """CODAP keeps a closed case card of a deleted dataset, linked to nothing, and cannot read a document holding
    one: the map's settings, which only a rebuilt document reaches, were not taken until the tool dropped it."""
    make_dataset(codap, "CompGone", [{"y": 1}])
    card = codap.done("create_codap_table", {"datasetName": "CompGone", "asCard": True})["structuredContent"]
    codap.done("delete_codap_component", {"component": card["componentId"]})
    codap.ok({"action": "delete", "resource": "dataContext[CompGone]"})
    orphans = [c for c in document_state(codap)["components"] if c["type"] == "DG.CaseCard"]
    assert orphans and "_links_" not in orphans[0]["componentStorage"]  # what CODAP keeps
    make_dataset(codap, "CompLone", [{"city": "Oslo", "lat": 59.9, "long": 10.7}])
    mid = codap.done("create_codap_map", {"datasetName": "CompLone"})["structuredContent"]["componentId"]
    answer = codap.done("update_codap_map", {"map": mid, "baseMap": "streets"})
    assert stored(codap, mid)["componentStorage"]["mapModelStorage"]["baseMapLayerName"] == "Streets"
    assert "notTaken" not in answer["structuredContent"]
    # CODAP reads the document back with decimals set for the coordinates: said in words, not as a path in it
    also = answer["structuredContent"].get("alsoChanged", [])
    assert all("collections." not in a and "attrs" not in a for a in also), also
    assert also == []  # the coordinates keep the decimals CODAP inferred
    assert not [c for c in document_state(codap)["components"] if c["type"] == "DG.CaseCard"]


def test_text_calculator_front_and_minimize(codap: CodapPage) -> None:
    note = codap.done("create_codap_text", {"text": "draft", "title": "Notes"})["structuredContent"]["componentId"]
    changed = codap.done("update_codap_component", {"component": "Notes", "text": "Heights rise.\nBy age."})
    words = str(component(codap, note)["text"])
    assert (
        "Heights rise." in words
        and "By age." in words
        and changed["structuredContent"]["text"] == "Heights rise.\nBy age."
    )
    calc = codap.done("create_codap_calculator", {"title": "Calc"})["structuredContent"]["componentId"]
    assert component(codap, calc)["type"] == "calculator"
    codap.done("update_codap_component", {"component": note, "bringToFront": True})
    layers = {c["guid"]: c["layout"]["zIndex"] for c in document_state(codap)["components"]}
    assert layers[note] == max(layers.values())
    small = codap.done("update_codap_component", {"component": note, "minimized": True})
    saved = stored(codap, note)
    assert saved["savedHeight"] and saved["layout"]["height"] < saved["savedHeight"]
    assert small["structuredContent"]["minimized"] is True
    status = codap.done("get_codap_status", {"includeDatasets": False})["structuredContent"]
    assert [c.get("minimized") for c in status["components"] if c["id"] == note] == [True]
    codap.done("update_codap_component", {"component": note, "minimized": False})
    assert not stored(codap, note).get("savedHeight")
    not_text = codap.failed("update_codap_component", {"component": calc, "text": "2+2"})
    assert not_text["code"] == "invalid_arguments"


def map_layer(codap: CodapPage, mid: int, dataset: str) -> dict[str, Any]:
    """The map's layer for ``dataset`` as CODAP saves it (the map shows every dataset with coordinates)."""
    did = codap.ok({"action": "get", "resource": f"dataContext[{dataset}]"})["id"]
    layers = stored(codap, mid)["componentStorage"]["mapModelStorage"]["layerModels"]
    (layer,) = [m for m in layers if m["_links_"]["context"]["id"] == did]
    return dict(layer)


def case_ids(codap: CodapPage, dataset: str, where: str) -> set[int]:
    search = f"dataContext[{dataset}].collection[{dataset}].caseFormulaSearch[{where}]"
    found = codap.ok({"action": "get", "resource": search})
    return {int(c["id"]) for c in found}


def test_map_view_menu_hides_shows_and_filters_cases(codap: CodapPage) -> None:
    cities = [("Oslo", 59.9, 10.7, 0.7), ("Rome", 41.9, 12.5, 2.8), ("Lima", -12.0, -77.0, 9.7),
              ("Pune", 18.5, 73.9, 3.1), ("Kyiv", 50.4, 30.5, 2.9), ("Graz", 47.1, 15.4, 0.3)]  # fmt: skip
    make_dataset(codap, "ViewGeo", [{"city": c, "lat": la, "long": lo, "pop": p} for c, la, lo, p in cities])
    mid = codap.done("create_codap_map", {"datasetName": "ViewGeo", "title": "View map"})["structuredContent"][
        "componentId"
    ]
    codap.done("select_codap_cases", {"datasetName": "ViewGeo", "where": "pop > 2.85"})
    hid = codap.done("update_codap_map", {"map": "View map", "hideCases": "selected"})["structuredContent"]
    big = case_ids(codap, "ViewGeo", "pop > 2.85")
    hidden = {h["id"] for h in map_layer(codap, mid, "ViewGeo")["_links_"]["hiddenCases"]}
    assert hidden == big and len(big) == 3 and hid["hiddenCases"] == 3
    assert hid["showing"] == [{"dataset": "ViewGeo", "shown": 3, "cases": 6}]
    # the cases stay everywhere else: in the dataset, and selected
    assert len(codap.items("ViewGeo")) == 6

    filtered = codap.done("update_codap_map", {"map": mid, "filterFormula": "pop < 2"})
    layer = map_layer(codap, mid, "ViewGeo")
    assert layer["v3"]["filterFormula"] == "pop < 2" and len(layer["_links_"]["hiddenCases"]) == 3
    facts = filtered["structuredContent"]
    assert facts["filterFormula"] == "pop < 2" and facts["showing"][0]["shown"] == 2  # Oslo and Graz
    assert "2 of the 6 cases" in filtered["content"][0]["text"]

    codap.done("select_codap_cases", {"datasetName": "ViewGeo", "where": 'city = "Oslo"'})
    codap.done("update_codap_map", {"map": mid, "hideCases": "unselected"})
    hidden = {h["id"] for h in map_layer(codap, mid, "ViewGeo")["_links_"]["hiddenCases"]}
    assert hidden == case_ids(codap, "ViewGeo", 'city != "Oslo"')

    shown = codap.done("update_codap_map", {"map": mid, "showAllCases": True})["structuredContent"]
    layer = map_layer(codap, mid, "ViewGeo")
    assert layer["_links_"]["hiddenCases"] == [] and layer["v3"]["filterFormula"] == "pop < 2"  # the filter stays
    assert shown["hiddenCases"] == 0 and shown["changes"]["hiddenCases"] == {"before": 5, "after": 0}
    codap.done("update_codap_map", {"map": mid, "filterFormula": ""})
    assert "filterFormula" not in map_layer(codap, mid, "ViewGeo").get("v3", {})

    bad = codap.failed("update_codap_map", {"map": mid, "filterFormula": "pop >"})
    assert bad["code"] == "formula_error" and "pop >" in bad["message"]
    codap.ok({"action": "create", "resource": "dataContext[ViewGeo].selectionList", "values": []})
    none = codap.failed("update_codap_map", {"map": mid, "hideCases": "selected"})
    assert none["code"] == "nothing_to_hide" and "select_codap_cases" in none["message"]
    both = codap.failed("update_codap_map", {"map": mid, "hideCases": "selected", "showAllCases": True})
    assert both["code"] == "invalid_arguments"
    assert map_layer(codap, mid, "ViewGeo")["_links_"]["hiddenCases"] == []  # the refusals changed nothing


def page_seconds(codap: CodapPage, y: int, m: int, d: int) -> float:
    """Seconds since 1970 of a day's midnight in the browser's time zone, as CODAP's date inputs read dates."""
    seconds: float = codap.page.evaluate(f"new Date({y}, {m - 1}, {d}).getTime() / 1000")
    return seconds


def test_slider_date_scale_with_dates_and_back_to_numbers(codap: CodapPage) -> None:
    made = codap.done(
        "create_codap_slider",
        {"name": "day", "scaleType": "date", "value": "2024-03-01", "min": "2024-01-01", "max": "2024-12-31",
         "step": 1, "dateUnit": "month", "title": "Day"},
    )["structuredContent"]  # fmt: skip
    sid = made["componentId"]
    shown = component(codap, sid)
    assert (shown["scaleType"], shown["dateMultipleOfUnit"], shown["multipleOf"]) == ("date", "month", 1)
    bounds = (page_seconds(codap, 2024, 1, 1), page_seconds(codap, 2024, 12, 31))
    assert (shown["lowerBound"], shown["upperBound"]) == bounds
    assert codap.ok({"action": "get", "resource": "global[day]"})["value"] == page_seconds(codap, 2024, 3, 1)
    assert made["dates"] == {"value": "2024-03-01", "min": "2024-01-01", "max": "2024-12-31"}
    make_dataset(codap, "CompDay", [{"x": 1}])
    codap.ok({"action": "create", "resource": "dataContext[CompDay].collection[CompDay].attribute",
              "values": [{"name": "month", "formula": "month(day)"}]})  # fmt: skip
    assert [i["values"]["month"] for i in codap.items("CompDay")] == [3]  # formulas read the value as a date

    moved = codap.done("update_codap_slider", {"slider": "day", "max": "2025-06-30", "value": "2025-01-15"})
    shown = component(codap, sid)
    assert (shown["upperBound"], shown["value"]) == (page_seconds(codap, 2025, 6, 30), page_seconds(codap, 2025, 1, 15))
    assert moved["structuredContent"]["changes"]["max"]["after"] == shown["upperBound"]
    assert "max 2024-12-31 → 2025-06-30" in moved["content"][0]["text"]
    assert [i["values"]["month"] for i in codap.items("CompDay")] == [1]

    short = codap.failed("update_codap_slider", {"slider": "day", "min": "2025-06-29T12:00"})
    assert short["code"] == "invalid_arguments" and "at least a day" in short["message"]
    unit = codap.failed("update_codap_slider", {"slider": "day", "scaleType": "numeric", "dateUnit": "day"})
    assert unit["code"] == "invalid_arguments" and component(codap, sid)["scaleType"] == "date"
    notdate = codap.failed("update_codap_slider", {"slider": "day", "value": "next Tuesday"})
    assert notdate["code"] == "invalid_arguments" and "2024-03-01" in notdate["message"]

    # a change of scale without a range takes the one CODAP's Scale panel gives
    numeric = codap.done("update_codap_slider", {"slider": "day", "scaleType": "numeric"})["structuredContent"]
    shown = component(codap, sid)
    now = (shown["scaleType"], shown["lowerBound"], shown["upperBound"], shown["value"])
    assert now == ("numeric", -0.5, 11.5, 0.5)
    assert numeric["changes"]["scaleType"] == {"before": "date", "after": "numeric"} and "dates" not in numeric
    # CODAP froze when a shown slider turned numeric: the tool turns it while hidden and shows it again
    assert [c.get("hidden", False) for c in codap.components() if c["id"] == sid] == [False]
    dated = codap.done("update_codap_slider", {"slider": "day", "scaleType": "date"})["structuredContent"]
    year = int(codap.page.evaluate("new Date().getFullYear()"))
    shown = component(codap, sid)
    assert shown["scaleType"] == "date" and shown["lowerBound"] == page_seconds(codap, year, 1, 1)
    assert dated["dates"]["min"] == f"{year}-01-01" and shown["lowerBound"] <= shown["value"] <= shown["upperBound"]


def test_text_markdown_is_formatted_as_the_toolbar_formats_and_read_back(codap: CodapPage) -> None:
    note = "\n".join([
        "# Heights by age",
        "> What we found",
        "The **mean** rose *each* year, ~~not~~ `mean(h)`, <u>every</u> class, x<sup>2</sup> and H<sub>2</sub>O.",
        '- <span style="color: red">taller</span>',
        "- [CODAP](https://codap.concord.org/)",
        "1. first",
        "![a picture](https://example.org/p.png)",
    ])  # fmt: skip
    made = codap.done("create_codap_text", {"text": note, "markdown": True, "title": "Findings"})
    facts = made["structuredContent"]
    blocks = component(codap, facts["componentId"])["text"]["document"]["children"]
    assert [b["type"] for b in blocks] == ["heading1", "block-quote", "paragraph", "bulleted-list", "ordered-list"]
    marks = {k for leaf in blocks[2]["children"] for k, v in leaf.items() if k != "text" and v}
    assert marks == {"bold", "italic", "deleted", "code", "underlined", "superscript", "subscript"}
    red, link = (item["children"][0] for item in blocks[3]["children"])
    assert red == {"text": "taller", "color": "#ff0000"}
    assert link == {"type": "link", "href": "https://codap.concord.org/", "children": [{"text": "CODAP"}]}
    assert facts["text"].startswith("Heights by age\nWhat we found\nThe mean rose each year")
    assert facts["markdown"].splitlines()[:2] == ["# Heights by age", "> What we found"]
    assert "**mean**" in facts["markdown"] and '<span style="color: #ff0000">taller</span>' in facts["markdown"]
    assert any("images" in n for n in facts["notTaken"]) and "images" in made["content"][0]["text"]

    changed = codap.done(
        "update_codap_component", {"component": "Findings", "text": "## Done\n- *all* of it", "markdown": True}
    )
    blocks = component(codap, facts["componentId"])["text"]["document"]["children"]
    assert [b["type"] for b in blocks] == ["heading2", "bulleted-list"]
    assert blocks[1]["children"][0]["children"][0] == {"text": "all", "italic": True}
    assert changed["structuredContent"]["markdown"] == "## Done\n- *all* of it"
    plain = codap.done("update_codap_component", {"component": "Findings", "text": "**not bold**"})["structuredContent"]
    assert component(codap, facts["componentId"])["text"]["document"]["children"] == [
        {"type": "paragraph", "children": [{"text": "**not bold**"}]}
    ]
    assert "markdown" not in plain and plain["text"] == "**not bold**"


def test_status_gives_every_setting_the_tools_change_on_sliders_maps_text_and_tables(codap: CodapPage) -> None:
    """Each setting update_codap_slider, update_codap_map, update_codap_component (text) and update_codap_table
    change, set away from its default, is in get_codap_status as CODAP holds it (read here with plain requests)."""
    codap.done("create_codap_slider", {"name": "rate", "value": 3, "min": 1, "max": 9, "title": "Rate"})
    codap.done("update_codap_slider", {"slider": "rate", "step": 2, "animationDirection": "backAndForth",
                                       "animationMode": "nonStop", "maxPerSecond": 4})  # fmt: skip
    codap.done("create_codap_slider", {"name": "when", "scaleType": "date", "value": "2023-05-01", "min": "2023-01-01",
                                       "max": "2023-12-31", "step": 2, "dateUnit": "month"})  # fmt: skip
    make_dataset(codap, "StatGeo", [{"city": "Oslo", "lat": 59.9, "long": 10.7, "pop": 0.7, "kind": "a"},
                                    {"city": "Rome", "lat": 41.9, "long": 12.5, "pop": 2.8, "kind": "b"}])  # fmt: skip
    mid = codap.done("create_codap_map", {"datasetName": "StatGeo", "title": "Stat map"})["structuredContent"][
        "componentId"
    ]
    codap.done("select_codap_cases", {"datasetName": "StatGeo", "where": 'city = "Rome"'})
    codap.done("update_codap_map", {"map": mid, "center": {"latitude": 50, "longitude": 12}, "zoom": 4,
                                    "baseMap": "streets", "legendAttribute": "pop", "lines": True, "grid": True,
                                    "points": False, "hideCases": "selected", "filterFormula": "pop < 5"})  # fmt: skip
    text = codap.done("create_codap_text", {"text": "# Note\nA **bold** claim", "markdown": True, "title": "Stat note"})
    codap.done("create_codap_table", {"datasetName": "StatGeo", "title": "Stat table"})
    codap.done("update_codap_table", {"datasetName": "StatGeo", "indexColumn": False, "hideAttributes": ["kind"]})

    status = codap.done("get_codap_status", {})
    listed_now = {c["id"]: c for c in status["structuredContent"]["components"]}
    words = status["content"][0]["text"]
    for c in codap.components():
        got = listed_now[c["id"]]
        own = component(codap, c["id"])
        if c["type"] == "slider":
            date = own.get("scaleType") == "date"
            want = {"globalValue": own["globalValueName"], "value": own["value"], "min": own["lowerBound"],
                    "max": own["upperBound"], "step": own["multipleOf"], "scaleType": own["scaleType"],
                    "animationDirection": ["backAndForth", "lowToHigh", "highToLow"][own["animationDirection"]],
                    "animationMode": ["nonStop", "onceOnly"][own["animationMode"]],
                    "maxPerSecond": own["animationRate"]}  # fmt: skip
            got_slider = {k: v for k, v in got["slider"].items() if k not in ("dateUnit", "dates")}
            assert got_slider == want, (got_slider, want)
            if date:
                assert got["slider"]["dateUnit"] == own["dateMultipleOfUnit"] == "month"
                assert got["slider"]["dates"]["min"] == "2023-01-01" and "when = 2023-05-01" in words
        elif c["type"] == "map" and c["id"] == mid:
            layer = map_layer(codap, mid, "StatGeo")
            model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
            pop = codap.ok({"action": "get", "resource": "dataContext[StatGeo].attribute[pop]"})
            want = {"center": {"latitude": model["center"]["lat"], "longitude": model["center"]["lng"]},
                    "zoom": model["zoom"], "baseMap": model["baseMapLayerName"].lower(),
                    "legendAttribute": pop["name"], "legendAttributeId": layer["_links_"]["legendAttr"]["id"],
                    "points": layer["pointsShouldBeVisible"], "lines": layer["connectingLines"]["isVisible"],
                    "grid": layer["grid"]["isVisible"], "hiddenCases": len(layer["_links_"]["hiddenCases"]),
                    "filterFormula": layer["v3"]["filterFormula"]}  # fmt: skip
            assert got["map"] == want and want["hiddenCases"] == 1 and want["legendAttributeId"] == pop["id"]
            assert "streets base map" in words and "1 case hidden in it" in words
            assert "only cases where pop < 5" in words
        elif c["type"] == "text" and c.get("title") == "Stat note":
            assert got["text"] == "Note\nA bold claim" and got["markdown"] == "# Note\nA **bold** claim"
            assert own["text"]["document"]["children"][0]["type"] == "heading1"
            assert got["markdown"] == text["structuredContent"]["markdown"]
        elif c["type"] == "caseTable" and own.get("dataContext") == "StatGeo":
            assert got["table"] == {"indexColumn": own.get("isIndexHidden") is not True, "collapsedParents": 0}
            assert got["table"]["indexColumn"] is False and "index column hidden" in words
    (geo,) = [d for d in status["structuredContent"]["datasets"] if d["name"] == "StatGeo"]
    hidden = codap.ok({"action": "get", "resource": "dataContext[StatGeo].attribute[kind]"})["hidden"]
    assert [a.get("hidden", False) for a in geo["collections"][0]["attributes"] if a["name"] == "kind"] == [hidden]
    assert hidden is True and "hidden in its table and card: kind" in words


def drawn(codap: CodapPage, cid: int) -> dict[str, int]:
    """A component's box as CODAP's page draws it (its tile element), read in CODAP's page itself."""
    box: dict[str, int] = codap.page.evaluate(
        """(id) => { const e = [...document.getElementsByClassName('free-tile-component')]
                       .find((t) => t.id.endsWith(String(id)));
                     return {left: e.offsetLeft, top: e.offsetTop, width: e.offsetWidth, height: e.offsetHeight}; }""",
        cid,
    )
    return box


def test_a_new_component_goes_to_a_free_spot_and_says_where_and_how_big_codap_draws_it(codap: CodapPage) -> None:
    canvas = codap.page.evaluate("() => document.getElementsByClassName('free-tile-row')[0].clientHeight")
    # a text box over the whole canvas the person sees: CODAP then puts a new component on top of it
    whole = {"position": {"left": 0, "top": 0}, "dimensions": {"width": 1400, "height": canvas}}
    wall = codap.ok({"action": "create", "resource": "component", "values": {"type": "text", "text": "wall", **whole}})[
        "id"
    ]
    codap.ok({"action": "create", "resource": "global", "values": {"name": "probe", "value": 1}})
    probe = codap.ok(
        {"action": "create", "resource": "component", "values": {"type": "slider", "globalValueName": "probe"}}
    )
    assert overlaps_box(drawn(codap, probe["id"]), drawn(codap, wall))  # what CODAP does by itself
    codap.ok({"action": "delete", "resource": f"component[{probe['id']}]"})

    made = codap.done("create_codap_slider", {"name": "spot", "value": 1, "min": 0, "max": 2})
    place = made["structuredContent"]["placement"]
    sid = made["structuredContent"]["componentId"]
    shown = drawn(codap, sid)
    assert place["size"] == {"width": shown["width"], "height": shown["height"]} == {"width": 300, "height": 98}
    assert place["position"] == {"left": shown["left"], "top": shown["top"]}
    assert "movedFrom" in place and place["overlaps"] == [] and not overlaps_box(shown, drawn(codap, wall))
    for other in codap.components():
        if other["id"] not in (sid, wall) and not other.get("hidden"):
            assert not overlaps_box(shown, drawn(codap, other["id"])), other
    assert place["beyondVisibleCanvas"] is True and "beyond the canvas the person sees" in made["content"][0]["text"]
    assert f"{shown['width']} \u00d7 {shown['height']} px" in made["content"][0]["text"]
    status = codap.done("get_codap_status", {"includeDatasets": False})["structuredContent"]
    (listed_slider,) = [c for c in status["components"] if c["id"] == sid]
    assert listed_slider["size"] == {"width": 300, "height": 98}  # what CODAP draws, not the 73 px it gives

    codap.ok({"action": "delete", "resource": f"component[{wall}]"})
    note = codap.done("create_codap_text", {"text": "room now"})["structuredContent"]
    assert "movedFrom" not in note["placement"] and note["placement"]["overlaps"] == []
    assert note["placement"]["beyondVisibleCanvas"] is False


def overlaps_box(a: dict[str, int], b: dict[str, int]) -> bool:
    return (
        a["left"] < b["left"] + b["width"]
        and b["left"] < a["left"] + a["width"]
        and a["top"] < b["top"] + b["height"]
        and b["top"] < a["top"] + a["height"]
    )


def test_a_map_is_made_with_its_legend_and_base_map(codap: CodapPage) -> None:
    make_dataset(codap, "MadeGeo", [{"city": "Oslo", "lat": 59.9, "long": 10.7, "pop": 0.7},
                                    {"city": "Rome", "lat": 41.9, "long": 12.5, "pop": 2.8}])  # fmt: skip
    made = codap.done("create_codap_map", {"datasetName": "MadeGeo", "legendAttribute": "pop", "baseMap": "streets"})
    facts = made["structuredContent"]
    layer = map_layer(codap, facts["componentId"], "MadeGeo")
    model = stored(codap, facts["componentId"])["componentStorage"]["mapModelStorage"]
    pop = codap.ok({"action": "get", "resource": "dataContext[MadeGeo].attribute[pop]"})["id"]
    assert layer["_links_"]["legendAttr"]["id"] == pop and model["baseMapLayerName"] == "Streets"
    assert (facts["legendAttribute"], facts["baseMap"]) == ("pop", "streets")
    assert "points coloured by pop" in made["content"][0]["text"]
    missing = codap.failed("create_codap_map", {"datasetName": "MadeGeo", "legendAttribute": "height"})
    assert missing["code"] == "attribute_not_found" and "pop" in missing["message"]


def test_a_new_component_goes_beside_the_one_named(codap: CodapPage) -> None:
    anchor = codap.done("create_codap_text", {"text": "anchor", "title": "Anchor"})["structuredContent"]["componentId"]
    codap.done("update_codap_component", {"component": anchor, "position": {"left": 600, "top": 300}})
    made = codap.done("create_codap_slider", {"name": "beside", "value": 1, "min": 0, "max": 2, "place": "below",
                                              "relativeTo": "Anchor"})  # fmt: skip
    sid = made["structuredContent"]["componentId"]
    left, top = component(codap, sid)["position"].values()
    assert (left, top) == (600, 300 + 100 + 10)  # below the 100 px text box, 10 px apart, left edges lined up
    assert made["structuredContent"]["placement"]["position"] == {"left": 600, "top": 410}
    before = codap.component_ids()
    alone = codap.failed("create_codap_text", {"text": "x", "place": "below"})
    assert alone["code"] == "invalid_arguments" and codap.component_ids() == before  # nothing made
    lost = codap.done("create_codap_text", {"text": "lost", "place": "right_of", "relativeTo": "Nowhere"})
    assert 'could not go right of "Nowhere"' in lost["content"][0]["text"] and "Anchor" in lost["content"][0]["text"]


def test_a_new_component_says_when_the_place_asked_was_taken_or_off_the_canvas_and_why(codap: CodapPage) -> None:
    before = codap.component_ids()
    anchor = codap.done("create_codap_text", {"text": "a", "title": "Anchor2"})["structuredContent"]["componentId"]
    codap.done("update_codap_component", {"component": anchor, "position": {"left": 600, "top": 300}})
    blocker = codap.done("create_codap_text", {"text": "b", "title": "Blocker2"})["structuredContent"]["componentId"]
    codap.done("update_codap_component", {"component": blocker, "position": {"left": 910, "top": 300}})
    made = codap.done("create_codap_text", {"text": "c", "place": "right_of", "relativeTo": "Anchor2"})
    facts = made["structuredContent"]
    new = facts["componentId"]
    at = box(codap, new)
    assert at[:2] != (910, 300) and facts["placement"]["position"] == {"left": at[0], "top": at[1]}
    shown = [c["id"] for c in codap.components() if c["id"] != new and not c.get("hidden")]
    assert not any(overlap(at, box(codap, c)) for c in shown)
    asked = facts["placement"]["asked"]
    assert asked["taken"] is False and asked["blockedBy"] == [blocker] and asked["wanted"] == {"left": 910, "top": 300}
    assert (
        f'The place right of "Anchor2", left 910, top 300, would cover "Blocker2" (text box, id {blocker}); '
        "this is the nearest free place." in made["content"][0]["text"]
    )
    # left of a component at the canvas's left edge is off the canvas
    codap.done("update_codap_component", {"component": anchor, "position": {"left": 0, "top": 300}})
    edge = codap.done("create_codap_slider", {"name": "edge", "value": 1, "min": 0, "max": 2, "place": "left_of",
                                              "relativeTo": anchor})  # fmt: skip
    sid = edge["structuredContent"]["componentId"]
    assert box(codap, sid)[0] >= 0 and edge["structuredContent"]["placement"]["asked"]["offCanvas"] is True
    assert f"The place left of {anchor}, left -310, top 300, is off the canvas" in edge["content"][0]["text"]
    codap.close_components(keep=before)
