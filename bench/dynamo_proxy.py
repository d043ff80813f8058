"""A counting proxy in front of DynamoDB Local: every function process of the deployed stack talks to it.

``python -m bench.dynamo_proxy --port N --upstream http://127.0.0.1:M`` (the benchmark starts it). Each request
is forwarded unchanged except for ``ReturnConsumedCapacity: TOTAL``, so DynamoDB Local says what it charged
(DynamoDB Local checks no signatures). Counted per operation: requests, read and write capacity units as AWS
bills them, and **polling reads**: a read that found nothing new, i.e. the same read (same key or key condition,
the clock left out) as before, answered exactly as it was the time before. ``GET /__bench/counts`` returns the
counts, ``POST /__bench/reset`` zeroes them.

Capacity units, AWS's rules as published ("Read/write capacity mode", "Managing capacity for transactions"):

- DynamoDB Local's own figure for single-item reads and writes and for queries (a strongly consistent read is
  1 unit per 4 KB, eventually consistent half that; a write 1 unit per 1 KB); a read that finds nothing is still
  billed (1 unit, or 0.5), which DynamoDB Local reports as 0 for an empty Query;
- ``TransactWriteItems``: 2 write units per item per 1 KB (prepare and commit), ``ConditionCheck`` included.
  DynamoDB Local reports less (2 units for a 3-item transaction); the size of a Put's item is computed from the
  request, of an Update's or ConditionCheck's item from the last time the proxy saw that item (1 KB if never);
- ``BatchGetItem``: each key as its own read (rounded up per item), found or not.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import threading
from collections import Counter, defaultdict
from typing import Any
from urllib.parse import urlparse

from codap_relay_tooling.testing.dynamodb_wire import operation, read_message, render

READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
CLOCK_VALUES = (":now",)  # expression values that carry the caller's clock, not what is read
UPSTREAM_IDLE_SECONDS = 5.0  # an upstream connection idle longer than this is replaced, not reused


# --- item sizes (AWS: attribute names plus values, in bytes) -------------------------------------------------


def value_size(value: dict[str, Any]) -> int:
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":
        digits = str(raw).lstrip("-").replace(".", "").lstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(base64.b64decode(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS" or kind == "NS" or kind == "BS":
        return sum(value_size({kind[0]: v}) for v in raw)
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in raw)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in raw.items())
    return 0


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def key_of(item_or_key: dict[str, Any]) -> str:
    return json.dumps({k: item_or_key[k] for k in ("pk", "sk") if k in item_or_key}, sort_keys=True)


# --- the counts ----------------------------------------------------------------------------------------------


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sizes: dict[str, int] = {}  # item key -> last size seen (for transaction Updates)
        self.last_answer: dict[str, str] = {}  # read shape -> fingerprint of its last answer
        self.reset()

    def reset(self) -> None:
        self.requests: Counter[str] = Counter()
        self.polls: Counter[str] = Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self.poll_read_units = 0.0
        self.errors: Counter[str] = Counter()
        # How long DynamoDB Local took to answer, per operation.
        self.upstream_seconds: defaultdict[str, float] = defaultdict(float)

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": dict(self.requests),
            "polling_reads": dict(self.polls),
            "read_units": round(self.read_units, 2),
            "write_units": round(self.write_units, 2),
            "polling_read_units": round(self.poll_read_units, 2),
            "errors": dict(self.errors),
            "upstream_ms": {op: round(s * 1000 / self.requests[op], 2) for op, s in self.upstream_seconds.items()},
        }

    def record(self, op: str, request: dict[str, Any], status: int, answer: dict[str, Any], seconds: float) -> None:
        with self.lock:
            self.requests[op] += 1
            self.upstream_seconds[op] += seconds
            if status != 200:
                self.errors[answer.get("__type", str(status)).split("#")[-1]] += 1
            self._remember_sizes(op, request, answer)
            reads, writes = self._units(op, request, answer)
            self.read_units += reads
            self.write_units += writes
            if op in READS and status == 200 and self._repeated(op, request, answer):
                self.polls[op] += 1
                self.poll_read_units += reads

    def _repeated(self, op: str, request: dict[str, Any], answer: dict[str, Any]) -> bool:
        shape = dict(request)
        shape.pop("ReturnConsumedCapacity", None)
        values = dict(shape.get("ExpressionAttributeValues") or {})
        for name in CLOCK_VALUES:
            values.pop(name, None)
        shape["ExpressionAttributeValues"] = values
        key = op + json.dumps(shape, sort_keys=True)
        seen = {k: v for k, v in answer.items() if k != "ConsumedCapacity"}
        fingerprint = hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()
        previous = self.last_answer.get(key)
        self.last_answer[key] = fingerprint
        return previous == fingerprint

    def _remember_sizes(self, op: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
        items: list[dict[str, Any]] = []
        if op == "PutItem":
            items.append(request.get("Item") or {})
        elif op == "GetItem" and "Item" in answer and not request.get("ProjectionExpression"):
            items.append(answer["Item"])
        elif op == "Query" and not request.get("ProjectionExpression"):
            items += answer.get("Items") or []
        elif op == "TransactWriteItems":
            items += [t["Put"]["Item"] for t in request.get("TransactItems", []) if "Put" in t]
        for item in items:
            self.sizes[key_of(item)] = item_size(item)

    def _units(self, op: str, request: dict[str, Any], answer: dict[str, Any]) -> tuple[float, float]:
        consistent = bool(request.get("ConsistentRead"))
        minimum = 1.0 if consistent else 0.5
        if op == "TransactWriteItems":
            units = 0.0
            for action in request.get("TransactItems", []):
                ((kind, body),) = action.items()
                size = item_size(body["Item"]) if kind == "Put" else self.sizes.get(key_of(body["Key"]), 1024)
                units += 2 * max(1, math.ceil(size / 1024))
            return 0.0, units
        if op == "BatchGetItem":
            units = 0.0
            responses = answer.get("Responses") or {}
            for name, table in (request.get("RequestItems") or {}).items():
                per = 1.0 if table.get("ConsistentRead") else 0.5
                found = {key_of(i): item_size(i) for i in responses.get(name, [])}
                for key in table.get("Keys", []):
                    units += per * max(1, math.ceil(found.get(key_of(key), 0) / 4096))
            return units, 0.0
        reported = answer.get("ConsumedCapacity") or {}
        if isinstance(reported, list):
            total = sum(float(r.get("CapacityUnits") or 0) for r in reported)
        else:
            total = float(reported.get("CapacityUnits") or 0)
        if op in READS:
            return max(total, minimum), 0.0
        if op in WRITES:  # a write whose condition fails is billed too
            return 0.0, max(total, 1.0)
        return 0.0, 0.0


# --- the proxy -----------------------------------------------------------------------------------------------


class Proxy:
    def __init__(self, upstream: str) -> None:
        parsed = urlparse(upstream)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self.counts = Counts()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        used = 0.0
        try:
            while True:
                message = await read_message(reader)
                if message is None:
                    return
                first, headers, body = message
                if b" /__bench/" in first:
                    writer.write(self._local(first))
                    await writer.drain()
                    continue
                op = operation(headers)
                request = json.loads(body) if body else {}
                request["ReturnConsumedCapacity"] = "TOTAL"
                body = json.dumps(request).encode()
                loop = asyncio.get_running_loop()
                if upstream is not None and loop.time() - used > UPSTREAM_IDLE_SECONDS:
                    upstream[1].close()  # DynamoDB Local may have closed it meanwhile: never send on a stale one
                    upstream = None
                if upstream is None:
                    upstream = await asyncio.open_connection(self.host, self.port)
                sent = loop.time()
                upstream[1].write(render(first, headers, body))
                await upstream[1].drain()
                answer = await read_message(upstream[0])
                used = loop.time()
                if answer is None:
                    return
                status_line, answer_headers, answer_body = answer
                writer.write(render(status_line, answer_headers, answer_body))
                await writer.drain()
                status = int(status_line.split()[1])
                try:
                    parsed = json.loads(answer_body) if answer_body else {}
                except ValueError:
                    parsed = {}
                self.counts.record(op, request, status, parsed, used - sent)
        finally:
            writer.close()
            if upstream is not None:
                upstream[1].close()

    def _local(self, first: bytes) -> bytes:
        if first.startswith(b"POST /__bench/reset"):
            with self.counts.lock:
                self.counts.reset()
            body = b'{"ok": true}'
        else:
            with self.counts.lock:
                body = json.dumps(self.counts.snapshot()).encode()
        return render(b"HTTP/1.1 200 OK", {"content-type": "application/json"}, body)


async def main_async(port: int, upstream: str) -> None:
    proxy = Proxy(upstream)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    asyncio.run(main_async(args.port, args.upstream))


if __name__ == "__main__":
    main()
