"""An in-memory ``Publisher`` for the push channel's tests: it records what the relay posts and closes, and plays
connections that are gone (410) or faulty."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class PublishFault(Exception):
    """What a faulty connection's post raises (the management API failing for a reason other than 410)."""


class FakePublisher:
    """``delay``: seconds each post takes (a slow management API); give ``blocking=True`` with it, so the relay
    runs posts in worker threads and bounds them as it bounds the real publisher's."""

    def __init__(self, *, blocking: bool = False, delay: float = 0.0) -> None:
        self.blocking = blocking
        self.delay = delay
        self.posts: list[tuple[str, dict[str, Any]]] = []  # (connection id, message), in the order posted
        self.closed: list[str] = []
        self.gone: set[str] = set()  # posts to these answer 410 (False)
        self.faulty: set[str] = set()  # posts to these raise
        self._once: list[Callable[[str, dict[str, Any]], bool]] = []
        self._lock = threading.Lock()

    def fail_once(self, match: Callable[[str, dict[str, Any]], bool]) -> None:
        """The next post that ``match(connection_id, message)`` picks raises once; later ones go through."""
        with self._lock:
            self._once.append(match)

    def prepare(self) -> None:
        pass  # nothing to make

    def publish(self, connection_id: str, message: dict[str, Any]) -> bool:
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            if connection_id in self.faulty:
                raise PublishFault(connection_id)
            for match in self._once:
                if match(connection_id, message):
                    self._once.remove(match)
                    raise PublishFault(connection_id)
            if connection_id in self.gone:
                return False
            self.posts.append((connection_id, message))
            return True

    def close(self, connection_id: str) -> None:
        with self._lock:
            self.closed.append(connection_id)
            self.gone.add(connection_id)  # as API Gateway: a closed connection's next post is 410

    def to(self, connection_id: str) -> list[dict[str, Any]]:
        """Every message posted to one connection, in order."""
        return [m for c, m in self.posts if c == connection_id]

    def events(self, connection_id: str) -> list[str]:
        return [m["event"] for m in self.to(connection_id)]

    def take(self, connection_id: str) -> list[dict[str, Any]]:
        """The connection's messages so far, forgotten once read (each step of a test reads its own)."""
        with self._lock:
            mine = [m for c, m in self.posts if c == connection_id]
            self.posts = [(c, m) for c, m in self.posts if c != connection_id]
            return mine
