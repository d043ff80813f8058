"""The relay's commands (``serve``, ``local-api``) as child processes, and running a test module's tests through
local-api as well as in process."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from codap_relay_tooling.testing.servers import ServerProcess, free_port, wait_healthy


@contextlib.contextmanager
def serve_process(
    *args: str, env: dict[str, str] | None = None, port: int | None = None, start_timeout: float = 20
) -> Iterator[tuple[str, ServerProcess]]:
    """Run ``codap-relay serve`` as a child process (the real command); yield (base URL, process)."""
    with command_process("serve", *args, env=env, port=port, start_timeout=start_timeout) as served:
        yield served


#: Limits roomy enough that the suites never meet them by accident (each suite has its own tests about limits);
#: host checks on, as a local deployment should have them (the MCP conformance suite's DNS-rebinding scenario).
LOCAL_API_ENV = {
    "RATE_LIMIT_SESSION_PER_IP": "100000",
    "RATE_LIMIT_REQUEST_PER_CODE": "100000",
    "GUESS_LIMIT_PER_IP": "100000",
    "RATE_LIMIT_STATUS_PER_IP": "100000",
    "REQUEST_BYTES_PER_IP_PER_HOUR": "10000000000",
    "MAX_PENDING_REQUESTS_PER_SESSION": "100000",
    "MAX_PENDING_BYTES_PER_SESSION": "10000000000",
    "HEARTBEAT_SECONDS": "1",
    # local-api runs a stream on after its client left, as AWS does, until the plugin detaches it (pagehide), a newer
    # stream takes over, or this limit ends it: a test client that leaves without detaching holds a stream
    # function (one of local-api's ten per function) for a minute, not for the 14 minutes a deployment allows.
    "STREAM_MAX_SECONDS": "60",
    "ALLOWED_HOSTS": "localhost,127.0.0.1,[::1]",
    # CODAP and the fake host on loopback frame the plugin (testing.relay_settings.TEST_FRAME_ANCESTORS).
    "FRAME_ANCESTORS": "http://127.0.0.1:*,http://localhost:*,https://127.0.0.1:*,https://localhost:*",
}


@dataclass(frozen=True)
class LocalApi:
    """The test session's local-api (tests/conftest.py): its stage's base URL and the process."""

    base: str  # http://127.0.0.1:PORT/v1
    process: ServerProcess
    #: The lagging replica's proxy every function reads through (lagging_dynamodb.py), when there is one.
    replica: str | None = None


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
    if fixture not in metafunc.fixturenames:
        return
    once = any(metafunc.definition.get_closest_marker(m) is not None for m in ("in_process", "tools"))
    through = pytest.param("local_api", marks=pytest.mark.dynamodb_local, id="local_api")
    # A test that runs once still takes the in-process parameter: unparametrized, it would get an instance of its
    # own of the (session) fixture and of every module fixture built on it (a second relay, a second CODAP page).
    metafunc.parametrize(fixture, [in_process] if once else [in_process, through], indirect=True)
