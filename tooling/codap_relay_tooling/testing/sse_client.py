"""A small async SSE client over httpx, used by the fake plugin, the benchmarks and the tests.

It parses the WHATWG EventSource wire format: fields ``event``, ``data`` (multi-line joined with \\n), ``id``
and ``retry``; comments (``:``) are ignored; an event is dispatched on a blank line.
"""

from __future__ import annotations

import codecs
import json
import re
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


_LINE_END = re.compile(r"\r\n|\r|\n")


async def iter_lines(response: httpx.Response) -> AsyncIterator[str]:
    """Lines as EventSource splits them: at CRLF, CR or LF only. (httpx's aiter_lines also splits at U+2028,
    U+0085 and others, which JSON payloads carry raw.)"""
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""
    async for chunk in response.aiter_bytes():
        buffer += text.decode(chunk)
        start = 0
        for match in _LINE_END.finditer(buffer):
            if match.group() == "\r" and match.end() == len(buffer):
                break  # maybe the first half of a CRLF split across chunks
            yield buffer[start : match.start()]
            start = match.end()
        buffer = buffer[start:]
    buffer += text.decode(b"", final=True)
    if buffer.endswith("\r"):
        yield buffer[:-1]


async def iter_events(response: httpx.Response) -> AsyncIterator[Event]:
    decoder = SSEDecoder()
    async for line in iter_lines(response):
        event = decoder.feed(line)
        if event is not None:
            yield event
