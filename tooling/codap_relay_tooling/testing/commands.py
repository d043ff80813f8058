"""Test-local helpers: the relay's commands as child processes, local-api parametrisation, settings.
(Servers, ports and the fake plugin that bench shares are in codap_relay.testing.)"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codap_relay.settings import Settings
from codap_relay.testing.servers import ServerProcess, free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"  # screenshots and pictures the tests leave for a person to look at
EVENTS = ROOT / "events"


def clear_of_rate_window(needed: float = 15.0) -> None:
    """The relay counts per fixed wall-clock minute. A test that expects the n-th call in a row to be refused waits,
    when fewer than ``needed`` seconds are left of this minute, for the next one: calls that straddle a minute's
    end are counted in two windows and none is refused."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.05)


@contextlib.contextmanager
def serve_process(
    *args: str, env: dict[str, str] | None = None, port: int | None = None
) -> Iterator[tuple[str, ServerProcess]]:
    """Run ``codap-relay serve`` as a child process (the real command); yield (base URL, process)."""
    with command_process("serve", *args, env=env, port=port) as served:
        yield served


@dataclass(frozen=True)
class LocalApi:
    """The test session's local-api (tests/conftest.py): its stage's base URL and the process."""

    base: str  # http://127.0.0.1:PORT/v1
    process: ServerProcess


@contextlib.contextmanager
def local_api_process(
    *args: str, env: dict[str, str] | None = None, port: int | None = None, prefix: str = "/v1"
) -> Iterator[tuple[str, ServerProcess]]:
    """Run ``codap-relay local-api`` as a child process; yield (the stage's base URL, process)."""
    with command_process("local-api", *args, env=env, port=port, prefix=prefix, start_timeout=90) as served:
        yield served


@contextlib.contextmanager
def command_process(
    command: str,
    *args: str,
    env: dict[str, str] | None = None,
    port: int | None = None,
    prefix: str = "",
    start_timeout: float = 20,
) -> Iterator[tuple[str, ServerProcess]]:
    port = port or free_port()
    cmd = [sys.executable, "-m", "codap_relay.cli", command, "--host", "127.0.0.1", "--port", str(port), *args]
    with tempfile.TemporaryFile() as output:
        proc = ServerProcess(cmd, env, output)
        base = f"http://127.0.0.1:{port}{prefix}"
        try:
            wait_healthy(base, proc, start_timeout)
            yield base, proc
        finally:
            proc.stop()


def also_through_local_api(metafunc: pytest.Metafunc, fixture: str, in_process: str) -> None:
    """For ``pytest_generate_tests``: every test of the module that takes ``fixture`` runs with it in process
    (``in_process``) and through local-api (``local_api``), except tests marked ``in_process``, which need the
    relay's in-process state (a fake clock, its store or its logs) and tests marked ``tools`` (what a tool does
    inside CODAP: the relay carries every tool alike, and its paths are proven by the contract suites)."""
    once = any(metafunc.definition.get_closest_marker(m) is not None for m in ("in_process", "tools"))
    if fixture in metafunc.fixturenames and not once:
        through = pytest.param("local_api", marks=pytest.mark.dynamodb_local, id="local_api")
        metafunc.parametrize(fixture, [in_process, through], indirect=True)


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: the memory store and a fast heartbeat unless told otherwise."""
    base: dict[str, Any] = {"relay_store": "memory:", "heartbeat_seconds": 0.2}
    base.update(overrides)
    return Settings(**base)
