"""Start and stop the server under test (``bench.target``) as a child process on loopback."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.servers import ServerProcess, free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    base: str
    pid: int

    def counts(self) -> dict[str, Any]:
        body: dict[str, Any] = web.get(f"{self.base}/bench/counts", timeout=30).json()
        return body

    def reset(self) -> None:
        web.post(f"{self.base}/bench/reset", timeout=30).raise_for_status()


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
    with tempfile.TemporaryFile() as output:
        proc = ServerProcess(cmd, child_env, output, cwd=ROOT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, timeout=30)
            yield Target(base, proc.pid)
        finally:
            proc.stop()
