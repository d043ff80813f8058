"""The push function (functions/push/app.py) and the publishing functions under moto, driven by the WebSocket API's
sample events (events/push-*.json), with the management API played by a small server on loopback: the boto3
publisher really posts, SigV4-signed with the (fake) credentials of the environment, and gets 410 for a gone
connection as API Gateway answers."""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.metrics.provider import cold_start
from moto import mock_aws
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from codap_relay.codes import hash_token
from codap_relay.records import DETACHED, SessionRecord, push_consumer
from codap_relay.store.dynamodb import DynamoStore
from codap_relay_tooling.testing import CHECKOUT, EVENTS
from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, new_table
from codap_relay_tooling.testing.lambda_context import LambdaContext as Context
from codap_relay_tooling.testing.lambda_harness import function_env, load_function, unload_function
from codap_relay_tooling.testing.servers import free_port, serve_app

CODE = "ABCD2345"  # the pairing code, browser token, tab and connection the sample events carry
TOKEN = "sample-browser-token-not-a-secret"
TAB = "tab-0123456789"
CONNECTION = "L0SM9cOFvHcCIhw="
FUNCTIONS = ("push", "request", "sessions")


@dataclass
class Call:
    method: str
    stage: str
    connection: str
    body: bytes
    authorization: str


@dataclass
class ManagementApi:
    """What the functions did to connections: every POST and DELETE, in order. ``gone`` answers 410."""

    calls: list[Call] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> Starlette:
        async def connection(request: Request) -> Response:
            call = Call(
                request.method,
                request.path_params["stage"],
                request.path_params["id"],
                await request.body(),
                request.headers.get("authorization", ""),
            )
            with self.lock:
                self.calls.append(call)
                if call.connection in self.gone:
                    # API Gateway's answer for a closed or unknown connection
                    return JSONResponse({"message": None}, 410, headers={"x-amzn-ErrorType": "GoneException"})
                if call.method == "DELETE":
                    self.gone.add(call.connection)
                    return Response(status_code=204)
            return Response(status_code=200)

        return Starlette(routes=[Route("/{stage}/@connections/{id}", connection, methods=["POST", "DELETE"])])

    def messages(self, connection: str = CONNECTION) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(c.body) for c in self.calls if c.method == "POST" and c.connection == connection]

    def take(self) -> list[Call]:
        with self.lock:
            calls, self.calls = self.calls, []
            return calls


def event(name: str, **changes: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    loaded.update(changes)
    return loaded


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    api = ManagementApi()
    port = free_port()
    # moto fakes every AWS call; the management API's go through to the server on loopback
    passthrough: Any = {"core": {"passthrough": {"urls": [rf"http://127\.0\.0\.1:{port}/.*"]}}}
    with serve_app(api.app(), port=port) as base, pytest.MonkeyPatch.context() as mp, mock_aws(config=passthrough):
        client = boto3.client("dynamodb", **CREDENTIALS)
        table = new_table(client)
        env = function_env(
            f"dynamodb://{table}",
            PUSH_URL=f"ws://127.0.0.1:{port}/v1",
            PUSH_ENDPOINT=f"{base}/v1",
            HEARTBEAT_SECONDS="1",
        )
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(CHECKOUT / "functions" / "shared"))
        modules = {name: load_function(CHECKOUT, name) for name in FUNCTIONS}
        yield {"client": client, "table": table, "modules": modules, "api": api}
        for name in FUNCTIONS:
            unload_function(name)
        # Powertools keeps "cold start" per process: the next module's functions start cold as these did
        cold_start.is_cold_start = True


@pytest.fixture
def api(aws: dict[str, Any]) -> ManagementApi:
    """A fresh table state (only the sample session) and an empty record of calls."""
    client, table = aws["client"], aws["table"]
    for page in client.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    DynamoStore(client, table).create_session(SessionRecord(CODE, hash_token(TOKEN), created_at=1e9, expires_at=4e9))
    manager: ManagementApi = aws["api"]
    manager.take()
    manager.gone.clear()
    return manager


def invoke(aws: dict[str, Any], function: str, ev: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = aws["modules"][function].handler(copy.deepcopy(ev), Context())
    return result


def session(aws: dict[str, Any]) -> SessionRecord:
    found = DynamoStore(aws["client"], aws["table"]).get_session(CODE)
    assert found is not None
    return found


def message(ev: dict[str, Any], **body: Any) -> dict[str, Any]:
    return {**ev, "body": json.dumps(body)}


def test_connect_attach_and_a_request_pushed_through_the_management_api(
    aws: dict[str, Any], api: ManagementApi
) -> None:
    assert invoke(aws, "push", event("push-connect")) == {"statusCode": 200}
    assert api.take() == []  # $connect posts nothing: the plugin authenticates in its first message
    assert invoke(aws, "push", event("push-attach")) == {"statusCode": 200}
    calls = api.take()
    assert [(c.method, c.stage, c.connection) for c in calls] == [("POST", "v1", CONNECTION)]
    assert json.loads(calls[0].body) == {"event": "resumed", "after": 0, "upTo": 0, "pingSeconds": 480}
    # SigV4 by boto3 with the function's credentials, for the management API's service and region
    assert calls[0].authorization.startswith("AWS4-HMAC-SHA256 Credential=")
    assert "/us-east-1/execute-api/aws4_request" in calls[0].authorization
    assert session(aws).consumer == push_consumer(TAB, CONNECTION)

    queued = invoke(aws, "request", event("request"))  # the request function publishes before its 202
    assert queued["statusCode"] == 202, queued["body"]
    pushed = api.messages()
    assert pushed == [{"event": "tool-request", "seq": 1, "id": "req-1", "tool": "get_codap_datasets", "args": {}}]

    ping = message(event("push-attach"), action="ping", after=1, code=CODE, token=TOKEN)
    assert invoke(aws, "push", ping) == {"statusCode": 200}
    assert api.messages()[-1] == {"event": "heartbeat"}
    # a frame sent as binary comes base64-encoded; it is read all the same
    raw = json.dumps({"action": "resume", "after": 0, "code": CODE, "token": TOKEN}).encode()
    resume = {**event("push-attach"), "body": base64.b64encode(raw).decode(), "isBase64Encoded": True}
    assert invoke(aws, "push", resume) == {"statusCode": 200}
    assert [m["event"] for m in api.messages()[-2:]] == ["tool-request", "resumed"]


def test_a_gone_connection_is_detached_and_the_request_waits(aws: dict[str, Any], api: ManagementApi) -> None:
    invoke(aws, "push", event("push-attach"))
    api.gone.add(CONNECTION)  # the tab went away; API Gateway answers 410
    queued = invoke(aws, "request", event("request"))
    assert queued["statusCode"] == 202, queued["body"]
    assert session(aws).consumer == DETACHED
    again = event("push-attach")
    again["requestContext"] = {**again["requestContext"], "connectionId": "NEWconnID1234Q="}
    invoke(aws, "push", again)
    assert [m["event"] for m in api.messages("NEWconnID1234Q=")] == ["tool-request", "resumed"]


def test_disconnect_detaches_and_bad_messages_get_errors(aws: dict[str, Any], api: ManagementApi) -> None:
    assert invoke(aws, "push", event("push-disconnect")) == {"statusCode": 200}  # never attached: nothing to do
    assert api.take() == [] and session(aws).consumer is None
    invoke(aws, "push", event("push-attach"))
    assert session(aws).consumer is not None and session(aws).consumer != DETACHED
    assert invoke(aws, "push", event("push-disconnect")) == {"statusCode": 200}
    assert session(aws).consumer == DETACHED  # at once, not after its missed pings
    api.take()
    assert invoke(aws, "push", {**event("push-attach"), "body": "hello"}) == {"statusCode": 200}
    assert [(m["event"], m["code"]) for m in api.messages()] == [("error", "bad_input")]
    wrong = message(event("push-attach"), action="attach", code=CODE, token="not-it", tab=TAB, after=None)
    assert invoke(aws, "push", wrong) == {"statusCode": 200}
    assert api.messages()[-1]["code"] == "token_invalid"
    assert [c.method for c in api.take()] == ["POST", "DELETE", "POST", "DELETE"]  # each closed


def test_ending_the_session_tells_the_connection_and_closes_it(aws: dict[str, Any], api: ManagementApi) -> None:
    invoke(aws, "push", event("push-attach"))
    api.take()
    assert invoke(aws, "sessions", event("sessions-delete"))["statusCode"] == 200
    calls = api.take()
    assert [(c.method, c.connection) for c in calls] == [("POST", CONNECTION), ("DELETE", CONNECTION)]
    assert json.loads(calls[0].body) == {"event": "closed"}
