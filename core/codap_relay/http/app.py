"""Build the Starlette app: the local server mounts every group, each Lambda handler only its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from ..errors import RelayError
from ..relay import Relay
from .errors import http_error_handler, internal_error_handler, relay_error_handler
from .middleware import CorrelationAndAccessLog
from .routes import GROUPS

PLUGIN_DIR = Path(__file__).resolve().parent.parent / "plugin"

# Optional groups contributed by other modules (MCP, llms.txt), registered lazily so that a handler
# which does not mount them never imports their dependencies.
EXTRA_GROUPS: dict[str, Callable[[], list[BaseRoute]]] = {}


def plugin_routes() -> list[BaseRoute]:
    if not (PLUGIN_DIR / "index.html").exists():
        return []
    return [Mount("/plugin", app=StaticFiles(directory=PLUGIN_DIR, html=True), name="plugin")]


def _mcp_routes() -> list[BaseRoute]:
    try:
        from ..mcp_http import routes  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # the MCP extra is not installed
        return []
    result: list[BaseRoute] = routes()
    return result


def _llms_routes() -> list[BaseRoute]:
    try:
        from ..llms import routes  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    result: list[BaseRoute] = routes()
    return result


EXTRA_GROUPS.update({"plugin": plugin_routes, "mcp": _mcp_routes, "llms": _llms_routes})
ALL_GROUPS = (*GROUPS, *EXTRA_GROUPS)


def build_app(
    relay: Relay, groups: Iterable[str] | None = None, *, extra_routes: Sequence[BaseRoute] = ()
) -> Starlette:
    chosen = list(ALL_GROUPS if groups is None else groups)
    routes: list[BaseRoute] = []
    for name in chosen:
        if name in GROUPS:
            routes.extend(GROUPS[name])
        elif name in EXTRA_GROUPS:
            routes.extend(EXTRA_GROUPS[name]())
        else:
            raise ValueError(f"unknown route group {name!r}; known: {', '.join(ALL_GROUPS)}")
    if relay.settings.codap_dir is not None and "plugin" in chosen:
        routes.append(Mount("/codap", app=StaticFiles(directory=relay.settings.codap_dir, html=True), name="codap"))
    routes.extend(extra_routes)
    origins = list(relay.settings.cors_origin)
    if relay.settings.public_base_url:
        origins.append(relay.settings.public_base_url.rstrip("/"))
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(CorrelationAndAccessLog),
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
    return app
