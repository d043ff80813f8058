"""``GET /llms.txt``: plain-text instructions for an LLM that has only a generic HTTP tool.

With ``?code=`` the text carries the session's real URLs, ready to call; without it, a ``CODE`` placeholder.
The code is only formatted into the text, never looked up, so this page reveals nothing about sessions.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from ..catalog import tools_text
from ..codes import normalise_code
from ..prompts import prompts_text
from .context import public_base, relay_of

TEMPLATE = """\
# CODAP relay

> This relay lets you work in CODAP, the data analysis tool open in the user's browser, with plain HTTP
> calls. The user's codap-relay plugin in CODAP shows an 8-character pairing code; every call carries it.
> {code_line}

All bodies are JSON. Errors come back as {{"error": "<code>", "message": "<what was wrong and what to do>"}}.

## 1. Read the tools

GET {base}/metadata?code={code}

Answer: {{"version": "...", "tools": [{{"name", "description", "inputSchema"}}]}}. The inputSchema is JSON
Schema; send arguments that match it. The codap-relay plugin offers these tools (a typed tool does in one call
what raw codap_api requests take several for: prefer them):

{tools}

## 2. Run a tool and wait for CODAP's answer

POST {base}/request?wait={wait}
Content-Type: application/json

{{"code": "{code}", "tool": "get_codap_datasets", "args": {{}}}}

- 200 with {{"id", "status": "completed", "result": ...}}: done.
- 200 with {{"id", "status": "failed", "error": {{"message": ...}}}}: CODAP refused; read the message.
- 202 with {{"id", "status": "queued" or "delivered"}}: CODAP has not answered within the wait. Go to step 3.
- 400 invalid_arguments: the message names the field to fix.

You may add your own "id" (letters, digits, - and _): sending the same id and content again never runs the
tool twice, so it is the safe way to retry.

## 3. Read a result later

GET {base}/response?code={code}&id=REQUEST_ID&wait={wait}

200 when done (as above), 202 while CODAP is still working. Creating datasets and adding cases are not
idempotent: read the response (or list the datasets) before you send a create or add again.

## Results, and pictures of graphs

A completed result is {{"content": [...], "structuredContent": {{...}}}}: "content" starts with a text item,
{{"type": "text", "text": "..."}}, a summary to read; "structuredContent" holds the same as data.

To see a graph, call get_codap_graph_image with {{"graph": "<its name, title or id>"}} (get_codap_status lists
the graphs), or create_codap_graph with "includeImage": true. The picture comes as a second content item:
{{"type": "image", "mimeType": "image/png", "data": "<base64>"}}. Decode "data" from base64 to get the PNG (or
JPEG) file. Large pictures are scaled down (at most "maxSize" pixels on the longer side) or re-encoded to stay
small; the text says when that happened.

Saving the document is the person's: CODAP's File menu (Save, or Download to a file). No tool and no request of
CODAP's plugin API saves it; tell the user when their work should be saved.

## The document as resources (read-only)

GET {base}/resources?code={code}

Answer: {{"resources": [{{"uri", "name", "description", "mimeType"}}], "resourceTemplates": [...], "prompts": [...]}}:
the open document's datasets, their cases and its graphs, read live from CODAP.

GET {base}/resources/read?code={code}&uri=codap://datasets

Answer: {{"contents": [{{"uri", "mimeType", "text"}}]}} (a picture has "blob", base64, instead of "text"). URL-encode
the uri. codap://datasets (every dataset), codap://components (what is on screen), codap://datasets/NAME (its
attributes: type, unit, formula, description, precision; a few example cases), codap://datasets/NAME/cases (CSV:
when large, in pages whose first line says "page N of M" and gives the next uri), codap://graphs/NAME/image (PNG).
404 names what exists; 503 not_connected means the plugin is not open.

## Class routines (MCP prompts)

An MCP client offers these as prompts; over HTTP, follow the same steps yourself:

{prompts}

## Session status

GET {base}/api/sessions/{code}

"connected": false means the plugin is not open; ask the user to open CODAP with the codap-relay plugin.
404 session_not_found means the code is unknown or expired; ask the user for the new code the plugin shows.
429 means too many calls: wait the Retry-After seconds.

## Other ways in

- MCP (Streamable HTTP): {base}/mcp/{code}
- OpenAPI description of this API: {base}/openapi.json
"""


async def llms_txt(request: Request) -> Response:
    settings = relay_of(request).settings
    base = public_base(request)
    raw = request.query_params.get("code")
    if raw:
        code = normalise_code(raw)
        code_line = f"This text is for the session with pairing code {code}."
    else:
        code = "CODE"
        code_line = "Replace CODE below with the pairing code the user gives you (or fetch /llms.txt?code=CODE)."
    wait = f"{settings.max_wait_seconds:g}"
    text = TEMPLATE.format(
        base=base, code=code, code_line=code_line, wait=wait, tools=tools_text(), prompts=prompts_text()
    )
    return PlainTextResponse(text, headers={"Cache-Control": "no-store"})


def routes() -> list[BaseRoute]:
    return [Route("/llms.txt", llms_txt, methods=["GET"])]
