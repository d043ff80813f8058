"""Execution environments: one operating-system process per function instance, as Lambda gives each its own.

A buffered function runs ``codap_relay_tooling.localapi.runtime`` (its own interpreter, its handler imported once); a
function behind the Lambda Web Adapter runs its own start script (``run.sh``: uvicorn on the function's ASGI
app) and is ready when its readiness path answers, as the adapter checks. Each instance serves one invocation
at a time; a pool per function reuses warm instances (most recent first) and starts another (a cold start)
when all are busy, up to a cap. Their output goes to local-api's output, each line prefixed with the function
and instance, with Lambda's START / END / REPORT lines around every invocation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

import codap_relay
import codap_relay_tooling

from ..testing import web
from ..testing.servers import free_port
from .forkserver import ForkedProcess, Forkserver, die_with_parent
from .runtime import INVOKE_PATH, READY_PREFIX
from .template import Function

CORE_DIR = Path(codap_relay.__file__).resolve().parents[1]  # the folder that holds the codap_relay package
# ... and the one that holds this tooling package: a buffered function's process runs its runtime program
# (localapi/runtime.py), which the deployed functions do not have.
TOOLING_DIR = Path(codap_relay_tooling.__file__).resolve().parents[1]
STOP_GRACE_SECONDS = 5.0
READY_TIMEOUT_SECONDS = 60.0  # generous: cold starts on a loaded machine; Lambda's own init limit is 10 s


class InstanceFailed(RuntimeError):
    """The environment could not start or died during an invocation (API Gateway answers 502)."""


class FunctionThrottled(RuntimeError):
    """Every execution environment the function's reserved concurrency allows is busy: Lambda refuses the
    invocation at once (TooManyRequestsException, "Rate Exceeded."), it does not queue it."""


@dataclass
class Invocation:
    """One finished invocation, for the REPORT line."""

    request_id: str
    started: float = field(default_factory=time.perf_counter)


class Instance:
    """One execution environment (process). Subclasses know how to start it and talk to it."""

    def __init__(self, function: Function, number: int, environment: Mapping[str, str], output: TextIO) -> None:
        self.function = function
        self.number = number
        self.environment = dict(environment)
        self.output = output
        self.label = f"{function.logical_id}#{number}"
        self.process: asyncio.subprocess.Process | ForkedProcess | None = None
        self.init_ms: float | None = None  # reported with the first invocation, as Lambda's Init Duration
        self.invocations = 0
        self._pump: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._nonce = secrets.token_hex(8)

    # --- lifecycle --------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def _spawn(
        self, argv: list[str], extra_env: Mapping[str, str], *, forkserver: Forkserver | None = None
    ) -> None:
        """Start the environment's process: ``argv`` in a fresh process, or, given ``forkserver``, the module that
        ``argv`` runs with ``-m``, forked from its prepared interpreter (forkserver.py)."""
        self._ready = asyncio.get_running_loop().create_future()
        if forkserver is not None:
            [_python, _m, module] = argv
            self.process = await forkserver.spawn(module, {**self.environment, **extra_env}, self.function.code_dir)
            self._pump = asyncio.create_task(self._read_output())
            return
        self.process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(self.function.code_dir),
            env={**self.environment, **extra_env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in local-api's terminal reaches local-api alone, which stops these
            preexec_fn=die_with_parent,
        )
        self._pump = asyncio.create_task(self._read_output())

    async def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", errors="replace").rstrip("\n")
            if text.startswith(READY_PREFIX + self._nonce) and self._ready is not None and not self._ready.done():
                self._ready.set_result(json.loads(text[len(READY_PREFIX) + len(self._nonce) :]))
                continue
            self.log(text)
        await self.process.wait()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(InstanceFailed(f"{self.label} exited with {self.process.returncode}"))

    def log(self, text: str) -> None:
        self.output.write(f"[{self.label}] {text}\n")
        self.output.flush()

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        """SIGTERM, a short grace, then SIGKILL; the output pump drains what the process printed last."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._pump is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pump, 2)
        await self.close_client()

    async def close_client(self) -> None:
        pass

    # --- invocation bookkeeping (Lambda's own log lines) --------------------------------------------------

    def begin(self, request_id: str) -> Invocation:
        self.log(f"START RequestId: {request_id} Version: $LATEST")
        return Invocation(request_id)

    def end(self, invocation: Invocation, *, status: str = "") -> None:
        duration = (time.perf_counter() - invocation.started) * 1000
        parts = [
            f"REPORT RequestId: {invocation.request_id}",
            f"Duration: {duration:.2f} ms",
            f"Billed Duration: {math.ceil(duration)} ms",
            f"Memory Size: {self.function.memory_mb} MB",
            f"Max Memory Used: {self._max_memory_mb()} MB",
        ]
        if self.invocations == 0 and self.init_ms is not None:
            parts.append(f"Init Duration: {self.init_ms:.2f} ms")
        if status:
            parts.append(f"Status: {status}")
        self.invocations += 1
        self.log(f"END RequestId: {invocation.request_id}")
        self.log("\t".join(parts))

    def _max_memory_mb(self) -> int:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        except (OSError, ValueError):
            pass
        return 0


class RuntimeInstance(Instance):
    """A buffered function: the Python runtime stand-in answering the invoke API; forked from ``forkserver``'s
    prepared interpreter where local-api has one (``--forkserver``)."""

    client: httpx.AsyncClient | None = None
    forkserver: Forkserver | None = None

    async def start(self) -> None:
        await self._spawn(
            [sys.executable, "-m", "codap_relay_tooling.localapi.runtime"],
            {"LOCALAPI_NONCE": self._nonce, "_HANDLER": self.function.handler},
            forkserver=self.forkserver,
        )
        assert self._ready is not None
        try:
            ready = await asyncio.wait_for(self._ready, READY_TIMEOUT_SECONDS)
        except TimeoutError as exc:
            await self.stop()
            raise InstanceFailed(f"{self.label} did not finish its init within {READY_TIMEOUT_SECONDS:g} s") from exc
        if "error" in ready:
            await self.stop()
            raise InstanceFailed(f"{self.label}: {ready['error']}")
        self.init_ms = float(ready["initMs"])
        self.client = web.AsyncClient(
            base_url=f"http://127.0.0.1:{ready['port']}",
            timeout=None,  # local-api enforces the function's timeout itself
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )

    async def invoke(self, event: bytes, request_id: str, deadline: float, trace: str) -> tuple[bytes, bool]:
        """The raw response payload and whether it is a function error (X-Amz-Function-Error)."""
        assert self.client is not None
        headers = {
            "Content-Type": "application/json",
            "Lambda-Runtime-Aws-Request-Id": request_id,
            "Lambda-Runtime-Deadline-Ms": str(int(deadline * 1000)),
            "Lambda-Runtime-Trace-Id": trace,
        }
        try:
            response = await self.client.post(INVOKE_PATH, content=event, headers=headers)
        except httpx.TransportError as exc:
            raise InstanceFailed(f"{self.label} died during the invocation (Runtime.ExitError)") from exc
        return response.content, "x-amz-function-error" in response.headers

    async def close_client(self) -> None:
        if self.client is not None:
            await self.client.aclose()


class AdapterInstance(Instance):
    """A function behind the Lambda Web Adapter: its own start script serving HTTP on a port of its own."""

    client: httpx.AsyncClient | None = None
    port = 0

    async def start(self) -> None:
        for attempt in range(3):
            try:
                await self._start_on(free_port())
                return
            except InstanceFailed:
                # The free port may have been taken between choosing it and the app binding it: another one.
                if attempt == 2:
                    raise

    async def _start_on(self, port: int) -> None:
        self.port = port
        script = self.function.code_dir / self.function.handler
        started = time.perf_counter()
        # PORT (and AWS_LWA_PORT) name where the app listens: each instance needs its own port on one machine.
        await self._spawn(["/bin/sh", str(script)], {"PORT": str(self.port), "AWS_LWA_PORT": str(self.port)})
        self.client = web.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}", timeout=httpx.Timeout(10, read=None), trust_env=False
        )
        check_path = self.environment.get("AWS_LWA_READINESS_CHECK_PATH", "/")
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while True:
            if not self.alive:
                await self.stop()
                raise InstanceFailed(f"{self.label} exited during its init (see its output above)")
            try:
                # The adapter's rule: any status from 100 to 499 means the app is up.
                if (await self.client.get(check_path, timeout=1)).status_code < 500:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                await self.stop()
                raise InstanceFailed(f"{self.label} was not ready within {READY_TIMEOUT_SECONDS:g} s")
            await asyncio.sleep(0.01)  # the adapter retries every 10 ms
        self.init_ms = (time.perf_counter() - started) * 1000

    async def close_client(self) -> None:
        if self.client is not None:
            await self.client.aclose()


Launcher = Callable[[Function, int], Instance]


class Pool:
    """The warm instances of one function; ``acquire`` gives one to a single invocation at a time."""

    def __init__(self, function: Function, make: Launcher, max_instances: int, *, throttles: bool = False) -> None:
        """``throttles``: ``max_instances`` is the function's reserved concurrency, so an invocation over it is
        refused at once (FunctionThrottled), as Lambda does; otherwise it is local-api's own cap, and waits."""
        self.function = function
        self.make = make
        self.max_instances = max_instances
        self.throttles = throttles
        self.instances: list[Instance] = []
        self._idle: list[Instance] = []
        self._starting = 0
        self._numbers = 0
        self._changed = asyncio.Condition()

    @property
    def size(self) -> int:
        return len(self.instances) + self._starting

    async def acquire(self, timeout: float) -> Instance:
        """A warm idle instance, else a new one (a cold start), else wait for one to come free."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._changed:
            while True:
                while self._idle:
                    instance = self._idle.pop()  # the most recently used: Lambda reuses warm environments
                    if instance.alive:
                        return instance
                    self._forget(instance)
                if self.size < self.max_instances:
                    self._starting += 1
                    self._numbers += 1
                    number = self._numbers
                    break
                if self.throttles:
                    raise FunctionThrottled(
                        f"{self.function.logical_id}: all {self.max_instances} of its reserved concurrency are busy"
                    )
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError(f"all {self.max_instances} instances of {self.function.logical_id} are busy")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
        instance = self.make(self.function, number)
        try:
            await instance.start()
        except BaseException:
            async with self._changed:
                self._starting -= 1
                self._changed.notify_all()
            raise
        async with self._changed:
            self._starting -= 1
            self.instances.append(instance)
        return instance

    async def release(self, instance: Instance) -> None:
        async with self._changed:
            if instance.alive:
                self._idle.append(instance)
            else:
                self._forget(instance)
            self._changed.notify_all()

    async def discard(self, instance: Instance) -> None:
        """Throw an instance away (timed out, crashed): the next invocation gets a fresh one."""
        await instance.stop()
        async with self._changed:
            self._forget(instance)
            self._changed.notify_all()

    def _forget(self, instance: Instance) -> None:
        if instance in self.instances:
            self.instances.remove(instance)
        if instance in self._idle:
            self._idle.remove(instance)

    async def close(self) -> None:
        instances = list(self.instances)
        self.instances.clear()
        self._idle.clear()
        await asyncio.gather(*(i.stop() for i in instances), return_exceptions=True)


def function_environment(
    function: Function,
    *,
    store_url: str,
    layer_dir: Path,
    region: str,
    caller: Mapping[str, str],
    own: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What the function's process sees: Lambda's own variables, the template's (Globals, then the function's),
    any of those the caller's environment sets itself, which win, and then RELAY_STORE from --store and ``own``:
    what local-api points at itself (the push channel's PUSH_URL and PUSH_ENDPOINT), as it points the store."""
    python_bin = str(Path(sys.executable).parent)
    environment: dict[str, str] = {
        "PATH": os.pathsep.join([python_bin, caller.get("PATH", "/usr/bin:/bin")]),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "PYTHONUNBUFFERED": "1",
        # The layer: on AWS /opt/python holds the core and the shared glue; here the glue comes from the folder
        # the layer is built from, and the core is the one this command runs (the folder its package is in), so a
        # source checkout's functions run its own core, not whichever one the interpreter has installed. The tooling
        # comes last: only the runtime program (python -m codap_relay_tooling.localapi.runtime) imports it.
        "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(layer_dir), str(CORE_DIR), str(TOOLING_DIR)])),
        "LAMBDA_TASK_ROOT": str(function.code_dir),
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": function.logical_id,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.logical_id}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local-api",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
    }
    # Lambda hands the execution role's credentials to the function in these variables.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if name in caller:
            environment[name] = caller[name]
    configured = dict(function.environment)
    configured.update({name: caller[name] for name in configured if name in caller})
    configured["RELAY_STORE"] = store_url  # --store (or the caller's RELAY_STORE, which the command read)
    configured.update(own or {})
    return {**environment, **configured}
