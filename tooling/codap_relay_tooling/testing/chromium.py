"""Debian's chromium for the browser tests and the benchmark: where it is and how it is started.

Two builds of the same Chromium (the same Blink, V8 and network stack, one Debian version):

- **the browser** (``chromium``), in its headless mode for the tests of what a person's Chrome itself does (its
  storage defaults, Local Network Access, a tab behind another, headed under Xvfb) and for the benchmark;
- **the headless shell** (``chromium-headless-shell``), the build Playwright itself runs for headless tests, without
  the browser's own windows and interface: the tests of the plugin and the tools in CODAP run there. A CODAP page
  (start, three pages, ten idle seconds) took 11.2 CPU-seconds in it against 19.2 in the browser here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import system_packages

CHROMIUM = "/usr/bin/chromium"
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
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


def _installed(path: str, name: str) -> str | None:
    """The binary at ``path``, else ``name`` on PATH, else None; waits first for apt if it is still installing."""
    system_packages.wait()
    if Path(path).exists():
        return path
    return shutil.which(name)


def chromium_path() -> str | None:
    """The chromium binary, or None when it is not installed (scripts/install-test-deps installs it; while it still
    does, this waits for it)."""
    return _installed(CHROMIUM, "chromium")


def headless_shell_path() -> str | None:
    """Chromium's headless shell, or None when it is not installed (as ``chromium_path``, it waits for apt)."""
    return _installed(HEADLESS_SHELL, "chromium-headless-shell")
