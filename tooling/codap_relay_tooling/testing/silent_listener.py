"""For the browser tests: a port that takes connections and never answers on them."""

from __future__ import annotations

import contextlib
import socket
import threading


class SilentListener:
    """Listens on a loopback ``port``, accepts every connection and never sends a byte: a stalled proxy, or the
    sockets a server that died half-way left open. ``stop_listening`` frees the port for a real server while the
    connections already taken stay open and silent until ``close``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.held: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self._thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                self.held.append(connection)

    @property
    def taken(self) -> int:
        with self._lock:
            return len(self.held)

    def stop_listening(self) -> None:
        if self._listener is not None:
            # shutdown wakes the blocked accept(); close alone does not on Linux
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        if self._thread is not None:
            self._thread.join(5)

    def close(self) -> None:
        self.stop_listening()
        with self._lock:
            held, self.held = self.held, []
        for connection in held:
            connection.close()
