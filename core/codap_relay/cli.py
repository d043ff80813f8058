"""The ``codap-relay`` command. Each subcommand lives in codap_relay.commands.<name> with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Subcommand modules (commands/table.py is `codap-relay dynamodb`: the table, not the store).
# Each imports its optional extras only when run, and says so when one is missing.
COMMANDS = ("serve", "local_api", "call", "mcp_stdio", "table", "doctor")


def build_parser() -> argparse.ArgumentParser:
    from .commands.options import Parser

    parser: argparse.ArgumentParser = Parser(prog="codap-relay", description="Relay between LLMs and CODAP.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"codap_relay.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
