"""The plugin inside the real CODAP build in Firefox (Debian's firefox-esr, over WebDriver BiDi) and WebKit
(WebKitGTK's MiniBrowser, over WebKitWebDriver), each with its shipped privacy defaults, in two shapes: CODAP
served by the relay (one origin with the plugin) and CODAP on another site (the plugin a cross-site frame); and
Firefox with all cross-site cookies blocked. One scenario for each: pair, a dataset, a graph and its picture, more
cases, a reload of the frame, a new code, the end of the session. Each test checks in the frame which storage
behaviour it got, so none passes under the wrong one."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.relay.publisher import PUSH_INLINE_BYTES
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import ARTIFACTS, engines, web
from codap_relay_tooling.testing.commands import LocalApi
from codap_relay_tooling.testing.engines import CodapTab, Engine
from codap_relay_tooling.testing.plugin_page import call_tool, ok_result, wait_until
from codap_relay_tooling.testing.real_codap import other_site
from codap_relay_tooling.testing.real_parts import missing
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import serve_app

pytestmark = pytest.mark.browser

# Every engine in both shapes with its shipped defaults; and Firefox with all cross-site cookies blocked (WebKitGTK
# has no such setting beyond its default, see engines.WEBKIT_ARGS).
SCENARIOS = [
    ("firefox", "same_origin"),
    ("firefox", "cross_site"),
    ("firefox", "cross_site_cookies_blocked"),
    ("webkit", "same_origin"),
    ("webkit", "cross_site"),
]
TIMES: dict[
    str, float
] = {}  # scenario (or a browser's launch) -> seconds, written to test-artifacts/engines.json with the versions
VERSIONS: dict[str, str] = {}


@pytest.fixture(scope="module")
def relay(codap_build: Path) -> Iterator[str]:
    """A relay in process that also serves the CODAP build at /codap/ (as ``serve --codap-dir`` does)."""
    with serve_app(build_app(Relay(e2e_settings(codap_dir=codap_build), MemoryStore()))) as url:
        yield url


@pytest.fixture(scope="module")
def browsers() -> Iterator[Callable[[str, str], Engine]]:
    """One browser per engine and storage variant for the module, started on first use; WebKit's on an X display
    (Xvfb) of its own. An engine that is not installed skips its tests, or fails them under REAL_PARTS_REQUIRED."""
    with contextlib.ExitStack() as stack:
        started: dict[tuple[str, str], Engine] = {}
        display: list[str] = []

        def get(engine: str, storage: str) -> Engine:
            if (engine, storage) not in started:
                for program in engines.missing(engine):
                    missing(engines.PART[program])
                if engine == "webkit" and not display:
                    display.append(stack.enter_context(engines.xvfb()))
                launched = time.monotonic()
                browser = stack.enter_context(
                    engines.launch(engine, storage=storage, display=next(iter(display), None))
                )
                TIMES[f"{engine}/launch-{storage}"] = round(time.monotonic() - launched, 1)
                started[engine, storage] = browser
                VERSIONS[engine] = browser.version
            return started[engine, storage]

        yield get
        if TIMES:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "engines.json").write_text(json.dumps({"versions": VERSIONS, "seconds": TIMES}, indent=2))


# localStorage (which the plugin does not use) and cookies in the frame, to tell the cookie settings apart.
LOCAL_STORAGE_AND_COOKIES = """() => {
  let localStorageUse;
  try { localStorage.setItem("probe", "1"); localStorage.removeItem("probe"); localStorageUse = "ok"; }
  catch (e) { localStorageUse = e.name; }
  document.cookie = "probe=1";
  return { localStorage: localStorageUse, cookie: document.cookie };
}"""


# Which channel the plugin's requests arrive on (ui.setChannel): "push" or "stream".
CHANNEL = "() => document.getElementById('status').dataset.channel"


def session_status(relay: str, code: str) -> int:
    return web.get(f"{relay}/api/sessions/{code}", timeout=10).status_code


def assert_picture(result: dict[str, Any]) -> None:
    """The tool's image item is a real PNG of a drawn graph: decodable, of some size, not one flat colour."""
    from PIL import Image

    (image,) = [c for c in result["content"] if c["type"] == "image"]
    assert image["mimeType"] == "image/png"
    data = base64.b64decode(image["data"])
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    picture = Image.open(io.BytesIO(data)).convert("RGB")
    assert picture.width > 100 and picture.height > 100, picture.size
    assert len(picture.getcolors(1 << 24) or []) > 2, "the graph's picture is blank"


@pytest.mark.in_process
@pytest.mark.parametrize(("engine", "shape"), SCENARIOS)
def test_the_plugin_scenario_in_real_codap(
    engine: str, shape: str, relay: str, browsers: Callable[[str, str], Engine]
) -> None:
    blocked = shape == "cross_site_cookies_blocked"
    browser = browsers(engine, "blocked" if blocked else "default")
    started = time.monotonic()
    # CODAP from the relay itself (127.0.0.1) or from another site (localhost): the plugin a cross-site frame.
    codap_base = f"{relay}/codap" if shape == "same_origin" else f"{other_site(relay)}/codap"
    tab = CodapTab(browser, codap_base, f"{relay}/plugin/")
    code = tab.open()

    # Which storage the frame got: its own site's (same origin) or partitioned (cross-site: Firefox's Total Cookie
    # Protection, WebKit's partitioning). With cross-site cookies blocked, Firefox refuses the frame localStorage
    # and cookies but still gives it sessionStorage (per tab), which is all the plugin keeps its session in.
    storage = tab.frame_storage()
    assert storage == {"sessionStorage": "ok", "firstParty": shape == "same_origin"}, storage
    local = tab.engine.evaluate(LOCAL_STORAGE_AND_COOKIES)
    # WebKit's default cookie policy ("no-third-party") refuses a cross-site frame a new cookie; Firefox's Total
    # Cookie Protection gives it one in its partition.
    no_cookie = blocked or (engine, shape) == ("webkit", "cross_site")
    assert local == {"localStorage": "SecurityError" if blocked else "ok", "cookie": "" if no_cookie else "probe=1"}
    assert tab.shown()["storageNote"] == ""  # the session survives a reload: nothing to warn about

    frame = tab.ok({"action": "get", "resource": "interactiveFrame"})
    assert frame["title"] == "CODAP Relay"

    # A dataset, a graph and its picture, more cases: each read back from CODAP itself.
    rows = [{"x": 1, "y": 2}, {"x": 2, "y": 3}, {"x": 3, "y": 5}, {"x": 4, "y": 4}]
    args = {"datasetName": "pts", "dataType": "custom", "recordCount": len(rows), "customData": rows}
    ok_result(call_tool(relay, code, "create_codap_dataset", args))
    assert sorted((i["values"]["x"], i["values"]["y"]) for i in tab.items("pts")) == [(1, 2), (2, 3), (3, 5), (4, 4)]
    graph_args = {"datasetName": "pts", "graphType": "scatterplot", "xAttribute": "x", "yAttribute": "y"}
    made = ok_result(call_tool(relay, code, "create_codap_graph", graph_args))["structuredContent"]
    graph = tab.ok({"action": "get", "resource": f"component[{made['graphId']}]"})
    assert (graph["type"], graph["xAttributeName"], graph["yAttributeName"]) == ("graph", "x", "y")
    assert_picture(ok_result(call_tool(relay, code, "get_codap_graph_image", {"graph": made["graphId"]})))
    added = ok_result(call_tool(relay, code, "add_codap_cases", {"datasetName": "pts", "cases": [{"x": 5, "y": 7}]}))
    assert added["structuredContent"]["totalCases"] == 5 == len(tab.items("pts"))
    browser.screenshot(ARTIFACTS / f"real-codap-{engine}-{shape.replace('_', '-')}.png")

    # A reload of the frame keeps the code (the session is in the frame's sessionStorage).
    browser.reload_frame()
    assert tab.wait_paired() == code
    ok_result(call_tool(relay, code, "get_codap_datasets", {}))

    # "New code": another code, and the old one ends at once.
    browser.click("#new-code")
    old, code = code, tab.wait_paired(other_than=code)
    wait_until(lambda: session_status(relay, old) == 404, "the replaced code to end")
    assert "New code created" in tab.shown()["notice"]
    listed = ok_result(call_tool(relay, code, "get_codap_datasets", {}))["structuredContent"]
    assert "pts" in json.dumps(listed)

    # The end of the session: the plugin's DELETE with its stored browser token (the plugin has no End button);
    # the relay then refuses the code, and the plugin hears "closed" on its stream and takes a new code.
    assert tab.end_stored_session(code) == 200
    assert session_status(relay, code) == 404
    tab.wait_paired(other_than=code)
    assert "The session was ended, so this is a new code" in tab.shown()["notice"]
    TIMES[f"{engine}/{shape}"] = round(time.monotonic() - started, 1)


@pytest.mark.parametrize("engine", ["firefox", "webkit"])
def test_the_push_channel_in_real_codap(
    engine: str, local_api: LocalApi, codap_url: str, browsers: Callable[[str, str], Engine]
) -> None:
    """Through local-api with the push channel on, as a deployment with ``PushChannel=websocket``: the plugin in
    each engine holds the WebSocket (the status pill names it), runs the requests pushed to it in CODAP, fetches
    one too big to push by its pointer, and after a reload of its frame attaches again with the same code."""
    relay = local_api.base
    tab = CodapTab(browsers(engine, "default"), codap_url, f"{relay}/plugin/")
    code = tab.open()
    assert tab.engine.evaluate(CHANNEL) == "push"
    rows = [{"n": 0, "label": "the first case"}]
    args = {"datasetName": "pushed", "dataType": "custom", "recordCount": 1, "customData": rows}
    ok_result(call_tool(relay, code, "create_codap_dataset", args))
    more = [{"n": i, "label": f"case number {i} of a large import"} for i in range(1, 2501)]
    big = {"datasetName": "pushed", "cases": more}
    assert len(json.dumps({"event": "tool-request", "args": big})) > PUSH_INLINE_BYTES  # sent as a pointer
    added = ok_result(call_tool(relay, code, "add_codap_cases", big))["structuredContent"]
    assert added["totalCases"] == 2501 == len(tab.items("pushed"))

    tab.engine.reload_frame()
    assert tab.wait_paired() == code
    assert tab.engine.evaluate(CHANNEL) == "push"
    ok_result(call_tool(relay, code, "add_codap_cases", {"datasetName": "pushed", "cases": [{"n": 2501}]}))
    assert sorted(i["values"]["n"] for i in tab.items("pushed"))[-2:] == [2500, 2501]
    assert tab.end_stored_session(code) == 200
