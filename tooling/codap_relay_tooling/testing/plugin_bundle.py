"""The plugin's build (scripts/build-plugin) for the tests: whether its esbuild is installed, a fresh build into a
folder, and the files a built page names."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from codap_relay_tooling.testing.mcp_app import ROOT

MISSING = "the plugin's build tools (esbuild in .tools/mcpapp) are not installed (run scripts/install-test-deps)"
# A built page's references to its scripts and styles: src="plugin-0123456789ab.js", href="plugin-….css".
BUILT_REFERENCE = re.compile(r'(?:src|href)="((?:boot|plugin)-[0-9a-f]{12}\.(?:js|css))"')


def plugin_build_modules() -> Path | None:
    """The node_modules the build takes esbuild from, or None where it is missing."""
    modules = Path(os.environ.get("PLUGIN_BUILD_MODULES") or ROOT / ".tools" / "mcpapp" / "node_modules")
    return modules if (modules / "esbuild").is_dir() else None


def build_plugin(into: Path) -> Path:
    """scripts/build-plugin, writing into ``into``."""
    modules = plugin_build_modules()
    assert modules is not None, MISSING
    subprocess.run(
        [str(ROOT / "scripts" / "build-plugin"), str(into)],
        env={"PLUGIN_BUILD_MODULES": str(modules), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        check=True,
        timeout=120,
    )
    return into


def page_files(html: str) -> list[str]:
    """The built files a plugin page loads, by name, in the order it names them (styles, boot, the plugin)."""
    return BUILT_REFERENCE.findall(html)
