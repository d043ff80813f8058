"""Build the Starlette app: the local server mounts every group, each Lambda handler only its own."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import RelayError
from ..extras import missing_extra
from ..relay import Relay
from .context import allowed_origins
from .errors import error_response, http_error_handler, internal_error_handler, relay_error_handler
from .guards import HostAndFrameGuard
from .llms import routes as llms_routes
from .middleware import CorrelationAndAccessLog
from .plugin_files import PLUGIN_DIST, PluginFiles
from .resources import routes as resource_routes
from .routes import GROUPS

log = logging.getLogger("codap_relay")

MCP_PATHS = ("/mcp", "/mcp/{code}")


def plugin_routes() -> list[BaseRoute]:
    if not (PLUGIN_DIST / "index.html").exists():
        return []
    return [Mount("/plugin", app=PluginFiles(), name="plugin")]


def mcp_routes(*, long_lived: bool = False) -> list[BaseRoute]:
    """The MCP endpoint, imported only where it is mounted (the SDK costs every other function's cold start).
    Without the MCP extra the paths still exist and say how to get it, rather than answering a bare 404.
    ``long_lived``: one process that outlives each request serves it, so it offers subscriptions."""
    missing = missing_extra("mcp", "The MCP endpoint")
    if missing is not None:
        log.warning("%s It answers 501 until then.", missing)
        return [Route(path, _extra_missing(missing), methods=["POST"]) for path in MCP_PATHS]
    from .mcp_endpoint import routes as mcp_endpoint_routes

    return mcp_endpoint_routes(subscriptions=long_lived)


def oauth_routes() -> list[BaseRoute]:
    """The authorization server of ``/mcp`` (discovery, registration, consent, tokens) and the plugin's list of
    connected apps: a group of its own, so a Lambda function of its own serves them (template.yaml, OAuthFunction)."""
    missing = missing_extra("mcp", "The OAuth routes of /mcp")
    if missing is not None:
        log.warning("%s They are not served until then.", missing)
        return []
    from .oauth import routes as oauth_endpoint_routes

    return oauth_endpoint_routes()


def _extra_missing(message: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return error_response(request, 501, "extra_not_installed", message)

    return endpoint


# Every route group; a Lambda function mounts only its own. The callables run only for the groups mounted.
LAZY_GROUPS: dict[str, Callable[[], list[BaseRoute]]] = {
    "plugin": plugin_routes,
    "mcp": mcp_routes,
    "oauth": oauth_routes,
    "llms": llms_routes,
    "resources": resource_routes,
}
ALL_GROUPS = (*GROUPS, *LAZY_GROUPS)


def build_app(
    relay: Relay,
    groups: Iterable[str] | None = None,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    long_lived: bool | None = None,
) -> Starlette:
    """``long_lived`` (default: every group in one process, as ``codap-relay serve`` runs it) adds what needs a
    process that outlives its requests: MCP subscriptions and the plugin's change notes they watch. A Lambda
    function mounts its own groups and is never long-lived."""
    long_lived = groups is None if long_lived is None else long_lived
    chosen = [g for g in ALL_GROUPS if long_lived or g != "changes"] if groups is None else list(groups)
    routes: list[BaseRoute] = []
    for name in chosen:
        if name == "mcp":
            routes.extend(mcp_routes(long_lived=long_lived))
        elif name in GROUPS:
            routes.extend(GROUPS[name])
        elif name in LAZY_GROUPS:
            routes.extend(LAZY_GROUPS[name]())
        else:
            raise ValueError(f"unknown route group {name!r}; known: {', '.join(ALL_GROUPS)}")
    if relay.settings.codap_dir is not None and "plugin" in chosen:
        routes.append(Mount("/codap", app=StaticFiles(directory=relay.settings.codap_dir, html=True), name="codap"))
    routes.extend(extra_routes)
    origins = allowed_origins(relay.settings)
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(CorrelationAndAccessLog, hint_key=relay.settings.log_hint_key.get_secret_value().encode()),
            Middleware(HostAndFrameGuard, settings=relay.settings),
            Middleware(
                CORSMiddleware,
                allow_origins=origins,
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Last-Event-ID",
                    "X-Correlation-Id",
                    "Mcp-Session-Id",
                    "Mcp-Protocol-Version",
                    "Mcp-Method",
                    "Mcp-Name",
                ],
                expose_headers=["X-Correlation-Id", "Retry-After", "Mcp-Session-Id"],
                # Browsers that still send Private Network Access preflights (public page -> this loopback or
                # LAN relay) need this answer; the origin must be allowed as for any other preflight.
                allow_private_network=True,
                max_age=600,
            ),
        ],
        exception_handlers={
            RelayError: relay_error_handler,
            HTTPException: http_error_handler,
            Exception: internal_error_handler,
        },
    )
    app.state.relay = relay
    app.state.long_lived = long_lived
    return app
