"""The WebSocket API's function: appends every event it gets (with its process id and the push addresses it
sees) to the file RECORDER_LOG names, one JSON line each, and does what a message asks.

$connect with ?refuse=STATUS answers that status. A message's body {"do": ...}: "post" posts {"posted": text} back
to its own connection through the @connections API at PUSH_ENDPOINT (boto3, as the relay publishes); "fail"
raises; "sleep" waits ``s`` seconds. The answer's body is {"echo": body}: only a two-way route sends it back."""

import json
import os
import time
from typing import Any


def record(event: dict[str, Any]) -> None:
    line = {
        "event": event,
        "pid": os.getpid(),
        "at": time.time(),
        "push": {name: os.environ.get(name) for name in ("PUSH_URL", "PUSH_ENDPOINT")},
    }
    with open(os.environ["RECORDER_LOG"], "a") as log:
        log.write(json.dumps(line) + "\n")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    record(event)
    context_ = event["requestContext"]
    if context_["eventType"] == "CONNECT":
        refuse = (event.get("queryStringParameters") or {}).get("refuse")
        return {"statusCode": int(refuse)} if refuse else {"statusCode": 200}
    if context_["eventType"] == "MESSAGE":
        try:
            asked = json.loads(event["body"])
        except (ValueError, RecursionError):
            asked = {}
        what = asked.get("do") if isinstance(asked, dict) else None
        if what == "fail":
            raise ValueError("asked to fail")
        if what == "sleep":
            time.sleep(float(asked.get("s", 1)))
        if what == "post":
            import boto3

            client = boto3.client(
                "apigatewaymanagementapi",
                endpoint_url=os.environ["PUSH_ENDPOINT"],
                region_name="us-east-1",
                aws_access_key_id="local",
                aws_secret_access_key="local",
            )
            data = json.dumps({"posted": asked.get("text")})
            client.post_to_connection(ConnectionId=context_["connectionId"], Data=data.encode())
        return {"statusCode": 200, "body": json.dumps({"echo": event["body"]})}
    return {"statusCode": 200}
