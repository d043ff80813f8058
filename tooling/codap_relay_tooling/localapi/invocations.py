"""Invoking a function the way an API Gateway integration does, for both of local-api's APIs (REST and WebSocket).

An instance is found within the integration's timeout (or refused over the function's reserved concurrency); the
function has its own timeout, after which Lambda ends it; an answer over Lambda's response payload limit ends its
environment; and a function API Gateway stopped waiting for runs on until it returns or its own timeout ends it.
What the integration then answers its client is each API's own business: ``Invoked.refused`` says why there is no
payload, and each gateway words it as its API does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from .events import trace_id
from .instances import FunctionThrottled, Instance, InstanceFailed, Pool, RuntimeInstance

MAX_RESPONSE_PAYLOAD_BYTES = 6_291_556

#: Why an invocation gave no payload: over the reserved concurrency; nothing within the integration's timeout; or
#: the function failed (an error, a crash, its own timeout, an answer too big, an instance that could not start).
Refused = Literal["throttled", "timed out", "failed"]


@dataclass(frozen=True)
class Invoked:
    payload: bytes | None = None
    refused: Refused | None = None
    #: The instance that ran it, for log lines about its answer (None when no instance was found).
    instance: Instance | None = None


class Invoker:
    """Invocations, and the work left running after an integration gave up on one; ``log`` is local-api's output."""

    def __init__(self, output: TextIO) -> None:
        self.output = output
        self._background: set[asyncio.Task[None]] = set()

    async def instance(self, pool: Pool, timeout_s: float) -> Instance | Refused:
        """A warm or new instance, or why none could be had within ``timeout_s``."""
        try:
            return await pool.acquire(timeout=timeout_s)
        except FunctionThrottled as exc:  # over the reserved concurrency: refused at once
            self.log(f"{exc}: throttled (Rate Exceeded.)")
            return "throttled"
        except TimeoutError:  # every instance busy (or starting) for the whole integration timeout
            return "timed out"
        except InstanceFailed as exc:  # the function cannot start: Lambda's init error
            self.log(f"{pool.function.logical_id}: {exc}")
            return "failed"

    async def invoke(self, pool: Pool, payload: bytes, request_id: str, timeout_s: float, now: float) -> Invoked:
        """One buffered invocation within an integration timeout of ``timeout_s`` (finding an instance counts)."""
        integration_deadline = time.monotonic() + timeout_s
        found = await self.instance(pool, timeout_s)
        if isinstance(found, str):
            return Invoked(refused=found)
        instance = found
        assert isinstance(instance, RuntimeInstance)
        function = pool.function
        invocation = instance.begin(request_id)
        function_deadline = time.time() + function.timeout_s
        task = asyncio.create_task(instance.invoke(payload, request_id, function_deadline, trace_id(now)))
        integration_left = max(0.0, integration_deadline - time.monotonic())
        if function.timeout_s <= integration_left:
            done, _ = await asyncio.wait({task}, timeout=function.timeout_s)
            if not done:  # Lambda stops the function at its timeout; API Gateway gets an error
                await self._time_out(pool, instance, invocation, task)
                return Invoked(refused="failed", instance=instance)
        else:
            done, _ = await asyncio.wait({task}, timeout=integration_left)
            if not done:  # API Gateway gives up; the function runs on until it returns or its timeout ends it
                self.spawn(self._finish_late(pool, instance, invocation, task, function_deadline))
                return Invoked(refused="timed out", instance=instance)
        try:
            raw, failed = task.result()
        except InstanceFailed as exc:  # the instance died during the invocation
            instance.end(invocation, status="error")
            self.log(str(exc))
            await pool.discard(instance)
            return Invoked(refused="failed", instance=instance)
        if len(raw) > MAX_RESPONSE_PAYLOAD_BYTES:
            # Lambda's runtime cannot post the answer and exits (Runtime.ExitError): the environment is gone.
            instance.log(
                f"Response payload size ({len(raw)} bytes) exceeded maximum allowed payload size "
                f"({MAX_RESPONSE_PAYLOAD_BYTES} bytes)"
            )
            instance.end(invocation, status="error")
            await pool.discard(instance)
            return Invoked(refused="failed", instance=instance)
        instance.end(invocation, status="error" if failed else "")
        await pool.release(instance)
        return Invoked(refused="failed", instance=instance) if failed else Invoked(payload=raw, instance=instance)

    async def _time_out(self, pool: Pool, instance: Instance, invocation: Any, task: asyncio.Task[Any]) -> None:
        instance.log(f"Task timed out after {instance.function.timeout_s:.2f} seconds")
        instance.end(invocation, status="timeout")
        task.cancel()
        await pool.discard(instance)

    async def _finish_late(
        self, pool: Pool, instance: Instance, invocation: Any, task: asyncio.Task[Any], function_deadline: float
    ) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(task), max(0.0, function_deadline - time.time()))
        except TimeoutError:
            await self._time_out(pool, instance, invocation, task)
            return
        except InstanceFailed:
            instance.end(invocation, status="error")
            await pool.discard(instance)
            return
        instance.end(invocation)
        await pool.release(instance)

    def spawn(self, coroutine: Awaitable[None]) -> None:
        """Run ``coroutine`` on its own; ``close`` cancels what is still running."""
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def log(self, text: str) -> None:
        self.output.write(f"[local-api] {text}\n")
        self.output.flush()
