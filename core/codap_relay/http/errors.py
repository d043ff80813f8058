"""Domain error -> HTTP status, in one table. The body always says what was wrong and what to do."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from .. import errors as e

# Most specific first: the first class in this table that matches the error decides the status.
STATUS: list[tuple[type[e.RelayError], int]] = [
    (e.PayloadTooLarge, 413),
    (e.BadInput, 400),
    (e.TokenMissing, 401),
    (e.TokenInvalid, 403),
    (e.SessionNotFound, 404),
    (e.RequestExpired, 404),
    (e.RequestNotFound, 404),
    (e.DuplicateRequestId, 409),
    (e.AlreadyAnswered, 409),
    (e.RateLimited, 429),
    (e.StoreUnavailable, 503),
    (e.CodeCollision, 503),
]


HOST_NOT_ALLOWED = (
    "This relay does not answer to that host name. Use the relay's public URL (its ALLOWED_HOSTS setting)."
)


def status_for(exc: e.RelayError) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def correlation_id(request: Request) -> str:
    return str(getattr(request.state, "correlation_id", "") or "")


def error_response(
    request: Request, status: int, error: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body = {"error": error, "message": message, "code": status, "correlationId": correlation_id(request), **extra}
    return JSONResponse(body, status_code=status, headers=headers)


async def relay_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, e.RelayError)
    status = status_for(exc)
    headers = {}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    request.state.error_code = exc.error
    return error_response(request, status, exc.error, exc.message, headers=headers, **e.client_fields(exc))


HTTP_ERRORS = {
    404: ("not_found", "No such endpoint. See GET /openapi.json for the API."),
    405: ("method_not_allowed", "This endpoint does not accept that method. See GET /openapi.json."),
}


async def http_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    error, message = HTTP_ERRORS.get(exc.status_code, ("http_error", str(exc.detail)))
    return error_response(request, exc.status_code, error, message, headers=dict(exc.headers or {}))


async def internal_error_handler(request: Request, exc: Exception) -> JSONResponse:
    return error_response(
        request,
        500,
        "internal_error",
        "The relay hit an unexpected error; nothing is lost that was acknowledged. "
        "Retry, and report the correlationId if it persists.",
    )
