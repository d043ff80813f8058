"""Debian's packages the browser tests need (chromium, firefox-esr, webkit2gtk-driver, xvfb), while apt may still be
installing them.

On a fresh machine apt takes minutes over them. ``scripts/test`` therefore starts pytest without waiting for apt and
names, in ``$SYSTEM_PACKAGES_DONE``, the file apt's exit status will be written to. Until it exists the scheduler
hands out the files that need no browser (``needs_browsers``), and whatever looks for a browser (``chromium_path``,
``engines.missing``) first waits for it here. Without the variable (a plain pytest run) nothing waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

DONE = "SYSTEM_PACKAGES_DONE"
#: The files whose tests drive a browser or Xvfb (the bench's smoke test times the tools in real CODAP).
BROWSER_FILES = ("tests/e2e/", "tests/integration/test_bench_smoke.py")
#: apt over a slow mirror; past this the tests go on and find what is there (a missing browser fails or skips).
LONGEST_WAIT_SECONDS = 1200.0


def _done_file() -> Path | None:
    name = os.environ.get(DONE)
    return Path(name) if name else None


def pending() -> bool:
    """Whether apt is still installing the browsers for this run."""
    done = _done_file()
    return done is not None and not done.exists()


def needs_browsers(path: str) -> bool:
    """Whether the test file at ``path`` (from the checkout, as in a test id) drives a browser."""
    return path.startswith(BROWSER_FILES)


def wait() -> None:
    """Return once apt has finished with the browsers (at once when nothing installs them)."""
    end = time.monotonic() + LONGEST_WAIT_SECONDS
    while pending() and time.monotonic() < end:
        time.sleep(0.5)
