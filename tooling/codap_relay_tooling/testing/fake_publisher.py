"""An in-memory ``Publisher`` for the push channel's tests: it records what the relay posts and closes, and plays
connections that are gone (410) or faulty."""

from __future__ import annotations

import threading
from typing import Any


class PublishFault(Exception):
    """What a faulty connection's post raises (the management API failing for a reason other than 410)."""


class FakePublisher:
    blocking = False

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []  # (connection id, message), in the order posted
        self.closed: list[str] = []
        self.gone: set[str] = set()  # posts to these answer 410 (False)
        self.faulty: set[str] = set()  # posts to these raise
        self._lock = threading.Lock()

    def publish(self, connection_id: str, message: dict[str, Any]) -> bool:
        with self._lock:
            if connection_id in self.faulty:
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
