"""The raw tool's policy in the real CODAP app (v3.1.0 build): what would reach outside the document is refused,
and a text's rich text is rebuilt so that it reaches nothing outside the document either.

For each refused request, codap_api fails with refused_by_policy naming the rule, CODAP's components and datasets
are unchanged, and the browser sent nothing to the "evil" URL (a loopback server counts its hits, and the page's
requests are recorded). The plugin stays visible at its size after the attempts to hide, shrink, move or close
it; allowed raw requests still work.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codap_relay_tooling.testing.plugin_page import wait_until
from codap_relay_tooling.testing.real_codap import CodapPage, codap_pages, settle

pytestmark = [pytest.mark.browser, pytest.mark.tools]


class Evil:
    """A loopback server that counts every request it gets."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = b"a,b\n1,2\n" if self.path.endswith(".csv") else b"<html><body>evil</body></html>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def evil() -> Iterator[Evil]:
    server = Evil()
    yield server
    server.close()


@pytest.fixture(scope="module")
def codap(browser: Any, codap_url: str, relay_url: str) -> Iterator[CodapPage]:
    with codap_pages(browser, codap_url) as factory:
        page = factory(f"{relay_url}/plugin/")
        page.wait_paired()
        yield page


def state(codap: CodapPage) -> tuple[list[tuple[Any, Any, Any]], list[str]]:
    comps = [(c.get("id"), c.get("type"), c.get("hidden")) for c in codap.components()]
    return comps, codap.dataset_names()


def plugin_component(codap: CodapPage) -> dict[str, Any]:
    frame = codap.ok({"action": "get", "resource": "interactiveFrame"})
    values: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{frame['id']}]"})
    return values


def test_requests_reaching_outside_the_document_are_refused_and_nothing_is_fetched(
    codap: CodapPage, evil: Evil
) -> None:
    seen: list[str] = []
    codap.page.on("request", lambda request: seen.append(request.url))
    codap.done("create_codap_dataset", {"datasetName": "policy", "dataType": "random_numbers", "recordCount": 3})
    before = state(codap)
    me = plugin_component(codap)
    page = f"{evil.url}/evil.html"
    refused: list[tuple[dict[str, Any], str, str]] = [
        (
            {"action": "create", "resource": "component", "values": {"type": "webView", "URL": page}},
            "safe_component_types",
            "create_codap_graph",
        ),
        (
            {"action": "create", "resource": "Component", "values": {"type": "game", "URL": page}},
            "safe_component_types",
            "update_codap_component",
        ),
        (
            {
                "action": "create",
                "resource": "component",
                "values": {"type": "guideView", "items": [{"itemTitle": "a", "url": page}]},
            },
            "safe_component_types",
            "create_codap_graph",
        ),
        (
            {
                "action": "create",
                "resource": "component",
                "values": {"type": "imageComponentView", "URL": f"{evil.url}/x.png"},
            },
            "safe_component_types",
            "create_codap_graph",
        ),
        (
            {
                "action": "update",
                "resource": "component[policy]",
                "values": {"other": {"attrs": {"style": f"background-image:url({evil.url}/bg.png)"}}},
            },
            "no_urls_in_components",
            "update_codap_component",
        ),
        (
            {"action": "create", "resource": "dataContextFromURL", "values": {"URL": f"{evil.url}/data.csv"}},
            "no_url_import",
            "import_codap_data",
        ),
        (
            {"action": "create", "resource": " dataContextFROMurl ", "values": {"URL": f"{evil.url}/data.csv"}},
            "no_url_import",
            "import_codap_data",
        ),
        ({"action": "update", "resource": "document", "values": {}}, "no_document_change", "typed tools"),
        (
            {"action": "update", "resource": f"component[{me['id']}]", "values": {"isVisible": False}},
            "not_the_plugin",
            "Nothing",
        ),
        (
            {
                "action": "update",
                "resource": "component[CODAP Relay]",
                "values": {"dimensions": {"width": 5, "height": 5}},
            },
            "not_the_plugin",
            "Nothing",
        ),
        (
            {
                "action": "update",
                "resource": f"component[WEBV{me['id']}]",
                "values": {"position": {"left": -9000, "top": -9000}},
            },
            "not_the_plugin",
            "Nothing",
        ),
        (
            {"action": "update", "resource": f"component[{me['id']}]", "values": {"URL": page}},
            "no_urls_in_components",
            "update",
        ),
        ({"action": "delete", "resource": f"component[{me['id']}]"}, "not_the_plugin", "Nothing"),
        (
            {"action": "update", "resource": "interactiveFrame", "values": {"dimensions": {"width": 1, "height": 1}}},
            "not_the_plugin",
            "Nothing",
        ),
    ]
    for request, rule, instead in refused:
        error = codap.failed("codap_api", request)
        assert error["code"] == "refused_by_policy", (request, error)
        assert error["data"]["rule"] == rule, (request, error)
        assert instead in error["data"]["instead"] and "Nothing was sent to CODAP" in error["message"], error
        assert state(codap) == before, request
    settle(1.0)
    assert evil.hits == [], evil.hits
    assert not [u for u in seen if u.startswith(evil.url)], seen
    after = plugin_component(codap)
    assert after["dimensions"] == me["dimensions"] and after["position"] == me["position"], (me, after)
    assert after["title"] == me["title"]
    assert [c.get("hidden") for c in codap.components() if c["id"] == me["id"]] == [False]
    assert codap.frame.locator("#code").is_visible()


def test_allowed_raw_requests_still_work_and_codap_api_help_answers(codap: CodapPage) -> None:
    codap.done("create_codap_dataset", {"datasetName": "allowed", "dataType": "random_numbers", "recordCount": 2})
    made = codap.done(
        "codap_api",
        {
            "action": "create",
            "resource": "component",
            "values": {"type": "text", "name": "note", "text": "see https://example.org"},
        },
    )
    note = made["structuredContent"]["values"]["id"]
    codap.done("codap_api", {"action": "update", "resource": "component[note]", "values": {"isVisible": False}})
    hidden = [c.get("hidden") for c in codap.components() if c["id"] == note]
    assert hidden == [True]
    codap.done(
        "codap_api",
        {
            "action": "create",
            "resource": "dataContext[allowed].collection[allowed].attribute",
            "values": [{"name": "url", "formula": "1+1"}],
        },
    )
    names = [
        a["name"]
        for a in codap.ok({"action": "get", "resource": "dataContext[allowed].collection[allowed].attributeList"})
    ]
    assert "url" in names
    frame = codap.done("codap_api", {"action": "get", "resource": "interactiveFrame"})
    assert frame["structuredContent"]["values"]["id"] == plugin_component(codap)["id"]
    help_text = codap.done("codap_api_help", {"topic": "policy"})["content"][0]["text"]
    assert "refused_by_policy" in help_text and "not_the_plugin" in help_text
    overview = codap.done("codap_api_help", {})["structuredContent"]
    assert overview["topic"] == "overview" and "graphs" in overview["topics"]


OVERLAY = "position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;background:white"


def plugin_on_top(codap: CodapPage) -> bool:
    """Whether the element at the centre of the plugin's frame, in CODAP's page, is that frame (nothing covers it)."""
    frame = codap.frame.frame_element()
    box = frame.bounding_box()
    assert box is not None
    centre = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
    return bool(codap.page.evaluate("([x, y, f]) => document.elementFromPoint(x, y) === f", [*centre, frame]))


def text_values(codap: CodapPage, evil: Evil) -> list[tuple[str, dict[str, Any]]]:
    """The hostile text values: an overlay style, a background image, a 45-level image, a JSON string with both."""
    image = {"type": "image", "url": f"{evil.url}/deep.png", "children": [{"text": ""}]}
    deep: dict[str, Any] = image
    for _ in range(45):
        deep = {"type": "paragraph", "children": [deep]}

    def text(*children: Any) -> dict[str, Any]:
        return {"document": {"children": list(children)}}

    overlay = {"type": "paragraph", "attrs": {"style": OVERLAY}, "children": [{"text": "Sign in again"}]}
    background = {
        "type": "paragraph",
        "attrs": {"style": f"background-image:url({evil.url}/bg.png)"},
        "children": [{"text": "bg"}],
    }
    nested = {"type": "paragraph", "children": [{"text": "x"}, {**image, "url": f"{evil.url}/inline.png"}]}
    return [
        ("overlay", text(overlay)),
        ("background", text(background)),
        ("nested image", text(nested)),
        ("deep", text(deep)),
        ("json string", {"json": json.dumps(text(overlay, background, nested))}),
    ]


def test_rich_text_is_rebuilt_and_neither_fetches_nor_covers_the_plugin(
    codap: CodapPage, evil: Evil, tmp_path: Path
) -> None:
    seen: list[str] = []
    codap.page.on("request", lambda request: seen.append(request.url))
    hits = len(evil.hits)
    calls: list[dict[str, Any]] = []
    for name, value in text_values(codap, evil):
        text: Any = value.get("json", value)
        args = {"action": "create", "resource": "component", "values": {"type": "text", "name": name, "text": text}}
        if name == "deep":
            error = codap.failed("codap_api", args)
            assert error["code"] == "refused_by_policy" and error["data"]["rule"] == "bounded_values", error
            assert "deeper than 16 levels" in error["message"], error
        else:
            made = codap.done("codap_api", args)
            assert "left out:" in made["content"][0]["text"], made
            sent = codap.ok({"action": "get", "resource": f"component[{name}]"})["text"]
            assert '"attrs"' not in json.dumps(sent) and '"type": "image"' not in json.dumps(sent), sent
        calls.append(args)
    # create_codap_text: the JSON string is shown as text, one paragraph a line
    json_text = str(text_values(codap, evil)[-1][1]["json"])
    made = codap.done("create_codap_text", {"text": json_text, "title": "typed"})
    shown = codap.ok({"action": "get", "resource": f"component[{made['structuredContent']['componentId']}]"})["text"]
    assert shown["document"]["children"][0]["children"] == [{"text": json_text}], shown
    # a replayed trace of all of them: asked first, then run through the same policy
    trace = tmp_path / "hostile.json"
    entries = [{"tool": "codap_api", "args": a, "status": "completed", "at": "2026-05-04T10:00:00Z"} for a in calls]
    entries.append(
        {"tool": "create_codap_text", "args": {"text": json_text}, "status": "completed", "at": "2026-05-04T10:00:01Z"}
    )
    trace.write_text(json.dumps({"format": "codap-relay-trace", "version": 1, "calls": entries}))
    with codap.page.expect_file_chooser() as chooser:
        codap.frame.locator("#replay-trace").click()
    chooser.value.set_files(str(trace))
    wait_until(lambda: codap.frame.locator("#replay-dialog").evaluate("(d) => d.open"), "the replay question")
    listed = codap.frame.locator("#replay-calls li").all_inner_texts()
    assert len(listed) == 6 and "REFUSED by policy (bounded_values)" in listed[3], listed
    codap.frame.locator("#confirm-replay").click()
    wait_until(lambda: "Replayed hostile.json" in str(codap.text("#replay-text")), "the replay to finish")
    settle(2.0)
    assert evil.hits[hits:] == [], evil.hits
    assert not [u for u in seen if u.startswith(evil.url)], seen
    assert plugin_on_top(codap), "something covers the plugin"


PETS = [
    {"name": "Tom", "species": "cat", "weight": 4, "age": 3},
    {"name": "Bo", "species": "dog", "weight": 20, "age": 6},
    {"name": "Kiki", "species": "cat", "weight": 5, "age": 9},
    {"name": "Max", "species": "dog", "weight": 32, "age": 2},
]


def read_back(codap: CodapPage, request: dict[str, Any], values: Any) -> None:
    """What an example's create made, read from CODAP itself; ``values`` is CODAP's reply through codap_api."""
    made: Any = request.get("values")
    resource = str(request["resource"])
    kind = resource.rsplit(".", 1)[-1].split("[", 1)[0]
    if kind == "dataContext":
        assert made["name"] in codap.dataset_names()
        people = f"dataContext[{made['name']}].collection[People].attributeList"
        assert [a["name"] for a in codap.ok({"action": "get", "resource": people})] == ["name", "height", "twice"]
    elif kind == "collection":
        listed = codap.ok({"action": "get", "resource": f"{resource}List"})
        assert listed[-1]["name"] == made["name"]  # without parent: the new last (child-most) collection
    elif kind == "attribute":
        for attr in made:
            held = codap.ok({"action": "get", "resource": f"{resource}[{attr['name']}]"})
            fields = ("formula", "unit", "precision")
            assert [held[f] for f in fields] == [attr[f] for f in fields]
    elif kind == "item":
        dataset = resource.removesuffix(".item")
        held = [i["values"] for i in codap.ok({"action": "get", "resource": f"{dataset}.itemSearch[*]"})]
        assert all(any(all(h.get(k) == v for k, v in item.items()) for h in held) for item in made)
    elif kind == "case":
        (made_case,) = made
        held = [i["values"] for i in codap.items("Pets")]
        assert any(all(h.get(k) == v for k, v in made_case["values"].items()) for h in held)
        assert [c["id"] for c in values] != []
    elif kind == "selectionList":
        selected = {s["caseID"] for s in codap.ok({"action": "get", "resource": resource})}
        if made == []:
            assert selected == set()
        else:
            dataset = resource.removesuffix(".selectionList")
            search = f"{dataset}.collection[Pets].caseFormulaSearch[{made['expression']}]"
            assert selected == {c["id"] for c in codap.ok({"action": "get", "resource": search})} != set()
    elif kind == "component":
        held = codap.ok({"action": "get", "resource": f"component[{values['id']}]"})
        assert held["type"] == made["type"] and held.get("name", made.get("name")) == made.get("name", held.get("name"))
        if made["type"] in ("caseTable", "caseCard"):  # shown, the other one of the dataset hidden
            listing = {c["id"]: c for c in codap.components()}
            assert listing[values["id"]]["hidden"] is False and held["dataContext"] == made["dataContext"]
        if made["type"] == "graph":
            assert (held["xAttributeName"], held["yAttributeName"]) == (made["xAttributeName"], made["yAttributeName"])
    elif kind == "adornment":
        assert codap.ok({"action": "get", "resource": f"{resource}[{made['type']}]"})["isVisible"] is True
    elif kind == "global":
        assert codap.ok({"action": "get", "resource": f"global[{made['name']}]"})["value"] == made["value"]
    else:
        raise AssertionError(f"no read-back for a create of {resource}: add one here")


def placeholders(codap: CodapPage) -> dict[str, int]:
    """The ids the help's examples write as ITEM_ID, CASE_ID and TABLE_ID, as CODAP holds them now: the last item and
    the last case of Pets, and Pets's case table."""
    items = codap.items("Pets")
    count = codap.ok({"action": "get", "resource": "dataContext[Pets].collection[Pets].caseCount"})
    last = codap.ok({"action": "get", "resource": f"dataContext[Pets].collection[Pets].caseByIndex[{count - 1}]"})
    tables = [c["id"] for c in codap.components() if c["type"] == "caseTable"]
    (table,) = [
        t for t in tables if codap.ok({"action": "get", "resource": f"component[{t}]"})["dataContext"] == "Pets"
    ]
    return {"ITEM_ID": int(items[-1]["id"]), "CASE_ID": int(last["case"]["id"]), "TABLE_ID": int(table)}


def filled(value: Any, ids: dict[str, int]) -> Any:
    """An example with its id placeholders replaced by CODAP's ids (in a resource, or a value standing alone)."""
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        for name, real in ids.items():
            value = value.replace(f"[{name}]", f"[{real}]")
        return value
    if isinstance(value, list):
        return [filled(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: filled(v, ids) for k, v in value.items()}
    return value


# What CODAP takes but gives no way to read back (codap_api says so): the rest of every example is read back.
UNREAD = {"sort", "rerandomize", "center", "zoom", "legendAttributeName", "dataContext"}


def test_every_request_and_value_codap_api_help_shows_is_taken_by_codap(codap: CodapPage) -> None:
    """Each topic's examples in topic order (later ones use what earlier ones made, as the help says), sent through
    codap_api to the real CODAP 3.1.0: each is accepted (success true), codap_api's own read-back finds every
    value taken, and what each create made is read back here too. A unit test (tests/js/raw_help.test.mjs) checks
    that the examples hold every request form and value key the help's text shows."""
    codap.done("create_codap_dataset", {"datasetName": "Pets", "dataType": "custom", "customData": PETS})
    topics = codap.done("codap_api_help", {})["structuredContent"]["topics"]
    sent = 0
    for topic in topics:
        answer = codap.done("codap_api_help", {"topic": topic})["structuredContent"]
        assert answer["examples"] or topic == "policy", f"{topic} shows no example"
        for shown in answer["examples"]:
            request = filled(shown, placeholders(codap)) if "_ID" in json.dumps(shown) else shown
            body = codap.tool("codap_api", request)
            assert body["status"] == "completed", f"{topic}: {json.dumps(request)} -> {body.get('error')}"
            reply = body["result"]["structuredContent"]
            assert reply["success"] is True, f"{topic}: {json.dumps(request)} -> {reply}"
            assert reply.get("notTaken", []) == [], f"{topic}: {json.dumps(request)} -> {reply['notTaken']}"
            assert set(reply.get("unverified", [])) <= UNREAD, f"{topic}: {json.dumps(request)} -> {reply}"
            if request["action"] == "create":
                read_back(codap, request, reply.get("values"))
            sent += 1
    assert sent >= 80
    # the deletes and updates among them, read back too
    assert "Survey" not in codap.dataset_names()
    assert [c["name"] for c in codap.ok({"action": "get", "resource": "dataContext[Pets].collectionList"})] == ["Pets"]
    attrs = codap.ok({"action": "get", "resource": "dataContext[Pets].collection[Pets].attributeList"})
    assert [a["name"] for a in attrs] == ["name", "species", "weight", "age"]
    names = sorted(i["values"]["name"] for i in codap.items("Pets"))
    assert names == sorted(str(p["name"]) for p in PETS)  # every example's pet deleted again
    assert "Note" not in [c.get("name") for c in codap.components()]
    assert codap.ok({"action": "get", "resource": "component[Growth]"})["legendAttributeName"] == "species"
    assert codap.ok({"action": "get", "resource": "global[factor]"})["value"] == 3


def test_what_codap_ignores_codap_api_names_and_the_help_says_so(codap: CodapPage) -> None:
    """Each value the help names as one CODAP does not take ("Not: …"), sent through codap_api: CODAP answers
    success, and codap_api's answer names it as not taken, with what to do instead."""
    codap.done("create_codap_dataset", {"datasetName": "Ignored", "dataType": "custom", "customData": PETS})
    graph = codap.done(
        "create_codap_graph", {"datasetName": "Ignored", "graphType": "dot_plot", "xAttribute": "weight"}
    )
    gid = graph["structuredContent"]["graphId"]
    topics = ("datasets", "collections", "components", "component_types", "graphs", "globals", "attributes")
    help_text = " ".join(codap.done("codap_api_help", {"topic": t})["content"][0]["text"] for t in topics)
    codap.ok({"action": "create", "resource": "global", "values": {"name": "kept", "value": 1}})
    mid = codap.ok({"action": "create", "resource": "component", "values": {"type": "map", "dataContext": "Ignored"}})[
        "id"
    ]
    cases = [
        ("update", "dataContext[Ignored]", {"name": "Renamed"}, "name", "Not: name"),
        ("update", "dataContext[Ignored]", {"metadata": {"source": "https://x.org"}}, "metadata", "metadata.source"),
        ("update", "dataContext[Ignored].collection[Ignored]", {"name": "Other"}, "name", "pluralCase}}. Not: name"),
        ("update", f"component[{gid}]", {"plotType": "histogram"}, "plotType", "Not: plotType"),
        ("update", f"component[{gid}]", {"isMinimized": True}, "isMinimized", "Not: isMinimized"),
        ("update", "global[kept]", {"value": 2, "name": "gone"}, "name", "Not: name"),
        ("update", f"component[{mid}]", {"legendAttributeName": "species"}, "legendAttributeName",
         "Not:\n  legendAttributeName"),
        ("update", "dataContext[Ignored].collection[Ignored].attribute[age]", {"editable": False}, "editable",
         "Not: editable"),
    ]  # fmt: skip
    for action, resource, values, key, said in cases:
        body = codap.tool("codap_api", {"action": action, "resource": resource, "values": values})
        assert body["status"] == "completed", body
        answer = body["result"]
        assert answer["structuredContent"]["success"] is True
        (missed,) = answer["structuredContent"]["notTaken"]
        assert missed["key"] == key and missed["why"], (resource, missed)
        assert "did not take" in answer["content"][0]["text"] and said in help_text, said
    # and CODAP held on to what it had
    assert "Ignored" in codap.dataset_names() and "Renamed" not in codap.dataset_names()
    assert codap.ok({"action": "get", "resource": f"component[{gid}]"})["plotType"] == "dotPlot"
    assert codap.ok({"action": "get", "resource": "global[kept]"})["name"] == "kept"
    zero = codap.di({"action": "update", "resource": "global[kept]", "values": {"value": 0}})
    assert zero["success"] is False and "not 0" in help_text
