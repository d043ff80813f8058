"""The local server: every route group, one store, one process."""

from __future__ import annotations

from starlette.applications import Starlette

from .http.app import build_app
from .relay import Relay
from .settings import Settings
from .store import open_store


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings.from_env()
    relay = Relay(settings, open_store(settings.relay_store))
    return build_app(relay)
