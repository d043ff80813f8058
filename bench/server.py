"""Start and stop the server under test (``bench.target``) as a child process on loopback."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Target:
    base: str
    pid: int

    def counts(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.base}/bench/counts", timeout=30).json()
        return body

    def reset(self) -> None:
        httpx.post(f"{self.base}/bench/reset", timeout=30).raise_for_status()


@contextlib.contextmanager
def run_target(
    store: str,
    *,
    poll: bool = False,
    wakeups: bool = True,
    heartbeat: float = 15.0,
    env: dict[str, str] | None = None,
) -> Iterator[Target]:
    """``poll``: waiters poll the store (as with DynamoDB); ``wakeups=False``: not even this process's own writes
    wake them, which is how waiting works across Lambda instances."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.target", "--port", str(port), "--store", store, "--heartbeat", str(heartbeat)]
    if poll:
        cmd.append("--poll")
    if not wakeups:
        cmd.append("--no-wakeups")
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), child_env.get("PYTHONPATH")) if p)
    # stderr to a file, not a pipe: nobody reads it during the run, and a full pipe would stall the server.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below, after the child exits
    proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env, stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc, log)
        yield Target(base, proc.pid)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        log.close()


def _wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            err = log.read().decode(errors="replace")
            raise RuntimeError(f"the benchmark server exited with {proc.returncode}: {err[-2000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the benchmark server at {base} did not become healthy within {timeout:g} s")
