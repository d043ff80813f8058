"""``codap-relay mcp-stdio --url https://…/mcp/CODE``: a local stdio MCP server that forwards to a relay.

For MCP clients that only launch local commands. ``tools/list`` and ``tools/call`` are forwarded to the remote
endpoint, one stateless 2026-07-28 exchange each over a shared HTTP client; the remote's errors (an expired code,
a tool error) reach the local client unchanged. Nothing is written to stdout except MCP messages.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..extras import missing_extra
from . import options


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "mcp-stdio",
        help="stdio MCP server forwarding to a relay's MCP endpoint",
        description="Serve MCP on stdin/stdout and forward every tool call to the relay's MCP endpoint.",
    )
    p.add_argument(
        "--url", required=True, type=options.http_url, help="the relay's MCP URL with the code: https://…/mcp/CODE"
    )
    p.add_argument(
        "--code",
        type=options.pairing_code,
        help="send the pairing code as Authorization: Bearer instead (with --url …/mcp)",
    )
    p.add_argument(
        "--timeout", type=options.positive_seconds, default=60.0, help="seconds to wait for the relay per call"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    missing = missing_extra("mcp", "codap-relay mcp-stdio")
    if missing is not None:
        print(f"codap-relay: {missing}", file=sys.stderr)
        return 2
    import anyio

    from ..mcp.bridge import serve_stdio

    headers = {"Authorization": f"Bearer {args.code}"} if args.code else {}
    try:
        anyio.run(serve_stdio, args.url, headers, args.timeout)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the client sees the process end; stderr tells the user why
        print(f"codap-relay mcp-stdio: {exc}", file=sys.stderr)
        return 1
    return 0
