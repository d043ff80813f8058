"""Lambda function: the authorization server of ``/mcp`` (http/oauth/): discovery (/.well-known/…), /register,
/authorize, the consent page (/oauth/consent), /token, /revoke, and the plugin's connected apps
(/api/sessions/{code}/grants).

A function of its own rather than a route group of the MCP function: only it deletes auth items (a code or a
refresh token is taken, a grant revoked), so the MCP function's role, which every tool call runs under, never
gets DeleteItem, and a burst of sign-ins never takes the tool calls' concurrency or throttles.
"""

from relay_lambda import build

runtime = build(["oauth"])
handler = runtime.handler
