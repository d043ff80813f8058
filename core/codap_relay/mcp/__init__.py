"""The MCP protocol, one place: the server endpoint (server.py, with calls.py for the calls it can cancel), the
tools (tools.py), resources, prompts and completion (resources.py), ``subscriptions/listen`` (subscriptions.py)
and the stdio bridge for clients that only launch commands (bridge.py). Needs the ``mcp`` extra.

Inside this package ``import mcp`` still means the MCP SDK (imports are absolute), and the modules here import each
other as ``codap_relay.mcp.…``."""
