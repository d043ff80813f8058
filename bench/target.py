"""The server under test: the relay's full app plus a trivial baseline endpoint, on one uvicorn process.

``python -m bench.target --port N --store URL`` (the benchmark starts it). Extra routes, for the benchmark only:
``GET /bench/baseline`` (the baseline: the same app, middleware and server, no relay work; ``POST`` reads and
parses its body, for the floor of two bare POSTs),
``GET /bench/baseline-stream`` (an SSE response carrying only heartbeats, the idle-stream baseline),
``GET /bench/counts`` (store calls, DynamoDB requests and capacity, wall time per route, process memory)
and ``POST /bench/reset``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench.counting import CountingStore, DynamoCounter, RouteTimer
from codap_relay.http.app import build_app
from codap_relay.notify import Notifier
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store import open_store
from codap_relay_tooling.testing.servers import raise_fd_limit

UNLIMITED = 1_000_000_000  # rate limits off: the benchmark is one client address making many calls


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def count_dynamodb_clients(counter: DynamoCounter) -> None:
    """Attach the counter to every DynamoDB client created from now on, however the store builds it."""
    from botocore.client import ClientCreator

    original = ClientCreator.create_client

    def create_client(self: Any, service_name: str, *args: Any, **kwargs: Any) -> Any:
        client = original(self, service_name, *args, **kwargs)
        if service_name == "dynamodb":
            counter.attach(client)
        return client

    ClientCreator.create_client = create_client  # type: ignore[method-assign]


class NoWakeups(Notifier):
    """No in-process wake-ups: every wait runs on polling alone, as it does across Lambda instances."""

    def notify(self, key: str) -> None:
        pass


def build(store_url: str, *, poll: bool, heartbeat: float, wakeups: bool = True) -> Any:
    poll = poll or not wakeups  # without wake-ups, only polling ends a wait
    dynamo = DynamoCounter()
    if store_url.startswith("dynamodb:"):
        count_dynamodb_clients(dynamo)
    limits: dict[str, Any] = {
        "rate_limit_session_per_ip": UNLIMITED,
        "rate_limit_request_per_code": UNLIMITED,
        "guess_limit_per_ip": UNLIMITED,
        "rate_limit_status_per_ip": UNLIMITED,
        "request_bytes_per_ip_per_hour": UNLIMITED * 1000,
        # The real CODAP build is served from loopback here: it must be allowed to frame the plugin.
        "frame_ancestors": "http://127.0.0.1:*,http://localhost:*",
    }
    # Only the limits this version of the relay has: the benchmark can then measure an earlier one (before/after).
    limits = {k: v for k, v in limits.items() if k in Settings.model_fields}
    settings = Settings.from_env(None, relay_store=store_url, heartbeat_seconds=heartbeat, **limits)
    store = CountingStore(open_store(settings.relay_store), pushes=False if poll else None)
    relay = Relay(settings, store, notifier=None if wakeups else NoWakeups())  # type: ignore[arg-type]
    timer: RouteTimer

    async def baseline(request: Request) -> Response:
        if request.method == "POST":
            await request.json()  # the floor's POSTs carry a tool request's body: read and parse it, no more
        return JSONResponse({"ok": True})

    async def baseline_stream(request: Request) -> Response:
        """The idle-stream baseline: an SSE response that only sends heartbeats, on the same server."""

        async def beats() -> AsyncIterator[bytes]:
            yield b"retry: 1000\n\n"
            while True:
                await asyncio.sleep(settings.heartbeat_seconds)
                yield b"event: heartbeat\ndata: {}\n\n"

        return StreamingResponse(beats(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def counts(request: Request) -> Response:
        return JSONResponse(
            {
                "store": dict(store.calls),
                "dynamodb": dynamo.snapshot(),
                "routes": timer.snapshot(),
                "rss_bytes": rss_bytes(),
                "pushes": store.pushes,
                "poll_interval_seconds": settings.poll_interval_seconds,
                "heartbeat_seconds": settings.heartbeat_seconds,
                "fds": len(os.listdir("/proc/self/fd")),
            }
        )

    async def reset(request: Request) -> Response:
        store.calls.clear()
        dynamo.reset()
        timer.reset()
        return JSONResponse({"ok": True})

    extra = [
        Route("/bench/baseline", baseline, methods=["GET", "POST"]),
        Route("/bench/baseline-stream", baseline_stream, methods=["GET"]),
        Route("/bench/counts", counts, methods=["GET"]),
        Route("/bench/reset", reset, methods=["POST"]),
    ]
    timer = RouteTimer(build_app(relay, extra_routes=extra))
    return timer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", default="memory:")
    parser.add_argument("--poll", action="store_true", help="wait by polling the store, as the deployed stack does")
    parser.add_argument("--no-wakeups", action="store_true", help="with --poll: no in-process notifications either")
    parser.add_argument("--heartbeat", type=float, default=15.0)
    args = parser.parse_args()
    raise_fd_limit()
    app = build(args.store, poll=args.poll, heartbeat=args.heartbeat, wakeups=not args.no_wakeups)
    # The same server settings as `codap-relay serve` (which uses uvicorn's defaults), minus the access log.
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=3,
        backlog=4096,
    )


if __name__ == "__main__":
    main()
