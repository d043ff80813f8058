"""The MCP App's build for the tests: the modules scripts/install-test-deps puts in .tools/mcpapp (or
MCPAPP_MODULES), the app's build, and the tests' host page (ext-apps' AppBridge) built from mcpapp/src/host.js."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MISSING = "the MCP App's build modules are not installed (run scripts/install-test-deps)"


def mcp_app_modules() -> Path | None:
    """The node_modules the build takes its packages from (esbuild, ext-apps), or None where they are missing."""
    modules = Path(os.environ.get("MCPAPP_MODULES") or ROOT / ".tools" / "mcpapp" / "node_modules")
    found = (modules / "esbuild").is_dir() and (modules / "@modelcontextprotocol" / "ext-apps").is_dir()
    return modules if found else None


def build(*args: str) -> bytes:
    """scripts/build-mcp-app with ``args``; what it printed."""
    modules = mcp_app_modules()
    assert modules is not None, MISSING
    return subprocess.run(
        [str(ROOT / "scripts" / "build-mcp-app"), *args],
        env={"MCPAPP_MODULES": str(modules), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout


def build_test_host(into: Path) -> Path:
    """The test host page (index.html and its bundled host.js) in ``into``."""
    build("--host", str(into))
    return into
