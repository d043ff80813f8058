"""The tool manifest the plugin registers, as its own loader builds it (``tools/catalog.js`` over the JSON files,
run in Node), for tests that must hold against what the plugin really sends."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from . import CHECKOUT

SUPPORT = CHECKOUT / "tests" / "js" / "support" / "manifest.mjs"
NODE = shutil.which("node")


def plugin_manifest() -> list[dict[str, Any]]:
    """The ``tools`` the plugin posts to ``POST /api/sessions``. Needs Node."""
    script = f"import({json.dumps(SUPPORT.as_uri())}).then(m => console.log(JSON.stringify(m.TOOLS)))"
    out = subprocess.run([NODE or "node", "-e", script], capture_output=True, text=True, timeout=60, check=True)
    tools: list[dict[str, Any]] = json.loads(out.stdout)
    return tools
