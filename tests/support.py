"""Shared test helpers: live servers on loopback, API shortcuts, free ports."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from codap_relay.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve_app(app: Any, *, port: int | None = None, tls: tuple[Path, Path] | None = None) -> Iterator[str]:
    """Run an ASGI app on a real uvicorn server on 127.0.0.1 in a thread; yield its base URL.
    ``tls`` = (certificate, key) PEM files serves it over https."""
    port = port or free_port()
    certificate, key = tls or (None, None)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        ssl_certfile=certificate,
        ssl_keyfile=key,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


class ServerProcess(subprocess.Popen[bytes]):
    """A server child process whose stdout and stderr go to a temporary file, never a pipe: a pipe nobody
    reads blocks a chatty server. ``output()`` reads everything it printed so far."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None, output: Any) -> None:
        super().__init__(cmd, env=env, stdout=output, stderr=subprocess.STDOUT)
        self._output = output

    def output(self) -> str:
        self._output.flush()
        self._output.seek(0)
        text: str = self._output.read().decode(errors="replace")
        return text


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
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


def wait_healthy(base: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            err = proc.output() if isinstance(proc, ServerProcess) else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{base} did not become healthy")


def also_through_local_api(metafunc: pytest.Metafunc, fixture: str, in_process: str) -> None:
    """For ``pytest_generate_tests``: every test of the module that takes ``fixture`` runs with it in process
    (``in_process``) and through local-api (``local_api``), except tests marked ``in_process``, which need the
    relay's in-process state (a fake clock, its store or its logs)."""
    if fixture in metafunc.fixturenames and metafunc.definition.get_closest_marker("in_process") is None:
        through = pytest.param("local_api", marks=pytest.mark.dynamodb_local, id="local_api")
        metafunc.parametrize(fixture, [in_process, through], indirect=True)


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: the memory store and a fast heartbeat unless told otherwise."""
    base: dict[str, Any] = {"relay_store": "memory:", "heartbeat_seconds": 0.2}
    base.update(overrides)
    return Settings(**base)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
