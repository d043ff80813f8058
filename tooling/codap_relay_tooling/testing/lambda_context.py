"""The context object the Lambda Python runtime passes to a handler, with the attributes Powertools reads.

Used by ``codap-relay local-api``'s function processes and by tests that call a handler directly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

ACCOUNT_ID = "123456789012"


@dataclass
class LambdaContext:
    function_name: str = "codap-relay-test"
    memory_limit_in_mb: int = 256
    aws_request_id: str = "test-invocation"
    region: str = "us-east-1"
    function_version: str = "$LATEST"
    # Wall-clock deadline (epoch seconds); by default the 30 s the template gives buffered functions.
    deadline: float = field(default_factory=lambda: time.time() + 30)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"{time.strftime('%Y/%m/%d', time.gmtime())}/[{self.function_version}]local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.time()) * 1000))
