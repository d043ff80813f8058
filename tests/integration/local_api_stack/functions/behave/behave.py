"""Misbehaves on request: /behave/{what} (error, crash, big, malformed, binary, sleep?s=N, pid), /slow."""

import base64
import os
import time
from typing import Any

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    what = (event.get("pathParameters") or {}).get("what", "slow")
    query = event.get("queryStringParameters") or {}
    if what == "error":
        raise ValueError("asked to fail")
    if what == "crash":
        os._exit(3)
    if what == "malformed":
        return {"statusCode": "two hundred"}
    if what == "big":
        return {"statusCode": 200, "body": "x" * int(query.get("n", 7_000_000))}
    if what == "binary":
        return {
            "statusCode": 200,
            "headers": {"Content-Type": "image/png"},
            "body": base64.b64encode(PNG).decode(),
            "isBase64Encoded": True,
        }
    if what in ("sleep", "slow"):
        time.sleep(float(query.get("s", 3)))
    return {"statusCode": 200, "body": str(os.getpid())}
