"""`codap-relay doctor` against an account: API Gateway's account settings and DynamoDB's limits from moto, Lambda's
account settings and Service Quotas (which moto does not answer for these services) from botocore's Stubber with
the answers AWS documents. The command runs as the CLI parses it, with the account's clients injected."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from codap_relay.cli import build_parser
from codap_relay.commands import doctor
from codap_relay_tooling.testing import CHECKOUT

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/apigw-logs"


@pytest.fixture
def aws() -> Iterator[None]:
    keys = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    with mock_aws():
        yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def account(
    quota: int = 1000, unreserved: int | None = None, connections: float | None = None, denied: tuple[str, ...] = ()
) -> Callable[[str], Any]:
    """The account's clients: moto's for API Gateway and DynamoDB, stubbed Lambda and Service Quotas answers;
    services in ``denied`` refuse every read (AccessDenied)."""
    made: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service in made:
            return made[service]
        c = boto3.client(service, region_name=REGION)  # type: ignore[call-overload]
        stub = None
        if service in denied:
            stub = Stubber(c)
            operation = {
                "lambda": "get_account_settings",
                "apigateway": "get_account",
                "dynamodb": "describe_limits",
                "service-quotas": "list_service_quotas",
            }[service]
            stub.add_client_error(operation, "AccessDeniedException", "not authorized", 403)
        elif service == "lambda":
            stub = Stubber(c)
            limit = {
                "ConcurrentExecutions": quota,
                "UnreservedConcurrentExecutions": unreserved or quota,
                "TotalCodeSize": 80530636800,
                "CodeSizeUnzipped": 262144000,
                "CodeSizeZipped": 52428800,
            }
            stub.add_response("get_account_settings", {"AccountLimit": limit, "AccountUsage": {}})
        elif service == "service-quotas":
            stub = Stubber(c)
            quotas = (
                []
                if connections is None
                else [
                    {
                        "ServiceCode": "apigateway",
                        "QuotaCode": "L-1234ABCD",
                        "QuotaName": "New connections per second",
                        "Value": connections,
                    }
                ]
            )
            stub.add_response("list_service_quotas", {"Quotas": quotas}, {"ServiceCode": "apigateway"})
        if stub is not None:
            stub.activate()
        made[service] = c
        return c

    return client


def run(capsys: pytest.CaptureFixture[str], client: Callable[[str], Any], *argv: str) -> tuple[int, list[str]]:
    # the checkout's samconfig.toml beside the template, which overrides no parameter
    args = build_parser().parse_args(
        ["doctor", "--region", REGION, "--template", str(CHECKOUT / "template.yaml"), *argv]
    )
    code = doctor.run(args, client=client)
    out = capsys.readouterr().out.splitlines()
    return code, out


def raised(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("raise")]


def test_a_new_account_deploys_the_defaults_and_is_told_what_a_class_needs(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, account(quota=10), "--tabs", "5")
    assert code == 0, out
    assert not raised(out) and out[-1] == "# nothing blocks this deployment"
    # a class of 30 tabs on the push channel (the default) holds no function while it waits
    code, out = run(capsys, account(quota=10), "--tabs", "30")
    assert code == 0, out
    # on SSE it holds 30 streams: more than a new account's 10 executions
    code, out = run(capsys, account(quota=10), "--tabs", "30", "--parameter", "PushChannel=sse")
    assert code == 1
    [line] = raised(out)
    assert "30 streams" in line and "raise 'Concurrent executions' to 31 (now 10)" in line


def test_a_stream_reservation_the_quota_cannot_hold_fails_the_deploy(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, account(quota=10), "--tabs", "5", "--parameter", "StreamConcurrency=100")
    assert code == 1
    assert any("so the deploy fails: raise 'Concurrent executions' to 200" in line for line in raised(out)), out
    code, out = run(capsys, account(quota=1000, unreserved=900), "--tabs", "5", "--parameter", "StreamConcurrency=100")
    assert code == 0, out
    assert any("StreamConcurrency=100 leaves 800 unreserved" in line for line in out)


def test_the_access_log_needs_the_accounts_role(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, account(), "--tabs", "5", "--parameter", "ApiAccessLogging=UseAccountRole")
    assert code == 1
    assert any("has no CloudWatch Logs role" in line for line in raised(out)), out
    boto3.client("apigateway", region_name=REGION).update_account(
        patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": ROLE}]
    )
    code, out = run(capsys, account(), "--tabs", "5", "--parameter", "ApiAccessLogging=UseAccountRole")
    assert code == 0, out
    code, out = run(capsys, account(), "--tabs", "5", "--parameter", "ApiAccessLogging=CreateAccountRole")
    assert code == 0 and any(
        line.startswith("note") and f"replace the account's CloudWatch Logs role {ROLE}" in line for line in out
    ), out


def test_a_district_on_sse_needs_the_table_raised_and_on_push_fits(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    sse = ("--parameter", "PushChannel=sse")
    code, out = run(capsys, account(quota=1000), "--tabs", "3000", "--calls-per-second", "20", *sse)
    assert code == 1
    text = "\n".join(raised(out))
    assert "raise 'Concurrent executions' to 3020 (now 1000)" in text
    assert "30000 read units/s over the table's cap: TableMaxReadUnitsPerSecond=30000 (now 12000)" in text
    assert "pre-warm it, TableWarmReadUnitsPerSecond=30000" in text
    assert "of the account's table-level limit of 10000; ask for more" in text  # moto's limit
    code, out = run(
        capsys,
        account(quota=1000, connections=500),
        "--tabs",
        "3000",
        "--calls-per-second",
        "20",
        "--parameter",
        "PushChannel=websocket",
    )
    assert code == 0, out
    assert any("50 new WebSocket connections/s of 500" in line for line in out), out


def test_the_push_stage_and_new_connections_bound_a_bigger_district(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    caps: tuple[str, ...] = ("--parameter", "TableMaxReadUnitsPerSecond=40000")
    caps += ("--parameter", "TableMaxWriteUnitsPerSecond=40000")
    caps += ("--parameter", "PushPingSeconds=90")  # pings over five times as often as the default's 480 s
    code, out = run(capsys, account(connections=500), "--tabs", "60000", "--parameter", "PushChannel=websocket", *caps)
    assert code == 1
    text = "\n".join(raised(out))
    assert "1000 new WebSocket connections/s of 500" in text
    assert "push messages/s of the push stage's throttle of 1000/s" in text


def test_samconfig_overrides_are_the_deployments_parameters(
    aws: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copy(CHECKOUT / "template.yaml", tmp_path / "template.yaml")
    (tmp_path / "samconfig.toml").write_text(
        'version = 0.1\n[default.deploy.parameters]\nregion = "eu-west-1"\n'
        'parameter_overrides = "StreamConcurrency=100 AlertEmail=\\"ops@example.org\\""\n'
    )
    args = build_parser().parse_args(["doctor", "--template", str(tmp_path / "template.yaml"), "--tabs", "5"])
    code = doctor.run(args, client=account(quota=10))
    out = capsys.readouterr().out
    assert code == 1 and "StreamConcurrency=100 would leave" in out and "# eu-west-1:" in out
    assert "alarms mail ops@example.org; budget $100 a month" in out


def test_what_the_account_does_not_say_is_named_and_no_access_at_all_stops(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, account(denied=("lambda",)), "--tabs", "5")
    assert code == 0
    assert any(line.startswith("unknown") and "Lambda account settings" in line for line in out), out
    every = ("lambda", "apigateway", "dynamodb", "service-quotas")
    args = build_parser().parse_args(["doctor", "--region", REGION, "--template", str(CHECKOUT / "template.yaml")])
    assert doctor.run(args, client=account(denied=every)) == 2
    assert "could not read the account" in capsys.readouterr().err


def test_unknown_parameters_are_refused(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(
        [
            "doctor",
            "--region",
            REGION,
            "--template",
            str(CHECKOUT / "template.yaml"),
            "--parameter",
            "StreamConcurency=5",
        ]
    )
    assert doctor.run(args, client=account()) == 2
    assert "unknown template parameter(s): StreamConcurency" in capsys.readouterr().err
