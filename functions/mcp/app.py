"""Lambda function: POST /mcp and POST /mcp/{code}, the MCP endpoint (Streamable HTTP, stateless, JSON).

Mangum runs with ``lifespan="off"`` (in relay_lambda.build): the MCP route enters a fresh stateless session manager
per request, so warm invocations never depend on an ASGI lifespan or on a manager that may be run only once.
"""

from relay_lambda import build

runtime = build(["mcp", "resources"])  # and GET /resources, /resources/read
handler = runtime.handler
