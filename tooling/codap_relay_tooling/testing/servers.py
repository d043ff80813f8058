"""Servers on loopback for tests and benchmarks: free ports, an ASGI app under uvicorn in a thread, a child
server process whose output is kept, and the small helpers for talking to them."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from . import web


def descendants(pid: int) -> set[int]:
    """Every live descendant process of ``pid`` (from /proc, Linux: local-api's function processes)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def raise_fd_limit() -> int:
    """Lift this process's open-file limit to the hard limit (many connections at once); returns the new one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# How long a server's shutdown may take before it is forced (timeout_graceful_shutdown gives open connections 1 s;
# a shutdown that ends takes 0.1-1.2 s), and how long a forced one is waited for.
SHUTDOWN_SECONDS = 1.5
FORCED_SECONDS = 0.5


@contextlib.contextmanager
def serve_app(
    app: Any, *, port: int | None = None, tls: tuple[Path, Path] | None = None, wait_for_stop: bool = True
) -> Iterator[str]:
    """Run an ASGI app on a real uvicorn server on 127.0.0.1 in a thread; yield its base URL.
    ``tls`` = (certificate, key) PEM files serves it over https. ``wait_for_stop=False`` asks the server to stop on
    exit and returns at once: for a test session's own servers, which stop when nothing comes after them (pytest
    stops a session's fixtures one after another, and a worker's run ended on 8 s of waiting for four of them)."""
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
        # A browser keeps its connections open: without a bound, shutdown waits for them until the join gives up.
        timeout_graceful_shutdown=1,
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
        if wait_for_stop:
            thread.join(SHUTDOWN_SECONDS)
        if wait_for_stop and thread.is_alive():
            # Seen at the end of long test runs: each of a worker's four session servers still running 10 s
            # later (40 s the whole run waited for), and still after uvicorn's own way out (what a second Ctrl+C
            # does). The thread is a daemon: one that lingers ends with the process, so it gets a moment, no more.
            server.force_exit = True
            thread.join(FORCED_SECONDS)


class ServerProcess(subprocess.Popen[bytes]):
    """A server child process whose stdout and stderr go to a temporary file, never a pipe: a pipe nobody
    reads blocks a chatty server. ``output()`` reads everything it printed so far."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None, output: Any, cwd: Path | None = None) -> None:
        super().__init__(cmd, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        self._output = output

    def output(self) -> str:
        self._output.flush()
        self._output.seek(0)
        text: str = self._output.read().decode(errors="replace")
        return text

    def stop(self, grace: float = 10) -> None:
        """Terminate, and kill if it does not exit within ``grace`` seconds."""
        if self.poll() is None:
            self.terminate()
            try:
                self.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()
                self.wait(5)


def wait_healthy(base: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 20) -> None:
    """Wait until ``GET {base}/healthz`` answers 200; fail at once, with its output, if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            err = proc.output() if isinstance(proc, ServerProcess) else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err[-2000:]}")
        # Up to 5 s an answer: a server that restarts into a storm of retrying clients (the crash chaos) is up but
        # answers /healthz behind them, and a 1 s cap kept missing it on a loaded machine.
        left = deadline - time.monotonic()
        with contextlib.suppress(httpx.TransportError):
            if web.get(f"{base}/healthz", timeout=max(0.5, min(5.0, left))).status_code == 200:
                return
        time.sleep(0.05)
    seen = proc.output()[-2000:] if isinstance(proc, ServerProcess) else ""
    raise RuntimeError(f"{base} did not become healthy within {timeout:g} s; its output: {seen or '(none)'}")
