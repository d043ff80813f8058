"""A typed Python client for the relay's LLM-side HTTP API, sync (``RelayClient``) and async (``AsyncRelayClient``).

Covers what an LLM agent does: read the tool manifest, queue a tool request (optionally waiting for the answer),
read a response, check the session. The request/parse logic is shared; only the I/O differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

# The server caps one ?wait= at 15 s (MAX_WAIT_SECONDS: what API Gateway's 29 s leaves after a cold start and
# retries); longer waits are several calls.
MAX_WAIT_PER_CALL = 15.0
TRANSPORT_SLACK = 10.0  # how much longer than ?wait= the HTTP read may take


class RelayClientError(Exception):
    """The relay refused a call. ``error`` is its stable code, ``message`` says what to do."""

    def __init__(self, status: int, error: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.body = body or {}

    @property
    def retry_after(self) -> int | None:
        value = self.body.get("retryAfter")
        return value if isinstance(value, int) else None


@dataclass(frozen=True)
class ToolResult:
    """A tool request as the relay reports it: still pending, or done with a result or CODAP's error."""

    id: str
    status: str  # queued | delivered | completed | failed
    result: Any = None
    error: dict[str, Any] | None = None
    timestamp: str | None = None

    @property
    def done(self) -> bool:
        return self.status in ("completed", "failed")

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True)
class SessionStatus:
    code: str
    ttl: int
    expires_at: str
    connected: bool
    last_seen: str | None
    pending: int


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: dict[str, Any] | None = None
    read_timeout: float | None = None


def _check(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400 or not isinstance(body, dict):
        info = body if isinstance(body, dict) else {}
        raise RelayClientError(
            response.status_code,
            str(info.get("error") or "http_error"),
            str(info.get("message") or response.text[:500] or response.reason_phrase),
            info,
        )
    return body


def _tool_result(body: dict[str, Any]) -> ToolResult:
    return ToolResult(
        id=str(body["id"]),
        status=str(body["status"]),
        result=body.get("result"),
        error=body.get("error"),
        timestamp=body.get("timestamp"),
    )


def _session_status(body: dict[str, Any]) -> SessionStatus:
    return SessionStatus(
        code=body["code"],
        ttl=int(body["ttl"]),
        expires_at=body["expiresAt"],
        connected=bool(body["connected"]),
        last_seen=body.get("lastSeen"),
        pending=int(body.get("pending", 0)),
    )


class _Calls:
    """The API as request descriptions; the sync and async clients only send them."""

    def __init__(self, code: str) -> None:
        self.code = code.strip().upper()

    def metadata(self) -> _Call:
        return _Call("GET", "/metadata", params={"code": self.code})

    def request(self, tool: str, args: dict[str, Any] | None, wait: float | None, request_id: str | None) -> _Call:
        body: dict[str, Any] = {"code": self.code, "tool": tool, "args": args or {}}
        if request_id is not None:
            body["id"] = request_id
        return _Call("POST", "/request", params=_wait(wait), json=body, read_timeout=_read_timeout(wait))

    def response(self, request_id: str, wait: float | None) -> _Call:
        params = {"code": self.code, "id": request_id, **(_wait(wait) or {})}
        return _Call("GET", "/response", params=params, read_timeout=_read_timeout(wait))

    def status(self) -> _Call:
        return _Call("GET", f"/api/sessions/{self.code}")


def _wait(wait: float | None) -> dict[str, Any] | None:
    return None if not wait else {"wait": f"{min(wait, MAX_WAIT_PER_CALL):g}"}


def _read_timeout(wait: float | None) -> float:
    return min(wait or 0, MAX_WAIT_PER_CALL) + TRANSPORT_SLACK


def _timeout(call: _Call, default: httpx.Timeout) -> httpx.Timeout:
    if call.read_timeout is None:
        return default
    return httpx.Timeout(default.connect, read=call.read_timeout, write=default.write, pool=default.pool)


class RelayClient:
    """Blocking client. ``base_url`` is the relay's root (e.g. https://relay.example.org), ``code`` the pairing code."""

    def __init__(self, base_url: str, code: str, *, http: httpx.Client | None = None, timeout: float = 15) -> None:
        self.calls = _Calls(code)
        self._timeout = httpx.Timeout(timeout)
        self._own = http is None
        self.http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=self._timeout)

    def _send(self, call: _Call) -> dict[str, Any]:
        response = self.http.request(
            call.method, call.path, params=call.params, json=call.json, timeout=_timeout(call, self._timeout)
        )
        return _check(response)

    def metadata(self) -> dict[str, Any]:
        return self._send(self.calls.metadata())

    def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self.metadata()["tools"]
        return tools

    def request(
        self, tool: str, args: dict[str, Any] | None = None, *, wait: float | None = None, request_id: str | None = None
    ) -> ToolResult:
        return _tool_result(self._send(self.calls.request(tool, args, wait, request_id)))

    def response(self, request_id: str, *, wait: float | None = None) -> ToolResult:
        return _tool_result(self._send(self.calls.response(request_id, wait)))

    def call(
        self, tool: str, args: dict[str, Any] | None = None, *, wait: float = 25, request_id: str | None = None
    ) -> ToolResult:
        """Queue and wait up to ``wait`` seconds in total (several server waits if it is above 15 s)."""
        deadline = time.monotonic() + wait
        result = self.request(tool, args, wait=wait, request_id=request_id)
        while not result.done and (remaining := deadline - time.monotonic()) > 0:
            result = self.response(result.id, wait=remaining)
        return result

    def status(self) -> SessionStatus:
        return _session_status(self._send(self.calls.status()))

    def close(self) -> None:
        if self._own:
            self.http.close()

    def __enter__(self) -> RelayClient:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncRelayClient:
    """The same API for asyncio/anyio code."""

    def __init__(self, base_url: str, code: str, *, http: httpx.AsyncClient | None = None, timeout: float = 15) -> None:
        self.calls = _Calls(code)
        self._timeout = httpx.Timeout(timeout)
        self._own = http is None
        self.http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=self._timeout)

    async def _send(self, call: _Call) -> dict[str, Any]:
        response = await self.http.request(
            call.method, call.path, params=call.params, json=call.json, timeout=_timeout(call, self._timeout)
        )
        return _check(response)

    async def metadata(self) -> dict[str, Any]:
        return await self._send(self.calls.metadata())

    async def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = (await self.metadata())["tools"]
        return tools

    async def request(
        self, tool: str, args: dict[str, Any] | None = None, *, wait: float | None = None, request_id: str | None = None
    ) -> ToolResult:
        return _tool_result(await self._send(self.calls.request(tool, args, wait, request_id)))

    async def response(self, request_id: str, *, wait: float | None = None) -> ToolResult:
        return _tool_result(await self._send(self.calls.response(request_id, wait)))

    async def call(
        self, tool: str, args: dict[str, Any] | None = None, *, wait: float = 25, request_id: str | None = None
    ) -> ToolResult:
        deadline = time.monotonic() + wait
        result = await self.request(tool, args, wait=wait, request_id=request_id)
        while not result.done and (remaining := deadline - time.monotonic()) > 0:
            result = await self.response(result.id, wait=remaining)
        return result

    async def status(self) -> SessionStatus:
        return _session_status(await self._send(self.calls.status()))

    async def aclose(self) -> None:
        if self._own:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncRelayClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
