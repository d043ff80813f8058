"""Server-sent event framing (the WHATWG EventSource wire format)."""

from __future__ import annotations

import json

from ..relay import StreamEvent


def encode(event: StreamEvent) -> bytes:
    lines: list[str] = []
    if event.retry_ms is not None:
        lines.append(f"retry: {event.retry_ms}")
    if event.event is not None:
        if event.id is not None:
            lines.append(f"id: {event.id}")
        lines.append(f"event: {event.event}")
        payload = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
        # JSON escapes newlines inside strings, but split anyway: a raw CR or LF would end the field early.
        lines.extend(f"data: {part}" for part in payload.splitlines() or [""])
    return ("\n".join(lines) + "\n\n").encode()
