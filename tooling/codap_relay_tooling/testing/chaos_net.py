"""Network chaos for the delivery tests: a TCP proxy that cuts connections mid-byte, and a plugin that records
every connection, delivery and execution so a test can check the Jepsen-style lost/unexpected sets."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.sse_client import Event


class CuttingProxy:
    """Forwards 127.0.0.1:port to the server. ``cut()`` arms one drop: the next server->client chunk on any
    connection is forwarded only up to a random byte, then both sides are aborted (no FIN, no clean end)."""

    def __init__(self, upstream_port: int, rng: random.Random) -> None:
        self.upstream_port = upstream_port
        self.rng = rng
        self.armed = 0
        self.cuts = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def cut(self) -> None:
        self.armed += 1

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.transport.abort()
            return

        def abort() -> None:
            client_w.transport.abort()
            server_w.transport.abort()

        async def up() -> None:
            with contextlib.suppress(Exception):
                while data := await client_r.read(65536):
                    server_w.write(data)
                    await server_w.drain()
            abort()

        async def down() -> None:
            with contextlib.suppress(Exception):
                while data := await server_r.read(65536):
                    if self.armed and not client_w.is_closing():  # never waste a drop on a dead connection
                        self.armed -= 1
                        self.cuts += 1
                        client_w.write(data[: self.rng.randrange(len(data))])
                        with contextlib.suppress(Exception):
                            await client_w.drain()
                        break
                    client_w.write(data)
                    await client_w.drain()
            abort()

        tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
        self._tasks.update(tasks)
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.difference_update(tasks)


@dataclass
class Connection:
    cursor: int | None
    seqs: list[int] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


@dataclass
class RecordingPlugin(FakePlugin):
    """The fake plugin, keeping a record of every connection, delivery, run and answer.

    With ``dedup`` it runs each id once (as the real plugin must) and re-posts the stored outcome on
    redelivery; without it, every delivery runs again and posts a *different* result, so a relay that
    redelivers an already-acknowledged answer is caught by a 409 or a changed result. It never gives up: a
    refused or ended stream is reconnected, as a plugin whose session the test is restoring would."""

    dedup: bool = True
    deliveries: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)
    acked: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> the answer the relay took (202)
    conflicts: list[tuple[str, int]] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    # Armed self-inflicted drops: close the stream after running a request but before posting its answer.
    drop_before_post: int = 0
    self_drops: int = 0
    broken: int = 0  # connections that died under us (cut by the proxy)
    refusals: list[str] = field(default_factory=list)  # non-200 answers to GET /stream

    first_delay = max_delay = 0.01
    stops_when_ended = False
    client_timeout = httpx.Timeout(10, read=None)

    async def __aenter__(self) -> RecordingPlugin:
        self._open_client()
        self.start()  # no waiting for the stream: the server may be down on purpose
        return self

    def _connection_started(self) -> None:
        self.connections.append(Connection(None if self.cursor is None else int(self.cursor)))

    def _received(self, event: Event) -> None:
        super()._received(event)
        self.connections[-1].events.append(event.event or "")

    def _refused(self, response: httpx.Response) -> bool:
        self.refusals.append(f"{response.status_code} {response.text}")
        return False

    def _broken(self) -> None:
        self.broken += 1

    async def _execute(self, event: Event) -> bool:
        conn = self.connections[-1]
        conn.seqs.append(int(event.id or 0))
        request = event.json()
        rid = request["id"]
        self.deliveries[rid] += 1
        outcome = await self._outcome(rid, request)
        if self.drop_before_post:
            self.drop_before_post -= 1
            self.self_drops += 1
            return False
        await self._post(rid, outcome)
        return True

    async def _outcome(self, rid: str, request: dict[str, Any]) -> dict[str, Any]:
        if not self.dedup or rid not in self.outcomes:
            self.runs[rid] += 1
            self.outcomes[rid] = {"result": {"id": rid, "run": self.runs[rid]}}
        return self.outcomes[rid]

    async def _post(self, rid: str, outcome: dict[str, Any]) -> None:
        assert self.client is not None
        while True:
            try:
                r = await self.client.post(
                    "/response",
                    json={"code": self.code, "id": rid, **outcome},
                    headers={"Authorization": f"Bearer {self.token}"},
                )
            except httpx.TransportError:
                await asyncio.sleep(0.05)
                continue
            if r.status_code == 202:
                self.acked.setdefault(rid, outcome)
                return
            if r.status_code == 409:
                self.conflicts.append((rid, r.status_code))
                return
            if r.status_code < 500:
                raise AssertionError(f"answer for {rid} refused: {r.status_code} {r.text}")
            await asyncio.sleep(0.05)


async def until(predicate: Any, timeout: float, what: str) -> None:
    """Poll until ``predicate()`` is true or fail after ``timeout`` seconds (a deadline, not a timing claim)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.02)
