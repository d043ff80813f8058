"""For the browser tests: a relay whose server can be killed and restarted."""

from __future__ import annotations

import asyncio
import threading

import uvicorn

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.plugin_page import wait_until
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import free_port


class RestartableRelay:
    """A relay on a fixed loopback port whose server can be killed (open streams cut) and started again."""

    def __init__(self) -> None:
        self.relay = Relay(e2e_settings(), MemoryStore())
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        config = uvicorn.Config(
            build_app(self.relay), host="127.0.0.1", port=self.port, log_config=None, lifespan="off"
        )
        server = uvicorn.Server(config)

        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            try:
                await server.serve()
            finally:
                # A connection taken after kill() aborted the others, before the listener closed, would outlive the
                # loop unanswered; a crashed process leaves no socket behind.
                abort_connections(server)
                await asyncio.sleep(0)

        self._server = server
        self._thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
        self._thread.start()
        wait_until(lambda: server.started, "the relay to start", 10)

    def kill(self) -> None:
        """Stop listening and abort every open connection, as a crashed server or a cut network would."""
        server, loop = self._server, self._loop
        assert server is not None and loop is not None and self._thread is not None

        server.should_exit = True
        server.force_exit = True
        loop.call_soon_threadsafe(abort_connections, server)
        self._thread.join(10)
        assert not self._thread.is_alive()

    def close(self) -> None:
        """Kill the server if it runs (a test's cleanup)."""
        if self._thread is not None and self._thread.is_alive():
            self.kill()


def abort_connections(server: uvicorn.Server) -> None:
    """Reset every connection ``server`` holds, as a crash or a cut network would."""
    for connection in list(server.server_state.connections):
        transport = getattr(connection, "transport", None)
        if transport is not None:
            transport.abort()
