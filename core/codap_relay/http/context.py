"""What every HTTP entry point reads from a request besides its body: the relay, the caller's code, token and
address, the origins browsers may call from, and the relay's public URL."""

from __future__ import annotations

from starlette.requests import Request

from ..relay import Relay
from ..settings import Settings


def relay_of(request: Request) -> Relay:
    relay: Relay = request.app.state.relay
    return relay


def client_ip(request: Request) -> str | None:
    if relay_of(request).settings.trust_proxy:
        forwarded = request.headers.get("x-forwarded-for")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.client.host if request.client else None


def public_base(request: Request) -> str:
    """The relay's public URL, for every URL it writes: PUBLIC_BASE_URL if set, else scheme, host and the
    public path prefix (ASGI root_path: the stage, or a custom domain's base path)."""
    return (relay_of(request).settings.public_base_url or str(request.base_url)).rstrip("/")


def authorization_bearer(request: Request) -> str | None:
    """The credential of an ``Authorization: Bearer …`` header, if there is one."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        return auth[7:].strip()
    return None


def bearer_token(request: Request) -> str | None:
    """The plugin's browser token: the Authorization header, or ``?token=`` (EventSource sends no headers)."""
    return authorization_bearer(request) or request.query_params.get("token") or None


def mcp_code(request: Request) -> str | None:
    """The pairing code of an MCP call: the ``/mcp/{code}`` path, else ``Authorization: Bearer <code>``."""
    code = request.path_params.get("code")
    if isinstance(code, str) and code.strip():
        return code
    return authorization_bearer(request)


def allowed_origins(settings: Settings) -> list[str]:
    """The browser origins that may call the relay: CORS_ORIGIN, plus the relay's own public origin."""
    origins = list(settings.cors_origin)
    if settings.public_base_url:
        origins.append(settings.public_base_url.rstrip("/"))
    return origins
