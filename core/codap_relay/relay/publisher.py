"""How the relay reaches a plugin's push connection: the ``Publisher`` protocol, and the one that posts through
API Gateway's WebSocket management API (``POST``/``DELETE {push_endpoint}/@connections/{id}``, SigV4-signed by
boto3 with the function's credentials). Its calls block; the push unit runs them in worker threads."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..jsonvalues import dumps

#: The largest message sent whole: API Gateway refuses a message over 128 KB (131,072 bytes); a tool request
#: larger than this travels as a pointer the plugin fetches.
PUSH_INLINE_BYTES = 120_000
_REGION_IN_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com")


class Outcome(StrEnum):
    """What became of one post: ``sent`` (API Gateway took it), ``gone`` (410: the connection is no more) or
    ``unknown`` (any other fault, or no answer in time: it may or may not have reached the plugin, so the relay
    must not count on it, nor tell the plugin that anything after it was sent)."""

    SENT = "sent"
    GONE = "gone"
    UNKNOWN = "unknown"


def encode_message(message: dict[str, Any]) -> bytes:
    """A message as it goes on the wire (one text frame): compact JSON in UTF-8. Its length is what counts."""
    return dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def _on_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


class Publisher(Protocol):
    #: True when calls do I/O and must not run on the event loop (as ``Store.blocking``).
    blocking: bool

    def prepare(self) -> None:
        """Make what posts need (a client), outside any post's time bound; called before the first post."""
        ...

    def publish(self, connection_id: str, message: dict[str, Any]) -> bool:
        """Send ``message`` to the connection; False when the connection is gone (closed, unknown). Raises on
        other faults (the service logs them and carries on: the plugin's next ping or resume catches up)."""
        ...

    def close(self, connection_id: str) -> None:
        """Close the connection (one already gone is no fault)."""
        ...


class ApiGatewayPublisher:
    """The management API through boto3's ``apigatewaymanagementapi`` client, made on first use and kept for the
    life of the process (a warm Lambda container reuses it, as it reuses the store's client)."""

    blocking = True

    def __init__(self, endpoint: str, *, region: str | None = None, timeout: float = 1.0) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.region = region
        self.timeout = timeout
        self._client: Any = None
        self._lock = threading.Lock()

    def _region(self) -> str:
        found = _REGION_IN_HOST.search(urlsplit(self.endpoint).netloc)
        env = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        # The host names the API's region on AWS, which is what SigV4 signs for; a loopback endpoint has none.
        return self.region or (found.group(1) if found else None) or env or "us-east-1"

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                # About a second and no retry: a publish runs inside the LLM's submit (and its ?wait), and a post
                # that does not go through is caught up by the plugin's next ping or resume.
                config = Config(
                    connect_timeout=self.timeout, read_timeout=self.timeout, retries={"total_max_attempts": 1}
                )
                session = boto3.session.Session()
                extra: dict[str, str] = {}
                if _on_loopback(self.endpoint) and session.get_credentials() is None:
                    # local-api's emulated API wants a signature but checks none: do not make local users invent
                    # credentials (as the store's client does for DynamoDB Local).
                    extra = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
                self._client = session.client(
                    "apigatewaymanagementapi",
                    endpoint_url=self.endpoint,
                    region_name=self._region(),
                    config=config,
                    **extra,
                )
            return self._client

    def prepare(self) -> None:
        self.client()  # boto3's import and client take longer than a post may: not counted against the first

    def publish(self, connection_id: str, message: dict[str, Any]) -> bool:
        client = self.client()
        try:
            client.post_to_connection(ConnectionId=connection_id, Data=encode_message(message))
        except client.exceptions.GoneException:
            return False
        return True

    def close(self, connection_id: str) -> None:
        client = self.client()
        with contextlib.suppress(client.exceptions.GoneException):  # gone already: closed is what we wanted
            client.delete_connection(ConnectionId=connection_id)
