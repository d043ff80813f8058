"""Lambda function: the push channel's WebSocket routes ($connect, $default, $disconnect).

PLACEHOLDER on branch pushlocal only, so that template.yaml's PushFunction has code to build and lint: branch
pushcore writes the real handler (the relay side of the push channel), whose file replaces this one. Until then
every connection is refused, so a plugin falls back to its stream."""

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"statusCode": 503, "body": "the push channel's handler is not built yet"}
