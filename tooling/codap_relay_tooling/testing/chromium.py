"""Debian's chromium for the browser tests and the benchmark: where it is and how it is started."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import system_packages

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-gpu",
]


def chromium_path() -> str | None:
    """The chromium binary, or None when it is not installed (scripts/install-test-deps installs it; while it still
    does, this waits for it)."""
    system_packages.wait()
    if Path(CHROMIUM).exists():
        return CHROMIUM
    return shutil.which("chromium")
