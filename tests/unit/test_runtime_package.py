"""The runtime package (what every Lambda function and ``codap-relay serve`` ship, the browser plugin's JavaScript
included) keeps the house's rules: each module fits in a reading, and no test helper or test tool travels with it."""

from __future__ import annotations

import ast
from pathlib import Path

from codap_relay_tooling.testing import CHECKOUT

RUNTIME = CHECKOUT / "core" / "codap_relay"
MAX_LINES = 450
# The test tools, and the test harnesses (local-api's own package, codap_relay_tooling.localapi, is a command's).
TEST_ONLY = ("pytest", "hypothesis", "schemathesis", "moto", "codap_relay_tooling.testing")


def runtime_modules() -> list[Path]:
    return sorted(p for p in RUNTIME.rglob("*.py") if "__pycache__" not in p.parts)


def plugin_modules() -> list[Path]:
    """The browser plugin's own JavaScript (its built bundle in dist/ is made from these)."""
    return sorted((RUNTIME / "plugin" / "js").rglob("*.js"))


def test_every_runtime_module_fits_in_a_reading() -> None:
    modules = runtime_modules() + plugin_modules()
    assert len(plugin_modules()) > 50  # the plugin's sources are where this looks
    long = {str(p.relative_to(RUNTIME)): n for p in modules if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these where a reader would look for the parts (at most {MAX_LINES} lines each)"


def test_no_test_helper_or_test_tool_ships_in_the_runtime() -> None:
    found = []
    for path in runtime_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                modules = []
            found += [
                f"{path.relative_to(RUNTIME)} imports {m}"
                for m in modules
                if any(m == t or m.startswith(t + ".") for t in TEST_ONLY)
            ]
            if isinstance(node, ast.ClassDef) and node.name.startswith(("Fake", "Stub", "Mock")):
                found.append(f"{path.relative_to(RUNTIME)} defines {node.name}")
    assert found == [], "test helpers live in codap_relay_tooling.testing"
