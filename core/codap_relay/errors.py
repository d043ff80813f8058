"""One tree of domain errors.

Every error carries a stable snake_case ``error`` code, a human message that says what was wrong and what
to do, and data fields for callers that need them. Entry points (HTTP, MCP) map the *class* to their own
status codes in one table each; nobody matches on message text.
"""

from __future__ import annotations

from typing import Any

# The data fields a client is shown with an error, under their wire names: the HTTP error body and MCP's error
# data both take them from here. Others (a rate limit's scope) are for the relay's own logs and metrics.
CLIENT_FIELDS = {
    "reason": "reason",
    "tool": "tool",
    "path": "path",
    "available": "available",
    "closest": "closest",
    "limit": "limit",
    "field": "field",
    "retry_after": "retryAfter",
    "request_id": "requestId",
}


def client_fields(exc: RelayError) -> dict[str, Any]:
    """The error's data fields a client may see, under their wire names."""
    return {wire: exc.data[key] for key, wire in CLIENT_FIELDS.items() if key in exc.data}


class RelayError(Exception):
    """Base of every error the core raises on purpose."""

    error = "relay_error"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


# --- bad input -------------------------------------------------------------------------------------------


class BadInput(RelayError):
    """The caller sent something malformed."""

    error = "invalid_request"


class NonFiniteNumber(BadInput):
    """A number JSON cannot hold (NaN, an infinity, or beyond a float's range such as ``1e999``); ``field`` names
    where it was."""

    error = "non_finite_number"


class ClientDocumentRefused(BadInput):
    """A client's metadata document (its client_id is a URL) could not be used; the message says why."""

    error = "invalid_client"


class InvalidCode(BadInput):
    error = "invalid_code"


class InvalidArguments(BadInput):
    """Tool arguments do not validate against the tool's inputSchema."""

    error = "invalid_arguments"

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        path: str,
        available: list[str] | None = None,
        closest: str | None = None,
        **data: Any,
    ) -> None:
        # For an unexpected argument: the names the tool takes there, and the one the wrong name most resembles.
        extra = {k: v for k, v in (("available", available), ("closest", closest)) if v is not None}
        super().__init__(message, tool=tool, path=path, **extra, **data)
        self.tool = tool
        self.path = path
        self.available = available
        self.closest = closest


class UnknownTool(BadInput):
    error = "unknown_tool"

    def __init__(self, message: str, *, tool: str, available: list[str]) -> None:
        super().__init__(message, tool=tool, available=available)
        self.tool = tool
        self.available = available


class InvalidManifest(BadInput):
    error = "invalid_manifest"


class InvalidResult(BadInput):
    """A plugin's result breaks the rules for what the relay hands on to LLMs (an image item, for one)."""

    error = "invalid_result"


class PayloadTooLarge(BadInput):
    error = "payload_too_large"

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message, limit=limit)
        self.limit = limit


# --- authentication --------------------------------------------------------------------------------------


class TokenMissing(RelayError):
    error = "token_required"


class TokenInvalid(RelayError):
    error = "token_invalid"


# --- state -----------------------------------------------------------------------------------------------


class SessionNotFound(RelayError):
    """Unknown, expired or ended session. The message tells the user to get a new code from the plugin."""

    error = "session_not_found"

    def __init__(self, message: str, *, reason: str = "unknown") -> None:
        super().__init__(message, reason=reason)
        self.reason = reason


class RequestNotFound(RelayError):
    error = "request_not_found"

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message, request_id=request_id)
        self.request_id = request_id


class RequestExpired(RequestNotFound):
    """The request was never answered and its time ran out: it will never run."""

    error = "request_expired"


class DuplicateRequestId(RelayError):
    error = "duplicate_request_id"

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message, request_id=request_id)
        self.request_id = request_id


class AlreadyAnswered(RelayError):
    error = "already_answered"

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message, request_id=request_id)
        self.request_id = request_id


class NotAttached(RelayError):
    """A push connection sent a message for a session it does not (or no longer) deliver for: it must attach."""

    error = "not_attached"


class Superseded(NotAttached):
    """The session is delivered to another consumer now (a newer tab or connection took over)."""

    error = "superseded"


class CodeCollision(RelayError):
    """A store refused a new session because the code exists. The service retries with a new code."""

    error = "code_collision"


# --- capacity --------------------------------------------------------------------------------------------


class RateLimited(RelayError):
    error = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, scope: str) -> None:
        super().__init__(message, retry_after=retry_after, scope=scope)
        self.retry_after = retry_after
        self.scope = scope


class PendingLimit(RateLimited):
    """A session holds as many unanswered requests (or bytes of them) as it may: it takes more once its plugin has
    answered some. ``limit`` is the number (requests or bytes) that was reached."""

    error = "too_many_pending"

    def __init__(self, message: str, *, retry_after: int, scope: str, limit: int) -> None:
        super().__init__(message, retry_after=retry_after, scope=scope)
        self.data["limit"] = limit
        self.limit = limit


class ByteBudgetExceeded(RateLimited):
    """One client address queued as many bytes of requests as it may in this window (across its sessions)."""

    error = "request_bytes_exceeded"

    def __init__(self, message: str, *, retry_after: int, scope: str, limit: int) -> None:
        super().__init__(message, retry_after=retry_after, scope=scope)
        self.data["limit"] = limit
        self.limit = limit


class StoreUnavailable(RelayError):
    """The store failed or throttled; nothing was half-written. Safe to retry after ``retry_after`` seconds."""

    error = "store_unavailable"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after
