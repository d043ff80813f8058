"""A small async SSE client over httpx, used by the fake plugin, the benchmarks and the tests.

It parses the WHATWG EventSource wire format: fields ``event``, ``data`` (multi-line joined with \\n), ``id``
and ``retry``; comments (``:``) are ignored; an event is dispatched on a blank line.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        return json.loads(self.data) if self.data else None


class SSEDecoder:
    """Feed it lines (without their end-of-line); it returns an Event when one is complete."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None
        self._seen_field = False

    def feed(self, line: str) -> Event | None:
        if line == "":
            if not self._seen_field:
                return None
            event = Event(self._event or "message", "\n".join(self._data), self._id, self._retry)
            self._event, self._data, self._retry, self._seen_field = "", [], None, False
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        self._seen_field = True
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None


async def iter_events(response: httpx.Response) -> AsyncIterator[Event]:
    decoder = SSEDecoder()
    async for line in response.aiter_lines():
        event = decoder.feed(line.rstrip("\r"))
        if event is not None:
            yield event
