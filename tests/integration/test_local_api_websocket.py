"""``codap-relay local-api``'s WebSocket API (the push channel), on local-api's own test stack with
PushChannel=websocket (tests/integration/local_api_stack): its RecorderFunction writes down every event it gets.
Real processes and sockets: the command as a child process, a websockets client, boto3's management API client."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from codap_relay_tooling.localapi.template import read_stack
from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.commands import local_api_process
from codap_relay_tooling.testing.servers import ServerProcess, descendants, free_port

TEMPLATE = Path(__file__).resolve().parent / "local_api_stack" / "template.yaml"
KB = 1024
IDLE_S, MAX_S = 4.0, 8.0  # the stack's connection timeouts (API Gateway's are 600 and 7200 s)
CONNECTION_ID = re.compile(r"[A-Za-z0-9+/]{15}=")
# requestContext of a WebSocket Lambda proxy event, as API Gateway documents and sends it
CONTEXT_KEYS = {
    "routeKey",
    "messageId",
    "eventType",
    "extendedRequestId",
    "requestTime",
    "messageDirection",
    "stage",
    "connectedAt",
    "requestTimeEpoch",
    "identity",
    "requestId",
    "domainName",
    "connectionId",
    "apiId",
}


@dataclass(frozen=True)
class Push:
    rest: str  # the REST stage: http://127.0.0.1:R/test
    url: str  # ws://127.0.0.1:P/test
    endpoint: str  # http://127.0.0.1:P/test
    process: ServerProcess
    log: Path

    def records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def wait_for(self, what: Callable[[dict[str, Any]], bool], count: int = 1, timeout: float = 15) -> list[Any]:
        """The recorded invocations ``what`` accepts, once there are ``count`` of them."""
        deadline = time.monotonic() + timeout
        while True:
            found = [r for r in self.records() if what(r)]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) >= count, f"{len(found)} of {count} invocations after {timeout} s"
                return found
            time.sleep(0.02)

    def opened(self, marker: str) -> dict[str, Any]:
        """The $connect event of the connection opened with ``?t=marker``."""
        [record] = self.wait_for(lambda r: (r["event"].get("queryStringParameters") or {}).get("t") == marker)
        event: dict[str, Any] = record["event"]
        return event

    def of(self, connection: str, kind: str, count: int = 1) -> list[dict[str, Any]]:
        records = self.wait_for(
            lambda r: (
                r["event"]["requestContext"]["connectionId"] == connection
                and r["event"]["requestContext"]["eventType"] == kind
            ),
            count,
        )
        return records

    def manager(self, *, signed: bool = True) -> Any:
        config = botocore.config.Config(retries={"max_attempts": 1})
        if not signed:
            config = config.merge(botocore.config.Config(signature_version=botocore.UNSIGNED))
        return boto3.client(
            "apigatewaymanagementapi",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",  # any: local-api wants a signature, as AWS does, and does not check it
            aws_secret_access_key="local",
            config=config,
        )


@pytest.fixture(scope="module")
def push(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Push]:
    folder = tmp_path_factory.mktemp("local-api-push")
    log = folder / "events.jsonl"
    port = free_port()
    args = ["--template", str(TEMPLATE), "--store", f"sqlite:///{folder / 'relay.db'}"]
    args += ["--push-channel", "websocket", "--push-port", str(port)]
    args += ["--push-idle-timeout", str(IDLE_S), "--push-max-lifetime", str(MAX_S)]
    env = {**os.environ, "RECORDER_LOG": str(log)}
    with local_api_process(*args, env=env, prefix="/test") as (rest, process):
        yield Push(rest, f"ws://127.0.0.1:{port}/test", f"http://127.0.0.1:{port}/test", process, log)


@contextlib.contextmanager
def open_socket(push: Push, query: str = "", **kwargs: Any) -> Iterator[tuple[ClientConnection, str, dict[str, Any]]]:
    """A connection, its id and its $connect event."""
    marker = uuid.uuid4().hex
    with connect(f"{push.url}?t={marker}{query}", open_timeout=20, max_size=None, **kwargs) as ws:
        event = push.opened(marker)
        yield ws, event["requestContext"]["connectionId"], event


def closed_with(ws: ClientConnection, timeout: float = 10) -> int | None:
    """The close code the server sent, once the connection is closed."""
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=timeout)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


# --- the template ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("channel", ["sse", "websocket"])
def test_the_relays_push_channel_is_read_from_its_template_only_when_on(channel: str) -> None:
    stack = read_stack(CHECKOUT / "template.yaml", parameters={"PushChannel": channel, "StageName": "s1"})
    api = stack.socket_api
    if channel == "sse":
        assert api is None and "PushFunction" not in stack.functions
        assert {f.environment["PUSH_URL"] for f in stack.functions.values()} == {""}
        return
    assert api is not None and api.stage == "s1" and api.route_selection_expression == "$request.body.action"
    assert {key: (r.function, r.two_way) for key, r in api.routes.items()} == {
        key: ("PushFunction", False) for key in ("$connect", "$disconnect", "$default")
    }
    assert api.throttle is not None and api.throttle.rate_per_second > 0
    for function in stack.functions.values():  # every function can find the channel (local-api replaces them)
        assert function.environment["PUSH_URL"] == "wss://PushApi.execute-api.us-east-1.amazonaws.com/s1"
        assert function.environment["PUSH_ENDPOINT"] == "https://PushApi.execute-api.us-east-1.amazonaws.com/s1"
    assert stack.functions["PushFunction"].memory_mb == 128


# --- the events each route gets -------------------------------------------------------------------------


def test_connect_message_and_disconnect_events_are_api_gateways(push: Push) -> None:
    with open_socket(push, "&x=1&x=2", additional_headers={"X-Test": "a"}) as (ws, connection, event):
        talk_through_the_routes(push, ws, connection, event)
    context = event["requestContext"]
    [gone] = push.of(connection, "DISCONNECT")
    ended = gone["event"]["requestContext"]
    assert (ended["routeKey"], ended["disconnectStatusCode"], ended["connectedAt"]) == (
        "$disconnect",
        1000,
        context["connectedAt"],
    )


def talk_through_the_routes(push: Push, ws: ClientConnection, connection: str, event: dict[str, Any]) -> None:
    assert CONNECTION_ID.fullmatch(connection), connection
    assert set(event) == {
        "requestContext",
        "headers",
        "multiValueHeaders",
        "queryStringParameters",
        "multiValueQueryStringParameters",
        "isBase64Encoded",
    }
    context = event["requestContext"]
    assert set(context) >= CONTEXT_KEYS
    assert (context["routeKey"], context["eventType"], context["messageDirection"]) == ("$connect", "CONNECT", "IN")
    assert (context["stage"], context["domainName"]) == ("test", push.url.split("/")[2])
    assert context["identity"]["sourceIp"] == "127.0.0.1" and context["messageId"] is None
    assert (
        abs(context["connectedAt"] / 1000 - time.time()) < 60 and context["requestTimeEpoch"] >= context["connectedAt"]
    )
    headers = event["headers"]
    assert headers["x-test"] == "a" and headers["sec-websocket-version"] == "13" and "sec-websocket-key" in headers
    assert headers["x-forwarded-for"] == "127.0.0.1" and headers["x-amzn-trace-id"].startswith("Root=1-")
    assert "upgrade" not in headers and "connection" not in headers  # hop-by-hop: not the integration's
    assert event["multiValueQueryStringParameters"]["x"] == ["1", "2"] and event["queryStringParameters"]["x"] == "2"
    assert event["isBase64Encoded"] is False

    ws.send('{"hello": "é"}')  # no action: $default, a one-way route
    [message] = push.of(connection, "MESSAGE")
    got = message["event"]
    assert set(got) == {"requestContext", "body", "isBase64Encoded"}
    assert (got["body"], got["isBase64Encoded"]) == ('{"hello": "é"}', False)
    inner = got["requestContext"]
    assert set(inner) >= CONTEXT_KEYS and isinstance(inner["messageId"], str)
    assert (inner["routeKey"], inner["eventType"], inner["connectedAt"]) == (
        "$default",
        "MESSAGE",
        context["connectedAt"],
    )
    # The selection expression ($request.body.action) picks the two-way "echo" route, whose answer comes
    # back; the $default answer before it did not (the first frame is the echo's).
    ws.send('{"action": "echo", "n": 2}')
    assert json.loads(ws.recv(timeout=15)) == {"echo": '{"action": "echo", "n": 2}'}
    routes = [r["event"]["requestContext"]["routeKey"] for r in push.of(connection, "MESSAGE", 2)]
    assert routes == ["$default", "echo"]
    ws.send(b"\x00\xff")  # a binary frame reaches the function in base64
    binary = push.of(connection, "MESSAGE", 3)[-1]["event"]
    assert (binary["body"], binary["isBase64Encoded"]) == ("AP8=", True)


def test_a_connect_answered_non_2xx_is_refused_with_its_status(push: Push) -> None:
    marker = uuid.uuid4().hex
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{push.url}?t={marker}&refuse=401", open_timeout=20)
    assert refused.value.response.status_code == 401
    connection = push.opened(marker)["requestContext"]["connectionId"]
    with pytest.raises(push.manager().exceptions.GoneException):  # never opened: nothing to post to
        push.manager().post_to_connection(ConnectionId=connection, Data=b"x")
    # Other paths are not the API's stage, and the REST stage's port does not upgrade.
    with pytest.raises(InvalidStatus) as elsewhere:
        connect(push.url.replace("/test", "/other"), open_timeout=20)
    assert elsewhere.value.response.status_code == 403
    with pytest.raises(InvalidStatus) as rest:
        connect(push.rest.replace("http://", "ws://"), open_timeout=20)
    assert rest.value.response.status_code == 403


def test_a_failed_invocation_tells_the_client_and_the_connection_stays(push: Push) -> None:
    with open_socket(push) as (ws, connection, _):
        ws.send('{"do": "fail"}')
        said = json.loads(ws.recv(timeout=15))
        assert said["message"] == "Internal server error" and said["connectionId"] == connection
        ws.send('{"action": "echo"}')
        assert json.loads(ws.recv(timeout=15)) == {"echo": '{"action": "echo"}'}
    assert "ValueError: asked to fail" in push.process.output()


def test_a_message_nested_too_deeply_to_select_a_route_goes_to_default_and_the_connection_stays(push: Push) -> None:
    """API Gateway cannot read a route key out of it, so $default gets it, as any body that is not JSON; local-api
    raised instead (security issue 31) and never passed it on."""
    deep = '{"action": ' + "[" * 20_000 + "]" * 20_000 + "}"
    with open_socket(push) as (ws, connection, _):
        ws.send(deep)
        [record] = push.of(connection, "MESSAGE")
        assert record["event"]["requestContext"]["routeKey"] == "$default" and record["event"]["body"] == deep
        ws.send('{"action": "echo"}')
        assert json.loads(ws.recv(timeout=15)) == {"echo": '{"action": "echo"}'}


# --- the @connections management API -------------------------------------------------------------------


def test_the_management_api_posts_describes_and_deletes(push: Push) -> None:
    manager = push.manager()
    with open_socket(push, additional_headers={"User-Agent": "codap-test"}) as (ws, connection, event):
        post_describe_and_delete(push, ws, connection, event)
    for call in (manager.post_to_connection, manager.get_connection, manager.delete_connection):
        kwargs: dict[str, Any] = {"ConnectionId": connection}
        if call == manager.post_to_connection:
            kwargs["Data"] = b"x"
        with pytest.raises(manager.exceptions.GoneException):
            call(**kwargs)
    assert "closed by DELETE @connections" in push.process.output()


def post_describe_and_delete(push: Push, ws: ClientConnection, connection: str, event: dict[str, Any]) -> None:
    manager = push.manager()
    manager.post_to_connection(ConnectionId=connection, Data=b'{"event": "heartbeat"}')
    assert ws.recv(timeout=10) == '{"event": "heartbeat"}'
    info = manager.get_connection(ConnectionId=connection)
    assert info["Identity"] == {"SourceIp": "127.0.0.1", "UserAgent": "codap-test"}
    assert abs(info["ConnectedAt"].timestamp() * 1000 - event["requestContext"]["connectedAt"]) < 2
    assert info["LastActiveAt"] >= info["ConnectedAt"]
    # 128 KB is the most one message may hold.
    most = ("x" * (128 * KB)).encode()
    manager.post_to_connection(ConnectionId=connection, Data=most)
    assert len(ws.recv(timeout=10)) == 128 * KB
    with pytest.raises(manager.exceptions.PayloadTooLargeException):
        manager.post_to_connection(ConnectionId=connection, Data=most + b"x")
    # Unsigned: refused as by AWS's IAM-authorised API (the signature itself is not checked).
    with pytest.raises(botocore.exceptions.ClientError) as unsigned:
        push.manager(signed=False).post_to_connection(ConnectionId=connection, Data=b"x")
    assert unsigned.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # The function posts through PUSH_ENDPOINT from its own process, as the relay publishes.
    ws.send('{"do": "post", "text": "from the function"}')
    assert json.loads(ws.recv(timeout=15)) == {"posted": "from the function"}
    [message] = push.of(connection, "MESSAGE")
    assert message["push"] == {"PUSH_URL": push.url, "PUSH_ENDPOINT": push.endpoint}

    manager.delete_connection(ConnectionId=connection)
    assert closed_with(ws) == 1000
    [gone] = push.of(connection, "DISCONNECT")
    assert gone["event"]["requestContext"]["disconnectStatusCode"] == 1000


# --- limits and lifetimes ------------------------------------------------------------------------------------


def test_messages_up_to_128_kb_in_any_frames_pass_and_a_bigger_one_closes_with_1009(push: Push) -> None:
    with open_socket(push) as (ws, connection, _):
        # One message in five frames, four of them over API Gateway's 32 KB frame size: joined, as AWS joins them.
        ws.send(iter(["a" * (40 * KB)] * 3 + ["b" * (8 * KB - 1), "c"]))
        [message] = push.of(connection, "MESSAGE")
        assert len(message["event"]["body"]) == 128 * KB and message["event"]["body"].endswith("bc")
        ws.send("x" * (128 * KB + 1))
        assert closed_with(ws) == 1009
    [gone] = push.of(connection, "DISCONNECT")
    assert gone["event"]["requestContext"]["disconnectStatusCode"] == 1009
    assert len(push.of(connection, "MESSAGE")) == 1


def test_idle_connections_and_old_ones_are_closed(push: Push) -> None:
    with open_socket(push) as (idle, idle_id, _), open_socket(push) as (busy, busy_id, _):
        close_for_age(idle, busy)
    for connection in (idle_id, busy_id):
        [gone] = push.of(connection, "DISCONNECT")
        assert gone["event"]["requestContext"]["disconnectStatusCode"] == 1001


def close_for_age(idle: ClientConnection, busy: ClientConnection) -> None:
    started = time.monotonic()

    def keep_talking() -> float:
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                busy.send('{"action": "echo"}')
                busy.recv(timeout=10)
                time.sleep(1)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        return time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        talker = pool.submit(keep_talking)
        assert closed_with(idle, timeout=IDLE_S + 10) == 1001
        idle_after = time.monotonic() - started
        busy_after = talker.result(timeout=MAX_S + 20)
    assert IDLE_S - 0.5 < idle_after < IDLE_S + 3, idle_after  # from its last message: it sent none
    assert MAX_S - 2.5 < busy_after < MAX_S + 3, busy_after  # talking all along, closed at its age limit


# --- isolation ----------------------------------------------------------------------------------------------


def test_each_invocation_runs_in_a_function_process_and_messages_do_not_wait_for_each_other(push: Push) -> None:
    with open_socket(push) as (ws, connection, _):
        ws.send('{"do": "sleep", "s": 2.5}')
        ws.send('{"do": "sleep", "s": 2.5}')
        first, second = push.of(connection, "MESSAGE", 2)
        # Two at once need two execution environments; the second did not wait for the first one's 2.5 s.
        assert first["pid"] != second["pid"] and abs(second["at"] - first["at"]) < 2.5
    local_api = push.process.pid
    functions = descendants(local_api)
    every = {r["pid"] for r in push.records()}
    # No invocation of the module ran in local-api's own process; this test's two run in its function processes.
    # (An earlier test's instance may have ended since: one bare run, loaded by apt, read a pid no longer there.)
    mine = {first["pid"], second["pid"]}
    assert local_api not in every and mine <= functions, (mine, every, functions)


def test_each_route_is_throttled_by_the_stages_default_route_settings(tmp_path: Path) -> None:
    """A stage allowing a burst of 2 per route, refilled at one per 100 s: a third connection is refused (429);
    a third message gets API Gateway's error message and is not delivered."""
    log = tmp_path / "events.jsonl"
    port = free_port()
    args = ["--template", str(TEMPLATE), "--store", f"sqlite:///{tmp_path / 'relay.db'}", "--push-port", str(port)]
    args += ["--push-channel", "websocket", "--parameter", "SocketThrottleRate=0.01"]
    args += ["--parameter", "SocketThrottleBurst=2"]
    env = {**os.environ, "RECORDER_LOG": str(log)}
    with local_api_process(*args, env=env, prefix="/test") as (rest, process):
        push = Push(rest, f"ws://127.0.0.1:{port}/test", f"http://127.0.0.1:{port}/test", process, log)
        with open_socket(push) as (ws, connection, _), open_socket(push):
            with pytest.raises(InvalidStatus) as third:
                connect(push.url, open_timeout=20)
            assert third.value.response.status_code == 429
            for n in range(3):
                ws.send(json.dumps({"n": n}))
            said = json.loads(ws.recv(timeout=15))
            assert said["message"] == "Too Many Requests" and said["connectionId"] == connection
            ws.send('{"action": "echo"}')  # another route: its own bucket
            assert json.loads(ws.recv(timeout=15)) == {"echo": '{"action": "echo"}'}
            delivered = sorted(r["event"]["body"] for r in push.of(connection, "MESSAGE", 3))
            assert delivered == ['{"action": "echo"}', '{"n": 0}', '{"n": 1}'], delivered
        assert len([r for r in push.records() if r["event"]["requestContext"]["eventType"] == "CONNECT"]) == 2
