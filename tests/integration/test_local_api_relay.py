"""The relay's own stack through ``codap-relay local-api`` (template.yaml, every function in its own processes,
the stream behind the Web Adapter-style proxy) on the SQLite store those processes share: what only the deployed
shape can show. The HTTP, MCP, browser and chaos suites also run through local-api, on DynamoDB Local."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from codap_relay.client import AsyncRelayClient
from codap_relay.http.plugin_files import IMMUTABLE
from codap_relay.settings import Settings
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import local_api_process
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.plugin_bundle import page_files
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window
from codap_relay_tooling.testing.servers import ServerProcess, bearer
from codap_relay_tooling.testing.sse_client import iter_events

GRACE = 6  # CONNECTED_GRACE_SECONDS: above the stream's 5 s refresh of the session, so an open stream stays connected
ENV = {
    "CONNECTED_GRACE_SECONDS": str(GRACE),
    "HEARTBEAT_SECONDS": "30",  # an idle stream writes rarely: only a real disconnect check ends it early
    "GUESS_LIMIT_PER_IP": "3",
    "RATE_LIMIT_SESSION_PER_IP": "10000",
    "RATE_LIMIT_REQUEST_PER_CODE": "10000",
}
# What a browser sends with the plugin's POST /response: these headers are in the event twice (single and multi).
BROWSER_HEADERS = {
    "Origin": "https://codap.concord.org",
    "Referer": "https://codap.concord.org/app/static/dg/en/cert/index.html?di=https://example/v1/plugin/",
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36",
    "Accept": "*/*",
    "Accept-Language": "en-US,en;q=0.9,de;q=0.8",
    "Accept-Encoding": "gzip, deflate, br, zstd",
    "sec-ch-ua": '"Chromium";v="156", "Not)A;Brand";v="24", "Google Chrome";v="156"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"Linux"',
    "Sec-Fetch-Dest": "empty",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Site": "cross-site",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ServerProcess]]:
    store = tmp_path_factory.mktemp("local-api-relay") / "relay.db"
    with local_api_process("--store", f"sqlite:///{store}", env={**os.environ, **ENV}) as served:
        yield served


@pytest.fixture
def base(stack: tuple[str, ServerProcess]) -> str:
    return stack[0]


async def new_session(base: str) -> dict[str, Any]:
    async with web.AsyncClient(base_url=base, timeout=30) as http:
        r = await http.post("/api/sessions", json={})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def until(predicate: Any, timeout: float, what: str) -> float:
    """Poll ``predicate`` (sync or async) until true; returns the seconds it took."""
    started = time.monotonic()
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.1)


async def test_a_tool_call_round_trip_across_function_processes_on_shared_sqlite(base: str) -> None:
    """Request, stream, response and read-back are four processes here, as four Lambdas are: every wait polls
    the store (no in-process wake-ups), and the stream reaches the plugin through the adapter-style proxy."""
    session = await new_session(base)
    async with FakePlugin.for_session(base, session):
        async with AsyncRelayClient(base, session["code"]) as llm:
            done = await llm.call("get_codap_datasets", {}, wait=20)
            assert done.ok and done.result == {"tool": "get_codap_datasets", "args": {}}
            assert (await llm.status()).connected is True


def test_plugin_page_and_its_redirect_keep_the_stage(base: str) -> None:
    page = web.get(f"{base}/plugin/", timeout=30)
    assert page.status_code == 200 and "<html" in page.text and page.headers["cache-control"] == "no-cache"
    for name in page_files(page.text):  # through the Lambda and the gateway, as test_plugin_bundle.py in process
        built = web.get(f"{base}/plugin/{name}", timeout=30)
        assert built.status_code == 200 and built.headers["cache-control"] == IMMUTABLE, built.headers
    again = web.get(f"{base}/plugin/", headers={"If-None-Match": page.headers["etag"]}, timeout=30)
    assert again.status_code == 304 and not again.content
    bare = web.get(f"{base}/plugin", timeout=30)
    assert bare.status_code == 307 and bare.headers["location"] == f"{base}/plugin/"
    index = web.get(f"{base}/", timeout=30).json()
    assert index["plugin"] == f"{base}/plugin/" and index["mcp"] == f"{base}/mcp/{{code}}"


async def test_a_stream_runs_on_after_its_client_left_until_its_tab_detaches(
    stack: tuple[str, ServerProcess],
) -> None:
    """As on AWS, where a streamed Lambda response is not interrupted when the client's connection breaks, the
    stream function runs on after its client left (refreshing the session, so the plugin still looks connected),
    until the tab's detach (what the plugin sends on pagehide) ends it at its next poll: within 1 s. The LLM then
    sees the plugin as not connected at once, and the instance is free for the next stream."""
    base, process = stack
    session = await new_session(base)
    code, token = session["code"], session["browserToken"]
    tab = "tab-" + code.lower()
    async with web.AsyncClient(base_url=base, timeout=httpx.Timeout(30, read=None)) as http:

        async def connected() -> bool:
            status = (await http.get(f"/api/sessions/{code}")).json()
            result: bool = status["connected"]
            return result

        params = {"code": code, "tab": tab}
        async with http.stream("GET", "/stream", params=params, headers=bearer(token)) as sse:
            assert sse.status_code == 200
            request_id = sse.headers["x-amzn-requestid"]
            events = iter_events(sse)  # held: a dropped reader would close the connection itself
            await anext(events)  # the stream is live in the function
        # The client is gone. The function is not told: past the grace it still runs and keeps the plugin connected.
        await until(lambda: "the client went away; the function runs on" in process.output(), 5, "local-api to see it")
        await asyncio.sleep(GRACE + 1)
        assert f"REPORT RequestId: {request_id}" not in process.output()
        assert await connected()

        detach = await http.post(f"/api/sessions/{code}/detach", params={"tab": tab, "token": token})
        detached_at = time.monotonic()
        assert detach.status_code == 200 and detach.json() == {"code": code, "detached": True}
        await until(lambda: f"REPORT RequestId: {request_id}" in process.output(), 5, "the stream function to end")
        took = time.monotonic() - detached_at
        print(f"\ndetach answered -> stream function ended: {took * 1000:.0f} ms")
        assert took < 1.0
        ended = re.compile(rf'"correlationId":\s*"{request_id}".*"route":\s*"/stream"')
        assert ended.search(process.output())  # its handler returned: the loop itself ended
        assert not await connected()  # at once, not after the grace
        # Another tab's detach (or a repeated one) touches nothing.
        again = await http.post(f"/api/sessions/{code}/detach", params={"tab": tab}, headers=bearer(token))
        assert again.json()["detached"] is False
    # The instance was released: the next stream reuses it instead of starting another one.
    started = process.output().count("INFO:     Started server process")
    async with FakePlugin(base, code, token) as plugin:
        assert plugin.stopped_by is None
    assert process.output().count("INFO:     Started server process") == started


def test_the_stream_function_tells_clients_apart(base: str) -> None:
    """Behind the Web Adapter the stream's TCP peer is the adapter (127.0.0.1) for every user; uvicorn, trusting
    that peer, takes the client's address from the X-Forwarded-For API Gateway adds. One address guessing codes
    is cut off, another is not."""
    guesser = web.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30)
    plugin = web.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=30)
    with guesser, plugin:
        clear_of_rate_window()
        codes = [
            guesser.get(f"{base}/stream", params={"code": f"ZZZZ222{n}", "mode": "poll"}).status_code
            for n in range(2, 7)
        ]
        assert codes[:3] == [404, 404, 404] and codes[-1] == 429
        session = plugin.post(f"{base}/api/sessions", json={}).json()
        params, headers = {"code": session["code"]}, bearer(session["browserToken"])
        with plugin.stream("GET", f"{base}/stream", params=params, headers=headers) as stream:
            assert stream.status_code == 200


# --- defect 7: the largest result the relay accepts fits Lambda's payload limits, escaped --------------------


def worst_case_body(head: dict[str, Any], target: int) -> bytes:
    """``head`` with its text made of backslashes, exactly ``target`` bytes: every one of them doubles again
    when the body is escaped into the event (a string of quotes would do the same)."""

    def render(text: str) -> bytes:
        body = json.loads(json.dumps(head))
        body["result"]["content"][0]["text"] = text
        return json.dumps(body, separators=(",", ":")).encode()

    room = target - len(render(""))
    out = render("\\" * (room // 2) + "a" * (room % 2))
    assert len(out) == target
    return out


async def test_the_largest_allowed_result_fits_through_every_function_that_carries_it(base: str) -> None:
    limit = Settings(relay_store="memory:").max_response_bytes  # the default the template deploys
    session = await new_session(base)
    code, token = session["code"], session["browserToken"]
    async with web.AsyncClient(base_url=base, timeout=60) as http:
        queued = await http.post("/request", json={"code": code, "id": "big", "tool": "get_codap_datasets"})
        assert queued.status_code == 202
        head = {"code": code, "id": "big", "result": {"content": [{"type": "text", "text": ""}]}}
        body = worst_case_body(head, limit)
        headers = {**BROWSER_HEADERS, **bearer(token), "Content-Type": "application/json"}
        over = await http.post("/response", params={"code": code}, content=body[:-2] + b'a"}]}}', headers=headers)
        assert over.status_code == 413 and over.json()["error"] == "payload_too_large"  # the relay's own answer
        posted = await http.post("/response", params={"code": code}, content=body, headers=headers)
        assert posted.status_code == 202, posted.text[:300]
        read = await http.get("/response", params={"code": code, "id": "big"})
        assert read.status_code == 200, read.text[:300]
        assert read.json()["result"] == json.loads(body)["result"]

    # Through MCP: the plugin's answer comes back inside a JSON-RPC result, escaped once more by Lambda.
    text = json.loads(body)["result"]["content"][0]["text"][:-200]

    async def big_answer(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"content": [{"type": "text", "text": text}]}}

    async with FakePlugin.for_session(base, session, handler=big_answer), web.AsyncClient(timeout=60) as http:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_codap_datasets"}}
        r = await http.post(
            f"{base}/mcp/{code}",
            json=call,
            headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"},
        )
        assert r.status_code == 200, r.text[:300]
        assert r.json()["result"]["content"][0]["text"] == text


def test_template_and_settings_agree_on_the_limit() -> None:
    from codap_relay_tooling.localapi.template import read_stack
    from codap_relay_tooling.testing import CHECKOUT

    stack = read_stack(CHECKOUT / "template.yaml")
    deployed = {f.environment["MAX_RESPONSE_BYTES"] for f in stack.functions.values()}
    assert deployed == {str(Settings(relay_store="memory:").max_response_bytes)}


def test_gateway_errors_take_the_templates_gateway_responses(base: str) -> None:
    """The template's GatewayResponses: API Gateway's own errors carry CORS and the relay's error shape."""
    r = web.get(f"{base}/no-such-route", headers={"Origin": "https://codap.concord.org"}, timeout=30)
    assert r.status_code == 403 and r.headers["access-control-allow-origin"] == "*"
    assert r.json() == {
        "error": "MISSING_AUTHENTICATION_TOKEN",
        "message": "Missing Authentication Token",
        "correlationId": r.headers["x-amzn-requestid"],
    }
