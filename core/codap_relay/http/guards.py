"""Checks on every request before any route runs, and the plugin page's Content-Security-Policy.

- Host: with ALLOWED_HOSTS set (``codap-relay serve`` on loopback sets it), a request whose Host header names
  another host is answered 421, whatever the route: a DNS-rebinding page (evil.example resolving to 127.0.0.1)
  then reaches no route of a local relay, and no answer reflects its host name in a URL (the /plugin redirect,
  /llms.txt, /openapi.json, /). ``*`` (the default, a public relay reached by many names) turns the check off.
- The plugin's page and files (/plugin/…) carry a CSP: scripts and styles from the relay only (no inline
  script), and only FRAME_ANCESTORS (CODAP's origins) and the relay itself may show the page in a frame.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..settings import Settings
from .errors import HOST_NOT_ALLOWED, error_response

# Where the plugin's page may connect: its own relay; a relay on this computer (?relay= may name one, see
# page_url.js relayBaseFrom); any https address, because a tool imports CSV files from https URLs the user gives.
PLUGIN_CONNECT = "'self' https: http://127.0.0.1:* http://localhost:*"


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Whether a Host header names an allowed host: an entry with a port matches exactly, one without any port."""
    host = host.strip().lower()
    if not host:
        return False
    bare = host.rsplit(":", 1)[0] if host.rsplit("]", 1)[-1].count(":") == 1 else host
    for entry in allowed:
        entry = entry.strip().lower()
        if entry == "*" or entry == host:
            return True
        if ":" not in entry.rsplit("]", 1)[-1] and entry == bare:
            return True
    return False


def push_origin(settings: Settings) -> list[str]:
    """The push channel's WebSocket origin (wss://host), which the page connects to besides its relay."""
    if not settings.push_url:
        return []
    parts = urlsplit(settings.push_url)
    return [f"{parts.scheme}://{parts.netloc}"]


def plugin_csp(settings: Settings) -> str:
    ancestors = ["'self'", *settings.frame_ancestors]
    if settings.public_base_url:
        parts = urlsplit(settings.public_base_url)
        ancestors.append(f"{parts.scheme}://{parts.netloc}")
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data: blob:",
            f"connect-src {' '.join([PLUGIN_CONNECT, *push_origin(settings)])}",
            "base-uri 'none'",
            "form-action 'none'",
            f"frame-ancestors {' '.join(dict.fromkeys(ancestors))}",
        ]
    )


def _under(scope: Scope, prefix: str) -> bool:
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and path.startswith(root):
        path = path[len(root) :]
    return path == prefix or path.startswith(prefix + "/")


class HostAndFrameGuard:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.allowed = tuple(h for h in settings.allowed_hosts if h)
        self.check_host = "*" not in self.allowed
        self.csp = plugin_csp(settings).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.check_host:
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
            if not host_allowed(host, self.allowed):
                request = Request(scope, receive)
                request.state.error_code = "host_not_allowed"
                await error_response(request, 421, "host_not_allowed", HOST_NOT_ALLOWED)(scope, receive, send)
                return
        if not _under(scope, "/plugin"):
            await self.app(scope, receive, send)
            return

        async def send_with_csp(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"content-security-policy", self.csp))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_csp)
