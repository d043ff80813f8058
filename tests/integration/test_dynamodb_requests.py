"""What a pushed call costs DynamoDB, counted through local-api (each function in processes of its own, as on AWS)
by the benchmark's counting proxy in front of DynamoDB Local: one transaction and the few requests a call needs,
and a wait for its answer that reads less often the longer it waits (no read every poll interval)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
from bench import load

from codap_relay.relay.store_io import ANSWER_POLL_MAX_SECONDS, ANSWER_POLL_SHARE
from codap_relay_tooling.testing import CHECKOUT, web
from codap_relay_tooling.testing.commands import LOCAL_API_ENV, local_api_process
from codap_relay_tooling.testing.servers import ServerProcess, free_port

pytestmark = pytest.mark.dynamodb_local

CALLS = 8
KINDS = {"http_wait": load.http_wait_round_trip, "mcp": load.mcp_round_trip}
POLL_INTERVAL = 0.05  # the template's PollIntervalSeconds, which local-api runs with


def reads_while_waiting(seconds: float) -> int:
    """The most reads a wait of ``seconds`` makes for its answer (StoreIO.answer_slice's schedule, the last one
    included): a wait only ever sleeps longer than planned, never shorter."""
    waited, reads = 0.0, 0
    while waited <= seconds:
        waited += max(2 * POLL_INTERVAL, min(waited * ANSWER_POLL_SHARE, ANSWER_POLL_MAX_SECONDS))
        reads += 1
    return reads


@pytest.fixture(scope="module")
def counted() -> Iterator[tuple[str, str]]:
    """(local-api's base URL, the counting proxy's): every function reaches DynamoDB Local through the proxy."""
    from codap_relay_tooling.testing.dynamodb_shared import env_for, fresh_table

    with fresh_table() as (dynamo, table), tempfile.TemporaryFile() as output:
        port = free_port()
        cmd = [sys.executable, "-m", "bench.dynamo_proxy", "--port", str(port), "--upstream", dynamo.endpoint]
        proxy = ServerProcess(cmd, None, output, cwd=CHECKOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(Exception):
                    if web.get(f"{url}/__bench/counts", timeout=2).status_code == 200:
                        break
                assert proxy.poll() is None and time.monotonic() < deadline, proxy.output()[-2000:]
                time.sleep(0.05)
            env = {**env_for(dynamo), **LOCAL_API_ENV}
            store = f"dynamodb://{table}?endpoint_url={url}&region=us-east-1"
            with local_api_process("--store", store, "--push-channel", "websocket", env=env) as (base, _):
                yield base, url
        finally:
            proxy.stop()


async def counted_calls(base: str, proxy: str, kind: str, handler: Any = None) -> tuple[dict[str, Any], float]:
    """CALLS calls of ``kind`` to a push plugin that does not ping meanwhile (as between two pings 90 s apart):
    (DynamoDB requests by operation, for all of them; the longest call's seconds)."""
    async with load.session_pairs(base, 1, ping_every=3600) as (llm, (pair,)):
        if handler is not None:
            pair.plugin.handler = handler
        assert pair.plugin.push_url is not None
        for i in range(3):  # each function's first call starts its process and reads the manifest: not counted
            await KINDS[kind](llm, pair, -1 - i, load.Samples())
        web.post(f"{proxy}/__bench/reset", timeout=10).raise_for_status()
        samples = load.Samples()
        for i in range(CALLS):
            await KINDS[kind](llm, pair, i, samples)
        assert samples.errors == 0 and len(samples.round_trip) == CALLS
        counts: dict[str, Any] = web.get(f"{proxy}/__bench/counts", timeout=10).json()
    return counts["requests"], max(samples.round_trip)


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_a_pushed_call_is_one_transaction_and_a_few_requests(counted: tuple[str, str], kind: str) -> None:
    """Per call: the session read, one transaction (the request appended, its limits counted, the session's seq and
    pending list moved), the answer's two writes (the request's item, then the session's), and the reads of the
    wait. Nothing reads the session again to publish, nothing queries; the longest call bounds the wait's reads."""
    base, proxy = counted
    requests, longest = await counted_calls(base, proxy, kind)
    per_call = {op: n / CALLS for op, n in requests.items()}
    assert per_call.get("TransactWriteItems") == 1
    assert per_call.get("UpdateItem") == 2
    assert set(per_call) <= {"GetItem", "TransactWriteItems", "UpdateItem"}, per_call
    assert 2 <= per_call["GetItem"] <= 1 + reads_while_waiting(longest), (per_call, longest)


async def test_a_slow_tools_wait_reads_its_answer_a_few_times_not_every_poll(counted: tuple[str, str]) -> None:
    """A tool that takes 1.5 s: the wait reads the answer's item about ten times, where a read every poll
    interval (0.05 s) would be thirty."""
    base, proxy = counted

    async def slow(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(1.5)
        return await load.cases_added(tool, args)

    requests, longest = await counted_calls(base, proxy, "http_wait", slow)
    reads = requests["GetItem"] / CALLS - 1  # less the session's
    assert reads <= reads_while_waiting(longest) < 1.5 / POLL_INTERVAL / 2, (reads, longest)
