"""Driving the plugin inside the CODAP test host, and calling tools the way an HTTP-tool LLM does."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

from . import web

DEADLINE = 20.0
#: How long a test's MCP client waits for any answer (the relay's own tool timeout is 15 s at most), so that an
#: answer lost on the way fails the test with the SDK's timeout instead of leaving it waiting for ever.
MCP_ANSWER_SECONDS = 60.0


def wait_until(
    predicate: Callable[[], Any],
    what: str,
    timeout: float = DEADLINE,
    *,
    explain: Callable[[], str] | None = None,
) -> Any:
    """Poll until ``predicate`` returns something truthy; fail with ``what`` at the deadline, and with what
    ``explain`` then says of the state (for a failure that happens only in a loaded run)."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))
        time.sleep(0.05)


# --- test data and pages ----------------------------------------------------------------------------------

# A two-level dataset (classes > pupils), made through codap_api: two classes, three pupils.
CLASSES = {
    "action": "create",
    "resource": "dataContext",
    "values": {
        "name": "classes",
        "collections": [
            {"name": "class", "attrs": [{"name": "room"}]},
            {"name": "pupil", "attrs": [{"name": "who"}, {"name": "mark", "type": "numeric"}]},
        ],
    },
}
CLASS_ROWS = [{"room": "A1", "who": "Ann", "mark": 3}, {"room": "A1", "who": "Ben", "mark": 4}]
MORE_CLASS_ROWS = [{"room": "B2", "who": "Cy", "mark": 5}]


def new_page(context: Any) -> tuple[Any, list[str]]:
    """A page of ``context`` and the list its console messages and page errors are collected into."""
    page = context.new_page()
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    return page, messages


def close_tabs(context: Any) -> None:
    """Close ``context`` as a person closes its tabs: each page first, which runs its unload steps (the plugin's
    pagehide detaches its stream), then the context, whose own close skips them. Against a host that keeps a
    stream running after its client left (AWS, local-api) a skipped pagehide leaves the stream running on."""
    for page in list(context.pages):
        with contextlib.suppress(Exception):  # already closed or crashed: nothing to unload
            page.close()
    context.close()


# --- the plugin's frame, in the test host or in real CODAP ------------------------------------------------


def plugin_storage(frame: Any) -> dict[str, str]:
    """The plugin's sessionStorage (its session, browser token and request ledger)."""
    result: dict[str, str] = frame.evaluate("() => ({...sessionStorage})")
    return result


def plugin_ledger(frame: Any) -> dict[str, Any]:
    """The plugin's ledger of requests by id: ``{state: started|done, posted, …}``."""
    raw = next((v for k, v in plugin_storage(frame).items() if k.endswith(":ledger")), "{}")
    entries: dict[str, Any] = json.loads(raw)
    return entries


#: Makes the plugin's frame drop the answers it sends over its push socket (as a socket the relay no longer hears
#: would), keeping each dropped answer's request id in ``window.__heldAnswers``. The plugin then posts the answer
#: after its wait for the relay's word: a test that refuses posted answers too keeps every answer from the relay.
_HOLD_SOCKET_ANSWERS = """() => {
  if (window.__heldAnswers) return;
  window.__heldAnswers = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    let message = null;
    try { message = JSON.parse(String(data)); } catch { message = null; }
    if (message && message.action === "answer") { window.__heldAnswers.push(String(message.id)); return; }
    return send.call(this, data);
  };
}"""


def hold_socket_answers(frame: Any) -> None:
    """From now until the frame reloads, the plugin's answers over a push socket never leave it (SSE: no effect)."""
    frame.evaluate(_HOLD_SOCKET_ANSWERS)


def held_socket_answers(frame: Any) -> list[str]:
    """The request ids whose answers ``hold_socket_answers`` kept from the relay so far."""
    return [str(i) for i in frame.evaluate("() => window.__heldAnswers || []")]


def session_copy_script(frame: Any, relay: str) -> str:
    """An init script that gives a new tab the plugin's session, as a duplicated browser tab carries the
    sessionStorage (session and browser token) of the tab it was duplicated from."""
    key, value = next((k, v) for k, v in plugin_storage(frame).items() if k.endswith(":session"))
    # The relay's URL may carry a path (a stage, under local-api): compare origins only.
    return (
        f"if (location.origin === new URL({json.dumps(relay)}).origin) "
        f"sessionStorage.setItem({json.dumps(key)}, {json.dumps(value)});"
    )


def reload_frame(frame: Callable[[], Any]) -> None:
    """Reload the plugin's frame alone (the page around it stays), as a person's reload of the frame does;
    ``frame`` finds the frame (it is a new one once reloaded)."""

    def reloaded() -> Any:
        try:
            return frame().evaluate("() => !window.__beforeReload")
        except Exception:  # the frame is navigating
            return None

    frame().evaluate("() => { window.__beforeReload = true; location.reload(); }")
    wait_until(reloaded, "the plugin frame to reload")


class PluginFrameReader:
    """Reads the plugin's own page in its frame; a subclass says where the frame is (``frame``)."""

    @property
    def frame(self) -> Any:
        raise NotImplementedError

    def _safe(self, fn: Any) -> Any:
        """``fn()``, or None if it failed: the frame may not exist yet, or be navigating."""
        try:
            return fn()
        except Exception:
            return None

    def text(self, selector: str) -> str:
        return str(self.frame.locator(selector).inner_text())

    def code(self) -> str:
        return self.text("#code").replace("-", "").strip()

    def status(self) -> str:
        return self.text("#status")

    def copy_buttons(self) -> dict[str, bool]:
        """Each copy button (code, MCP URL, Claude Desktop config, prompt) and whether it can be used."""
        found = self.frame.locator("#copy-code, [data-copy]").evaluate_all(
            "buttons => buttons.map(b => [b.id || b.dataset.copy, !b.disabled])"
        )
        return {name: enabled for name, enabled in found}


class PluginPage(PluginFrameReader):
    def __init__(self, page: Any, relay: str, host_url: str, *, query: str = "", console: list[str]) -> None:
        self.page = page
        self.relay = relay
        self.host_url = host_url
        self.query = query
        self.console = console

    @property
    def plugin_url(self) -> str:
        return f"{self.relay}/plugin/{'?' + self.query if self.query else ''}"

    def open(self) -> None:
        self.page.goto(f"{self.host_url}/?di={quote(self.plugin_url, safe='')}")
        self.wait_connected()

    @property
    def frame(self) -> Any:
        frame = None
        for f in self.page.frames:
            if f.url.startswith(f"{self.relay}/plugin/"):
                frame = f
        assert frame is not None, "plugin frame not found"
        return frame

    def wait_connected(self) -> str:
        wait_until(
            lambda: self._safe(lambda: self.status() == "Connected" and len(self.code()) == 8), "the plugin to connect"
        )
        wait_until(lambda: self.host("host.connected"), "the CODAP handshake")
        return self.code()

    def host(self, expression: str) -> Any:
        """Evaluate ``window.codapHost.<expression>`` in the host page (CODAP's side)."""
        return self.page.evaluate(f"() => window.codapHost.{expression}")

    def reload_plugin(self) -> None:
        reload_frame(lambda: self.frame)

    def log_entries(self) -> list[dict[str, str]]:
        entries: list[dict[str, str]] = self.frame.evaluate(
            """() => [...document.querySelectorAll('#log li')].map(li => ({
                id: li.dataset.requestId, cls: li.className,
                tool: li.querySelector('.entry-tool').textContent,
                args: li.querySelector('.entry-args').textContent,
                state: li.querySelector('.entry-state').textContent,
                result: li.querySelector('.entry-result').textContent}))"""
        )
        return entries


# --- the LLM side (HTTP) ---------------------------------------------------------------------------------


def submit(relay: str, code: str, tool: str, args: dict[str, Any], request_id: str | None = None) -> str:
    body: dict[str, Any] = {"code": code, "tool": tool, "args": args}
    if request_id:
        body["id"] = request_id
    r = web.post(f"{relay}/request", json=body, timeout=30)
    assert r.status_code == 202, r.text
    rid: str = r.json()["id"]
    return rid


def answer(relay: str, code: str, request_id: str, timeout: float = DEADLINE) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        r = web.get(f"{relay}/response", params={"code": code, "id": request_id, "wait": 5}, timeout=30)
        assert r.status_code in (200, 202), r.text
        if r.status_code == 200:
            body: dict[str, Any] = r.json()
            return body
        if time.monotonic() > end:
            raise AssertionError(f"no answer for {request_id}: {r.text}")


def call_tool(relay: str, code: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """POST /request?wait= like an HTTP-tool LLM, then poll until the answer is there."""
    r = web.post(f"{relay}/request", params={"wait": 10}, json={"code": code, "tool": tool, "args": args}, timeout=30)
    if r.status_code == 200:
        body: dict[str, Any] = r.json()
        return body
    assert r.status_code == 202, r.text
    return answer(relay, code, r.json()["id"])


def ok_result(body: dict[str, Any]) -> dict[str, Any]:
    assert body["status"] == "completed", body
    result: dict[str, Any] = body["result"]
    assert result["content"][0]["type"] == "text" and result["content"][0]["text"]
    return result


# --- the LLM side (MCP) ----------------------------------------------------------------------------------

T = TypeVar("T")


class McpClient:
    """An LLM's MCP client: the official MCP SDK over Streamable HTTP at ``{relay}/mcp/{code}``, one MCP session
    held open for all calls, as a client application holds it. The SDK is async and the browser tests drive
    Playwright synchronously in this thread, so the session lives in an event loop on a worker thread."""

    def __init__(self, url: str, timeout: float = 40) -> None:
        self.url = url
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._held: Any = None

    def __enter__(self) -> McpClient:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self._thread.start()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def hold() -> None:
            # The SDK's task group must be entered and left by the same task: this one, until __exit__.
            self._closing = asyncio.Event()
            async with httpx2.AsyncClient(timeout=self.timeout) as http:
                async with Client(
                    streamable_http_client(self.url, http_client=http), read_timeout_seconds=MCP_ANSWER_SECONDS
                ) as client:
                    self._client = client
                    ready.set_result(None)
                    await self._closing.wait()

        self._held = asyncio.run_coroutine_threadsafe(hold(), self._loop)
        ready.result(self.timeout)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
            self._held.result(self.timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _run(self, work: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await work

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result(self.timeout + 10)

    def tools(self) -> list[Any]:
        return list(self._run(self._client.list_tools()).tools)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """``tools/call``; the SDK's result (``is_error``, ``content``, ``structured_content``)."""
        return self._run(self._client.call_tool(name, args))

    def call_to_the_end(self, name: str, args: dict[str, Any]) -> Any:
        """``tools/call``, and where the relay's wait ran out first (CODAP slow to answer on a busy machine), what
        the timeout's text tells a model to do: GET its check URL until the answer is there. The tool's result as
        the SDK shapes it either way."""
        import mcp_types as types

        result = self.call(name, args)
        data = result.structured_content or {}
        if not (result.is_error and data.get("error") == "timeout"):
            return result
        check = urlsplit(str(data["check"]))  # RELAY/response?code=…&id=…
        relay = f"{check.scheme}://{check.netloc}{check.path.removesuffix('/response')}"
        body = answer(relay, parse_qs(check.query)["code"][0], str(data["requestId"]))
        if body.get("status") == "failed":
            return types.CallToolResult(content=[types.TextContent(text=json.dumps(body.get("error")))], is_error=True)
        return types.CallToolResult.model_validate(body["result"])

    def resources(self) -> list[Any]:
        """``resources/list``: the SDK's resources (``uri``, ``name``, ``mime_type``, ...)."""
        return list(self._run(self._client.list_resources()).resources)

    def capabilities(self) -> Any:
        """The server's capabilities as this client negotiated them (``resources.subscribe``, ``list_changed``)."""
        return self._client.server_capabilities

    def listen(self, uris: list[str], *, list_changed: bool = True) -> Listening:
        """``subscriptions/listen`` (the official client's ``Client.listen``): a stream of change events for
        ``uris`` (and the resource list), gathered in the background until ``Listening.close``."""
        return Listening(self, uris, list_changed)

    def resource_templates(self) -> list[Any]:
        return list(self._run(self._client.list_resource_templates()).resource_templates)

    def read(self, uri: str) -> list[Any]:
        """``resources/read``: the contents (``text`` or ``blob``, ``mime_type``); an MCPError when refused."""
        return list(self._run(self._client.read_resource(uri)).contents)

    def prompts(self) -> list[Any]:
        return list(self._run(self._client.list_prompts()).prompts)

    def prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        """``prompts/get``: the SDK's result (``description``, ``messages``)."""
        return self._run(self._client.get_prompt(name, arguments))

    def complete(self, ref: Any, argument: str, value: str = "", context: dict[str, str] | None = None) -> list[str]:
        """``completion/complete`` for a prompt (``ref`` its name) or a resource template (``ref`` its URI
        template, ``codap://…``): the values offered."""
        import mcp_types as types

        reference: Any = (
            types.ResourceTemplateReference(uri=ref) if ref.startswith("codap://") else types.PromptReference(name=ref)
        )
        done = self._run(self._client.complete(reference, {"name": argument, "value": value}, context))
        return list(done.completion.values)


class Listening:
    """One open ``subscriptions/listen`` stream of an McpClient: the events it brought, in order, as
    ``("updated", uri)`` and ``("list_changed", "")``."""

    def __init__(self, client: McpClient, uris: list[str], list_changed: bool) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._client = client
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None

        async def hold() -> None:
            from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated

            self._stop = asyncio.Event()
            async with client._client.listen(
                resources_list_changed=list_changed, resource_subscriptions=uris
            ) as subscription:
                ready.set_result(None)

                async def gather() -> None:
                    async for event in subscription:
                        with self._lock:
                            if isinstance(event, ResourceUpdated):
                                self.events.append(("updated", event.uri))
                            elif isinstance(event, ResourcesListChanged):
                                self.events.append(("list_changed", ""))

                task = asyncio.ensure_future(gather())
                await self._stop.wait()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

        self._held = asyncio.run_coroutine_threadsafe(hold(), client._loop)
        ready.result(client.timeout)

    def wait_for(self, event: tuple[str, str], *, after: int = 0, timeout: float = 20) -> int:
        """Wait until ``event`` arrived at or after index ``after``; returns the index past it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for i in range(after, len(self.events)):
                    if self.events[i] == event:
                        return i + 1
            time.sleep(0.05)
        raise AssertionError(f"no {event} within {timeout} s; events: {self.events[after:]}")

    def settled(self, quiet: float = 1.5, timeout: float = 20) -> int:
        """Wait until no event came for ``quiet`` s (the plugin sends a burst's changes at most every 0.5 s), so an
        event after this is the answer to what the test does next; returns how many events came so far."""
        deadline = time.monotonic() + timeout
        count, since = len(self.seen()), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = len(self.seen())
            if now != count:
                count, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return count
        raise AssertionError(f"events kept coming for {timeout} s: {self.seen()}")

    def seen(self, after: int = 0) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.events[after:])

    def close(self) -> None:
        if self._stop is not None:
            self._client._loop.call_soon_threadsafe(self._stop.set)
        self._held.result(self._client.timeout)
