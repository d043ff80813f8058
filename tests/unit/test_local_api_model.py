"""local-api's model of the stack, without processes: API Gateway's resource precedence, intrinsic functions and
parameters as CloudFormation resolves them, and the front before its functions are up."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest

from codap_relay.sam_template import TemplateError
from codap_relay_tooling.localapi.gateway import Gateway
from codap_relay_tooling.localapi.routing import Router
from codap_relay_tooling.localapi.template import Resolver, Route, Stack, parameter_values, read_stack
from codap_relay_tooling.localapi.throttle import TokenBucket
from codap_relay_tooling.testing import web

ROUTES = (
    Route("/items", "GET", "List"),
    Route("/items/special", "GET", "Special"),
    Route("/items/{id}", "GET", "One"),
    Route("/items/{id}", "DELETE", "Remove"),
    Route("/items/{id}", "ANY", "Other"),
    Route("/items/{id}/parts/{proxy+}", "GET", "Parts"),
    Route("/{proxy+}", "ANY", "Fallback"),
)


@pytest.mark.parametrize(
    ("method", "path", "function", "params"),
    [
        ("GET", "/items/special", "Special", {}),  # a literal segment beats a variable
        ("GET", "/items/7", "One", {"id": "7"}),
        ("DELETE", "/items/7", "Remove", {"id": "7"}),  # the method's own route beats ANY
        ("PATCH", "/items/7", "Other", {"id": "7"}),
        ("GET", "/items/7/parts/a/b", "Parts", {"id": "7", "proxy": "a/b"}),
        ("GET", "/items/", "List", {}),  # a trailing slash names the same resource
        ("GET", "/elsewhere/x", "Fallback", {"proxy": "elsewhere/x"}),  # greedy, last
    ],
)
def test_the_most_specific_resource_wins(method: str, path: str, function: str, params: dict[str, str]) -> None:
    match = Router(ROUTES).match(method, path)
    assert match is not None and match.route.function == function and match.path_parameters == params


def test_a_resource_without_the_method_is_no_route() -> None:
    router = Router((Route("/plugin", "GET", "Plugin"), Route("/plugin/{proxy+}", "GET", "Plugin")))
    assert router.match("POST", "/plugin") is None  # API Gateway: 403 Missing Authentication Token
    assert router.match("GET", "/plugin/") is not None and router.match("GET", "/nope") is None


def test_intrinsic_functions_resolve_as_cloudformation_does() -> None:
    template = {
        "Conditions": {"On": {"Fn::Equals": [{"Ref": "Flag"}, "yes"]}, "Off": {"Fn::Not": [{"Condition": "On"}]}},
        "Resources": {"Table": {"Type": "AWS::DynamoDB::Table"}},
    }
    resolve = Resolver(template, {"Flag": "yes", "Name": "relay"}, "eu-west-1").resolve
    assert resolve({"Fn::Sub": "${Name}.${AWS::Region}.${!Kept}"}) == "relay.eu-west-1.${Kept}"
    assert resolve({"Fn::Sub": ["${A}-${Name}", {"A": {"Ref": "Flag"}}]}) == "yes-relay"
    assert resolve({"Fn::If": ["Off", "a", {"Fn::Join": ["-", ["b", {"Ref": "Name"}]]}]}) == "b-relay"
    assert resolve({"Fn::Select": [1, {"Fn::Split": [",", "x,y,z"]}]}) == "y"
    assert resolve({"Fn::And": [{"Condition": "On"}, {"Fn::Or": [False, True]}]}) is True
    assert resolve({"Ref": "Table"}) == "Table"
    assert resolve({"Fn::GetAtt": ["Table", "Arn"]}).startswith("arn:aws:dynamodb:eu-west-1:")
    assert resolve({"Keep": 1, "Drop": {"Ref": "AWS::NoValue"}}) == {"Keep": 1}
    with pytest.raises(TemplateError, match="Fn::ImportValue"):
        resolve({"Fn::ImportValue": "Elsewhere"})
    with pytest.raises(TemplateError, match="Missing"):
        resolve({"Ref": "Missing"})


def test_parameters_take_defaults_overrides_and_their_constraints() -> None:
    template = {
        "Parameters": {
            "Stage": {"Type": "String", "Default": "v1", "AllowedPattern": "^[a-z0-9]+$"},
            "Tracing": {"Type": "String", "Default": "false", "AllowedValues": ["true", "false"]},
        }
    }
    assert parameter_values(template, {}) == {"Stage": "v1", "Tracing": "false"}
    assert parameter_values(template, {"Stage": "prod"})["Stage"] == "prod"
    with pytest.raises(TemplateError, match="not one of"):
        parameter_values(template, {"Tracing": "maybe"})
    with pytest.raises(TemplateError, match="does not match"):
        parameter_values(template, {"Stage": "Bad Stage"})
    with pytest.raises(TemplateError, match="unknown parameter"):
        parameter_values(template, {"Stages": "v2"})


def test_the_relays_template_as_local_api_reads_it() -> None:
    stack = read_stack(Path(__file__).resolve().parents[2] / "template.yaml", parameters={"Tracing": "Active"})
    assert stack.stage == "v1" and stack.binary_media_types == ("image/*",)
    stream = stack.functions["StreamFunction"]
    assert stream.web_adapter and stream.timeout_s == 900 and stream.handler == "run.sh"
    assert stream.reserved_concurrency is None  # !If [LimitStreams, !Ref StreamConcurrency, !Ref AWS::NoValue]
    assert [r.streaming for r in stack.routes if r.function == "StreamFunction"] == [True]
    assert stack.functions["RequestFunction"].environment["POWERTOOLS_TRACE_DISABLED"] == "false"
    assert stack.functions["ResponseFunction"].memory_mb == 512


async def test_health_answers_503_until_every_function_is_up() -> None:
    stack = Stack("v1", (), {}, (Route("/healthz", "GET", "Plugin"),), {}, None, {})
    gateway = Gateway(stack, {}, io.StringIO())
    async with web.AsyncClient(transport=httpx.ASGITransport(app=gateway), base_url="http://local") as client:
        starting = await client.get("/v1/healthz")
        assert starting.status_code == 503 and "starting" in starting.json()["message"]
        outside = await client.get("/healthz")  # outside the stage
        assert outside.status_code == 403 and outside.json() == {"message": "Forbidden"}


def test_the_runtime_answers_an_invocation_without_waiting_for_a_delayed_ack() -> None:
    """The invoke API writes headers and body separately; with Nagle's algorithm on its connection, the body
    waited for the client's delayed ACK (40 ms on Linux), a delay Lambda does not add to every invocation."""
    import socket
    import threading

    from codap_relay_tooling.localapi.runtime import INVOKE_PATH, build_server

    server = build_server(lambda event, context: {"statusCode": 200, "body": event["n"]})
    nodelay: list[int] = []
    finish_request = server.finish_request

    def finish_and_look(request: socket.socket, address: object) -> None:
        finish_request(request, address)  # type: ignore[arg-type]
        nodelay.append(request.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    server.finish_request = finish_and_look  # type: ignore[method-assign,assignment]
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        r = web.post(f"http://127.0.0.1:{port}{INVOKE_PATH}", json={"n": "7"}, timeout=10)
        assert r.json() == {"statusCode": 200, "body": "7"}
        thread.join(10)
        assert nodelay and nodelay[0] != 0
    finally:
        server.server_close()


def test_routes_with_their_own_throttle_meet_it_and_not_each_others() -> None:
    """template.yaml's MethodSettings as local-api applies them: the plugin's answers (POST /response) and the LLM's
    reads (GET /response) draw on separate budgets, a route with a `*` entry on its own, the rest on the stage's."""
    stack = read_stack(Path(__file__).resolve().parents[2] / "template.yaml")
    assert {("/stream", "*"), ("/response", "POST"), ("/response", "GET"), ("/request", "*")} <= set(
        stack.route_throttles
    )
    gateway = Gateway(stack, {}, io.StringIO())
    router = Router(stack.routes)

    def bucket(method: str, path: str) -> TokenBucket | None:
        return gateway.bucket_for(method, router.match(method, path))

    answers, reads = bucket("POST", "/response"), bucket("GET", "/response")
    assert answers is not reads and answers is not gateway.bucket and reads is not gateway.bucket
    assert bucket("GET", "/stream") is gateway.route_buckets[("/stream", "*")]
    assert bucket("POST", "/mcp/ABCD2345") is gateway.route_buckets[("/mcp/{code}", "*")]
    assert bucket("GET", "/metadata") is gateway.bucket  # no entry of its own: the stage's
    assert bucket("GET", "/no/such/route") is gateway.bucket
    while reads is not None and reads.take():  # the LLM's reads use up their burst...
        pass
    assert answers is not None and answers.take()  # ...and the plugin's answers still pass
