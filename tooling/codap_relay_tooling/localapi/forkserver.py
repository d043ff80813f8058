"""Execution environments forked from a prepared interpreter (``local-api --forkserver``), for the test suite.

A buffered function's environment is a fresh ``python -m codap_relay_tooling.localapi.runtime``: about 1.5
CPU-seconds before its handler answers, most of it importing boto3, pydantic, Starlette and Powertools. A test run
starts about 150 of them. With ``--forkserver`` local-api starts one interpreter that has imported those libraries
(``PRELOAD``: third-party only, never the checkout's own code, and nothing that reads the environment on import),
and each environment is a process forked from it: its own process and memory as before, its own environment
variables, working directory and output, and its handler imported (the init phase, timed) in the child, as Lambda's
SnapStart restores a prepared snapshot and then runs the function's own init. ``Init Duration`` then counts the
handler's init without those libraries, so the default (no flag) stays the fresh interpreter: local-api's figures are
a cold start's.

Protocol, over a socket pair: local-api sends one JSON line per environment with the write end of a pipe attached
(SCM_RIGHTS); the server forks, the child takes the pipe as its stdout and stderr, and the server answers the child's
pid with a pidfd of it attached, which local-api watches for the exit (the server reaps the child).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# What the buffered functions import before their own code (functions/shared/relay_lambda.py and the core).
PRELOAD = (
    "asyncio",
    "email.message",
    "http.server",
    "json",
    "logging",
    "boto3",
    "botocore.client",
    "botocore.session",
    "pydantic",
    "starlette.applications",
    "starlette.routing",
    "mangum",
    "httpx",
    "anyio",
    # Powertools reads AWS_EXECUTION_ENV on import: the server runs with a function's environment, whose Lambda
    # variables every function shares.
    "aws_lambda_powertools",
    "aws_lambda_powertools.logging",
    "aws_lambda_powertools.metrics",
    "mcp",  # the MCP function's SDK (and its models): most of that function's init
    "mcp.server.lowlevel",
    "mcp.client.streamable_http",
)
_MESSAGE_BYTES = 1 << 20


def die_with_parent() -> None:
    """In a new process: receive SIGTERM if its parent dies, even by SIGKILL (Linux), so nothing is orphaned."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# --- the server (its own process) ------------------------------------------------------------------------------


def _child(request: dict[str, Any], output: int, base_path: list[str]) -> None:
    """In the forked child: become the environment local-api asked for, then run the runtime program."""
    os.setsid()  # as start_new_session: a Ctrl-C in local-api's terminal reaches local-api alone
    die_with_parent()  # the server; the server itself dies with local-api
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(devnull)
    os.close(output)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdout from here on
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    environment: dict[str, str] = request["env"]
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(request["cwd"])
    # What a fresh `python -m` would put first: the working directory, then PYTHONPATH, then the interpreter's own.
    front = [request["cwd"], *[p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]]
    sys.path[:] = [*front, *[p for p in base_path if p not in front]]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    code = 1
    try:
        runtime = importlib.import_module(request["module"])
        code = int(runtime.main())
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(channel: socket.socket) -> None:
    """Fork an environment for each request until local-api closes the channel."""
    for name in PRELOAD:
        importlib.import_module(name)
    # The interpreter's own path, without this server's working directory and PYTHONPATH (each child sets its own).
    own = {os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)}
    base_path = [p for p in sys.path if p and p not in own]
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    channel.sendall(b"ready\n")
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(channel, _MESSAGE_BYTES, 1)
        except InterruptedError:
            continue
        if not message:
            _reap_all()  # local-api has stopped every child: none is left a zombie when the server exits
            return
        [output] = fds
        request = json.loads(message)
        # The child must not be reaped before its pidfd exists (a pidfd of a reaped pid would name no process).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            channel.close()
            _child(request, output, base_path)
        os.close(output)
        pidfd = os.pidfd_open(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        socket.send_fds(channel, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


def _reap_all(seconds: float = 5.0) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    deadline = time.monotonic() + seconds
    with contextlib.suppress(ChildProcessError):
        while time.monotonic() < deadline:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.01)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def main() -> int:
    die_with_parent()
    channel = socket.socket(fileno=int(sys.argv[1]))
    serve(channel)
    return 0


# --- local-api's side ------------------------------------------------------------------------------------------


class ForkedProcess:
    """The parts of asyncio.subprocess.Process an Instance uses, for a process the server forked. Its exit comes
    from its pidfd; its status stays with the server, which reaps it, so ``returncode`` is -1 once it exited."""

    def __init__(self, pid: int, pidfd: int, stdout: asyncio.StreamReader) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._exited = asyncio.Event()
        asyncio.get_running_loop().add_reader(pidfd, self._on_exit)

    def _on_exit(self) -> None:
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        self.returncode = -1
        self._exited.set()

    def _signal(self, signum: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    async def wait(self) -> int:
        await self._exited.wait()
        return -1


class Forkserver:
    """The prepared interpreter of one local-api, started on first use; ``spawn`` forks an environment from it."""

    def __init__(self) -> None:
        self._channel: socket.socket | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _start(self, environment: Mapping[str, str]) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "codap_relay_tooling.localapi.forkserver",
            str(theirs.fileno()),
            env=dict(environment),
            cwd="/",  # not a folder of modules: a `-m` run puts its working directory first on the path
            stdin=asyncio.subprocess.DEVNULL,
            pass_fds=[theirs.fileno()],
            start_new_session=True,
        )
        theirs.close()
        ready = await asyncio.to_thread(ours.recv, 64)
        if ready != b"ready\n":
            raise RuntimeError(f"local-api's forkserver did not start (exit {await self._process.wait()})")
        return ours

    async def spawn(self, module: str, environment: Mapping[str, str], cwd: Path) -> ForkedProcess:
        async with self._lock:
            if self._channel is None:
                self._channel = await self._start(environment)
            channel = self._channel
            read_end, write_end = os.pipe()
            request = json.dumps({"module": module, "env": dict(environment), "cwd": str(cwd)}).encode()
            try:
                await asyncio.to_thread(socket.send_fds, channel, [request], [write_end])
            finally:
                os.close(write_end)
            answer, fds, _flags, _address = await asyncio.to_thread(socket.recv_fds, channel, 4096, 1)
        [pidfd] = fds
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()  # asyncio's subprocess pipes' own limit
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb", 0))
        return ForkedProcess(int(json.loads(answer)["pid"]), pidfd, reader)

    async def stop(self) -> None:
        """Close the channel: the server reaps its (stopped) children and exits; terminated if it does not."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._process is not None and self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._process.terminate()
                await self._process.wait()


if __name__ == "__main__":
    sys.exit(main())
