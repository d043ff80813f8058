"""The MCP endpoint through the SDK's own client: in-process ASGI, a real uvicorn, and local-api (the deployed
shape: API Gateway, the MCP function in its own processes, DynamoDB Local); 2025 and 2026-07-28 modes.

A FakePlugin (an SSE client over real HTTP) plays the browser against the same relay in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from codap_relay.catalog import plugin_tools
from codap_relay.http.app import build_app
from codap_relay.mcp import tools as mcp_tools
from codap_relay.mcp.tools import SESSION_NOT_FOUND
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import bearer, serve_app

MODES = ["legacy", "2026-07-28"]
IN_PROCESS = ["asgi", "uvicorn"]
TRANSPORTS = [*IN_PROCESS, pytest.param("local_api", marks=pytest.mark.dynamodb_local)]
ASGI_BASE = "http://relay.test"
TOOL_TIMEOUT = 10  # a loaded machine may take seconds through the fake plugin; the timeout tests set their own

DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}
CODAP_ERROR = {"code": "not_found", "message": "Dataset 'Birds' does not exist in this document"}


async def codap(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the browser answers: an error for the dataset 'Birds', the dataset list, else an echo."""
    if args.get("datasetName") == "Birds":
        return {"error": CODAP_ERROR}
    if tool == "get_codap_datasets":
        return {"result": DATASETS}
    return {"result": {"tool": tool, "args": args}}


@pytest.fixture
def settings() -> Settings:
    result: Settings = make_settings(mcp_tool_timeout_seconds=TOOL_TIMEOUT)
    return result


class Live:
    """The relay under test: ``app`` in process (with ``base`` its uvicorn), or local-api's ``base`` alone."""

    def __init__(self, relay: Relay, app: Starlette | None, base: str) -> None:
        self.relay, self.app, self.base = relay, app, base
        self.http = web.AsyncClient(base_url=base, timeout=10)

    async def new_session(self) -> dict[str, Any]:
        r = await self.http.post("/api/sessions", json={})
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        return body

    def plugin(self, session: dict[str, Any]) -> FakePlugin:
        return FakePlugin.for_session(self.base, session, handler=codap, client=self.http)

    async def log(self, session: dict[str, Any]) -> list[dict[str, Any]]:
        r = await self.http.get(f"/api/sessions/{session['code']}/log", headers=bearer(session["browserToken"]))
        assert r.status_code == 200, r.text
        entries: list[dict[str, Any]] = r.json()["entries"]
        return entries

    @contextlib.asynccontextmanager
    async def mcp(
        self, transport: str, mode: str, path: str, headers: dict[str, str] | None = None
    ) -> AsyncIterator[Client]:
        if transport == "asgi":
            assert self.app is not None
            http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app), headers=headers, timeout=10)
            url = ASGI_BASE + path
        else:
            http = httpx2.AsyncClient(headers=headers, timeout=10)
            url = self.base + path
        async with (
            http,
            Client(
                streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=MCP_ANSWER_SECONDS
            ) as client,
        ):
            yield client


@pytest.fixture
async def live(request: pytest.FixtureRequest, relay: Relay) -> AsyncIterator[Live]:
    if "transport" in request.fixturenames and request.getfixturevalue("transport") == "local_api":
        deployed = Live(relay, None, request.getfixturevalue("local_api").base)
        async with deployed.http:
            yield deployed
        return
    app = build_app(relay)
    with serve_app(app) as base:
        server = Live(relay, app, base)
        async with server.http:
            yield server


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def rpc_error(excinfo: pytest.ExceptionInfo[BaseException]) -> MCPError:
    """The MCPError inside whatever the client wrapped it in (its task groups raise exception groups)."""
    exc: BaseException | None = excinfo.value
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    assert isinstance(exc, MCPError), repr(excinfo.value)
    return exc


# --- the seven behaviours, in every transport x protocol mode ----------------------------------------------


async def test_list_tools_gives_the_manifest_with_titles_and_annotations(live: Live, transport: str, mode: str) -> None:
    session = await live.new_session()
    async with live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    metadata = (await live.http.get("/metadata", params={"code": session["code"]})).json()
    assert list(tools) == [t["name"] for t in metadata["tools"]]
    for spec in metadata["tools"]:
        tool = tools[spec["name"]]
        assert tool.title and tool.annotations is not None and tool.annotations.title == tool.title
        assert tool.input_schema == spec["inputSchema"]
        assert tool.description == spec["description"]
        assert tool.annotations.open_world_hint is False
    for name in ("get_codap_datasets", "get_codap_status", "export_codap_data"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint is True
    for name in ("create_codap_dataset", "create_codap_graph", "add_codap_cases"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.read_only_hint is False and annotations.destructive_hint is False


async def test_call_returns_json_text_and_structured_content_and_is_logged(
    live: Live, transport: str, mode: str
) -> None:
    session = await live.new_session()
    async with live.plugin(session) as plugin, live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        listed = await client.call_tool("get_codap_datasets", {})
        echoed = await client.call_tool("get_codap_status", {"includeComponents": False})
    assert listed.is_error is False
    assert json.loads(text_of(listed)) == DATASETS
    assert listed.structured_content == DATASETS
    assert echoed.structured_content == {"tool": "get_codap_status", "args": {"includeComponents": False}}
    assert len(plugin.executed) == 2
    log = await live.log(session)
    assert [(e["tool"], e["status"]) for e in log] == [
        ("get_codap_datasets", "completed"),
        ("get_codap_status", "completed"),
    ]


async def test_browser_error_is_a_tool_error_with_codaps_message(live: Live, transport: str, mode: str) -> None:
    session = await live.new_session()
    async with live.plugin(session), live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        result = await client.call_tool("export_codap_data", {"datasetName": "Birds"})
    assert result.is_error is True
    assert CODAP_ERROR["message"] in text_of(result)
    assert result.structured_content == {"error": "not_found", "message": CODAP_ERROR["message"]}
    assert [e["status"] for e in await live.log(session)] == ["failed"]


@pytest.mark.parametrize("transport", IN_PROCESS)  # touches the relay and times out after 0.5 s: in process
async def test_timeout_names_the_request_and_how_to_check_it(
    live: Live, relay: Relay, transport: str, mode: str
) -> None:
    relay.reconfigure(settings=relay.settings.model_copy(update={"mcp_tool_timeout_seconds": 0.5}))
    session = await live.new_session()
    code = session["code"]
    await relay.presence.touch(await relay.sessions.for_llm(code))  # the plugin was seen just now, but never answers
    async with live.mcp(transport, mode, f"/mcp/{code}") as client:
        result = await client.call_tool(
            "create_codap_dataset", {"datasetName": "Heights", "dataType": "custom", "recordCount": 3}
        )
    text = text_of(result)
    assert result.is_error is True
    (entry,) = await live.log(session)
    request_id = entry["id"]
    assert request_id in text and "may still complete" in text and "not idempotent" in text
    check_url = next(word for word in text.split() if "/response?" in word)
    assert result.structured_content is not None
    assert result.structured_content["error"] == "timeout" and result.structured_content["requestId"] == request_id
    assert result.structured_content["check"] == check_url and result.structured_content["message"] == text
    assert check_url.startswith(live.base if transport == "uvicorn" else ASGI_BASE)
    path = check_url.split("://", 1)[1].split("/", 1)[1]
    pending = await live.http.get(f"/{path}")
    assert pending.status_code == 202 and pending.json()["id"] == request_id
    async with live.plugin(session) as plugin:  # the plugin comes back: the queued request still runs, once
        done = await live.http.get(f"/{path}&wait=10")
    assert done.status_code == 200 and done.json()["status"] == "completed"
    assert plugin.executed == [request_id]


@pytest.mark.parametrize("transport", IN_PROCESS)  # a fake clock
async def test_plugin_not_connected_fails_at_once_and_queues_nothing(
    live: Live, relay: Relay, clock: FakeClock, transport: str, mode: str
) -> None:
    never = await live.new_session()
    gone = await live.new_session()
    await relay.presence.touch(await relay.sessions.for_llm(gone["code"]))
    clock.advance(relay.settings.connected_grace_seconds + 1)  # last seen 31 s ago
    for session, phrase in ((never, "has not connected yet"), (gone, "was last seen 31 s ago")):
        async with live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
            result = await client.call_tool("get_codap_datasets", {})
        assert result.is_error is True
        text = text_of(result)
        assert phrase in text and "nothing was sent" in text and "open CODAP" in text
        assert result.structured_content == {"error": "plugin_not_connected", "message": text}
        assert await live.log(session) == []


async def test_an_unexpected_argument_names_the_ones_the_tool_takes(live: Live, transport: str, mode: str) -> None:
    r = await live.http.post("/api/sessions", json={"tools": list(plugin_tools())})
    session: dict[str, Any] = r.json()
    async with live.plugin(session) as plugin, live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        wrong = await client.call_tool("sort_codap_cases", {"datasetName": "x", "attribute": "y", "direction": "down"})
    assert wrong.is_error and "did you mean 'descending'" in text_of(wrong) and "maxCases" in text_of(wrong)
    assert wrong.structured_content is not None and wrong.structured_content["closest"] == "descending"
    assert "descending" in wrong.structured_content["available"]
    assert plugin.executed == []


async def test_bad_arguments_are_a_tool_error_naming_the_field(live: Live, transport: str, mode: str) -> None:
    session = await live.new_session()
    async with live.plugin(session) as plugin, live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        too_many = await client.call_tool(
            "create_codap_dataset", {"datasetName": "x", "dataType": "random_numbers", "recordCount": 5000}
        )
        missing = await client.call_tool("add_codap_cases", {"datasetName": "x"})
        wrong_type = await client.call_tool("get_codap_status", {"includeDatasets": "yes"})
    assert too_many.is_error and "recordCount" in text_of(too_many)
    assert too_many.structured_content is not None
    assert too_many.structured_content["error"] == "invalid_arguments"
    assert too_many.structured_content["path"] == "args.recordCount"
    assert missing.is_error and "'cases'" in text_of(missing)
    assert wrong_type.is_error and "includeDatasets" in text_of(wrong_type)
    assert plugin.executed == [] and await live.log(session) == []


async def test_unknown_code_is_a_json_rpc_error_saying_to_get_a_new_code(live: Live, transport: str, mode: str) -> None:
    with pytest.raises(BaseException) as excinfo:
        async with live.mcp(transport, mode, "/mcp/ABCDEFGH") as client:
            await client.list_tools()
    error = rpc_error(excinfo)
    assert error.code == SESSION_NOT_FOUND
    assert "plugin" in error.message and "code" in error.message
    assert error.data == {"error": "session_not_found", "reason": "unknown"}


# --- one-off behaviours -----------------------------------------------------------------------------------


async def test_unknown_tool_is_invalid_params(live: Live, mode: str) -> None:
    session = await live.new_session()
    async with live.mcp("asgi", mode, f"/mcp/{session['code']}") as client:
        with pytest.raises(MCPError) as excinfo:
            await client.call_tool("delete_everything", {})
    assert excinfo.value.code == types.INVALID_PARAMS
    assert "get_codap_datasets" in excinfo.value.message


async def test_expired_and_ended_codes_say_why(live: Live, relay: Relay, clock: FakeClock) -> None:
    ended = await live.new_session()
    r = await live.http.delete(f"/api/sessions/{ended['code']}", headers=bearer(ended["browserToken"]))
    assert r.status_code == 200
    expired = await live.new_session()
    clock.advance(relay.settings.session_ttl_seconds + 1)
    for session, reason in ((ended, "closed"), (expired, "expired")):
        with pytest.raises(BaseException) as excinfo:
            async with live.mcp("asgi", "legacy", f"/mcp/{session['code']}"):
                pass
        error = rpc_error(excinfo)
        assert error.code == SESSION_NOT_FOUND and error.data["reason"] == reason
        assert "new code" in error.message


async def test_bearer_code_on_plain_mcp_path(live: Live, mode: str) -> None:
    session = await live.new_session()
    async with (
        live.plugin(session),
        live.mcp("uvicorn", mode, "/mcp", headers={"Authorization": f"Bearer {session['code'].lower()}"}) as client,
    ):
        result = await client.call_tool("get_codap_datasets", {})
    assert result.structured_content == DATASETS


async def test_auto_mode_discovers_the_2026_protocol(live: Live) -> None:
    session = await live.new_session()
    async with live.mcp("uvicorn", "auto", f"/mcp/{session['code']}") as client:
        assert client.protocol_version == "2026-07-28"
        assert len((await client.list_tools()).tools) == 6


def initialize_body(version: str = "2025-06-18") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }


ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_raw_http_details(live: Live) -> None:
    session = await live.new_session()
    url = f"/mcp/{session['code']}"
    ok = await live.http.post(url, json=initialize_body(), headers=ACCEPT)
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in ok.headers  # stateless: there is no session to resume
    assert ok.json()["result"]["serverInfo"]["name"] == "codap-relay"
    for method in ("GET", "DELETE"):
        for path in (url, "/mcp"):
            r = await live.http.request(method, path, headers=ACCEPT)
            assert r.status_code == 405, (method, path)
            assert r.headers["allow"] == "POST" and r.json()["error"] == "method_not_allowed"
    # /mcp with neither code nor token is an OAuth protected resource: 401 and where discovery starts (RFC 9728)
    no_code = await live.http.post("/mcp", json=initialize_body(), headers=ACCEPT)
    assert no_code.status_code == 401 and no_code.json()["error"] == "token_required"
    assert 'resource_metadata="' in no_code.headers["www-authenticate"]
    assert "/mcp/CODE" in no_code.json()["message"]
    typo = await live.http.post("/mcp/NOT-A-C0DE", json=initialize_body(), headers=ACCEPT)
    assert "get a new one from the plugin" in typo.json()["error"]["message"]
    wrong_type = await live.http.post(url, content=json.dumps(initialize_body()), headers={**ACCEPT})
    assert wrong_type.status_code == 400 and wrong_type.json()["error"] == "unsupported_media_type"
    notification = await live.http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=ACCEPT
    )
    assert notification.status_code == 202


@pytest.fixture
def host_settings() -> Settings:
    result: Settings = make_settings(allowed_hosts="relay.example.org", cors_origin="https://codap.concord.org")
    return result


def test_allowed_hosts_come_from_settings(host_settings: Settings, clock: FakeClock) -> None:
    from codap_relay.store.memory import MemoryStore

    app = build_app(Relay(host_settings, MemoryStore(), clock=clock))
    with serve_app(app) as base:
        with web.Client(base_url=base) as http:
            code = http.post("/api/sessions", json={}).json()["code"]
            for host, origin, status in (
                ("relay.example.org", None, 200),
                ("relay.example.org:8443", None, 200),
                ("relay.example.org", "https://codap.concord.org", 200),
                ("127.0.0.1", None, 421),
                ("relay.example.org", "https://evil.example", 403),
            ):
                headers = {**ACCEPT, "Host": host, **({"Origin": origin} if origin else {})}
                r = http.post(f"/mcp/{code}", json=initialize_body(), headers=headers)
                assert r.status_code == status, (host, origin, r.text)
                if status != 200:
                    assert r.json()["message"], r.text


# --- calls that outlive the wait: progress and cancellation ------------------------------------------------


@pytest.mark.parametrize("transport", IN_PROCESS)
async def test_progress_arrives_while_a_call_waits_on_a_slow_plugin(
    live: Live, relay: Relay, transport: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tools/call with a progressToken, from a client that accepts text/event-stream, is answered with a stream:
    notifications/progress (the request's state: queued, then delivered to the plugin) come before the result."""
    relay.reconfigure(settings=relay.settings.model_copy(update={"mcp_tool_timeout_seconds": 10}))
    # Progress every 0.4 s instead of 2 (the call outlasts at least two of them either way): the test waits less.
    monkeypatch.setattr(mcp_tools, "PROGRESS_EVERY", 0.4)
    session = await live.new_session()

    async def slow(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(3 * mcp_tools.PROGRESS_EVERY)
        return {"result": DATASETS}

    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    plugin = FakePlugin.for_session(live.base, session, handler=slow, client=live.http)
    async with plugin, live.mcp(transport, mode, f"/mcp/{session['code']}") as client:
        result = await client.call_tool("get_codap_datasets", {}, progress_callback=on_progress)
        plain = await client.call_tool("get_codap_datasets", {})  # no token: JSON as before, nothing extra
    assert result.is_error is False and result.structured_content == DATASETS
    assert plain.is_error is False
    assert len(seen) >= 2, seen
    assert [done for done, _ in seen] == sorted({done for done, _ in seen})  # always increasing
    messages = [m or "" for _, m in seen]
    assert any("running in CODAP" in m for m in messages), messages
    assert all("Queued" in m or "Delivered" in m for m in messages)


async def ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    pass


@pytest.mark.parametrize("transport", IN_PROCESS)
async def test_a_cancelled_queued_request_never_runs(live: Live, relay: Relay, transport: str, mode: str) -> None:
    """notifications/cancelled comes in a POST of its own (stateless: perhaps another process): the relay finds the
    call's request in its store and withdraws it while the plugin has not received it, so it never runs. The SDK's
    client cancels when its own read timeout ends a call; the call streams (it asked for progress), so the cancel
    reaches the relay in both eras: 2025 as a POST, 2026-07-28 by closing the call's stream."""
    relay.reconfigure(settings=relay.settings.model_copy(update={"mcp_tool_timeout_seconds": 1.5}))
    session = await live.new_session()
    code = session["code"]
    await relay.presence.touch(await relay.sessions.for_llm(code))  # seen just now, but its stream is not open
    async with live.mcp(transport, mode, f"/mcp/{code}") as client:
        with pytest.raises(BaseException):  # noqa: B017 - the SDK's timeout, in whatever group wraps it
            await client.call_tool(
                "create_codap_dataset",
                {"datasetName": "Never", "dataType": "random_numbers", "recordCount": 3},
                read_timeout_seconds=0.8,
                progress_callback=ignore_progress,
            )
    for _ in range(100):  # the client's cancellation is a notification: it lands shortly after
        (entry,) = await live.log(session)
        if entry["status"] != "queued":
            break
        await asyncio.sleep(0.05)
    assert entry["status"] == "failed", entry
    answer = await live.http.get("/response", params={"code": code, "id": entry["id"]})
    assert answer.json()["error"]["code"] == "cancelled", answer.text
    async with live.plugin(session) as plugin:  # the plugin comes back: nothing is delivered to it
        await asyncio.sleep(0.5)
    assert plugin.executed == []
    # ... but its stream says the model withdrew it, for the plugin's activity log
    withdrawn = [e.json() for e in plugin.events if e.event == "withdrawn"]
    assert withdrawn == [
        {
            "id": entry["id"],
            "tool": "create_codap_dataset",
            "args": {"datasetName": "Never", "dataType": "random_numbers", "recordCount": 3},
        }
    ]


async def test_a_cancellation_posted_while_the_call_waits_withdraws_it_and_ends_the_wait(
    live: Live, relay: Relay
) -> None:
    """Two POSTs on two connections, as a stateless client (or two Lambda invocations) sends them: the call waits,
    the cancellation withdraws its request, the waiting call ends at once with the error ``cancelled``; the plugin,
    when it comes, never receives it. A cancellation names only the sender's own calls (its JSON-RPC id and
    address) and a running request is left to finish."""
    relay.reconfigure(settings=relay.settings.model_copy(update={"mcp_tool_timeout_seconds": 10}))
    session = await live.new_session()
    code = session["code"]
    await relay.presence.touch(await relay.sessions.for_llm(code))
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    args = {"datasetName": "Withdrawn", "dataType": "random_numbers", "recordCount": 3}
    call = {
        "jsonrpc": "2.0",
        "id": "call-7",
        "method": "tools/call",
        "params": {"name": "create_codap_dataset", "arguments": args},
    }
    waiting = asyncio.create_task(live.http.post(f"/mcp/{code}", json=call, headers=headers, timeout=20))
    for _ in range(100):
        if await live.log(session):
            break
        await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    other = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call-8"}}
    assert (await live.http.post(f"/mcp/{code}", json=other, headers=headers)).status_code == 202
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call-7", "reason": "no"}}
    assert (await live.http.post(f"/mcp/{code}", json=cancel, headers=headers)).status_code == 202
    answered = await waiting
    assert asyncio.get_running_loop().time() - started < 5  # not the 10 s wait
    result = answered.json()["result"]
    assert result["isError"] is True and result["structuredContent"]["error"] == "cancelled", result
    (entry,) = await live.log(session)
    assert entry["status"] == "failed"
    async with live.plugin(session) as plugin:
        await asyncio.sleep(0.5)
    assert plugin.executed == []
