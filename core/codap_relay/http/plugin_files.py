"""The plugin page's files as the relay serves them: the build in plugin/dist/ (scripts/build-plugin), whose
scripts and styles are named by a hash of their content. A browser keeps those for good and asks again only for
the page, which names the current ones: a tab that opens the plugin again loads one small file, and a new
release reaches it at once."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

PLUGIN_DIST = Path(__file__).resolve().parent.parent / "plugin" / "dist"
HASHED_NAME = re.compile(r"^[a-z]+-[0-9a-f]{12}\.(?:js|css)$")
IMMUTABLE = "public, max-age=31536000, immutable"
# The page: kept, but checked with the relay (ETag) before each use, so that it never names files of an old build.
REVALIDATE = "no-cache"


def cache_control(path: str) -> str:
    """What a browser (and a CDN before it) may keep of the file at ``path`` under /plugin/."""
    return IMMUTABLE if HASHED_NAME.match(path) else REVALIDATE


class PluginFiles(StaticFiles):
    def __init__(self, directory: Path = PLUGIN_DIST) -> None:
        super().__init__(directory=directory, html=True)

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers["cache-control"] = cache_control(path)
        return response
