"""serve_app, the harness's uvicorn-in-a-thread: how its context ends with a request still running."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.servers import serve_app


def held_app(started: threading.Event, finished: threading.Event) -> Starlette:
    """An app whose one route never answers until it is cancelled (a stream that outlives its client's interest)."""

    async def hold(request: Request) -> PlainTextResponse:
        started.set()
        try:
            while True:
                await asyncio.sleep(0.05)
        finally:
            finished.set()

    return Starlette(routes=[Route("/hold", hold), Route("/", lambda r: PlainTextResponse("ok"))])


def hold_in_background(url: str) -> None:
    def run() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server goes away under it, as intended
            web.get(f"{url}/hold", timeout=30)

    threading.Thread(target=run, daemon=True).start()


def refused(url: str) -> bool:
    try:
        web.get(url, timeout=1)
    except httpx.ConnectError:
        return True
    return False


def test_a_session_server_is_asked_to_stop_and_not_waited_for() -> None:
    started, finished = threading.Event(), threading.Event()
    with serve_app(held_app(started, finished), wait_for_stop=False) as url:
        hold_in_background(url)
        assert started.wait(10)
    # the context is over while the held request still runs: nobody waited for the shutdown...
    assert not finished.is_set()
    # ...which goes on by itself: the held request is cancelled and the port closes
    deadline = time.monotonic() + 10
    while not (finished.is_set() and refused(url)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert finished.is_set() and refused(url)


def test_by_default_the_context_ends_after_the_server_has_stopped() -> None:
    started, finished = threading.Event(), threading.Event()
    with serve_app(held_app(started, finished)) as url:
        hold_in_background(url)
        assert started.wait(10)
    assert finished.is_set() and refused(url)
