"""Load generators: session pairs (LLM client + fake plugin), round trips over HTTP and MCP, the baseline.

One ``httpx.AsyncClient`` plays every LLM and another every plugin; the baseline uses an identical client, with
the same number of concurrent workers issuing the same number of requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection

from codap_relay.catalog import plugin_tools
from codap_relay.oauth.consent import CONSENT_TOOL
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_plugin import FakePlugin, Handler
from codap_relay_tooling.testing.oauth_flow import HttpClientApp, Person, consent_answer
from codap_relay_tooling.testing.sse_client import Event

TOOL = "add_codap_cases"
#: What the plugin posts to open its session: its own manifest (``catalog.plugin_tools`` reads the files the plugin
#: loads; tests/unit/test_plugin_js.py proves them equal), so the session items measured are the real ones.
PLUGIN_SESSION: dict[str, Any] = {"tools": list(plugin_tools())}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def new_client(base: str) -> httpx.AsyncClient:
    # No pool limit: 100 pairs hold 100 streams plus 100 LLM requests at once.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    return web.AsyncClient(base_url=base, limits=limits, timeout=httpx.Timeout(60, read=None))


def tool_args(n: int) -> dict[str, Any]:
    return {"datasetName": "bench", "cases": [{"n": n, "x": 1.5, "label": "bench"}]}


_ITEM_IDS = itertools.count(1_000_001)  # CODAP's item ids are large integers, unique within the page


async def cases_added(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the plugin answers to ``add_codap_cases`` (the only tool the bench calls), in the shape its manifest's
    outputSchema declares, so an MCP call's typed result is as valid as the real one's."""
    added = len(args.get("cases") or [])
    ids = [next(_ITEM_IDS) for _ in range(added)]
    answer = {
        "datasetName": args.get("datasetName", ""),
        "added": added,
        "totalCases": added,
        "ignoredFields": [],
        "caseIds": ids,
    }
    return {"result": answer}


@dataclass
class TimingPlugin(FakePlugin):
    """The fake plugin, noting when each tool-request event reached it (delivery latency), and over push counting
    the WebSocket messages each way by kind (``action`` in, ``event`` out) and their largest size, as API Gateway
    meters them (every message in or out is one)."""

    handler: Handler = cases_added
    arrivals: dict[str, float] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)  # "in:ping", "out:heartbeat", ... -> count
    largest_message: int = 0  # bytes

    async def _execute(self, event: Event) -> bool:
        self.arrivals.setdefault(event.json()["id"], time.perf_counter())
        return await super()._execute(event)

    async def _speak_push(self, ws: ClientConnection) -> bool:
        send, recv = ws.send, ws.recv

        async def counted_send(message: Any, *args: Any, **kw: Any) -> None:
            self._count("in", "action", message)
            await send(message, *args, **kw)

        async def counted_recv(*args: Any, **kw: Any) -> Any:
            message = await recv(*args, **kw)
            self._count("out", "event", message)
            return message

        ws.send, ws.recv = counted_send, counted_recv  # type: ignore[method-assign]
        return await super()._speak_push(ws)

    def _count(self, way: str, key: str, message: str | bytes) -> None:
        size = len(message.encode() if isinstance(message, str) else message)
        self.largest_message = max(self.largest_message, size)
        try:
            kind = str(json.loads(message).get(key))
        except (ValueError, AttributeError):
            kind = "other"
        name = f"{way}:{kind}"
        self.messages[name] = self.messages.get(name, 0) + 1


def message_counts(pairs: list[Pair]) -> dict[str, int]:
    """The WebSocket messages of these pairs' plugins so far, by way and kind, summed."""
    out: dict[str, int] = {}
    for pair in pairs:
        for name, n in pair.plugin.messages.items():
            out[name] = out.get(name, 0) + n
    return out


@dataclass
class Pair:
    code: str
    plugin: TimingPlugin
    token: str | None = None  # an OAuth access token for /mcp, once ``connect_app`` got one


@dataclass
class Samples:
    round_trip: list[float] = field(default_factory=list)
    delivery: list[float] = field(default_factory=list)
    errors: int = 0
    wall: float = 0.0


@contextlib.asynccontextmanager
async def session_pairs(
    base: str, count: int, *, push: bool = True, ping_every: float | None = None, identity: bool = False
) -> AsyncIterator[tuple[httpx.AsyncClient, list[Pair]]]:
    """``count`` sessions, each with a connected fake plugin; yields the LLM client and the pairs. The plugins use
    the push channel where the relay offers it, as the real one does, unless ``push`` is False (then the stream);
    over push they ping every ``ping_every`` seconds (None: as the relay says). ``identity``: each plugin has a
    key of its own, as the real one keeps in the browser, so that an app can connect to it by OAuth."""

    def opening() -> dict[str, Any]:
        return {**PLUGIN_SESSION, "identity": secrets.token_urlsafe(32)} if identity else PLUGIN_SESSION

    async with new_client(base) as llm, new_client(base) as browser:
        sessions = await asyncio.gather(*(llm.post("/api/sessions", json=opening()) for _ in range(count)))
        pairs = []
        for r in sessions:
            r.raise_for_status()
            body = r.json()
            offered = body if push else {k: v for k, v in body.items() if k != "push"}
            plugin = TimingPlugin.for_session(base, offered, client=browser, ping_every=ping_every)
            pairs.append(Pair(body["code"], plugin))
        for pair in pairs:
            pair.plugin.start()
        try:
            await asyncio.wait_for(asyncio.gather(*(p.plugin.connected.wait() for p in pairs)), 60)
            yield llm, pairs
        finally:
            await asyncio.gather(*(p.plugin.stop() for p in pairs))
            # as a page does on leaving: on local-api (as on AWS) a stream runs on after its client left until then
            await asyncio.gather(*(p.plugin.detach() for p in pairs))


async def http_wait_round_trip(llm: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    """One ``POST /request?wait=15``: it returns 200 with the plugin's answer."""
    started = time.perf_counter()
    r = await llm.post("/request", params={"wait": "15"}, json={"code": pair.code, "tool": TOOL, "args": tool_args(n)})
    ended = time.perf_counter()
    if r.status_code != 200 or r.json().get("status") != "completed":
        samples.errors += 1
        return
    samples.round_trip.append(ended - started)
    arrived = pair.plugin.arrivals.pop(r.json()["id"], None)
    if arrived is not None:
        samples.delivery.append(arrived - started)


async def http_round_trip(llm: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    """POST /request, then GET /response?wait until the plugin's answer is there."""
    started = time.perf_counter()
    r = await llm.post("/request", json={"code": pair.code, "tool": TOOL, "args": tool_args(n)})
    if r.status_code != 202:
        samples.errors += 1
        return
    rid = r.json()["id"]
    answer = await llm.get("/response", params={"code": pair.code, "id": rid, "wait": "15"})
    ended = time.perf_counter()
    if answer.status_code != 200 or answer.json().get("status") != "completed":
        samples.errors += 1
        return
    samples.round_trip.append(ended - started)
    arrived = pair.plugin.arrivals.pop(rid, None)
    if arrived is not None:
        samples.delivery.append(arrived - started)


async def mcp_round_trip(llm: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    """One MCP ``tools/call`` (stateless Streamable HTTP): it returns when the plugin has answered."""
    started = time.perf_counter()
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": TOOL, "arguments": tool_args(n)}}
    r = await llm.post(f"/mcp/{pair.code}", json=body, headers=MCP_HEADERS)
    ended = time.perf_counter()
    if r.status_code != 200 or r.json().get("result", {}).get("isError", True):
        samples.errors += 1
        return
    samples.round_trip.append(ended - started)


async def connect_app(llm: httpx.AsyncClient, pair: Pair) -> None:
    """An MCP host connecting by OAuth to this pair's plugin (registration, the consent the person allows in the
    plugin with the number the consent page showed, the token), as the one connector per relay does: its calls go
    to ``/mcp`` with the access token."""
    person = Person()
    tools = pair.plugin.handler

    async def plugin(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return await consent_answer(person) if tool == CONSENT_TOOL else await tools(tool, args)

    pair.plugin.handler = plugin
    app = HttpClientApp(llm, name="codap-relay bench", person=person)
    await app.register()
    tokens = await app.grant(pair.code, f"{str(llm.base_url).rstrip('/')}/mcp")
    pair.token = tokens["access_token"]


async def mcp_oauth_round_trip(llm: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    """One MCP ``tools/call`` through ``/mcp`` with the OAuth token ``connect_app`` got (the grant's plugin)."""
    assert pair.token is not None, "connect_app first"
    started = time.perf_counter()
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": TOOL, "arguments": tool_args(n)}}
    r = await llm.post("/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {pair.token}"})
    ended = time.perf_counter()
    if r.status_code != 200 or r.json().get("result", {}).get("isError", True):
        samples.errors += 1
        return
    samples.round_trip.append(ended - started)


RoundTrip = Callable[[httpx.AsyncClient, Pair, int, Samples], Awaitable[None]]


async def run_pairs(
    base: str, concurrency: int, per_pair: int, kind: RoundTrip = http_round_trip, *, warmup: int = 1
) -> Samples:
    """``concurrency`` session pairs, each making ``per_pair`` sequential round trips at the same time."""
    samples = Samples()
    async with session_pairs(base, concurrency) as (llm, pairs):
        scratch = Samples()
        await asyncio.gather(*(kind(llm, p, -i, scratch) for p in pairs for i in range(warmup)))

        async def worker(pair: Pair) -> None:
            for i in range(per_pair):
                await kind(llm, pair, i, samples)

        started = time.perf_counter()
        await asyncio.gather(*(worker(p) for p in pairs))
        samples.wall = time.perf_counter() - started
    return samples


async def _baseline_round_trip(client: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    await _baseline_call(client, samples)


async def _floor_round_trip(client: httpx.AsyncClient, pair: Pair, n: int, samples: Samples) -> None:
    await _floor_call(client, samples)


BASELINE: RoundTrip = _baseline_round_trip
FLOOR: RoundTrip = _floor_round_trip


async def run_interleaved(
    base: str, concurrency: int, per_pair: int, series: dict[str, RoundTrip], *, chunk: int = 5
) -> dict[str, Samples]:
    """Every series on the same ``concurrency`` session pairs, taking turns ``chunk`` calls at a time, so that a
    burst of load on a shared machine falls on all of them alike and their ratios stay comparable. ``BASELINE``
    and ``FLOOR`` run on a client of their own, with the same number of workers."""
    out = {name: Samples() for name in series}
    async with session_pairs(base, concurrency) as (llm, pairs), new_client(base) as bare:
        for kind in series.values():  # first-call effects out of the samples
            await asyncio.gather(*(kind(bare if kind in (BASELINE, FLOOR) else llm, p, -1, Samples()) for p in pairs))
        for first in range(0, per_pair, chunk):
            n = min(chunk, per_pair - first)
            for name, kind in series.items():
                client = bare if kind in (BASELINE, FLOOR) else llm
                await _turn(kind, client, pairs, first, n, out[name])
    return out


async def _turn(
    kind: RoundTrip, client: httpx.AsyncClient, pairs: list[Pair], first: int, n: int, into: Samples
) -> None:
    async def worker(pair: Pair) -> None:
        for i in range(first, first + n):
            await kind(client, pair, i, into)

    await asyncio.gather(*(worker(p) for p in pairs))


async def run_pairs_for(base: str, concurrency: int, seconds: float, kind: RoundTrip = http_round_trip) -> Samples:
    """Saturation: ``concurrency`` pairs making round trips back to back for ``seconds``."""
    samples = Samples()
    async with session_pairs(base, concurrency) as (llm, pairs):
        scratch = Samples()
        await asyncio.gather(*(kind(llm, p, -1, scratch) for p in pairs))
        deadline = time.perf_counter() + seconds

        async def worker(pair: Pair) -> None:
            i = 0
            while time.perf_counter() < deadline:
                await kind(llm, pair, i, samples)
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(p) for p in pairs))
        samples.wall = time.perf_counter() - started
    return samples


async def _baseline_call(client: httpx.AsyncClient, samples: Samples) -> None:
    started = time.perf_counter()
    r = await client.get("/bench/baseline")
    if r.status_code == 200:
        samples.round_trip.append(time.perf_counter() - started)
    else:
        samples.errors += 1


async def _floor_call(client: httpx.AsyncClient, samples: Samples) -> None:
    """The floor under a relayed call: two bare POSTs one after the other (a relayed call is the LLM's POST and
    the plugin's POST, plus the event between them), with a tool request's body, to a trivial endpoint."""
    body = {"code": "ABCD2345", "tool": TOOL, "args": tool_args(0)}
    started = time.perf_counter()
    for _ in range(2):
        r = await client.post("/bench/baseline", json=body)
        if r.status_code != 200:
            samples.errors += 1
            return
    samples.round_trip.append(time.perf_counter() - started)


async def run_floor(base: str, concurrency: int, per_worker: int) -> Samples:
    """Two sequential bare POSTs per sample, ``concurrency`` workers at once, the same client as the relay's."""
    samples = Samples()
    async with new_client(base) as client:
        await asyncio.gather(*(_floor_call(client, Samples()) for _ in range(concurrency)))

        async def worker() -> None:
            for _ in range(per_worker):
                await _floor_call(client, samples)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples


async def run_baseline(base: str, concurrency: int, per_worker: int, *, warmup: int = 1) -> Samples:
    """The same client and concurrency against the trivial endpoint on the same server."""
    samples = Samples()
    async with new_client(base) as client:
        scratch = Samples()
        await asyncio.gather(*(_baseline_call(client, scratch) for _ in range(concurrency * warmup)))

        async def worker() -> None:
            for _ in range(per_worker):
                await _baseline_call(client, samples)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        samples.wall = time.perf_counter() - started
    return samples


async def run_baseline_for(base: str, concurrency: int, seconds: float) -> Samples:
    samples = Samples()
    async with new_client(base) as client:
        await asyncio.gather(*(_baseline_call(client, Samples()) for _ in range(concurrency)))
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                await _baseline_call(client, samples)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        samples.wall = time.perf_counter() - started
    return samples
