"""``codap-relay local-api`` as an emulator, on a small stack of its own (tests/integration/local_api_stack): the
event it builds, how it routes and answers, its limits, timeouts, processes and environment. The real command
runs as a child process; the relay's own stack through it is tested in test_local_api_relay.py and by the
suites that take a local-api base URL."""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codap_relay.commands.local_api import FORKSERVER_ENV
from codap_relay_tooling.testing import CHECKOUT, web
from codap_relay_tooling.testing.commands import local_api_process
from codap_relay_tooling.testing.sam import need_sam
from codap_relay_tooling.testing.servers import ServerProcess, descendants

STACK = Path(__file__).resolve().parent / "local_api_stack"
TEMPLATE = STACK / "template.yaml"
SAM = CHECKOUT / ".tools" / "sam-venv" / "bin" / "sam"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ServerProcess]]:
    store = tmp_path_factory.mktemp("local-api") / "relay.db"
    # A fresh interpreter per environment, local-api's default (the suite's conftest turns the forkserver on).
    env = {**os.environ, "GREETING": "from-the-caller", FORKSERVER_ENV: "0"}  # the caller's template variable wins
    with local_api_process(*api_args(store), "--max-instances", "3", env=env, prefix="/test") as served:
        yield served


def api_args(store: Path) -> list[str]:
    return ["--template", str(TEMPLATE), "--store", f"sqlite:///{store}", "--parameter", "Flag=false"]


@pytest.fixture(scope="module")
def base(api: tuple[str, ServerProcess]) -> str:
    return api[0]


def echo(base: str, path: str = "/echo", **kwargs: Any) -> dict[str, Any]:
    r = web.request(kwargs.pop("method", "GET"), f"{base}{path}", timeout=30, **kwargs)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


# --- the event ------------------------------------------------------------------------------------------


def sam_event() -> dict[str, Any]:
    need_sam()
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    out = subprocess.run(
        [str(SAM), "local", "generate-event", "apigateway", "aws-proxy"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    generated: dict[str, Any] = json.loads(out.stdout)
    return generated


def test_the_event_has_the_shape_sam_generates_and_api_gateways_values(base: str) -> None:
    reference = sam_event()
    got = echo(
        base,
        "/echo",
        method="POST",
        params=[("x", "1"), ("x", "2"), ("y", "")],
        headers=[
            ("X-Twice", "a"),
            ("X-Twice", "b"),
            ("Content-Type", "application/json"),
            ("X-Forwarded-For", "203.0.113.9"),  # claimed by the client: API Gateway appends the real peer
        ],
        content=b'{"hello": "\xc3\xa9"}',
    )["event"]
    assert set(got) == set(reference)
    assert set(reference["requestContext"]) <= set(got["requestContext"])
    assert set(reference["requestContext"]["identity"]) <= set(got["requestContext"]["identity"])
    context = got["requestContext"]
    assert (got["path"], got["resource"], got["httpMethod"]) == ("/echo", "/echo", "POST")
    assert (context["path"], context["stage"], context["resourcePath"]) == ("/test/echo", "test", "/echo")
    assert context["identity"]["sourceIp"] == "127.0.0.1" and context["domainName"] == base.split("/")[2]
    assert got["multiValueQueryStringParameters"] == {"x": ["1", "2"], "y": [""]}
    assert got["queryStringParameters"] == {"x": "2", "y": ""}
    assert got["multiValueHeaders"]["x-twice"] == ["a", "b"] and got["headers"]["x-twice"] == "b"
    assert got["headers"]["x-forwarded-for"] == "203.0.113.9, 127.0.0.1"
    assert got["headers"]["x-amzn-trace-id"].startswith("Root=1-")
    assert (got["body"], got["isBase64Encoded"]) == ('{"hello": "é"}', False)
    assert got["pathParameters"] is None and got["stageVariables"] is None

    named = echo(base, "/echo/ada")["event"]
    assert (named["resource"], named["pathParameters"]) == ("/echo/{name}", {"name": "ada"})
    files = echo(base, "/files/a/b/c.txt")["event"]
    assert (files["resource"], files["pathParameters"]) == ("/files/{proxy+}", {"proxy": "a/b/c.txt"})


def test_binary_media_types_in_both_directions(base: str) -> None:
    png = bytes.fromhex("89504e470d0a1a0a")
    got = echo(base, method="POST", content=png, headers={"Content-Type": "image/png"})["event"]
    assert got["isBase64Encoded"] is True and got["body"] == "iVBORw0KGgo="
    # A base64 answer is decoded only for a client whose Accept names a binary media type.
    raw = web.get(f"{base}/behave/binary", headers={"Accept": "image/png"}, timeout=30)
    assert raw.status_code == 200 and raw.content.startswith(png)
    text = web.get(f"{base}/behave/binary", headers={"Accept": "application/json"}, timeout=30)
    assert text.status_code == 200 and text.text.startswith("iVBORw0KGgo")


def test_answer_headers_merge_single_and_multi_value(base: str) -> None:
    r = web.get(f"{base}/echo", timeout=30)
    assert r.headers.get_list("x-multi") == ["a", "b"]
    assert r.headers.get_list("x-single") == ["from-multi"]  # the multi-value list wins for a name in both
    assert r.headers["x-amzn-requestid"] == r.json()["requestId"]


# --- routing and refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("GET", "/test/nope", "Missing Authentication Token"),
        ("POST", "/test/echo/ada", "Missing Authentication Token"),  # the resource has no POST
        ("GET", "/test", "Missing Authentication Token"),  # the stage has no "/" resource
        ("GET", "/echo", "Forbidden"),  # outside the stage
        ("GET", "/other/echo", "Forbidden"),
    ],
)
def test_no_route_is_refused_as_api_gateway_refuses_it(
    api: tuple[str, ServerProcess], method: str, path: str, message: str
) -> None:
    root = api[0].rsplit("/", 1)[0]
    r = web.request(method, f"{root}{path}", timeout=30)
    assert r.status_code == 403 and r.json() == {"message": message}
    # The template's GatewayResponses DEFAULT_4XX applies inside the stage; outside it there is no API to apply.
    assert r.headers.get("access-control-allow-origin") == ("*" if message != "Forbidden" else None)


def test_trailing_slash_reaches_the_same_resource(base: str) -> None:
    got = echo(base, "/echo/")["event"]
    assert (got["resource"], got["path"]) == ("/echo", "/echo/")


def test_request_limits_are_api_gateways_and_lambdas(base: str) -> None:
    over_gateway = web.post(f"{base}/echo", content=b"a" * (10 * MiB + 1), timeout=60)
    assert over_gateway.status_code == 413
    assert over_gateway.text == "HTTP content length exceeded 10485760 bytes."
    # Under API Gateway's 10 MB but over Lambda's 6 MB once in the event: refused before the function runs.
    over_lambda = web.post(f"{base}/echo", content=b"a" * (6 * MiB), timeout=60)
    assert over_lambda.status_code == 413 and over_lambda.json() == {"message": "Request Too Long"}
    fits = web.post(f"{base}/echo", content=b"a" * (5 * MiB), timeout=60)
    assert fits.status_code == 200


def test_function_failures_are_502_and_the_next_call_works(api: tuple[str, ServerProcess]) -> None:
    base, process = api
    for what in ("error", "malformed", "crash", "big"):
        r = web.get(f"{base}/behave/{what}", timeout=30)
        assert r.status_code == 502 and r.json() == {"message": "Internal server error"}, what
    assert web.get(f"{base}/behave/big", params={"n": 6_000_000}, timeout=60).status_code == 200
    assert web.get(f"{base}/behave/pid", timeout=30).status_code == 200
    output = process.output()
    assert "ValueError: asked to fail" in output
    assert "exceeded maximum allowed payload size (6291556 bytes)" in output


def test_integration_timeout_is_504_and_the_function_timeout_ends_the_instance(
    api: tuple[str, ServerProcess],
) -> None:
    base, process = api
    started = time.monotonic()
    r = web.get(f"{base}/slow", params={"s": 1.6}, timeout=30)  # the route allows 1000 ms
    assert r.status_code == 504 and r.json() == {"message": "Endpoint request timed out"}
    assert time.monotonic() - started < 1.5
    started = time.monotonic()
    killed = web.get(f"{base}/behave/sleep", params={"s": 5}, timeout=30)  # the function allows 2 s
    assert killed.status_code == 502 and 1.9 < time.monotonic() - started < 4.5
    assert "Task timed out after 2.00 seconds" in process.output()
    assert web.get(f"{base}/behave/pid", timeout=30).status_code == 200


# --- processes and environment ------------------------------------------------------------------------------


def test_environment_is_the_templates_with_the_callers_overrides(base: str) -> None:
    env = echo(base)["environment"]
    assert env["GREETING"] == "from-the-caller"  # a variable the caller set itself
    assert env["FLAG_TEXT"] == "off"  # !If on a condition over --parameter Flag=false
    assert env["SUB_TEXT"] == "hello-us-east-1-${Literal}"  # !Sub with a parameter's default and a pseudo parameter
    assert re.fullmatch(r"arn:aws:dynamodb:us-east-1:\d{12}:Table/Arn", env["TABLE_ARN"])
    assert env["OVERRIDDEN"] == "from-function"  # the function's own variable beats Globals
    assert env["RELAY_STORE"].startswith("sqlite:///") and env["RELAY_STORE"].endswith("?shared=1")
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "EchoFunction" and env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "128"
    assert env["LAMBDA_TASK_ROOT"] == str(STACK / "functions" / "echo") and env["_HANDLER"] == "echo.handler"
    assert env["AWS_EXECUTION_ENV"] == "AWS_Lambda_python3.12" and env["TZ"] == ":UTC"


def test_context_carries_the_request_id_and_the_functions_deadline(base: str) -> None:
    r = web.get(f"{base}/echo", timeout=30)
    body = r.json()
    assert body["requestId"] == r.headers["x-amzn-requestid"] == body["event"]["requestContext"]["requestId"]
    assert 0 < body["remainingMs"] <= 10_000 and body["functionName"] == "EchoFunction" and body["memory"] == 128


def test_each_function_runs_in_its_own_processes_warm_reused_and_scaled_out(
    api: tuple[str, ServerProcess],
) -> None:
    base, process = api
    echo_pids = {echo(base)["pid"] for _ in range(3)}
    assert len(echo_pids) == 1  # one warm instance answers one call after another
    behave_pid = int(web.get(f"{base}/behave/pid", timeout=30).text)
    assert behave_pid not in echo_pids and {behave_pid, *echo_pids} <= descendants(process.pid)
    # Three at once: each invocation needs an instance to itself, so two more start cold (the cap is 3).
    cold_before = process.output().count("Init Duration")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        started = time.monotonic()
        answers = list(pool.map(lambda _: web.get(f"{base}/behave/sleep", params={"s": 1}, timeout=30), range(3)))
        assert len({int(a.text) for a in answers}) == 3
        # A fourth beyond the cap waits for a warm instance instead of starting one.
        answers = list(pool.map(lambda _: web.get(f"{base}/behave/sleep", params={"s": 1}, timeout=30), range(4)))
        assert len({int(a.text) for a in answers}) <= 3 and time.monotonic() - started >= 3
    assert process.output().count("Init Duration") - cold_before == 2  # Lambda's REPORT of a cold start


def test_a_forked_environment_sees_what_a_fresh_one_sees(base: str, tmp_path: Path) -> None:
    """--forkserver: the same variables, working directory and import path as a fresh interpreter's, in a process
    of its own under local-api."""
    fresh = echo(base)
    env = {**os.environ, "GREETING": "from-the-caller"}
    with local_api_process(*api_args(tmp_path / "r.db"), "--forkserver", env=env, prefix="/test") as (
        forked_base,
        process,
    ):
        forked = echo(forked_base)
        assert forked["pid"] in descendants(process.pid)
        parent = Path(f"/proc/{forked['pid']}/stat").read_text().rsplit(")", 1)[1].split()[1]
        assert b"localapi.forkserver" in Path(f"/proc/{parent}/cmdline").read_bytes()
    forked["environment"].pop("RELAY_STORE")  # each local-api has a store of its own
    fresh["environment"].pop("RELAY_STORE")
    for key in ("environment", "cwd", "pathHead"):
        assert forked[key] == fresh[key], key
    # A fresh interpreter may add a variable of its own (its locale coercion); nothing the function set is missing.
    assert set(fresh["variables"]) - set(forked["variables"]) <= {"LC_CTYPE"}
    assert set(forked["variables"]) - set(fresh["variables"]) == set()


def test_memory_store_is_refused_with_the_reason() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "codap_relay.cli", "local-api", "--template", str(TEMPLATE), "--store", "memory:"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "its own process" in out.stderr and "sqlite:///" in out.stderr


def test_throttle_sigterm_and_no_orphans(tmp_path: Path) -> None:
    """A second local-api with a tiny stage throttle; SIGTERM stops every function process, and so does SIGKILL
    of local-api itself (the children follow their parent)."""
    args = ["--template", str(TEMPLATE), "--store", f"sqlite:///{tmp_path / 'r.db'}"]
    throttled = ["--parameter", "ThrottleRate=1", "--parameter", "ThrottleBurst=3"]
    with local_api_process(*args, *throttled, prefix="/test") as (base, process):
        codes = [web.get(f"{base}/echo", timeout=30).status_code for _ in range(6)]
        assert codes.count(429) >= 2 and codes[0] == 200
        limited = web.get(f"{base}/echo", timeout=30)
        if limited.status_code == 429:
            assert limited.json() == {"message": "Too Many Requests"}
        functions = descendants(process.pid)
        assert len(functions) >= 2
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
        assert re.search(r"stopped: \d+ function instance\(s\) ended", process.output())
        assert not descendants(process.pid) and not any(Path(f"/proc/{pid}").exists() for pid in functions)
    with local_api_process(*args, prefix="/test") as (base, process):
        functions = descendants(process.pid)
        process.kill()
        process.wait(10)
        deadline = time.monotonic() + 10
        while any(Path(f"/proc/{pid}").exists() for pid in functions) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(Path(f"/proc/{pid}").exists() for pid in functions)
