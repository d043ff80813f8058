"""DynamoDB's HTTP wire as proxies in front of DynamoDB Local see it: one HTTP/1.1 message at a time with a
Content-Length body (what botocore sends and DynamoDB Local answers), the operation named by ``X-Amz-Target``.
Shared by the benchmark's counting proxy (bench/dynamo_proxy.py) and the lagging replica's proxy
(lagging_dynamodb.py)."""

from __future__ import annotations

import asyncio


async def read_message(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes] | None:
    """One HTTP/1.1 message: (first line, headers in lower case, body); None when the peer closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        raise ValueError("chunked bodies are not expected here")
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0].encode("latin-1"), headers, body


def render(first: bytes, headers: dict[str, str], body: bytes) -> bytes:
    """A message with ``body``, its Content-Length set to match."""
    headers = {**headers, "content-length": str(len(body))}
    head = first + b"\r\n" + b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers.items()) + b"\r\n"
    return head + body


def operation(headers: dict[str, str]) -> str:
    """The DynamoDB operation a request names (``DynamoDB_20120810.GetItem`` -> ``GetItem``)."""
    return headers.get("x-amz-target", "").rpartition(".")[2]
