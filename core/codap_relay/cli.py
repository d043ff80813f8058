"""The ``codap-relay`` command. Each subcommand lives in codap_relay.commands.<name> with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Subcommand modules; one that cannot be imported (an optional extra is missing) is left out of --help.
COMMANDS = ("serve", "local_api", "call", "mcp_stdio", "dynamodb")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codap-relay", description="Relay between LLMs and CODAP.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"codap_relay.commands.{name}")
        except ImportError:
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
