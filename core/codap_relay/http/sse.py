"""Server-sent event framing (the WHATWG EventSource wire format)."""

from __future__ import annotations

import json
import re

from ..relay import StreamEvent

_LINE_END = re.compile(r"\r\n|\r|\n")


def encode(event: StreamEvent) -> bytes:
    lines: list[str] = []
    if event.retry_ms is not None:
        lines.append(f"retry: {event.retry_ms}")
    if event.event is not None:
        if event.id is not None:
            lines.append(f"id: {event.id}")
        lines.append(f"event: {event.event}")
        payload = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
        # JSON escapes CR and LF inside strings, but split anyway: a raw one would end the field early. Split on
        # exactly what EventSource treats as a line end: str.splitlines() also breaks at U+2028, U+0085, ...,
        # which JSON leaves raw, and the browser would rejoin those pieces with "\n" into invalid JSON.
        lines.extend(f"data: {part}" for part in _LINE_END.split(payload))
    return ("\n".join(lines) + "\n\n").encode()
