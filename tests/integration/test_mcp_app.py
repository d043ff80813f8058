"""The MCP App (io.modelcontextprotocol/ui) over the MCP endpoint, through the SDK's own client on a real uvicorn,
a FakePlugin playing the browser: which tools link the app, the app as resources/read gives it, tool results left as
they were for hosts without the extension, and codap://activity, the calls the app lists.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from codap_relay.catalog import plugin_tools, tool_title
from codap_relay.http.app import build_app
from codap_relay.mcp.app import APP_FILE, APP_MIME_TYPE, APP_URI
from codap_relay.relay import Relay
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.servers import serve_app

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()
GRAPH = {
    "content": [
        {"type": "text", "text": "Made a dot plot of height.\nIt is graph 7."},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ],
    "structuredContent": {"graphId": 7, "datasetName": "class", "plotType": "dotPlot"},
}

GRAPH_ARGS = {"datasetName": "class", "graphType": "histogram", "xAttribute": "height"}  # the default manifest's


async def codap(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the browser answers: a graph with its picture, an error for the dataset 'Birds', else an echo."""
    if args.get("datasetName") == "Birds":
        return {"error": {"code": "dataset_not_found", "message": "No dataset Birds"}}
    if tool == "create_codap_graph":
        return {"result": GRAPH}
    return {"result": {"content": [{"type": "text", "text": f"Ran {tool}."}], "structuredContent": {}}}


@pytest.fixture
def base(relay: Relay) -> Iterator[str]:
    with serve_app(build_app(relay)) as url:
        yield url


@pytest.fixture(params=["legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


@contextlib.asynccontextmanager
async def connected(base: str, mode: str, tools: list[dict[str, Any]] | None = None) -> AsyncIterator[Client]:
    """A new session (``tools``: the plugin's manifest, else the relay's default), its FakePlugin, and an MCP
    client of it."""
    async with web.AsyncClient(base_url=base, timeout=10) as http:
        r = await http.post("/api/sessions", json={} if tools is None else {"tools": tools})
        assert r.status_code == 201, r.text
        session = r.json()
        async with (
            FakePlugin.for_session(base, session, handler=codap, client=http),
            httpx2.AsyncClient(timeout=10) as mcp_http,
            Client(
                streamable_http_client(f"{base}/mcp/{session['code']}", http_client=mcp_http),
                mode=mode,
                read_timeout_seconds=MCP_ANSWER_SECONDS,
            ) as client,
        ):
            yield client


async def test_the_tools_that_change_the_document_link_the_app(base: str, mode: str) -> None:
    async with connected(base, mode, list(plugin_tools())) as client:
        tools = (await client.list_tools()).tools
    linked = {t.name for t in tools if (t.meta or {}).get("ui", {}).get("resourceUri") == APP_URI}
    for t in tools:
        assert t.meta in (None, {"ui": {"resourceUri": APP_URI}, "ui/resourceUri": APP_URI}), t.name
        assert t.annotations is not None
        assert (t.name in linked) == (t.annotations.read_only_hint is not True), t.name
    assert {
        "create_codap_graph",
        "update_codap_graph",
        "create_codap_table",
        "create_codap_dataset",
        "add_codap_cases",
        "update_codap_cases",
        "add_codap_attribute",
        "update_codap_attribute",
        "delete_codap_component",
        "undo_codap",
    } <= linked
    assert not {"get_codap_status", "get_codap_datasets", "export_codap_data", "get_codap_graph_image"} & linked


async def test_resources_read_gives_the_app_as_an_mcp_app_with_its_csp(base: str, mode: str) -> None:
    async with connected(base, mode) as client:
        read = await client.read_resource(APP_URI)
    assert len(read.contents) == 1
    page = read.contents[0]
    assert isinstance(page, types.TextResourceContents)
    assert (page.uri, page.mime_type) == (APP_URI, APP_MIME_TYPE)
    assert page.meta == {
        "ui": {"csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": []}, "prefersBorder": True}
    }
    assert page.text == APP_FILE.read_text("utf-8")
    html = page.text
    assert html.lower().startswith("<!doctype html>")
    # Self-contained: it loads nothing from outside (its CSP declares no domain), and ext-apps' App class is in it.
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    assert "ui/initialize" in html and "ui/notifications/tool-result" in html


async def test_a_host_without_apps_gets_the_same_text_image_and_structured_content(base: str, mode: str) -> None:
    async with connected(base, mode) as client:
        result = await client.call_tool("create_codap_graph", GRAPH_ARGS)
    assert result.is_error is False
    dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert dumped["content"] == GRAPH["content"]
    assert dumped["structuredContent"] == GRAPH["structuredContent"]
    assert "ui" not in dumped.get("_meta", {})


async def test_activity_lists_the_calls_that_changed_the_document_with_what_each_did(base: str, mode: str) -> None:
    async with connected(base, mode) as client:
        await client.call_tool("create_codap_graph", GRAPH_ARGS)
        await client.call_tool("get_codap_datasets", {})  # a read: not listed
        failed = await client.call_tool("add_codap_cases", {"datasetName": "Birds", "cases": [{"a": 1}]})
        await client.read_resource("codap://components")  # a resource's read is a read too
        read = await client.read_resource("codap://activity")
        listed = {r.uri for r in (await client.list_resources()).resources}
    assert failed.is_error is True
    assert "codap://activity" in listed
    page = read.contents[0]
    assert isinstance(page, types.TextResourceContents) and page.mime_type == "application/json"
    activity = json.loads(page.text)
    assert activity["total"] == 2
    assert [(c["tool"], c["title"], c["status"], c["summary"], c["error"]) for c in activity["calls"]] == [
        (
            "create_codap_graph",
            tool_title({"name": "create_codap_graph"}),
            "completed",
            "Made a dot plot of height.",
            None,
        ),
        ("add_codap_cases", tool_title({"name": "add_codap_cases"}), "failed", "No dataset Birds", "dataset_not_found"),
    ]


def test_the_apps_uri_names_its_content() -> None:
    """A host may keep the page it read under its URI for good: another build of the page gets another URI."""
    digest = hashlib.sha256(APP_FILE.read_bytes()).hexdigest()[:12]
    assert f"ui://codap/document/{digest}" == APP_URI


@pytest.mark.parametrize("uri", [APP_URI, "ui://codap/document"])
async def test_a_host_reads_the_app_again_at_no_store_read_whatever_the_code(
    relay: Relay, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page holds no data and is the same for everyone, so reading it (again and again, as a host may after
    every change) reads nothing from the store, not even the session: a code that names no session reads it too,
    and learns nothing about codes from it (the versionless URI, which a host may have kept, reads the same)."""
    touched: list[str] = []
    store = relay.store
    for name in ("get_session", "get_request", "add_request", "incr_counters"):
        if hasattr(store, name):
            real = getattr(store, name)

            def counting(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
                touched.append(_name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(store, name, counting)
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    with serve_app(build_app(relay)) as base:
        async with web.AsyncClient(base_url=base, timeout=10) as http:
            for _ in range(3):
                r = await http.post("/mcp/ZZZZ2345", json=message, headers=headers)
                assert r.status_code == 200, r.text
                [page] = r.json()["result"]["contents"]
                assert (page["uri"], page["mimeType"], page["text"]) == (
                    uri,
                    APP_MIME_TYPE,
                    APP_FILE.read_text("utf-8"),
                )
    assert touched == []
