"""The LLM-side tools against a live relay: the typed client, ``codap-relay call``, ``codap-relay mcp-stdio``
and ``/llms.txt`` followed literally. A FakePlugin plays the browser. Each runs against uvicorn in process and
through local-api (the deployed shape, on DynamoDB Local)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from codap_relay.client import AsyncRelayClient, RelayClient, RelayClientError
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import also_through_local_api
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.servers import serve_app

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


async def codap(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("datasetName") == "Birds":
        return {"error": {"code": "not_found", "message": "Dataset 'Birds' does not exist"}}
    if tool == "get_codap_datasets":
        return {"result": DATASETS}
    if tool == "export_codap_data":
        return {"result": "name,cases\nMammals,27\n"}
    return {"result": {"tool": tool, "args": args}}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    also_through_local_api(metafunc, "base", "uvicorn")


@pytest.fixture
def base(request: pytest.FixtureRequest, relay: Relay) -> Iterator[str]:
    if request.param == "local_api":
        yield request.getfixturevalue("local_api").base
        return
    with serve_app(build_app(relay)) as url:
        yield url


@pytest.fixture
async def session(base: str) -> dict[str, Any]:
    async with web.AsyncClient(base_url=base) as http:
        body: dict[str, Any] = (await http.post("/api/sessions", json={})).json()
    return body


@pytest.fixture
async def plugin(base: str, session: dict[str, Any]) -> AsyncIterator[FakePlugin]:
    async with FakePlugin.for_session(base, session, handler=codap) as p:
        yield p


async def test_async_client_round_trip(base: str, session: dict[str, Any], plugin: FakePlugin) -> None:
    async with AsyncRelayClient(base, session["code"].lower()) as client:
        assert next(t["name"] for t in await client.tools()) == "create_codap_dataset"
        status = await client.status()
        assert status.connected is True and status.code == session["code"]
        done = await client.call("get_codap_datasets", {}, wait=10)
        assert done.ok and done.result == DATASETS
        failed = await client.call("export_codap_data", {"datasetName": "Birds"}, wait=10)
        assert failed.done and not failed.ok and failed.error is not None
        assert failed.error["message"] == "Dataset 'Birds' does not exist"
        again = await client.response(done.id)
        assert again == done
        with pytest.raises(RelayClientError) as excinfo:
            await client.request("create_codap_dataset", {"datasetName": "x"})
        assert excinfo.value.status == 400 and excinfo.value.error == "invalid_arguments"


async def test_sync_client_pending_then_done(base: str, session: dict[str, Any]) -> None:
    with RelayClient(base, session["code"]) as client:
        pending = await asyncio.to_thread(client.request, "get_codap_status", {}, request_id="status-1")
        assert not pending.done and pending.status == "queued"
        with pytest.raises(RelayClientError) as excinfo:
            await asyncio.to_thread(RelayClient(base, "ABCDEFGH").metadata)
        assert excinfo.value.status == 404 and "plugin" in excinfo.value.message
        async with FakePlugin.for_session(base, session, handler=codap):
            done = await asyncio.to_thread(client.response, "status-1", wait=10)
        assert done.ok and done.result == {"tool": "get_codap_status", "args": {}}


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codap_relay.cli", *args], capture_output=True, text=True, timeout=timeout
    )


async def test_call_command(base: str, session: dict[str, Any], plugin: FakePlugin) -> None:
    code = session["code"]
    ok = await asyncio.to_thread(cli, "call", "--url", base, "--code", code, "get_codap_datasets", "{}")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == DATASETS
    csv = await asyncio.to_thread(
        cli, "call", "--url", base, "--code", code, "export_codap_data", '{"datasetName": "M"}'
    )
    assert csv.returncode == 0 and csv.stdout == "name,cases\nMammals,27\n\n"
    failed = await asyncio.to_thread(
        cli, "call", "--url", base, "--code", code, "export_codap_data", '{"datasetName": "Birds"}'
    )
    assert failed.returncode == 1 and "Dataset 'Birds' does not exist" in failed.stderr
    bad = await asyncio.to_thread(
        cli, "call", "--url", base, "--code", code, "add_codap_cases", '{"datasetName": 1, "cases": []}'
    )
    assert bad.returncode == 1 and "invalid_arguments" in bad.stderr and "datasetName" in bad.stderr
    usage = await asyncio.to_thread(cli, "call", "--url", base, "--code", code, "get_codap_datasets", "{nope")
    assert usage.returncode == 2 and "JSON object" in usage.stderr
    tools = await asyncio.to_thread(cli, "call", "--url", base, "--code", code, "tools")
    assert tools.returncode == 0 and len(json.loads(tools.stdout)) == 6


def test_call_command_pending_exit_code(base: str, session: dict[str, Any]) -> None:
    run = cli("call", "--url", base, "--code", session["code"], "--wait", "0", "get_codap_datasets")
    assert run.returncode == 3
    assert re.search(r"request [0-9a-z-]+ yet", run.stderr), run.stderr


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_stdio_bridge(base: str, session: dict[str, Any], plugin: FakePlugin, mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codap_relay.cli", "mcp-stdio", "--url", f"{base}/mcp/{session['code']}"]
    )
    async with Client(params, mode=mode, read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) == 6 and tools[3].annotations is not None and tools[3].annotations.read_only_hint
        result = await client.call_tool("get_codap_datasets", {})
        assert result.structured_content == DATASETS
        error = await client.call_tool("export_codap_data", {"datasetName": "Birds"})
        assert error.is_error is True
        bad = await client.call_tool("add_codap_cases", {"datasetName": "x"})
        assert bad.is_error is True and "'cases'" in bad.content[0].text  # type: ignore[union-attr]
        # Beyond tools: the bridge passes resources, prompts and completion on as the relay serves them.
        if mode == "legacy":  # instructions come with the handshake, which 2026-07-28 has none of
            assert client.instructions and "CODAP" in client.instructions
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"codap://datasets", "codap://components"} <= uris
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "codap://datasets/{name}/cases" in templates
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert len(prompts) >= 6 and "compare_groups" in prompts
        rendered = await client.get_prompt("explore_dataset", {"datasetName": "Mammals"})
        assert "Mammals" in rendered.messages[0].content.text  # type: ignore[union-attr]


async def test_mcp_stdio_passes_on_the_relays_errors(base: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "codap_relay.cli", "mcp-stdio", "--url", f"{base}/mcp", "--code", "ABCDEFGH"],
    )
    async with Client(params, mode="legacy", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        with pytest.raises(MCPError) as excinfo:
            await client.list_tools()
    assert "open the codap-relay plugin" in excinfo.value.message
    unreachable = StdioServerParameters(
        command=sys.executable, args=["-m", "codap_relay.cli", "mcp-stdio", "--url", "http://127.0.0.1:9/mcp/ABCDEFGH"]
    )
    async with Client(unreachable, mode="legacy", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        with pytest.raises(MCPError) as excinfo:
            await client.list_tools()
    assert excinfo.value.code == types.INTERNAL_ERROR
    assert "Cannot reach the CODAP relay at http://127.0.0.1:9" in excinfo.value.message
    assert "ABCDEFGH" not in excinfo.value.message


async def test_llms_txt_followed_literally(base: str, session: dict[str, Any], plugin: FakePlugin) -> None:
    """Do exactly what the text says, with the URLs it gives, as an LLM with an HTTP tool would."""
    code = session["code"]
    async with web.AsyncClient() as http:
        page = await http.get(f"{base}/llms.txt", params={"code": code.lower()})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
        text = page.text
        metadata_url = re.search(r"^GET (\S+/metadata\S*)$", text, re.M)
        post_url = re.search(r"^POST (\S+/request\S*)$", text, re.M)
        body = re.search(r'^(\{"code": .*\})$', text, re.M)
        response_url = re.search(r"^GET (\S+/response\S*)$", text, re.M)
        assert metadata_url and post_url and body and response_url, text
        tools = (await http.get(metadata_url.group(1))).json()["tools"]
        assert len(tools) == 6
        done = await http.post(post_url.group(1), json=json.loads(body.group(1)))
        assert done.status_code == 200 and done.json()["result"] == DATASETS
        read_back = await http.get(response_url.group(1).replace("REQUEST_ID", done.json()["id"]))
        assert read_back.status_code == 200 and read_back.json()["result"] == DATASETS
