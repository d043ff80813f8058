"""``codap-relay call``: run one CODAP tool through a relay from the command line and print the result.

Exit status: 0 done, 1 CODAP or the relay reported an error, 2 bad usage, 3 still pending when the wait ran out.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..jsonvalues import dumps
from . import options

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PENDING = 0, 1, 2, 3


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "call",
        help="call one CODAP tool through a relay and print its result",
        description="Queue a tool request for the CODAP session with this pairing code, wait for the answer, "
        "print the result as JSON. Use the tool name `tools` to list the session's tools.",
    )
    p.add_argument(
        "--url",
        type=options.http_url,
        default=os.environ.get("CODAP_RELAY_URL"),
        help="relay base URL (env CODAP_RELAY_URL)",
    )
    p.add_argument(
        "--code",
        type=options.pairing_code,
        default=os.environ.get("CODAP_RELAY_CODE"),
        help="pairing code (env CODAP_RELAY_CODE)",
    )
    p.add_argument("--wait", type=options.seconds, default=25.0, help="seconds to wait for CODAP's answer (default 25)")
    p.add_argument(
        "--id",
        dest="request_id",
        type=options.request_id,
        help="your own request id: resending the same id never runs twice",
    )
    p.add_argument("tool", type=options.tool_name, help="tool name, e.g. get_codap_datasets (or `tools` to list them)")
    p.add_argument(
        "args", nargs="?", type=options.json_object, default="{}", help="tool arguments as a JSON object (default {})"
    )
    p.set_defaults(run=run)


def _print(value: Any) -> None:
    print(value if isinstance(value, str) else dumps(value, indent=2, ensure_ascii=False))


def run(args: argparse.Namespace) -> int:
    from ..client import RelayClient, RelayClientError

    if not args.url or not args.code:
        print(
            "codap-relay call: --url and --code are required (or CODAP_RELAY_URL / CODAP_RELAY_CODE)", file=sys.stderr
        )
        return EXIT_USAGE
    tool_args: dict[str, Any] = args.args  # options.json_object parsed it
    import httpx

    try:
        with RelayClient(args.url, args.code) as client:
            if args.tool == "tools":
                _print(client.tools())
                return EXIT_OK
            result = client.call(args.tool, tool_args, wait=args.wait, request_id=args.request_id)
    except RelayClientError as exc:
        print(f"codap-relay call: {exc.status} {exc.error}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except httpx.HTTPError as exc:
        print(f"codap-relay call: cannot reach the relay at {args.url}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not result.done:
        print(
            f"codap-relay call: CODAP has not answered request {result.id} yet ({result.status}); it may still run. "
            f"Check with: codap-relay call … --id {result.id} {args.tool} '{args.args}' (same id and arguments), "
            f"or GET {args.url.rstrip('/')}/response?code=…&id={result.id}",
            file=sys.stderr,
        )
        return EXIT_PENDING
    if not result.ok:
        message = (result.error or {}).get("message", "no message")
        print(f"codap-relay call: CODAP could not run {args.tool}: {message}", file=sys.stderr)
        return EXIT_ERROR
    _print(result.result)
    return EXIT_OK
