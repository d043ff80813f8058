"""template.yaml as CloudFormation deploys it: the SAM transform run with a stack's region and parameters, then
CloudFormation's own intrinsics resolved (tests/sam_tools.py). No AWS account, no network."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from codap_relay.http.schemas import ErrorBody
from sam_tools import Deployed, Stack, transform
from support import ROOT

STACKS = {
    "defaults": Stack.of(),
    "eu-west-1": Stack.of("eu-west-1"),
    "ap-southeast-2": Stack.of("ap-southeast-2"),
    "tracing": Stack.of("eu-west-1", Tracing="Active"),
    "own adapter": Stack.of(WebAdapterLayerArn="arn:aws:lambda:us-east-1:111122223333:layer:MyAdapter:3"),
    "no stream limit": Stack.of(StreamConcurrency="0"),
    "stage prod": Stack.of(StageName="prod"),
}

# awslabs/aws-lambda-web-adapter publishes its layer from this account, one name per architecture (its README).
ADAPTER_ACCOUNT = "753240598075"
ADAPTER_LAYER_NAMES = {"x86_64": "LambdaAdapterLayerX86", "arm64": "LambdaAdapterLayerArm64"}
# Layer versions by adapter release, from the README's history (each release's docs commit bumps the number).
ADAPTER_RELEASES = {23: "v0.8.4", 24: "v0.9.0", 25: "v0.9.1"}
ADAPTER_PRE_RELEASES = {26: "v1.0.0-rc1"}
PIP_PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
XRAY_POLICY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"


@pytest.fixture(scope="module")
def deployed() -> dict[str, Deployed]:
    return dict(zip(STACKS, transform(list(STACKS.values())), strict=True))


def functions(stack: Deployed) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in stack.resources("AWS::Lambda::Function").items()}


def role_of(stack: Deployed, function: dict[str, Any]) -> dict[str, Any]:
    match = re.fullmatch(r"<(\w+)\.Arn>", function["Role"])
    assert match, function["Role"]
    return stack.properties(match.group(1))


def web_adapter_layers(function: dict[str, Any]) -> list[str]:
    return [layer for layer in function.get("Layers", []) if "CoreLayer" not in layer]


# --- defect 2: the Web Adapter layer ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["defaults", "eu-west-1", "ap-southeast-2"])
def test_the_web_adapter_layer_is_the_published_release_for_the_region_and_architecture(
    deployed: dict[str, Deployed], name: str
) -> None:
    stack = deployed[name]
    stream = functions(stack)["StreamFunction"]
    [architecture] = stream["Architectures"]
    [arn] = web_adapter_layers(stream)
    match = re.fullmatch(r"arn:aws:lambda:([a-z0-9-]+):(\d+):layer:(\w+):(\d+)", arn)
    assert match, arn
    region, account, layer, version = match.groups()
    assert region == stack.stack.region, f"the adapter layer must come from the deployment region: {arn}"
    assert account == ADAPTER_ACCOUNT
    assert layer == ADAPTER_LAYER_NAMES[architecture], f"{layer} does not run on {architecture}"
    assert int(version) in ADAPTER_RELEASES, f"layer {version} is {ADAPTER_PRE_RELEASES.get(int(version), 'unknown')}"


def test_a_web_adapter_layer_arn_given_as_parameter_replaces_the_published_one(
    deployed: dict[str, Deployed],
) -> None:
    stream = functions(deployed["own adapter"])["StreamFunction"]
    assert web_adapter_layers(stream) == [dict(deployed["own adapter"].stack.parameters)["WebAdapterLayerArn"]]


def test_functions_layers_and_the_layer_build_share_one_architecture(deployed: dict[str, Deployed]) -> None:
    stack = deployed["defaults"]
    architectures = {tuple(f["Architectures"]) for f in functions(stack).values()}
    assert len(architectures) == 1, architectures
    [(architecture,)] = architectures
    [layer] = stack.resources("AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleArchitectures"] == [architecture]
    makefile = (ROOT / "infra" / "layer" / "Makefile").read_text()
    assert f"--platform {PIP_PLATFORMS[architecture]}" in makefile, "CoreLayer's wheels must match the functions"


# --- defect 5: no implicit "Stage" stage -----------------------------------------------------------------


@pytest.mark.parametrize(("name", "stage"), [("defaults", "v1"), ("stage prod", "prod")])
def test_the_api_is_deployed_to_the_named_stage_only(deployed: dict[str, Deployed], name: str, stage: str) -> None:
    stack = deployed[name]
    stages = [r["Properties"]["StageName"] for r in stack.resources("AWS::ApiGateway::Stage").values()]
    assert stages == [stage]
    # A Deployment with a StageName creates that stage too, outside the template's settings (SAM's "Stage").
    for deployment in stack.resources("AWS::ApiGateway::Deployment").values():
        assert "StageName" not in deployment["Properties"], deployment


# --- defect 4: API Gateway's own errors carry CORS headers --------------------------------------------------

# Errors the gateway answers itself, before or instead of the functions (and so without the app's CORS headers).
GATEWAY_ERRORS = {
    "THROTTLED": 429,
    "REQUEST_TOO_LARGE": 413,
    "MISSING_AUTHENTICATION_TOKEN": 403,  # a path or method with no route
    "BAD_GATEWAY": 502,
    "INTEGRATION_FAILURE": 504,
    "INTEGRATION_TIMEOUT": 504,
    "DEFAULT_4XX": 400,
    "DEFAULT_5XX": 500,
}


def gateway_response(stack: Deployed, response_type: str, status: int) -> dict[str, Any]:
    """What API Gateway sends for this type: its own entry, else its status family's default."""
    responses = stack.properties("RelayApi")["Body"]["x-amazon-apigateway-gateway-responses"]
    found = responses.get(response_type) or responses.get(f"DEFAULT_{status // 100}XX")
    assert found, f"{response_type} ({status}) gets API Gateway's built-in response, which has no CORS headers"
    return dict(found)


def allows(header_value: str, origin: str) -> bool:
    value = header_value.strip("'")  # gateway response header values are quoted literals
    return value == "*" or value == origin


@pytest.mark.parametrize(("response_type", "status"), GATEWAY_ERRORS.items())
def test_gateway_errors_let_the_configured_origins_read_them(
    deployed: dict[str, Deployed], response_type: str, status: int
) -> None:
    stack = deployed["defaults"]
    response = gateway_response(stack, response_type, status)
    header = response["responseParameters"]["gatewayresponse.header.Access-Control-Allow-Origin"]
    for origin in stack.params["CorsOrigin"].split(","):
        assert allows(header, origin.strip()), f"{origin} cannot read a {status} from the gateway"
    assert "gatewayresponse.header.Access-Control-Allow-Credentials" not in response["responseParameters"]


def test_gateway_error_bodies_take_the_relays_error_shape(deployed: dict[str, Deployed]) -> None:
    stack = deployed["defaults"]
    for response_type, status in GATEWAY_ERRORS.items():
        template = gateway_response(stack, response_type, status)["responseTemplates"]["application/json"]
        # As API Gateway fills it in ($context.error.messageString comes quoted).
        rendered = (
            template.replace("$context.error.responseType", response_type)
            .replace("$context.error.messageString", json.dumps('Say "why", then stop'))
            .replace("$context.requestId", "c0ffee")
        )
        body = json.loads(rendered)
        assert set(body) <= set(ErrorBody.model_fields), body
        assert body["error"] == response_type and body["message"] == 'Say "why", then stop'
        assert body["correlationId"] == "c0ffee"


# --- defect 8: the X-Ray write policy only with tracing ----------------------------------------------------


@pytest.mark.parametrize(("name", "on"), [("defaults", False), ("tracing", True)])
def test_the_xray_write_policy_comes_with_tracing_only(deployed: dict[str, Deployed], name: str, on: bool) -> None:
    stack = deployed[name]
    for function_name, function in functions(stack).items():
        policies = role_of(stack, function).get("ManagedPolicyArns", [])
        assert (XRAY_POLICY in policies) is on, f"{function_name}: {policies}"
        assert ("TracingConfig" in function) is on, function_name
        if on:
            assert function["TracingConfig"] == {"Mode": "Active"}
        assert function["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == ("false" if on else "true")
    [api_stage] = stack.resources("AWS::ApiGateway::Stage").values()
    assert api_stage["Properties"].get("TracingEnabled", False) is on


# --- defect 10 (deploy half): open plugins cannot take every function's concurrency --------------------------

LAMBDA_DEFAULT_ACCOUNT_QUOTA = 1000  # concurrent executions per region, the usual quota of an established account
LAMBDA_MIN_UNRESERVED = 100  # Lambda refuses reservations that leave less unreserved


def test_streams_have_reserved_concurrency_and_nothing_else_does(deployed: dict[str, Deployed]) -> None:
    stack = deployed["defaults"]
    reserved = {name: f.get("ReservedConcurrentExecutions") for name, f in functions(stack).items()}
    limit = reserved.pop("StreamFunction")
    assert limit is not None and int(limit) == int(stack.params["StreamConcurrency"]) > 0
    assert set(reserved.values()) == {None}, reserved  # the rest share what is left of the account's quota
    assert int(limit) + LAMBDA_MIN_UNRESERVED <= LAMBDA_DEFAULT_ACCOUNT_QUOTA


def test_stream_concurrency_zero_reserves_nothing(deployed: dict[str, Deployed]) -> None:
    stream = functions(deployed["no stream limit"])["StreamFunction"]
    assert "ReservedConcurrentExecutions" not in stream
