"""The raw tool's policy in the real CODAP app (v3.1.0 build): what would reach outside the document is refused.

For each refused request, codap_api fails with refused_by_policy naming the rule, CODAP's components and datasets
are unchanged, and the browser sent nothing to the "evil" URL (a loopback server counts its hits, and the page's
requests are recorded). The plugin stays visible at its size after the attempts to hide, shrink, move or close
it; allowed raw requests still work.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

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
                "action": "create",
                "resource": "component",
                "values": {
                    "type": "text",
                    "text": {"document": {"children": [{"type": "image", "url": f"{evil.url}/i.png"}]}},
                },
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
