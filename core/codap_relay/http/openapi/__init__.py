"""The relay's OpenAPI 3.1 document (``GET /openapi.json``), generated from the pydantic models in http/schemas.py.

document.py assembles it from its parts: sessions.py (the session's paths, most of them the plugin's), tool_calls.py
(the stream, requests and answers, the manifest), resources.py (the document's resources over HTTP), oauth.py (the
authorization server of ``/mcp``); parts.py holds what they share (references, parameters, error responses).
"""

from __future__ import annotations

from .document import document

__all__ = ["document"]
