"""The Lambda handlers under moto: the events/ files go through Mangum, the core and a DynamoDB table built
from template.yaml, with each module imported once and invoked warm several times in a row."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from codap_relay.codes import hash_token
from codap_relay.records import SessionRecord
from codap_relay.store.dynamodb import DynamoStore
from dynamodb_local import CREDENTIALS, new_table
from support import EVENTS, ROOT, serve_app

CODE = "ABCD2345"  # the pairing code and browser token the events/ files carry
TOKEN = "sample-browser-token-not-a-secret"
FUNCTIONS = ("sessions", "stream", "request", "response", "metadata", "plugin")
SESSION_LIMIT = 3


class Context:
    """The parts of a Lambda context object that Powertools reads."""

    function_name = "codap-relay-test"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:codap-relay-test"
    memory_limit_in_mb = 256
    aws_request_id = "test-invocation"
    log_group_name = "/aws/lambda/test"
    log_stream_name = "test"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    """moto for the whole module; the functions' modules are imported once, like one warm container each."""
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        client = boto3.client("dynamodb", **CREDENTIALS)
        table = new_table(client)
        env = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "RELAY_STORE": f"dynamodb://{table}",
            "POWERTOOLS_SERVICE_NAME": "codap-relay",
            "POWERTOOLS_METRICS_NAMESPACE": "CodapRelayTest",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "RATE_LIMIT_SESSION_PER_IP": str(SESSION_LIMIT),
            "HEARTBEAT_SECONDS": "1",
            "POLL_INTERVAL_SECONDS": "0.05",
            "STREAM_MAX_SECONDS": "1.5",
        }
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT / "functions" / "shared"))
        modules = {name: load_function(name) for name in FUNCTIONS}
        # The session the sample events refer to, as the plugin would have created it.
        DynamoStore(client, table).create_session(
            SessionRecord(CODE, hash_token(TOKEN), created_at=1e9, expires_at=4e9)
        )
        yield {"client": client, "table": table, "modules": modules}
        for name in FUNCTIONS:
            sys.modules.pop(f"lambda_fn_{name}", None)


def load_function(name: str) -> ModuleType:
    path = ROOT / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"lambda_fn_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
    import httpx

    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "x-amzn-request-context": json.dumps({"requestId": "lwa-request-1", "stage": "v1"}),
    }
    with serve_app(aws["modules"]["stream"].runtime.app) as base:
        with httpx.stream("GET", f"{base}/stream", params={"code": CODE}, headers=headers, timeout=30) as r:
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
        f"spec = importlib.util.spec_from_file_location('fn', {str(ROOT / 'functions' / 'request' / 'app.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "print('aws_xray_sdk' in sys.modules)\n"
    )
    env = {
        **os.environ,
        "POWERTOOLS_TRACE_DISABLED": disabled,
        "RELAY_STORE": "memory:",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYTHONPATH": str(ROOT / "functions" / "shared"),
    }
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(imported)
