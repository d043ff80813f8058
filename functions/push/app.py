"""Lambda function: the push channel's WebSocket API (PushChannel=websocket): its $connect, $disconnect and
$default routes. Each event is handed to the core's push unit; every reply goes out through the management API
(the publisher), never in the integration's answer, so the relay works the same with or without two-way routes.

$connect is accepted as it comes: the plugin authenticates in its first message (attach, with the browser token),
so the pairing code never travels in a URL. $disconnect detaches the consumer the connection attached as (the
attach stored which), so a closed tab shows as not connected at once.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from relay_lambda import build_relay, logger, metrics, trace_handler

from codap_relay.settings import Settings

relay = build_relay(Settings.from_env())
# One loop for the container's life, never made current: asyncio.run would unset the thread's loop when it ends,
# which Mangum (the HTTP functions, in the same process under tests) still reads.
loop = asyncio.new_event_loop()
OK = {"statusCode": 200}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
@trace_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = event.get("requestContext") or {}
    kind, connection = request.get("eventType"), request.get("connectionId")
    if not isinstance(connection, str) or not connection:
        logger.warning("push event without a connection id", extra={"eventType": kind})
        return {"statusCode": 400}
    if kind == "CONNECT":
        return OK
    if kind == "DISCONNECT":
        detached = loop.run_until_complete(relay.push.disconnected(connection))
        logger.info(
            "push connection closed",
            extra={"connection": connection, "status": request.get("disconnectStatusCode"), "detached": detached},
        )
        return OK
    if kind == "MESSAGE":
        body = event.get("body")
        if isinstance(body, str) and event.get("isBase64Encoded"):  # a binary frame: the relay speaks JSON text
            body = base64.b64decode(body).decode("utf-8", "replace")
        source = (request.get("identity") or {}).get("sourceIp")
        loop.run_until_complete(relay.push.message(connection, body if isinstance(body, str) else None, client=source))
        return OK
    logger.warning("push event of an unknown type", extra={"eventType": kind})
    return {"statusCode": 400}
