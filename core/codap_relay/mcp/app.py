"""The relay's MCP App (the ``io.modelcontextprotocol/ui`` extension): one ``ui://`` HTML resource that shows the
live CODAP document in the chat, linked from every tool that changes the document (``_meta.ui.resourceUri``).

The page is built ahead of time from mcpapp/ (scripts/build-mcp-app: ext-apps' App class, bundled and inlined) and
served as committed; the relay builds nothing at runtime. It reads everything through the host (``resources/read``
of codap://components, codap://activity, codap://graphs/ID/image), so it needs no network of its own: its CSP
declares no domain, which a host turns into ``connect-src 'none'`` and no outside scripts, images or frames.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

APP_MIME_TYPE = "text/html;profile=mcp-app"
APP_FILE = Path(__file__).resolve().parent / "app" / "document.html"
#: The page's name without its version: still read, for a host that kept it from before the versioned one.
APP_BASE_URI = "ui://codap/document"
#: The page's URI names its content (the first 12 hex digits of its SHA-256): a host may keep what it read under
#: that URI for good, since another page gets another URI. Reading it needs no session (the page holds no data).
APP_URI = f"{APP_BASE_URI}/{hashlib.sha256(APP_FILE.read_bytes()).hexdigest()[:12]}"
# Exactly what the page loads from outside its own HTML: nothing (its pictures are data: URLs of resources it read
# through the host). Empty lists, stated rather than omitted, so a host's default never widens it.
APP_CSP: dict[str, list[str]] = {"connectDomains": [], "resourceDomains": [], "frameDomains": []}
APP_RESOURCE_META: dict[str, Any] = {"ui": {"csp": APP_CSP, "prefersBorder": True}}
# The flat "ui/resourceUri" too, as ext-apps' own registerAppTool adds it, for hosts that still read only that key.
APP_TOOL_META: dict[str, Any] = {"ui": {"resourceUri": APP_URI}, "ui/resourceUri": APP_URI}


def is_app_uri(uri: object) -> bool:
    return uri in (APP_URI, APP_BASE_URI)


@cache
def app_html() -> str:
    return APP_FILE.read_text("utf-8")
