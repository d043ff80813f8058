"""The command line: every command is offered, and a command whose extra is missing says how to install it."""

from __future__ import annotations

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


@pytest.mark.parametrize("level", ["info", "INFO", "Warning", "debug"])
def test_serve_takes_a_log_level_in_any_case(level: str) -> None:
    args = build_parser().parse_args(["serve", "--log-level", level])
    assert args.log_level == level.upper()


def test_serve_refuses_an_unknown_log_level_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", "--log-level", "chatty"])
    assert exit_.value.code == 2
    assert "--log-level" in capsys.readouterr().err
