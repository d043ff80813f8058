"""Optional extras (``pip install 'codap-relay[NAME]'``): whether one is installed, and what to say if not.

Asked by package presence, not by catching ImportError, so a real import bug in the relay's own code still fails
loudly instead of silently dropping a route group or a command.
"""

from __future__ import annotations

from importlib.util import find_spec

# Each extra and a top-level package it installs.
EXTRA_PACKAGES = {"mcp": "mcp", "aws": "boto3"}


def missing_extra(extra: str, needed_for: str) -> str | None:
    """None when the extra is installed; else a sentence saying what needs it and how to install it."""
    if find_spec(EXTRA_PACKAGES[extra]) is not None:
        return None
    return f"{needed_for} needs the {extra!r} extra, which is not installed: pip install 'codap-relay[{extra}]'."
