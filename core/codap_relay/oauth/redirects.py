"""Where an authorization may send the person's browser back to: redirect URIs by policy.

A client registers its redirect URIs (or lists them in its metadata document); the relay takes only
- ``https`` to any host,
- plain ``http`` to this computer (127.0.0.0/8, [::1] or localhost): a native app's loopback listener, whose
  port is not compared, since the app listens wherever a port is free when it signs in (RFC 8252 7.3),
- an app's own scheme (``cursor://…``, ``com.example.app:/cb``; RFC 8252 7.1), never one a browser runs or shows
  itself (``javascript:``, ``data:``, ``file:``, ``blob:``, ``about:`` …) or that is no app's (``ftp:``, ``ws:``,
  ``mailto:`` …);
with no fragment and no user name or password. A URI the policy refuses is never redirected to, errors included:
``RelayClient`` checks it whenever the SDK asks, so a client kept from before the policy redirects nowhere.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl

MAX_URI_CHARS = 512
BROWSER_SCHEMES = frozenset(
    {
        "javascript", "data", "file", "blob", "about", "vbscript", "filesystem", "view-source", "jar", "resource",
        "chrome", "chrome-extension", "moz-extension", "intent", "ftp", "ws", "wss", "mailto", "tel", "sms",
    }
)  # fmt: skip
SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")


def _loopback_host(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI, or None when it may."""
    if len(uri) > MAX_URI_CHARS:
        return f"a redirect URI is at most {MAX_URI_CHARS} characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return "not a URI"
    scheme = parts.scheme.lower()
    if not scheme or not SCHEME_RE.match(scheme):
        return "a redirect URI must be absolute"
    if "#" in uri:
        return "a redirect URI has no fragment"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI has no user name or password"
    if scheme == "https":
        return None if host else "an https redirect URI needs a host"
    if scheme == "http":
        return None if _loopback_host(host) else "plain http goes only to this computer (127.0.0.1, [::1], localhost)"
    if scheme in BROWSER_SCHEMES:
        return f"{scheme}: is not an app's own scheme"
    return None


def is_loopback_http(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme.lower() == "http" and _loopback_host(parts.hostname)


def _without_port(uri: str) -> tuple[str, str | None, str, str]:
    parts = urlsplit(uri)
    return parts.scheme.lower(), parts.hostname, parts.path or "/", parts.query


def matches(given: str, registered: str) -> bool:
    """``given`` is ``registered`` exactly, or both are loopback http and differ only in the port."""
    if given == registered:
        return True
    return (
        is_loopback_http(given) and is_loopback_http(registered) and _without_port(given) == _without_port(registered)
    )


class RelayClient(OAuthClientInformationFull):
    """A client as the SDK's handlers check it, with the relay's redirect rules: the policy, then an exact match
    (a loopback one on any port)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        registered = [str(u) for u in self.redirect_uris or []]
        if redirect_uri is None:
            if len(registered) != 1:
                raise InvalidRedirectUriError(
                    "redirect_uri must be specified unless the client has exactly one registered URI"
                )
            redirect_uri = AnyUrl(registered[0])
        given = str(redirect_uri)
        problem = redirect_problem(given)
        if problem is not None:
            raise InvalidRedirectUriError(f"Redirect URI refused: {problem}.")
        if not any(matches(given, r) for r in registered):
            raise InvalidRedirectUriError(f"Redirect URI '{given}' not registered for client")
        return redirect_uri
