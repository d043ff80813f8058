"""The MCP App rendered as a host renders it: ext-apps' AppBridge in a Chromium page puts the relay's
``ui://codap/document`` in a sandboxed frame (scripts only, an opaque origin) under the CSP the resource declares,
and answers the app's resources/read through the official MCP SDK client of the relay, paired with the plugin in
the real CODAP. After each tool call the host sends the call's input and result, as a chat host does; the app
reads the document again and shows the graph the call made and the calls so far. CODAP's own state is read back
to check what the app shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from codap_relay.catalog import tool_title
from codap_relay.mcp.app import APP_URI
from codap_relay_tooling.testing import ARTIFACTS
from codap_relay_tooling.testing.mcp_app import build_test_host, mcp_app_modules
from codap_relay_tooling.testing.plugin_page import McpClient
from codap_relay_tooling.testing.real_codap import CodapPage
from codap_relay_tooling.testing.real_parts import need
from codap_relay_tooling.testing.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS = [{"plant": f"p{i}", "height": h, "bed": "AB"[i % 2]} for i, h in enumerate([31, 44, 38, 52, 47, 29])]


@pytest.fixture(scope="module")
def app_host_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need(mcp_app_modules(), "the build tools")
    folder = build_test_host(tmp_path_factory.mktemp("mcp-app-host"))
    with serve_app(Starlette(routes=[Mount("/", app=StaticFiles(directory=folder, html=True))])) as url:
        yield url


@pytest.fixture(scope="module")
def codap(pages: Callable[..., CodapPage], relay_url: str) -> CodapPage:
    return pages(f"{relay_url}/plugin/")


@pytest.fixture(scope="module")
def mcp(codap: CodapPage) -> Iterator[McpClient]:
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as client:
        yield client


def as_json(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


class Host:
    """The host page with the app in its frame; ``call`` is a tool call by the model, shown to the app."""

    def __init__(self, page: Any, mcp: McpClient) -> None:
        self.page, self.mcp = page, mcp
        self.reads: list[str] = []
        self.app = page.frame_locator("iframe")

    def relay_mcp(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """What the host forwards of the app's requests to the relay, through its MCP client."""
        if method == "resources/read":
            self.reads.append(params["uri"])
            return {"contents": [as_json(c) for c in self.mcp.read(params["uri"])]}
        raise AssertionError(f"the app asked for {method}")

    def start(self, capabilities: dict[str, Any] | None = None) -> str:
        """Render the app; ``capabilities``: the host's (default: it reads resources for the app)."""
        (page_contents,) = self.mcp.read(APP_URI)
        meta = page_contents.meta or {}
        shown = {"html": page_contents.text, "csp": meta["ui"]["csp"]}
        if capabilities is not None:
            shown["capabilities"] = capabilities
        return str(self.page.evaluate("(p) => startHost(p)", shown))

    def refreshed(self) -> int:
        return int(self.app.locator("body").get_attribute("data-refreshed") or 0)

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        before = self.refreshed()
        result = as_json(self.mcp.call(name, args))
        assert not result.get("isError"), result
        self.page.evaluate(
            "async ([args, result]) => { await bridge.sendToolInput({arguments: args});"
            " await bridge.sendToolResult(result); }",
            [args, result],
        )
        self.wait(lambda: self.refreshed() > before)
        return result

    def wait(self, done: Callable[[], bool], timeout: float = 30) -> None:
        """Wait while the page runs (the app's reads reach relay_mcp only while Playwright waits)."""
        for _ in range(int(timeout * 10)):
            if done():
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"the app did not update: {self.app.locator('#state').inner_text()}")


@pytest.fixture
def host(browser: Any, app_host_url: str, mcp: McpClient) -> Iterator[Host]:
    context = browser.new_context(viewport={"width": 720, "height": 1100})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(app_host_url)
    shown = Host(page, mcp)
    page.expose_function("relayMcp", shown.relay_mcp)
    yield shown
    context.close()
    assert not [e for e in errors if "Content Security Policy" in e], errors


def test_the_app_shows_the_live_document_and_updates_after_each_tool_call(codap: CodapPage, host: Host) -> None:
    policy = host.start()
    assert host.page.locator("iframe").get_attribute("sandbox") == "allow-scripts"
    assert "connect-src 'none'" in policy and "frame-src 'none'" in policy
    host.wait(lambda: host.refreshed() >= 1)
    assert host.app.locator("#components li").count() == len(codap.components())
    if not any(c["type"] == "graph" for c in codap.components()):
        assert host.app.locator("#graph").inner_text() == "No graph in the document yet."

    made = host.call(
        "create_codap_dataset",
        {"datasetName": "heights", "dataType": "custom", "recordCount": len(ROWS), "customData": ROWS},
    )
    calls = host.app.locator("#activity li.call")
    assert calls.count() == 1
    assert calls.nth(0).locator(".summary").inner_text() == made["content"][0]["text"].split("\n", 1)[0]
    assert "heights" in host.app.locator("#components").inner_text()

    graph = host.call(
        "create_codap_graph",
        {"datasetName": "heights", "graphType": "dot_plot", "xAttribute": "height", "title": "Heights"},
    )
    graph_id = graph["structuredContent"]["graphId"]
    image = host.app.locator("#graph img")
    assert image.get_attribute("data-graph-id") == str(graph_id)
    assert image.evaluate("img => img.complete && img.naturalWidth > 100 && img.naturalHeight > 100")
    assert f"codap://graphs/{graph_id}/image" in host.reads
    # What CODAP itself holds: the graph the app shows, with the title the caption gives.
    component = codap.ok({"action": "get", "resource": f"component[{graph_id}]"})
    assert component["type"] == "graph" and component["title"] == "Heights"
    assert host.app.locator("figcaption").inner_text() == "Graph: Heights"
    assert [calls.nth(i).locator(".tool").inner_text() for i in range(calls.count())] == [
        tool_title({"name": "create_codap_dataset"}),
        tool_title({"name": "create_codap_graph"}),
    ]
    assert calls.nth(1).locator(".summary").inner_text() == graph["content"][0]["text"].split("\n", 1)[0]
    assert host.app.locator("#last").inner_text() == graph["content"][0]["text"].split("\n", 1)[0]
    assert json.loads(host.mcp.read("codap://activity")[0].text)["total"] == 2
    ARTIFACTS.mkdir(exist_ok=True)
    host.page.screenshot(path=str(ARTIFACTS / "mcp-app.png"), full_page=True)


def test_a_host_that_reads_no_resources_still_shows_the_graph_a_call_answered(codap: CodapPage, host: Host) -> None:
    """The picture comes from the call's own answer (includeImage), as a host without serverResources sends it."""
    host.start(capabilities={})
    host.wait(lambda: host.refreshed() >= 1)
    host.call(
        "create_codap_dataset",
        {"datasetName": "beds", "dataType": "custom", "recordCount": len(ROWS), "customData": ROWS},
    )
    graph = host.call(
        "create_codap_graph",
        {"datasetName": "beds", "graphType": "dot_plot", "xAttribute": "height", "title": "Beds", "includeImage": True},
    )
    (picture,) = [c for c in graph["content"] if c["type"] == "image"]
    image = host.app.locator("#graph img")
    assert image.get_attribute("data-graph-id") == str(graph["structuredContent"]["graphId"])
    assert image.get_attribute("src") == f"data:{picture['mimeType']};base64,{picture['data']}"
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    assert host.app.locator("figcaption").inner_text() == "Graph: Beds"
    assert "only each call's own answer" in host.app.locator("#state").inner_text()
    assert host.reads == []
