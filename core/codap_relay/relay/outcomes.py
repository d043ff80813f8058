"""The response record of a request: the plugin's answer, or the error the relay stores in its place (the
request was cancelled, or its session ended, before it ran)."""

from __future__ import annotations

from typing import Any

from ..records import ResponseRecord, fingerprint


def new_response(
    code: str, request_id: str, now: float, ttl: float, *, result: Any = None, error: dict[str, Any] | None = None
) -> ResponseRecord:
    """``error``: the plugin's (or the relay's) error object; its ``code``, where a non-empty string, is the
    response's error code, else ``plugin_error``. The response is kept ``ttl`` seconds from ``now``."""
    body: dict[str, Any] = {"error": error} if error is not None else {"result": result}
    error_code = None
    if error is not None:
        raw = error.get("code")
        error_code = raw if isinstance(raw, str) and raw else "plugin_error"
    return ResponseRecord(
        code=code,
        id=request_id,
        status="failed" if error is not None else "completed",
        body=body,
        fingerprint=fingerprint(body),
        timestamp=now,
        expires_at=now + ttl,
        error_code=error_code,
    )
