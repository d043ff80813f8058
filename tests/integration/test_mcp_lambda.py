"""The MCP Lambda handler (functions/mcp/app.py) under moto, driven by the API Gateway events in events/:
initialize, tools/list, tools/call, warm, three rounds in a row on one imported module (one container).

The plugin's side runs in a thread through the relay's own plugin role (``relay.streams.open`` and
``relay.responses.respond``), as the stream and response functions would, against the same DynamoDB table.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from codap_relay.codes import hash_token
from codap_relay.records import SessionRecord
from codap_relay.relay import Relay
from codap_relay.store.dynamodb import DynamoStore
from codap_relay_tooling.testing import CHECKOUT, EVENTS
from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, new_table
from codap_relay_tooling.testing.lambda_context import LambdaContext
from codap_relay_tooling.testing.lambda_harness import function_env, load_function, unload_function

EVENT_CODE = "ABCD2345"  # the pairing code in the events' path
TOKEN = "mcp-test-browser-token"
HOST = "abc123.execute-api.us-east-1.amazonaws.com"
DATASETS = {"datasets": [{"name": "Mammals", "cases": 27}]}


def event(name: str, **header_overrides: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(EVENTS / f"{name}.json").read_text())
    for key, value in header_overrides.items():
        data["headers"][key] = value
        data["multiValueHeaders"][key] = [value]
    return data


class PluginThread:
    """Plays the browser through the relay's plugin role on its own loop, answering every tool request."""

    def __init__(self, relay: Relay, code: str, token: str) -> None:
        self.relay, self.code, self.token = relay, code, token
        self.connected = threading.Event()
        self.answered: list[str] = []
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        events = await self.relay.streams.open(self.code, self.token, None)
        self.connected.set()
        async for ev in events:
            if ev.event == "tool-request":
                self.answered.append(ev.data["id"])  # before answering: the handler returns as soon as it is
                await self.relay.responses.respond(self.code, self.token, ev.data["id"], result=DATASETS)
            elif ev.event in ("closed", "expired", "superseded"):
                return

    def __enter__(self) -> PluginThread:
        self.thread.start()
        assert self.connected.wait(10), "the plugin stream did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        # Ends the stream with `closed`; run on a private loop so the main thread's (Mangum's) stays current.
        closer = asyncio.new_event_loop()
        try:
            closer.run_until_complete(self.relay.sessions.close(self.code, self.token))
        finally:
            closer.close()
        self.thread.join(10)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The main thread's event loop, as the Lambda runtime leaves it for Mangum; the test's own calls share it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture
def function(monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop) -> Iterator[ModuleType]:
    with mock_aws():
        client = boto3.client("dynamodb", **CREDENTIALS)
        table = new_table(client)
        env = function_env(
            f"dynamodb://{table}",
            ALLOWED_HOSTS=HOST,
            MCP_TOOL_TIMEOUT_SECONDS="10",
            POLL_INTERVAL_SECONDS="0.05",
            HEARTBEAT_SECONDS="1",
        )
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.syspath_prepend(str(CHECKOUT / "functions" / "shared"))
        yield load_function(CHECKOUT, "mcp")
        unload_function("mcp")


def invoke(module: ModuleType, ev: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response: dict[str, Any] = module.handler(ev, LambdaContext(function_name="codap-relay-mcp"))
    raw = response.get("body") or ""
    if response.get("isBase64Encoded"):
        raw = base64.b64decode(raw).decode()
    body = json.loads(raw) if raw else {}
    return response["statusCode"], body


def create_event_session(relay: Relay) -> None:
    """The session the events refer to, as the plugin would have created it."""
    now = relay.clock.now()
    relay.store.create_session(SessionRecord(EVENT_CODE, hash_token(TOKEN), created_at=now, expires_at=now + 600))


def test_three_warm_invocations_in_a_row(function: ModuleType, loop: asyncio.AbstractEventLoop) -> None:
    relay = function.runtime.relay
    assert isinstance(relay.store, DynamoStore)
    create_event_session(relay)
    token = TOKEN
    with PluginThread(relay, EVENT_CODE, token) as plugin:
        for round_no in range(3):  # the same warm container serves every round
            status, body = invoke(function, event("mcp-initialize"))
            assert status == 200, body
            assert body["result"]["serverInfo"]["name"] == "codap-relay"
            assert body["result"]["capabilities"]["tools"] is not None

            status, body = invoke(function, event("mcp-tools-list"))
            assert status == 200, body
            tools = {t["name"]: t for t in body["result"]["tools"]}
            assert tools["get_codap_datasets"]["annotations"]["readOnlyHint"] is True

            status, body = invoke(function, event("mcp-tools-call"))
            assert status == 200, body
            result = body["result"]
            assert result.get("isError") is not True, result
            assert result["structuredContent"] == DATASETS
            assert json.loads(result["content"][0]["text"]) == DATASETS
            assert len(plugin.answered) == round_no + 1
        log = loop.run_until_complete(relay.log.items(EVENT_CODE, token))
    assert [item.request.tool for item in log] == ["get_codap_datasets"] * 3
    assert all(item.status == "completed" for item in log)


def test_host_outside_allowed_hosts_is_refused(function: ModuleType) -> None:
    status, body = invoke(function, event("mcp-tools-list", Host="evil.example"))
    assert status == 421
    assert body["error"] == "host_not_allowed" and "ALLOWED_HOSTS" in body["message"]


def test_expired_code_is_a_json_rpc_error_saying_to_get_a_new_code(function: ModuleType) -> None:
    status, body = invoke(function, event("mcp-initialize"))  # no session has this code in a fresh store
    assert status == 200
    assert body["error"]["data"]["error"] == "session_not_found"
    assert "plugin" in body["error"]["message"]


class SlowPluginThread(PluginThread):
    """Answers each request 2.5 s after it arrives."""

    async def _run(self) -> None:
        events = await self.relay.streams.open(self.code, self.token, None)
        self.connected.set()
        async for ev in events:
            if ev.event == "tool-request":
                await asyncio.sleep(2.5)
                self.answered.append(ev.data["id"])
                await self.relay.responses.respond(self.code, self.token, ev.data["id"], result=DATASETS)
            elif ev.event in ("closed", "expired", "superseded"):
                return


def test_progress_through_the_buffered_lambda_arrives_whole_with_the_result(function: ModuleType) -> None:
    """A tools/call with a progressToken from a client that accepts text/event-stream: the function answers a
    stream, which API Gateway (buffered) hands over whole at the end: the progress notifications, then the result,
    in one text/event-stream body. A call without a token is answered JSON, as before."""
    relay = function.runtime.relay
    create_event_session(relay)
    ev = event("mcp-tools-call")
    call = json.loads(ev["body"])
    call["params"]["_meta"] = {"progressToken": "p-1"}
    ev["body"] = json.dumps(call)
    with SlowPluginThread(relay, EVENT_CODE, TOKEN):
        response = function.handler(ev, LambdaContext(function_name="codap-relay-mcp"))
    assert response["statusCode"] == 200
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    assert headers["content-type"].startswith("text/event-stream")
    raw = response["body"] if not response.get("isBase64Encoded") else base64.b64decode(response["body"]).decode()
    messages = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:") and line[5:].strip()]
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert len(progress) >= 2 and all(m["params"]["progressToken"] == "p-1" for m in progress)
    assert "running in CODAP" in progress[-1]["params"]["message"]
    assert messages[-1]["id"] == call["id"] and messages[-1]["result"]["structuredContent"] == DATASETS
