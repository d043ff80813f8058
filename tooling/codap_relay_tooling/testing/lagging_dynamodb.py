"""DynamoDB as it really behaves: eventually consistent reads served by a lagging replica.

DynamoDB answers a read without ``ConsistentRead`` from any of a partition's replicas, which may not have the
latest writes yet; moto and DynamoDB Local always answer from the latest state, so code that depends on such a
read being fresh passes every test there and fails on AWS. This double brings the lag back, over the real
backends:

- ``Replica`` keeps, beside each table it sees written, a second table (``<table>.replica``, same keys) that gets
  every write ``lag`` seconds late: after each successful write it reads the items written (consistently, from the
  table itself) and applies that state to the replica once ``lag`` seconds have passed. Every read that does not
  ask for consistency (``GetItem``, ``Query``, ``Scan``, ``BatchGetItem``) is answered from the replica, as it
  stands then; consistent reads and every write go to the table itself.
- ``LaggingClient`` puts a replica in front of a boto3 client, in process (moto, or DynamoDB Local): what the
  store contract suite and the unit tests use. Its lag can also be counted in calls (``per_call``): the replica then
  misses exactly the writes of the last ``lag`` calls, whatever the machine's speed, so a test's reads are stale in
  the same places every run (an item written long before is there, the latest change to it is not).
- ``LaggingProxy`` (``python -m codap_relay_tooling.testing.lagging_dynamodb --port P --upstream URL --lag S``, or
  ``lagging_proxy()`` in a thread) puts one in front of DynamoDB Local for processes of their own: every function of
  ``codap-relay local-api`` reaches the same lagging replica through it. ``GET /__lagging`` says how many reads it
  served stale; ``POST /__lagging?lag=S`` sets the lag.

The table's keys must be strings or numbers (the relay's are): the proxy reads them off the wire as they are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import itertools
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from . import web
from .dynamodb_wire import operation, read_message, render

Item = dict[str, Any]
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
MAYBE_STALE_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})
REPLICA_SUFFIX = ".replica"


def written_keys(op: str, params: dict[str, Any], key_of: Callable[[str, Item], Item]) -> list[tuple[str, Item]]:
    """(table, key) of every item a successful write ``op`` with ``params`` may have changed."""
    if op in ("PutItem", "UpdateItem", "DeleteItem"):
        table = params["TableName"]
        return [(table, key_of(table, params["Item"]) if op == "PutItem" else params["Key"])]
    if op == "TransactWriteItems":
        out = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            if kind == "ConditionCheck":
                continue
            table = body["TableName"]
            out.append((table, key_of(table, body["Item"]) if kind == "Put" else body["Key"]))
        return out
    if op == "BatchWriteItem":
        out = []
        for table, requests in params["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    out.append((table, key_of(table, request["PutRequest"]["Item"])))
                else:
                    out.append((table, request["DeleteRequest"]["Key"]))
        return out
    return []


class Replica:
    """The lagging replica of every table written through it. ``client`` is a boto3 client of the real backend:
    it takes the consistent reads of what was written and writes the replica tables."""

    def __init__(self, client: Any, lag: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.lag = lag
        self.clock = clock
        self.stale_reads = 0  # reads answered from a replica
        self._lock = threading.RLock()
        self._due: list[tuple[float, int, str, str, Item | None]] = []  # (due, order, replica, key JSON, item)
        self._order = itertools.count()
        self._keys: dict[str, list[str]] = {}  # table -> its key attribute names
        self._replicas: dict[str, str] = {}  # table -> its replica

    # --- the replica tables ---------------------------------------------------------------------------------

    def _key_names(self, table: str) -> list[str]:
        if table not in self._keys:
            described = self.client.describe_table(TableName=table)["Table"]
            self._keys[table] = [k["AttributeName"] for k in described["KeySchema"]]
        return self._keys[table]

    def key_of(self, table: str, item: Item) -> Item:
        return {name: item[name] for name in self._key_names(table)}

    def replica_of(self, table: str) -> str:
        """The replica table of ``table``, made (empty, as the table is when first written here) on first use."""
        with self._lock:
            if table not in self._replicas:
                described = self.client.describe_table(TableName=table)["Table"]
                name = table + REPLICA_SUFFIX
                with contextlib.suppress(self.client.exceptions.ResourceInUseException):
                    self.client.create_table(
                        TableName=name,
                        KeySchema=described["KeySchema"],
                        AttributeDefinitions=described["AttributeDefinitions"],
                        BillingMode="PAY_PER_REQUEST",
                    )
                self._replicas[table] = name
            return self._replicas[table]

    # --- writes: what the replica will show, and when ---------------------------------------------------------

    def written(self, op: str, params: dict[str, Any]) -> None:
        """After a successful write: the items it wrote, as they are now, reach the replica in ``lag`` seconds."""
        if op not in WRITES:
            return
        with self._lock:
            for table, key in written_keys(op, params, self.key_of):
                item = self.client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
                due = self.clock() + self.lag
                entry = (due, next(self._order), self.replica_of(table), json.dumps(key, sort_keys=True), item)
                heapq.heappush(self._due, entry)

    def catch_up(self) -> None:
        """Apply every write whose lag has passed, oldest first."""
        with self._lock:
            now = self.clock()
            while self._due and self._due[0][0] <= now:
                _, _, replica, key, item = heapq.heappop(self._due)
                if item is None:
                    self.client.delete_item(TableName=replica, Key=json.loads(key))
                else:
                    self.client.put_item(TableName=replica, Item=item)

    # --- reads: which are answered from the replica ------------------------------------------------------------

    def stale(self, op: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """``params`` aimed at the replicas when ``op`` may be answered stale (it does not ask for consistency),
        after catching the replicas up to now; None when it goes to the table itself."""
        if op not in MAYBE_STALE_READS:
            return None
        if op == "BatchGetItem":
            tables = params["RequestItems"]
            if all(spec.get("ConsistentRead") for spec in tables.values()):
                return None
            self.catch_up()
            self.stale_reads += 1
            items = {
                (name if spec.get("ConsistentRead") else self.replica_of(name)): spec for name, spec in tables.items()
            }
            return {**params, "RequestItems": items}
        if params.get("ConsistentRead"):
            return None
        self.catch_up()
        self.stale_reads += 1
        return {**params, "TableName": self.replica_of(params["TableName"])}

    def named_back(self, op: str, answer: dict[str, Any]) -> dict[str, Any]:
        """A stale ``BatchGetItem``'s answer with the tables' own names again."""
        if op != "BatchGetItem":
            return answer
        out = dict(answer)
        for field in ("Responses", "UnprocessedKeys"):
            if field in answer:
                out[field] = {name.removesuffix(REPLICA_SUFFIX): v for name, v in answer[field].items()}
        return out


class LaggingClient:
    """A boto3 DynamoDB client whose eventually consistent reads come from a replica ``lag`` seconds behind, or, with
    ``per_call``, ``lag`` calls behind (each call through this client is a tick of the replica's clock)."""

    def __init__(self, client: Any, lag: float, *, per_call: bool = False) -> None:
        self._client = client
        self._calls = 0
        self.replica = Replica(client, lag, clock=(lambda: float(self._calls)) if per_call else time.monotonic)
        self.exceptions = client.exceptions
        self._operations: dict[str, str] = client.meta.method_to_api_mapping

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        op = self._operations.get(name)
        if op is None or not callable(target):
            return target

        def call(**params: Any) -> Any:
            self._calls += 1
            stale = self.replica.stale(op, params)
            if stale is not None:
                return self.replica.named_back(op, target(**stale))
            answer = target(**params)
            self.replica.written(op, params)
            return answer

        return call


class LaggingProxy:
    """The replica in front of DynamoDB Local at ``upstream``, for other processes (HTTP on loopback)."""

    def __init__(self, upstream: str, lag: float) -> None:
        import boto3

        from .dynamodb_local import CREDENTIALS

        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.replica = Replica(boto3.client("dynamodb", endpoint_url=upstream, **CREDENTIALS), lag)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while (message := await read_message(reader)) is not None:
                first, headers, body = message
                if b" /__lagging" in first:
                    writer.write(self._control(first))
                    await writer.drain()
                    continue
                op = operation(headers)
                params = json.loads(body) if body else {}
                stale = await asyncio.to_thread(self.replica.stale, op, params)
                if stale is not None:
                    body = json.dumps(stale).encode()
                if upstream is None:
                    upstream = await asyncio.open_connection(self.host, self.port)
                upstream[1].write(render(first, headers, body))
                await upstream[1].drain()
                answer = await read_message(upstream[0])
                if answer is None:
                    return
                status, answer_headers, answer_body = answer
                ok = int(status.split()[1]) == 200
                if stale is not None and op == "BatchGetItem" and ok:
                    answer_body = json.dumps(self.replica.named_back(op, json.loads(answer_body))).encode()
                elif stale is None and ok:
                    # Before the writer hears of its write: its next read may not find the replica ahead of it.
                    await asyncio.to_thread(self.replica.written, op, params)
                writer.write(render(status, answer_headers, answer_body))
                await writer.drain()
        finally:
            writer.close()
            if upstream is not None:
                upstream[1].close()

    def _control(self, first: bytes) -> bytes:
        target = first.split()[1].decode()
        if first.startswith(b"POST"):
            lag = parse_qs(urlsplit(target).query).get("lag")
            if lag:
                self.replica.lag = float(lag[0])
        body = json.dumps({"lag": self.replica.lag, "stale_reads": self.replica.stale_reads}).encode()
        return render(b"HTTP/1.1 200 OK", {"content-type": "application/json"}, body)


@contextlib.contextmanager
def lagging_proxy(upstream: str, lag: float) -> Iterator[tuple[str, LaggingProxy]]:
    """A ``LaggingProxy`` on a free loopback port, served by a thread of this process: (its URL, the proxy)."""
    proxy = LaggingProxy(upstream, lag)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    address: list[str] = []

    async def run() -> None:
        server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
        address.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        started.set()
        async with server:
            await server.serve_forever()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    started.wait(10)
    try:
        yield address[0], proxy
    finally:
        for task in asyncio.all_tasks(loop):
            loop.call_soon_threadsafe(task.cancel)
        thread.join(10)
        loop.close()


@contextlib.contextmanager
def lagging_proxy_process(upstream: str, lag: float) -> Iterator[str]:
    """A ``LaggingProxy`` as a child process of its own (its replica work off this process's interpreter): yields
    its URL once it answers."""
    from .servers import ServerProcess, free_port

    port = free_port()
    cmd = [sys.executable, "-m", __name__, "--port", str(port), "--upstream", upstream, "--lag", str(lag)]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as output:
        proc = ServerProcess(cmd, None, output)
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the lagging proxy did not start: {proc.output()[-2000:]}")
                with contextlib.suppress(httpx.TransportError):
                    if web.get(f"{url}/__lagging", timeout=2).status_code == 200:
                        break
                time.sleep(0.05)
            yield url
        finally:
            proc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="DynamoDB Local's URL")
    parser.add_argument("--lag", type=float, required=True, help="seconds the replica runs behind")
    args = parser.parse_args()
    proxy = LaggingProxy(args.upstream, args.lag)

    async def serve() -> None:
        server = await asyncio.start_server(proxy.serve, "127.0.0.1", args.port)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
