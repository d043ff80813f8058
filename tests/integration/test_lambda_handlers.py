"""The Lambda handlers under moto: the events/ files go through Mangum, the core and a DynamoDB table built
from template.yaml, with each module imported once and invoked warm several times in a row."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from codap_relay.codes import hash_token
from codap_relay.http.app import build_app
from codap_relay.http.plugin_files import IMMUTABLE, PLUGIN_DIST
from codap_relay.records import AuthItem, SessionRecord
from codap_relay.relay.grants import GRANT, plugin_ref
from codap_relay.store.dynamodb import DynamoStore
from codap_relay_tooling.localapi.template import read_stack
from codap_relay_tooling.testing import CHECKOUT, EVENTS, web
from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, new_table
from codap_relay_tooling.testing.lambda_context import LambdaContext as Context
from codap_relay_tooling.testing.lambda_harness import function_env, load_function, unload_function
from codap_relay_tooling.testing.plugin_bundle import page_files
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window
from codap_relay_tooling.testing.servers import serve_app

CODE = "ABCD2345"  # the pairing code and browser token the events/ files carry
TOKEN = "sample-browser-token-not-a-secret"
FUNCTIONS = ("sessions", "stream", "request", "response", "metadata", "plugin", "mcp", "oauth")
EXECUTE_API = "https://abc123.execute-api.us-east-1.amazonaws.com/v1"  # the public URL the staged events carry
CUSTOM_DOMAIN = "https://relay.example.org/codap"  # a custom domain whose base path mapping /codap is the stage
SESSION_LIMIT = 3


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    """moto for the whole module; the functions' modules are imported once, like one warm container each."""
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        client = boto3.client("dynamodb", **CREDENTIALS)
        table = new_table(client)
        env = function_env(
            f"dynamodb://{table}",
            RATE_LIMIT_SESSION_PER_IP=str(SESSION_LIMIT),
            HEARTBEAT_SECONDS="1",
            POLL_INTERVAL_SECONDS="0.05",
            STREAM_MAX_SECONDS="1.5",
            PUBLIC_BASE_PATH="/codap",  # the *-custom-domain events come through that mapping
        )
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(CHECKOUT / "functions" / "shared"))
        modules = {name: load_function(CHECKOUT, name) for name in FUNCTIONS}
        # The session the sample events refer to, as the plugin would have created it.
        DynamoStore(client, table).create_session(
            SessionRecord(CODE, hash_token(TOKEN), created_at=1e9, expires_at=4e9)
        )
        yield {"client": client, "table": table, "modules": modules}
        for name in FUNCTIONS:
            unload_function(name)


def invoke(aws: dict[str, Any], function: str, name: str, **changes: Any) -> dict[str, Any]:
    ev = event(name)
    ev.update(changes)
    result: dict[str, Any] = aws["modules"][function].handler(ev, Context())
    return result


def body(result: dict[str, Any]) -> Any:
    return json.loads(result["body"])


def test_full_flow_through_the_handlers(
    aws: dict[str, Any], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="codap_relay.access")
    created = invoke(aws, "sessions", "sessions-create")
    assert created["statusCode"] == 201, created["body"]
    assert len(body(created)["code"]) == 8 and body(created)["browserToken"]

    queued = invoke(aws, "request", "request")
    assert queued["statusCode"] == 202, queued["body"]
    assert body(queued)["id"] == "req-1" and body(queued)["seq"] >= 1
    again = invoke(aws, "request", "request")  # a warm retry of the same id: idempotent
    assert again["statusCode"] == 202 and body(again)["seq"] == body(queued)["seq"]

    streamed = invoke(aws, "stream", "stream-poll")
    assert streamed["statusCode"] == 200
    assert streamed["headers"]["content-type"].startswith("text/event-stream")
    assert "event: tool-request" in streamed["body"] and '"id":"req-1"' in streamed["body"]

    answered = invoke(aws, "response", "response")
    assert answered["statusCode"] == 202, answered["body"]
    read = invoke(aws, "response", "response-get")
    assert read["statusCode"] == 200
    assert body(read)["result"] == {"datasets": [{"name": "Mammals", "cases": 27}]}

    meta = invoke(aws, "metadata", "metadata")
    assert meta["statusCode"] == 200 and any(t["name"] == "get_codap_datasets" for t in body(meta)["tools"])
    status = invoke(aws, "sessions", "sessions-status")
    assert status["statusCode"] == 200 and body(status)["pending"] == 0

    out = capfd.readouterr().out
    emf = [json.loads(line) for line in out.splitlines() if line.startswith("{") and "_aws" in line]
    names = {m["Name"] for blob in emf for d in blob["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"SessionsCreated", "RequestsQueued", "ResponsesCompleted", "RelayLatency", "ColdStart"} <= names
    # The API Gateway request id is the correlation id: in the response, in Powertools' log keys and in
    # the core's access log (whose records never carry the whole pairing code).
    assert read["headers"]["x-correlation-id"] == "evt-response-get"
    import relay_lambda

    assert relay_lambda.logger.get_correlation_id() == "evt-sessions-status"
    access = [r.getMessage() for r in caplog.records if r.name == "codap_relay.access"]
    assert any('"correlationId": "evt-request"' in line for line in access)
    assert access and not any(CODE in line for line in access)


def test_warm_invocations_reuse_the_store_client(aws: dict[str, Any]) -> None:
    module = aws["modules"]["metadata"]
    store = module.runtime.relay.store
    client = store._client
    for _ in range(3):
        assert invoke(aws, "metadata", "metadata")["statusCode"] == 200
    assert module.runtime.relay.store is store and store._client is client


def test_errors_have_status_message_and_correlation_id(aws: dict[str, Any]) -> None:
    bad = invoke(aws, "sessions", "sessions-create-bad-input")
    assert bad["statusCode"] == 400 and body(bad)["correlationId"] == "evt-sessions-bad"
    assert "JSON" in body(bad)["message"]
    unknown = invoke(aws, "request", "request-bad-input")
    assert unknown["statusCode"] == 400 and body(unknown)["error"] == "unknown_tool"
    missing = invoke(aws, "metadata", "metadata-unknown-code")
    assert missing["statusCode"] == 404 and body(missing)["error"] == "session_not_found"
    elsewhere = invoke(aws, "metadata", "request")  # each function mounts only its own routes
    assert elsewhere["statusCode"] in (404, 405)


def test_rate_limited_sessions_get_429_with_retry_after(aws: dict[str, Any], capfd: pytest.CaptureFixture[str]) -> None:
    clear_of_rate_window()
    codes = [invoke(aws, "sessions", "sessions-create-rate-limited")["statusCode"] for _ in range(SESSION_LIMIT)]
    assert codes == [201] * SESSION_LIMIT
    limited = invoke(aws, "sessions", "sessions-create-rate-limited")
    assert limited["statusCode"] == 429 and body(limited)["error"] == "rate_limited"
    assert int(limited["headers"]["retry-after"]) >= 1
    assert '"RateLimited"' in capfd.readouterr().out


def test_llms_txt_carries_the_stage_in_its_urls(aws: dict[str, Any]) -> None:
    created = body(invoke(aws, "sessions", "sessions-create"))
    ev = event("plugin-health")
    ev.update(path="/llms.txt", resource="/llms.txt", queryStringParameters={"code": created["code"]})
    ev["requestContext"] = {**ev["requestContext"], "path": "/v1/llms.txt", "resourcePath": "/llms.txt"}
    result = aws["modules"]["plugin"].handler(ev, Context())
    assert result["statusCode"] == 200, result
    domain = ev["requestContext"]["domainName"]
    assert f"https://{domain}/v1/request" in result["body"]
    assert created["code"] in result["body"]


def test_plugin_function_serves_health_without_table_access(aws: dict[str, Any]) -> None:
    for _ in range(2):
        health = invoke(aws, "plugin", "plugin-health")
        assert health["statusCode"] == 200 and body(health)["status"] == "ok"


# Lambda refuses an answer over 6 MB (6,291,456 bytes of the whole serialized response); stay clear of it.
LAMBDA_ANSWER_LIMIT = 6_000_000


def test_the_full_log_of_a_session_over_6_mb_reads_in_pages_under_the_limit(aws: dict[str, Any]) -> None:
    """Four answers of 2.5 MB: ?full=1 through the sessions function (staged events) and through the HTTP app,
    page by page, every page under Lambda's limit, every entry once and in order with its whole answer."""
    reset_table(aws)
    texts = {}
    for n in range(1, 5):
        rid = f"big-{n}"
        texts[rid] = os.urandom(1_250_000).hex()  # random: the store's compression cannot shrink it
        ask = {"code": CODE, "tool": "get_codap_datasets", "args": {}, "id": rid}
        assert invoke(aws, "request", "request", body=json.dumps(ask))["statusCode"] == 202
        result = {"content": [{"type": "text", "text": texts[rid]}]}
        posted = json.dumps({"code": CODE, "id": rid, "result": result})
        code_q = {"queryStringParameters": {"code": CODE}, "multiValueQueryStringParameters": {"code": [CODE]}}
        answered = invoke(aws, "response", "response", body=posted, **code_q)  # ?code=: token checked first
        assert answered["statusCode"] == 202, answered["body"][:300]

    def check(pages: list[dict[str, Any]]) -> None:
        entries = [e for page in pages for e in page["entries"]]
        assert [e["id"] for e in entries] == list(texts)
        assert all(e["result"]["content"][0]["text"] == texts[e["id"]] and e["args"] == {} for e in entries)
        assert len(pages) > 1 and pages[-1]["next"] is None

    pages: list[dict[str, Any]] = []
    after: int | None = 0
    while after is not None and len(pages) < 10:
        query = {"full": "1", "after": str(after)}
        multi = {k: [v] for k, v in query.items()}
        answer = invoke(
            aws, "sessions", "sessions-log", queryStringParameters=query, multiValueQueryStringParameters=multi
        )
        assert answer["statusCode"] == 200, answer["body"][:300]
        assert len(json.dumps(answer)) < LAMBDA_ANSWER_LIMIT  # what the runtime sends back, escapes and all
        pages.append(body(answer))
        after = pages[-1]["next"]
    check(pages)

    async def through_the_app() -> list[dict[str, Any]]:
        app = build_app(aws["modules"]["sessions"].runtime.relay)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        read: list[dict[str, Any]] = []
        async with web.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://relay") as http:
            after: int | None = 0
            while after is not None and len(read) < 10:
                answer = await http.get(f"/api/sessions/{CODE}/log?full=1&after={after}", headers=headers)
                assert answer.status_code == 200 and len(answer.content) < LAMBDA_ANSWER_LIMIT
                read.append(answer.json())
                after = read[-1]["next"]
        return read

    loop = asyncio.new_event_loop()  # not asyncio.run: that would leave Mangum's thread without its loop
    try:
        check(loop.run_until_complete(through_the_app()))
    finally:
        loop.close()
    small = body(
        invoke(aws, "sessions", "sessions-log", queryStringParameters=None, multiValueQueryStringParameters=None)
    )
    assert [e["id"] for e in small["entries"]] == list(texts) and "next" not in small  # without ?full: one small answer
    assert all("result" not in e and "args" not in e for e in small["entries"])


def test_throttled_store_answers_503_and_recovers(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ClientError

    store = aws["modules"]["metadata"].runtime.relay.store
    real = store._client

    class Throttled:
        def __getattr__(self, name: str) -> Any:
            def fail(**kwargs: Any) -> Any:
                raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, name)

            return fail

    monkeypatch.setattr(store, "_client", Throttled())
    down = invoke(aws, "metadata", "metadata")
    assert down["statusCode"] == 503 and body(down)["error"] == "store_unavailable"
    assert down["headers"]["retry-after"] == "1"
    monkeypatch.setattr(store, "_client", real)
    assert invoke(aws, "metadata", "metadata")["statusCode"] == 200


def test_stream_app_under_uvicorn_ends_before_the_limit_with_retry(aws: dict[str, Any]) -> None:
    """What the Lambda Web Adapter runs: the stream function's ASGI app on uvicorn, request context forwarded."""

    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "x-amzn-request-context": json.dumps({"requestId": "lwa-request-1", "stage": "v1"}),
    }
    with serve_app(aws["modules"]["stream"].runtime.app) as base:
        with web.stream("GET", f"{base}/stream", params={"code": CODE}, headers=headers, timeout=30) as r:
            assert r.status_code == 200
            assert r.headers["x-correlation-id"] == "lwa-request-1"
            text = "".join(r.iter_text())  # returns once the server ends the stream by itself
    assert text.startswith("retry: ")
    assert "event: reconnect" in text


@pytest.mark.parametrize(("disabled", "imported"), [("true", False), ("false", True)])
def test_xray_sdk_is_loaded_only_when_tracing_is_on(disabled: str, imported: bool) -> None:
    """The X-Ray SDK costs ~120 ms of cold start; a stack deployed with tracing off must not import it."""
    import subprocess

    probe = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('fn', {str(CHECKOUT / 'functions' / 'request' / 'app.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "print('aws_xray_sdk' in sys.modules)\n"
    )
    env = {
        **os.environ,
        "POWERTOOLS_TRACE_DISABLED": disabled,
        "RELAY_STORE": "memory:",
        "AWS_DEFAULT_REGION": "us-east-1",
        # the layer, and the core the test runs with (a worktree's, not the one installed in the venv)
        "PYTHONPATH": os.pathsep.join([str(CHECKOUT / "functions" / "shared"), *sys.path]),
    }
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(imported)


# --- every route, through its function's handler, with the event API Gateway sends --------------------------

ROUTE_FUNCTION = {
    "SessionsFunction": "sessions",
    "StreamFunction": "stream",
    "RequestFunction": "request",
    "ResponseFunction": "response",
    "MetadataFunction": "metadata",
    "PluginFunction": "plugin",
    "McpFunction": "mcp",
    "OAuthFunction": "oauth",
}


def function_of(ev: dict[str, Any]) -> str:
    """The function API Gateway would invoke for this event: the template's route for its resource and method."""
    for route in read_stack(CHECKOUT / "template.yaml").routes:
        if route.path == ev["resource"] and route.method in ("ANY", ev["httpMethod"]):
            return ROUTE_FUNCTION[route.function]
    raise AssertionError(f"no route for {ev['httpMethod']} {ev['resource']}")


# event -> (status, a check of the answer); PREREQUISITES run first, on a table reset for each case.
Check = Any
EXPECTED: dict[str, tuple[int, Check]] = {
    "sessions-create": (201, lambda r: len(body(r)["code"]) == 8),
    "sessions-create-bad-input": (400, lambda r: body(r)["error"] == "invalid_request"),
    "sessions-create-rate-limited": (201, lambda r: body(r)["browserToken"]),
    "sessions-status": (200, lambda r: body(r)["code"] == CODE),
    "sessions-delete": (200, lambda r: body(r)["status"] == "closed"),
    # No stream of that tab owns the sample session: recorded, nothing to detach.
    "sessions-detach": (200, lambda r: body(r) == {"code": CODE, "detached": False}),
    "sessions-log": (200, lambda r: [e["id"] for e in body(r)["entries"]] == ["req-1"]),
    # A request too big to push, fetched by its pointer (plugin role): the request as queued, with its seq.
    "sessions-request-by-pointer": (
        200,
        lambda r: [body(r)[k] for k in ("id", "tool", "seq")] == ["req-1", "get_codap_datasets", 1],
    ),
    "sessions-request-by-pointer-preflight": (
        200,
        lambda r: (
            r["headers"]["access-control-allow-origin"] == "https://codap.concord.org"
            and "authorization" in r["headers"]["access-control-allow-headers"].lower()
        ),
    ),
    "stream-poll": (200, lambda r: '"id":"req-1"' in r["body"]),
    "stream-poll-custom-domain": (200, lambda r: '"id":"req-1"' in r["body"]),
    "request": (202, lambda r: body(r)["id"] == "req-1"),
    "request-bad-input": (400, lambda r: body(r)["error"] == "unknown_tool"),
    # image/* is a binary media type: API Gateway base64-encodes the body; the relay wants JSON.
    "request-binary-body": (400, lambda r: "Content-Type" in body(r)["message"]),
    "response": (202, lambda r: body(r)["status"] == "completed"),
    # The browser's preflight of the plugin's POST /response (its own OPTIONS method: /response is throttled per method)
    "response-preflight": (
        200,
        lambda r: (
            r["headers"]["access-control-allow-origin"] == "https://codap.concord.org"
            and "authorization" in r["headers"]["access-control-allow-headers"].lower()
        ),
    ),
    "response-get": (200, lambda r: body(r)["result"] == {"datasets": [{"name": "Mammals", "cases": 27}]}),
    "metadata": (200, lambda r: len(body(r)["tools"]) == 6),
    "metadata-unknown-code": (404, lambda r: body(r)["error"] == "session_not_found"),
    "plugin-health": (200, lambda r: body(r)["status"] == "ok"),
    "plugin-page": (200, lambda r: r["headers"]["content-type"].startswith("text/html") and "<html" in r["body"]),
    "plugin-page-custom-domain": (200, lambda r: r["headers"]["content-type"].startswith("text/html")),
    "plugin-redirect": (307, lambda r: r["headers"]["location"] == f"{EXECUTE_API}/plugin/"),
    "plugin-file": (200, lambda r: "<html" in r["body"] and r["headers"]["cache-control"] == "no-cache"),
    "index": (200, lambda r: body(r)["plugin"] == f"{EXECUTE_API}/plugin/" and body(r)["mcp"].startswith(EXECUTE_API)),
    "openapi": (200, lambda r: body(r)["servers"] == [{"url": EXECUTE_API}]),
    "llms-txt": (200, lambda r: f"POST {EXECUTE_API}/request?wait=15" in r["body"]),
    "llms-txt-custom-domain": (200, lambda r: f"POST {CUSTOM_DOMAIN}/request?wait=15" in r["body"]),
    "mcp-initialize": (200, lambda r: body(r)["result"]["serverInfo"]["name"] == "codap-relay"),
    "mcp-tools-list": (200, lambda r: len(body(r)["result"]["tools"]) == 6),
    "mcp-bearer-tools-list": (200, lambda r: len(body(r)["result"]["tools"]) == 6),
    # The plugin is not connected in this table: the call is a tool error that says so, and nothing is queued.
    "mcp-tools-call": (200, lambda r: body(r)["result"]["isError"] is True),
    # No plugin in this table: the list holds the three fixed resources; reading says the plugin is not connected.
    "resources-list": (
        200,
        lambda r: (
            [x["uri"] for x in body(r)["resources"]] == ["codap://datasets", "codap://components", "codap://activity"]
        ),
    ),
    "resources-read": (503, lambda r: body(r)["error"] == "not_connected" and "open CODAP" in body(r)["message"]),
    # The authorization server through its own function: discovery under the stage, the issuer with its path.
    "oauth-resource-metadata": (
        200,
        lambda r: body(r)["resource"] == f"{EXECUTE_API}/mcp" and body(r)["authorization_servers"] == [EXECUTE_API],
    ),
    "oauth-resource-metadata-root": (200, lambda r: body(r)["resource"] == f"{EXECUTE_API}/mcp"),
    "oauth-server-metadata": (
        200,
        lambda r: body(r)["issuer"] == EXECUTE_API and body(r)["token_endpoint"] == f"{EXECUTE_API}/token",
    ),
    # what an MCP client reads for an issuer with a path when the RFC 8414 address (outside the stage) fails
    "oauth-openid-configuration": (
        200,
        lambda r: body(r)["issuer"] == EXECUTE_API and body(r)["authorization_endpoint"] == f"{EXECUTE_API}/authorize",
    ),
    "oauth-register": (201, lambda r: body(r)["client_id"] and body(r)["client_name"] == "Claude"),
    "oauth-authorize": (400, lambda r: "unregistered-client" in body(r)["error_description"]),
    "oauth-consent-page": (
        404,
        lambda r: "expired" in r["body"] and "frame-ancestors 'none'" in r["headers"]["content-security-policy"],
    ),
    "oauth-consent-post": (404, lambda r: "expired" in r["body"]),
    "oauth-token": (401, lambda r: body(r)["error"] == "invalid_client"),
    "oauth-revoke": (401, lambda r: body(r)["error"] == "unauthorized_client"),
    # the plugin's connected apps (its browser token): none in this table, and one it does not have is refused
    "sessions-grants": (200, lambda r: body(r) == {"persistent": False, "apps": []}),
    "sessions-grant-delete": (400, lambda r: body(r)["field"] == "grant"),
}
PREREQUISITES = {
    "sessions-log": ["request"],
    "sessions-request-by-pointer": ["request"],
    "stream-poll": ["request"],
    "stream-poll-custom-domain": ["request"],
    "response": ["request"],
    "response-get": ["request", "response"],
}


def reset_table(aws: dict[str, Any]) -> None:
    """An empty table holding only the sample session (closed, rate-limited or used sessions start afresh)."""
    client, table = aws["client"], aws["table"]
    keys = [
        {"pk": item["pk"], "sk": item["sk"]}
        for page in client.get_paginator("scan").paginate(TableName=table)  # a scan answers 1 MB at a time
        for item in page["Items"]
    ]
    for key in keys:
        client.delete_item(TableName=table, Key=key)
    DynamoStore(client, table).create_session(SessionRecord(CODE, hash_token(TOKEN), created_at=1e9, expires_at=4e9))


def http_events() -> list[str]:
    """The HTTP API's sample events (push-*.json are the WebSocket API's: tests/integration/test_push_lambda.py)."""
    return sorted(p.stem for p in EVENTS.glob("*.json") if not p.stem.startswith("push-"))


def test_every_route_has_a_staged_sample_event() -> None:
    events = [event(name) for name in http_events()]
    for route in read_stack(CHECKOUT / "template.yaml").routes:
        assert any(e["resource"] == route.path and route.method in ("ANY", e["httpMethod"]) for e in events), (
            f"no sample event for {route.method} {route.path}"
        )
    assert set(http_events()) == set(EXPECTED), "every event file has an expectation"
    for e in events:
        context = e["requestContext"]
        assert context["stage"] == "v1" and context["identity"]["sourceIp"]
        if context["domainName"].endswith(".amazonaws.com"):  # the execute-api host: the stage is in the URL
            assert ".execute-api." in context["domainName"] and context["path"] == f"/v1{e['path']}"
        else:  # a custom domain: the base path is in both paths
            assert context["path"] == e["path"] and e["path"].startswith("/codap/")
        assert {k: v[-1] for k, v in e["multiValueHeaders"].items()} == e["headers"]
        multi_query = e["multiValueQueryStringParameters"]
        assert (multi_query and {k: v[-1] for k, v in multi_query.items()}) == (e["queryStringParameters"] or None)
        assert isinstance(e["isBase64Encoded"], bool)
        if e["isBase64Encoded"]:
            base64.b64decode(e["body"], validate=True)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_sample_event_through_its_functions_handler(aws: dict[str, Any], name: str) -> None:
    reset_table(aws)
    for before in PREREQUISITES.get(name, []):
        ev = event(before)
        assert aws["modules"][function_of(ev)].handler(ev, Context())["statusCode"] < 300
    ev = event(name)
    result = aws["modules"][function_of(ev)].handler(ev, Context())
    status, check = EXPECTED[name]
    assert result["statusCode"] == status, (name, result.get("body", "")[:500])
    assert check(result), (name, result.get("headers"), result.get("body", "")[:500])


def test_the_plugin_function_serves_the_built_files_for_good(aws: dict[str, Any]) -> None:
    """The files the page names (scripts/build-plugin), each through the plugin function as API Gateway sends it."""
    names = page_files((PLUGIN_DIST / "index.html").read_text())
    for name in names:
        ev = event("plugin-file")
        ev["path"], ev["pathParameters"]["proxy"] = f"/plugin/{name}", name
        ev["requestContext"]["path"] = f"/v1/plugin/{name}"
        result = aws["modules"]["plugin"].handler(ev, Context())
        assert result["statusCode"] == 200 and result["headers"]["cache-control"] == IMMUTABLE, result["headers"]
        assert result["body"] == (PLUGIN_DIST / name).read_text(), name
    assert len(names) == 3


# --- least privilege: what each function calls is what its role allows ---------------------------------------

# A transaction needs the permission of each of its actions (the service authorises them one by one).
TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def statement_actions(statement: dict[str, Any]) -> list[str]:
    """A policy statement's actions; under ``!If`` (the push channel's ManageConnections) the statement it adds."""
    if "Fn::If" in statement:
        statement = statement["Fn::If"][1]
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def allowed_actions() -> dict[str, set[str]]:
    """Each function's DynamoDB actions as its template policy grants them, by the short names of ROUTE_FUNCTION."""
    from codap_relay.sam_template import load_template

    granted: dict[str, set[str]] = {}
    for logical_id, short in ROUTE_FUNCTION.items():
        props = load_template(CHECKOUT / "template.yaml")["Resources"][logical_id]["Properties"]
        actions = {
            action.removeprefix("dynamodb:")
            for policy in props.get("Policies", [])
            for statement in policy.get("Statement", [])
            for action in statement_actions(statement)
            if action.startswith("dynamodb:")
        }
        granted[short] = actions
    return granted


def test_every_function_calls_only_what_its_role_allows(aws: dict[str, Any]) -> None:
    """Every sample event, the waits that end by timing out (their last read) and an MCP call that waits for an
    answer, through each function's own handler, with the DynamoDB actions each makes recorded."""
    used: dict[str, set[str]] = {name: set() for name in FUNCTIONS}

    def recorder(function: str) -> Any:
        def record(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name == "TransactWriteItems":
                used[function].update(TRANSACT_ACTIONS[next(iter(i))] for i in params["TransactItems"])
            else:
                used[function].add(model.name)

        return record

    hooks = []
    for name in FUNCTIONS:
        relay = aws["modules"][name].runtime.relay
        events = relay.store._client.meta.events
        hook = recorder(name)
        events.register("before-parameter-build.dynamodb.*", hook)
        hooks.append((events, hook))
    mcp_relay = aws["modules"]["mcp"].runtime.relay
    settings = mcp_relay.settings
    try:
        for name in sorted(EXPECTED):
            reset_table(aws)
            for ev in [event(before) for before in PREREQUISITES.get(name, [])] + [event(name)]:
                aws["modules"][function_of(ev)].handler(ev, Context())
        reset_table(aws)
        waiting = {"queryStringParameters": {"wait": "0.2"}, "multiValueQueryStringParameters": {"wait": ["0.2"]}}
        assert invoke(aws, "request", "request", **waiting)["statusCode"] == 202  # timed out: read its state
        get = event("response-get")
        query = {**get["queryStringParameters"], "wait": "0.2"}
        get.update(queryStringParameters=query, multiValueQueryStringParameters={k: [v] for k, v in query.items()})
        assert aws["modules"]["response"].handler(get, Context())["statusCode"] == 202
        invoke(aws, "stream", "stream-poll")  # the plugin is seen: MCP calls go through
        mcp_relay.reconfigure(settings=settings.model_copy(update={"mcp_tool_timeout_seconds": 0.2}))
        called = invoke(aws, "mcp", "mcp-tools-call")
        assert "did not answer" in body(called)["result"]["content"][0]["text"]
        # The plugin disconnects an app: the grant and its refresh tokens are deleted (only OAuthFunction may).
        reset_table(aws)
        data = {"client_id": "c", "client_name": "App", "created_at": 1e9}
        grant_id = f"{plugin_ref(f'code:{CODE}')}.grant-1"  # a grant's id starts with its plugin's reference
        grant = AuthItem(GRANT, grant_id, f"code:{CODE}", data, 4e9)
        DynamoStore(aws["client"], aws["table"]).put_auth(grant)
        drop = event("sessions-grant-delete")
        drop.update(path=f"/api/sessions/{CODE}/grants/{grant_id}", pathParameters={"code": CODE, "grant": grant_id})
        drop["requestContext"] = {**drop["requestContext"], "path": f"/v1/api/sessions/{CODE}/grants/{grant_id}"}
        dropped = aws["modules"]["oauth"].handler(drop, Context())
        assert dropped["statusCode"] == 200 and body(dropped)["status"] == "disconnected", dropped["body"]
    finally:
        mcp_relay.reconfigure(settings=settings)
        for events, hook in hooks:
            events.unregister("before-parameter-build.dynamodb.*", hook)
    granted = allowed_actions()
    for name in FUNCTIONS:
        assert used[name] <= granted[name], f"{name} calls {sorted(used[name] - granted[name])} its role does not allow"
    assert used["request"] and used["response"] and used["stream"] and used["mcp"]
    assert "DeleteItem" in used["oauth"] and "DeleteItem" not in granted["mcp"]
