"""MCP subscriptions at the HTTP level, with the official Python SDK client and the plugin's change notes posted by
hand: what a long-lived relay (every group in one process, as ``codap-relay serve`` runs) sends to whom, and that
the deployed shape (a Lambda function's groups) neither declares nor serves them. The real plugin hearing CODAP:
tests/e2e/test_mcp_subscriptions.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError

from codap_relay.http.app import build_app
from codap_relay.mcp import subscriptions as mcp_subscriptions
from codap_relay.relay import Relay
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.servers import serve_app


@pytest.fixture
def long_lived(relay: Relay) -> Iterator[str]:
    with serve_app(build_app(relay)) as url:
        yield url


@pytest.fixture
def deployed(relay: Relay) -> Iterator[str]:
    # the groups of the MCP function and the sessions function (functions/*/app.py), in one app for the test
    with serve_app(build_app(relay, ["mcp", "resources", "sessions"])) as url:
        yield url


def open_session(base: str) -> dict[str, Any]:
    body: dict[str, Any] = web.post(f"{base}/api/sessions", json={}).json()
    return body


def note(base: str, session: dict[str, Any], token: str | None = None, **body: Any) -> httpx.Response:
    token = session["browserToken"] if token is None else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return web.post(f"{base}/api/sessions/{session['code']}/changes", json=body, headers=headers)


async def next_events(subscription: Any, n: int) -> list[Any]:
    events = []
    async with asyncio.timeout(10):
        async for event in subscription:
            events.append(event)
            if len(events) == n:
                return events
    return events


def test_a_long_lived_relay_gives_the_plugin_a_changes_path_for_its_token_only(long_lived: str) -> None:
    session = open_session(long_lived)
    assert session["changes"] == f"/api/sessions/{session['code']}/changes"
    assert note(long_lived, session, datasets=["Mammals"]).json() == {"seq": 1}
    assert note(long_lived, session, listChanged=True).status_code == 202
    assert note(long_lived, session, token="").status_code == 401
    assert note(long_lived, session, token="x" * 43, datasets=["Mammals"]).status_code == 403
    refused = note(long_lived, session, datasets=["x" * 201])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"


async def test_a_subscriber_hears_of_its_own_session_s_changes_only(long_lived: str) -> None:
    mine, other = open_session(long_lived), open_session(long_lived)
    watched = ["codap://datasets/Mammals", "codap://datasets/Mammals/cases", "codap://components"]
    async with Client(f"{long_lived}/mcp/{mine['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe and caps.list_changed
        async with client.listen(resources_list_changed=True, resource_subscriptions=watched) as subscription:
            # another session's change, then a dataset this client does not watch: nothing for it
            await asyncio.to_thread(note, long_lived, other, datasets=["Mammals"], listChanged=True)
            await asyncio.to_thread(note, long_lived, mine, datasets=["Birds"])
            await asyncio.to_thread(note, long_lived, mine, datasets=["Mammals"])
            got = await next_events(subscription, 2)
            assert {e.uri for e in got} == {"codap://datasets/Mammals", "codap://datasets/Mammals/cases"}
            await asyncio.to_thread(note, long_lived, mine, listChanged=True)
            got = await next_events(subscription, 2)
            assert ResourcesListChanged() in got and ResourceUpdated("codap://components") in got


async def test_the_deployed_shape_neither_declares_nor_serves_subscriptions(deployed: str) -> None:
    session = open_session(deployed)
    assert session.get("changes") is None  # so the plugin posts nothing there
    assert note(deployed, session, datasets=["Mammals"]).status_code in (404, 405)
    async with Client(f"{deployed}/mcp/{session['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and not caps.subscribe and not caps.list_changed
        with pytest.raises(MCPError):
            async with client.listen(resource_subscriptions=["codap://datasets"]):
                pass


async def test_a_listen_stream_ends_when_its_session_does(long_lived: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_subscriptions, "RECHECK_SECONDS", 0.2)  # 30 s in use
    session = open_session(long_lived)
    async with Client(f"{long_lived}/mcp/{session['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        async with client.listen(resource_subscriptions=["codap://datasets"]) as subscription:
            ended = await asyncio.to_thread(
                httpx.delete,
                f"{long_lived}/api/sessions/{session['code']}",
                headers={"Authorization": f"Bearer {session['browserToken']}"},
            )
            assert ended.status_code == 200
            assert await next_events(subscription, 1) == []  # the server closed the stream: the loop ends


async def test_a_session_holds_at_most_four_listen_streams_and_a_fifth_is_refused_until_one_ends(
    long_lived: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each listen holds a connection and a watcher: without a cap, one pairing code could hold every connection
    the server has (security issue 31). Another session's streams are its own."""
    caplog.set_level(logging.WARNING, logger="codap_relay.mcp")
    limit = 4  # MAX_LISTENS_PER_SESSION, as docs/threat-model.md gives it
    mine, other = open_session(long_lived), open_session(long_lived)
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(f"{long_lived}/mcp/{mine['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS)
        )
        streams = [
            await stack.enter_async_context(client.listen(resource_subscriptions=["codap://datasets"]))
            for _ in range(limit)
        ]
        for _ in range(2):
            with pytest.raises(MCPError) as refused:
                async with client.listen(resource_subscriptions=["codap://datasets"]):
                    pass
            assert refused.value.error.code == -32011 and "subscriptions/listen" in refused.value.error.message
        async with Client(f"{long_lived}/mcp/{other['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS) as theirs:
            async with theirs.listen(resource_subscriptions=["codap://datasets"]) as subscription:
                await asyncio.to_thread(note, long_lived, other, datasets=["Mammals"])
                assert len(await next_events(subscription, 1)) == 1
        assert len(streams) == limit
    lines = [r for r in caplog.records if "subscriptions/listen streams open" in r.getMessage()]
    assert len(lines) == 1 and mine["code"] not in lines[0].getMessage()
    # the streams ended with the client: the session may listen again
    async with Client(f"{long_lived}/mcp/{mine['code']}", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        async with client.listen(resource_subscriptions=["codap://datasets"]) as subscription:
            await asyncio.to_thread(note, long_lived, mine, datasets=["Mammals"])
            assert len(await next_events(subscription, 1)) == 1
