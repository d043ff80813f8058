"""In-process wake-ups: a writer says "something changed for key K", every listener on K re-reads the store.

The store stays the source of truth; a notification only cuts a wait short. A listener registers *before*
its first read, so a write that lands between the read and the wait is never missed. Listeners may sit on
other event loops or threads (Mangum runs a loop per invocation), hence call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict
from types import TracebackType


def stream_key(code: str) -> str:
    """Wake-ups for a session's stream: a new request, the session ended, another tab took over."""
    return code


def changes_key(code: str) -> str:
    """Wake-ups for whoever watches a session's document: the plugin noted a change (MCP subscriptions)."""
    return f"{code}/changes"


def answers_key(code: str) -> str:
    """Wake-ups for whoever waits for an answer in a session: a response stored, the session ended."""
    return f"{code}/answers"


class Listener:
    def __init__(self, notifier: Notifier, key: str) -> None:
        self._notifier = notifier
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for a notification since the last wait. True if one came."""
        if not self.event.is_set() and timeout > 0:
            try:
                async with asyncio.timeout(timeout):  # no task of its own, unlike wait_for
                    await self.event.wait()
            except TimeoutError:
                return False
        fired = self.event.is_set()
        self.event.clear()
        return fired

    def __enter__(self) -> Listener:
        self._notifier._add(self)
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._notifier._remove(self)


class Notifier:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: defaultdict[str, set[Listener]] = defaultdict(set)

    def listen(self, key: str) -> Listener:
        """Use as ``with notifier.listen(key) as l: …read…; await l.wait(t)``."""
        return Listener(self, key)

    def notify(self, key: str) -> None:
        with self._lock:
            listeners = list(self._listeners.get(key, ()))
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # called from a worker thread
            here = None
        for listener in listeners:
            if listener.loop is here:
                listener.event.set()  # the same loop: no need to wake it through its self-pipe
                continue
            with contextlib.suppress(RuntimeError):  # that loop is closed: its listener is gone
                listener.loop.call_soon_threadsafe(listener.event.set)

    def _add(self, listener: Listener) -> None:
        with self._lock:
            self._listeners[listener.key].add(listener)

    def _remove(self, listener: Listener) -> None:
        with self._lock:
            bucket = self._listeners.get(listener.key)
            if bucket is not None:
                bucket.discard(listener)
                if not bucket:
                    del self._listeners[listener.key]
