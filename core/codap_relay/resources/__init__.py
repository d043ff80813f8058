"""The open CODAP document as read-only resources, read live through the plugin.

Each read queues a call of one of the plugin's read-only tools (status, datasets, export, graph image) and waits
for CODAP's answer, as ``tools/call`` does: the relay keeps nothing of the document. Transport-free: the MCP
endpoint (mcp/server.py through mcp/resources.py) and the HTTP routes (``GET /resources``, ``…/read``) use it.

URIs (names are URL-encoded):

- ``codap://datasets``: every dataset with its collections, attribute count and case count (JSON).
- ``codap://components``: every component of the document (JSON).
- ``codap://activity``: the session's calls of tools that change the document, each with what it did (JSON; read
  from the relay, not the plugin).
- ``codap://datasets/{name}``: one dataset's collections, attributes (type, unit, formula...), example cases.
- ``codap://datasets/{name}/cases``: every case as CSV; over ``PAGE_BYTES`` it comes in pages
  (``…/cases?page=2``), each saying on its first line which page it is, how many there are and the next one.
- ``codap://graphs/{name}/image``: the graph as CODAP draws it (PNG).

The parts: contents.py (what a read answers, and its errors), uris.py (how a resource is named), reader.py (one
read-only tool call through the plugin, and the document's names), datasets.py (a dataset, its attributes and its
cases in pages), document.py (``DocumentReader``: resources/list, the templates, reading any URI, the activity and
the graphs' pictures).
"""

from __future__ import annotations

from .contents import Contents, ResourceError, ResourceInfo
from .datasets import PAGE_BYTES, paginate
from .document import TEMPLATES, DocumentReader
from .uris import dataset_uri, graph_uri, page_uri

__all__ = [
    "PAGE_BYTES",
    "TEMPLATES",
    "Contents",
    "DocumentReader",
    "ResourceError",
    "ResourceInfo",
    "dataset_uri",
    "graph_uri",
    "page_uri",
    "paginate",
]
