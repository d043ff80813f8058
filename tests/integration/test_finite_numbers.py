"""Numbers JSON cannot hold (``1e999``, which Python's json reads as infinity, and NaN) are refused in every body the
relay parses, with the field named, and nothing is stored (security issue 31: a request holding one was queued with
202, reached the plugin as ``Infinity`` it could not parse, and made the activity log's trace view and every
``GET /response`` of an answer holding one answer 500). Each test that takes ``client`` also runs through local-api
(the Lambda functions behind API Gateway's shape)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import pytest

from codap_relay.delivery import StreamEvent
from codap_relay.errors import BadInput, NonFiniteNumber
from codap_relay.http.app import build_app
from codap_relay.http.sse import encode
from codap_relay.jsonvalues import check_finite, dumps, loads
from codap_relay.relay import Relay
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import also_through_local_api
from codap_relay_tooling.testing.servers import serve_app

JSON = {"content-type": "application/json"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    also_through_local_api(metafunc, "client", "asgi")


def auth(session: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {session['browserToken']}", **JSON}


def refused_for(r: httpx.Response, field: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert (body["error"], body["field"]) == ("non_finite_number", field), body
    assert field in body["message"] and "finite" in body["message"]


async def test_a_request_holding_1e999_is_refused_naming_the_field_and_nothing_is_queued(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    code = session["code"]
    raw = (
        f'{{"code": "{code}", "id": "inf-1", "tool": "add_codap_cases", '
        '"args": {"datasetName": "s", "cases": [{"x": 0}, {"x": 1}, {"x": 1e999}]}}'
    )
    refused_for(await client.post("/request", content=raw, headers=JSON), "args.cases[2].x")
    minus = raw.replace("1e999", "-1E400").replace("inf-1", "inf-2")
    refused_for(await client.post("/request?wait=1", content=minus, headers=JSON), "args.cases[2].x")
    for rid in ("inf-1", "inf-2"):
        assert (await client.get("/response", params={"code": code, "id": rid})).status_code == 404
    status = (await client.get(f"/api/sessions/{code}")).json()
    assert status["pending"] == 0
    # the activity log's trace view has nothing it cannot write
    page = await client.get(f"/api/sessions/{code}/log", params={"view": "trace"}, headers=auth(session))
    assert page.status_code == 200 and page.json()["entries"] == []


async def test_a_plugin_answer_holding_1e999_is_refused_and_the_request_stays_readable(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    code = session["code"]
    r = await client.post("/request", json={"code": code, "id": "ans-1", "tool": "get_codap_datasets", "args": {}})
    assert r.status_code == 202, r.text
    raw = f'{{"code": "{code}", "id": "ans-1", "result": {{"datasets": [{{"name": "a", "mean": 1e999}}]}}}}'
    refused_for(
        await client.post(f"/response?code={code}", content=raw, headers=auth(session)), "result.datasets[0].mean"
    )
    error = f'{{"code": "{code}", "id": "ans-1", "error": {{"message": "x", "data": {{"odd key": -1e999}}}}}}'
    refused_for(
        await client.post(f"/response?code={code}", content=error, headers=auth(session)), 'error.data["odd key"]'
    )
    r = await client.get("/response", params={"code": code, "id": "ans-1"})
    assert r.status_code == 202 and r.json()["status"] == "queued"  # still the plugin's to answer, not a 500
    for view in ({"view": "trace"}, {"full": "1"}):
        page = await client.get(f"/api/sessions/{code}/log", params=view, headers=auth(session))
        assert page.status_code == 200, page.text
    ok = await client.post(
        "/response", json={"code": code, "id": "ans-1", "result": {"mean": 1e308}}, headers=auth(session)
    )
    assert ok.status_code == 202
    assert (await client.get("/response", params={"code": code, "id": "ans-1"})).json()["result"] == {"mean": 1e308}


async def test_the_mcp_endpoint_refuses_1e999_in_tool_arguments_with_invalid_params(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    code = session["code"]
    raw = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add_codap_cases", '
        '"arguments": {"datasetName": "s", "cases": [{"x": 1e999}]}}}'
    )
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18", **JSON}
    r = await client.post(f"/mcp/{code}", content=raw, headers=headers)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["id"] == 7 and body["error"]["code"] == -32602
    assert body["error"]["data"] == {"error": "non_finite_number", "field": "params.arguments.cases[0].x"}
    assert (await client.get(f"/api/sessions/{code}")).json()["pending"] == 0


@pytest.mark.in_process
async def test_the_core_refuses_non_finite_numbers_from_any_entry_point(relay: Relay, session: dict[str, Any]) -> None:
    """What a path that parsed on its own (the MCP SDK, a Lambda event) hands the relay is checked again."""
    code, token = session["code"], session["browserToken"]
    with pytest.raises(NonFiniteNumber) as refused:
        await relay.queue.submit(code, "get_codap_datasets", {"a": [float("nan")]})
    assert refused.value.data["field"] == "args.a[0]"
    record, _ = await relay.queue.submit(code, "get_codap_datasets", {}, "core-1")
    with pytest.raises(NonFiniteNumber) as refused:
        await relay.responses.respond(code, token, record.id, result={"x": float("-inf")})
    assert refused.value.data["field"] == "result.x"
    answer = await relay.responses.answer(code, record.id)
    assert answer.response is None


def test_the_parse_helper_names_the_field_and_the_writer_never_writes_infinity() -> None:
    with pytest.raises(NonFiniteNumber) as refused:
        loads('{"a": {"b c": [1, 2e400]}}', root="body")
    assert refused.value.data["field"] == 'body.a["b c"][1]'
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(BadInput, match="nested too deeply"):
        loads(deep)
    nested: Any = 1e999
    for _ in range(5000):  # deeper than the recursion limit: the check is iterative
        nested = [nested]
    with pytest.raises(NonFiniteNumber):
        check_finite(nested)
    with pytest.raises(ValueError):
        dumps({"x": float("inf")})
    assert json.loads(dumps({"x": 1.5})) == {"x": 1.5}


def test_the_event_stream_never_writes_infinity() -> None:
    """The SSE framing writes with ``dumps`` like every other writer: a number that got in some other way fails
    where it is written, never reaching the plugin as ``Infinity``."""
    with pytest.raises(ValueError):
        encode(StreamEvent(event="tool-request", data={"args": {"x": float("inf")}}, id="1"))


@pytest.mark.in_process
async def test_the_stdio_bridge_refuses_1e999_instead_of_sending_it_on_as_null(relay: Relay) -> None:
    """The bridge's SDK reads ``1e999`` as infinity and would write it to the relay as ``null``: a different call."""
    with serve_app(build_app(relay)) as base:
        code = web.post(f"{base}/api/sessions", json={}).json()["code"]
        bridge = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "codap_relay.cli", "mcp-stdio", "--url", f"{base}/mcp/{code}",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert bridge.stdin is not None and bridge.stdout is not None
        try:
            lines = [
                '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
                '"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}',
                '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
                '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add_codap_cases", '
                '"arguments": {"datasetName": "s", "cases": [{"x": 1e999}]}}}',
            ]
            bridge.stdin.write(("\n".join(lines) + "\n").encode())
            await bridge.stdin.drain()
            answers: dict[Any, Any] = {}
            async with asyncio.timeout(60):
                while 2 not in answers:
                    message = json.loads(await bridge.stdout.readline())
                    answers[message.get("id")] = message
        finally:
            bridge.kill()
            await bridge.wait()
    error = answers[2]["error"]
    assert error["code"] == -32602 and error["data"] == {"error": "non_finite_number", "field": "arguments.cases[0].x"}
    assert await relay.queue.pending_ids(code, "") == []  # nothing reached the relay's queue
