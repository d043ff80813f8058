"""Component tools in the real CODAP: tables, text boxes, sliders and maps made, any component but the plugin's own
window moved, resized, retitled, hidden, shown and closed. Every outcome is read back from CODAP with codap.ok."""

from __future__ import annotations

from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage, animation_frames

pytestmark = [pytest.mark.browser, pytest.mark.tools]


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


def test_text(codap: CodapPage) -> None:
    made = codap.done("create_codap_text", {"text": "Heights rise with age.\nSecond line", "title": "Note"})
    cid = made["structuredContent"]["componentId"]
    shown = component(codap, cid)
    assert shown["type"] == "text" and shown["title"] == "Note"
    words = str(shown["text"])
    assert "Heights rise with age." in words and "Second line" in words
    assert made["structuredContent"]["text"] == "Heights rise with age.\nSecond line"


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
    codap.done("update_codap_map", {"map": "Cities", "center": {"latitude": 50, "longitude": 11}, "zoom": 4})
    model = stored(codap, mid)["componentStorage"]["mapModelStorage"]
    assert (model["center"], model["zoom"]) == ({"lat": 50, "lng": 11}, 4)
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
    assert fitted["structuredContent"]["zoom"] == model["zoom"] != 4


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
