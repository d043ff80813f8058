"""The command line: every command is offered, and a command whose extra is missing says how to install it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from codap_relay.cli import build_parser, main


def test_every_command_is_offered() -> None:
    help_text = build_parser().format_help()
    for command in ("serve", "local-api", "call", "mcp-stdio", "dynamodb"):
        assert command in help_text


def test_mcp_stdio_without_the_mcp_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the MCP extra were not installed
    assert main(["mcp-stdio", "--url", "http://127.0.0.1:9/mcp/ABCD2345"]) == 2
    captured = capsys.readouterr()
    assert "pip install 'codap-relay[mcp]'" in captured.err and captured.out == ""


def test_dynamodb_without_the_aws_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if the aws extra were not installed
    assert main(["dynamodb", "create-table", "--table", "relay"]) == 2
    assert "pip install 'codap-relay[aws]'" in capsys.readouterr().err


def test_local_api_without_the_tooling_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "codap_relay_tooling", None)  # as if tooling/ were not installed
    assert main(["local-api", "--port", "3999"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "pip install -e ./tooling" in captured.err and captured.out == ""


# Every module of the runtime package imports with the tooling package unimportable: what the Lambda layer and the
# wheel ship never needs it (local-api imports it only when run). A child interpreter, so no module is cached.
RUNTIME_WITHOUT_TOOLING = """
import importlib, pkgutil, sys
sys.modules["codap_relay_tooling"] = None
import codap_relay
names = [m.name for m in pkgutil.walk_packages(codap_relay.__path__, "codap_relay.")]
for name in names:
    importlib.import_module(name)
assert not [m for m in sys.modules if m.startswith("codap_relay_tooling.")]
print(len(names))
"""


def test_the_runtime_package_imports_without_the_tooling() -> None:
    done = subprocess.run([sys.executable, "-c", RUNTIME_WITHOUT_TOOLING], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 40  # every module was walked, the mcp subpackage's included


@pytest.mark.parametrize("level", ["info", "INFO", "Warning", "debug"])
def test_serve_takes_a_log_level_in_any_case(level: str) -> None:
    args = build_parser().parse_args(["serve", "--log-level", level])
    assert args.log_level == level.upper()


def test_serve_refuses_an_unknown_log_level_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", "--log-level", "chatty"])
    assert exit_.value.code == 2
    assert "--log-level" in capsys.readouterr().err


# Each option with a bad value: (the command line, the option its one-line error must name). The values are what a
# person mistypes: a port out of range or not a number, a negative or zero count, a store URL of no known kind, a
# folder or file that is not there, a host that is not one, a pairing code of the wrong shape...
BAD_OPTIONS = [
    (["doctor", "--region", "Mars"], "--region"),
    (["doctor", "--profile", "my profile"], "--profile"),
    (["doctor", "--template", "/nonexistent/template.yaml"], "--template"),
    (["doctor", "--config-file", "/nonexistent/samconfig.toml"], "--config-file"),
    (["doctor", "--config-env", "a/b"], "--config-env"),
    (["doctor", "--parameter", "no-equals"], "--parameter"),
    (["doctor", "--tabs", "0"], "--tabs"),
    (["doctor", "--calls-per-second", "-1"], "--calls-per-second"),
    (["doctor", "--calls-per-second", "many"], "--calls-per-second"),
    (["serve", "--port", "0"], "--port"),
    (["serve", "--port", "65536"], "--port"),
    (["serve", "--port", "http"], "--port"),
    (["serve", "--host", "127.0.0.1:8080"], "--host"),
    (["serve", "--host", "not a host"], "--host"),
    (["serve", "--store", "postgres://db"], "--store"),
    (["serve", "--store", "sqlite:///relay.db?mode=ro"], "--store"),
    (["serve", "--store", "sqlite://relative.db"], "--store"),
    (["serve", "--cors-origin", "codap.concord.org"], "--cors-origin"),
    (["serve", "--cors-origin", "https://codap.concord.org/app/"], "--cors-origin"),
    (["serve", "--codap-dir", "/nonexistent/codap/dist"], "--codap-dir"),
    (["serve", "--max-connections", "0"], "--max-connections"),
    (["serve", "--max-connections", "many"], "--max-connections"),
    (["serve", "--header-timeout", "0"], "--header-timeout"),
    (["serve", "--header-timeout", "nan"], "--header-timeout"),
    (["serve", "--max-connections-per-address", "0"], "--max-connections-per-address"),
    (["serve", "--body-timeout", "-1"], "--body-timeout"),
    (["serve", "--log-level", "chatty"], "--log-level"),
    (["local-api", "--port", "-1"], "--port"),
    (["local-api", "--host", "-"], "--host"),
    (["local-api", "--store", "memory"], "--store"),
    (["local-api", "--stage", "pro/d"], "--stage"),
    (["local-api", "--base-path", "a b"], "--base-path"),
    (["local-api", "--template", "/nonexistent/template.yaml"], "--template"),
    (["local-api", "--parameter", "NoEquals"], "--parameter"),
    (["local-api", "--max-instances", "0"], "--max-instances"),
    (["local-api", "--push-channel", "sns"], "--push-channel"),
    (["local-api", "--push-port", "0"], "--push-port"),
    (["local-api", "--push-idle-timeout", "0"], "--push-idle-timeout"),
    (["local-api", "--push-max-lifetime", "-5"], "--push-max-lifetime"),
    (["local-api", "--push-faults", "some"], "--push-faults"),
    (["call", "--url", "127.0.0.1:8080", "--code", "ABCD2345", "tools"], "--url"),
    (["call", "--url", "http://127.0.0.1:99999", "--code", "ABCD2345", "tools"], "--url"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABC", "tools"], "--code"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "--wait", "-1", "tools"], "--wait"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "--wait", "inf", "tools"], "--wait"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "--id", "has space", "tools"], "--id"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "no such tool!"], "tool"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "tools", "[1]"], "args"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "tools", "{bad"], "args"),
    (["call", "--url", "http://127.0.0.1:8080", "--code", "ABCD2345", "tools", '{"x": 1e999}'], "args"),
    (["mcp-stdio", "--url", "ftp://relay/mcp/ABCD2345"], "--url"),
    (["mcp-stdio", "--url", "http://127.0.0.1:8080/mcp", "--code", "ABCD23456"], "--code"),
    (["mcp-stdio", "--url", "http://127.0.0.1:8080/mcp/ABCD2345", "--timeout", "0"], "--timeout"),
    (["dynamodb", "create-table", "--table", "ab"], "--table"),
    (["dynamodb", "create-table", "--table", "relay", "--endpoint-url", "localhost:8000"], "--endpoint-url"),
    (["dynamodb", "create-table", "--table", "relay", "--region", "Mars"], "--region"),
    (["dynamodb", "create-table", "--table", "relay", "--template", "/nonexistent.yaml"], "--template"),
    (["dynamodb", "seed-example", "--table", "a/b"], "--table"),
    (["dynamodb", "seed-example", "--table", "relay", "--endpoint-url", "http://"], "--endpoint-url"),
    (["dynamodb", "seed-example", "--table", "relay", "--region", "us_east_1"], "--region"),
]


@pytest.mark.parametrize(("argv", "option"), BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_a_bad_value_stops_the_command_with_one_line_naming_the_option(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODAP_RELAY_URL", raising=False)
    monkeypatch.delenv("CODAP_RELAY_CODE", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(argv)  # in process; a bad value stops it while parsing, before anything starts
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured.err
    command = "codap-relay " + " ".join(argv[: 2 if argv[0] == "dynamodb" else 1])
    assert lines[0].startswith(f"{command}: argument {option}"), lines[0]
    assert lines[0].endswith(f"(see {command} --help)")


def test_every_option_of_every_command_is_tried_with_a_bad_value() -> None:
    """A new option must be added to BAD_OPTIONS (with its check) or named here as one with nothing to check."""
    free_text: set[str] = set()  # none: every option that takes a value can be given a wrong one
    switches = {("local-api", "--forkserver")}  # take no value
    tried = {(argv[0] if argv[0] != "dynamodb" else " ".join(argv[:2]), option) for argv, option in BAD_OPTIONS}
    offered: set[tuple[str, str]] = set()

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, f"{name} {sub_name}".strip())
            elif name and not isinstance(action, argparse._HelpAction):
                offered.add((name, action.option_strings[0] if action.option_strings else action.dest))

    walk(build_parser(), "")
    assert {o for o in offered if o[1] not in free_text} - switches == tried
