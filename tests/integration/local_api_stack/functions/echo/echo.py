"""Answers with what it was given: the event, its environment, its process and its context."""

import json
import os
import sys
from typing import Any

SEEN = (
    "GREETING",
    "FLAG_TEXT",
    "SUB_TEXT",
    "TABLE_ARN",
    "OVERRIDDEN",
    "RELAY_STORE",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "LAMBDA_TASK_ROOT",
    "AWS_EXECUTION_ENV",
    "_HANDLER",
    "TZ",
)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    body = {
        "event": event,
        "environment": {name: os.environ.get(name) for name in SEEN},
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "variables": sorted(os.environ),
        "pathHead": sys.path[:4],
        "requestId": context.aws_request_id,
        "remainingMs": context.get_remaining_time_in_millis(),
        "functionName": context.function_name,
        "memory": context.memory_limit_in_mb,
    }
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json", "X-Single": "one"},
        "multiValueHeaders": {"X-Multi": ["a", "b"], "X-Single": ["from-multi"]},
        "body": json.dumps(body),
    }
