"""The plugin's pure JavaScript modules: their Node unit tests, and the manifest the plugin registers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codap_relay import __version__
from codap_relay.manifest import DEFAULT_TOOLS, check_manifest

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "tests" / "js"
PLUGIN_JS = ROOT / "core" / "codap_relay" / "plugin" / "js"

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node is not installed (scripts/install-test-deps)")


def test_node_unit_tests_pass() -> None:
    files = sorted(str(p) for p in JS_TESTS.glob("*.test.mjs"))
    assert files, "no Node tests found"
    proc = subprocess.run([NODE or "node", "--test", *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def plugin_manifest() -> list[dict[str, object]]:
    script = (
        f"import({json.dumps((PLUGIN_JS / 'manifest.js').as_uri())}).then(m => console.log(JSON.stringify(m.TOOLS)))"
    )
    out = subprocess.run([NODE or "node", "-e", script], capture_output=True, text=True, timeout=60, check=True)
    tools: list[dict[str, object]] = json.loads(out.stdout)
    return tools


# Optional properties the plugin adds to a default tool; everything else of the defaults is kept as it is.
ADDED_PROPERTIES = {"create_codap_graph": {"includeImage"}}


def test_plugin_manifest_keeps_the_default_tools() -> None:
    tools = {t["name"]: t for t in plugin_manifest()}
    for default in DEFAULT_TOOLS:
        mine = tools[default["name"]]
        assert mine["description"] == default["description"]
        schema = json.loads(json.dumps(mine["inputSchema"]))
        added = ADDED_PROPERTIES.get(default["name"], set())
        assert added <= set(schema["properties"]) and not added & set(schema.get("required", []))
        for name in added:
            del schema["properties"][name]
        assert schema == default["inputSchema"]
        assert mine["title"] and isinstance(mine["annotations"], dict)


def test_plugin_manifest_adds_the_graph_picture_and_codap_api_and_passes_the_relay_checks() -> None:
    tools = plugin_manifest()
    names = [t["name"] for t in tools]
    assert names == [*(t["name"] for t in DEFAULT_TOOLS), "get_codap_graph_image", "codap_api"]
    check_manifest(tools)
    schema = tools[-1]["inputSchema"]
    assert isinstance(schema, dict)
    assert schema["required"] == ["action", "resource"]
    (picture,) = [t for t in tools if t["name"] == "get_codap_graph_image"]
    assert picture["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_the_plugin_reports_the_relays_version() -> None:
    script = f"import({json.dumps((PLUGIN_JS / 'version.js').as_uri())}).then(m => console.log(m.VERSION))"
    out = subprocess.run([NODE or "node", "-e", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == __version__


def test_the_relays_fallback_hints_agree_with_what_the_plugin_declares() -> None:
    """The plugin declares its tools' annotations, and the relay passes them on as they are. For a manifest that
    declares none (the contract's seed manifest) the relay knows the default tools' hints itself: they must be
    the plugin's, so an MCP client is told the same whichever manifest the session has."""
    from codap_relay.mcp_tools import mcp_tools

    seed = {t["name"] for t in DEFAULT_TOOLS} | {"codap_api"}
    for declared in plugin_manifest():
        if declared["name"] not in seed:
            continue
        bare = {k: v for k, v in declared.items() if k not in ("title", "annotations")}
        ours, theirs = mcp_tools([bare])[0].annotations, mcp_tools([declared])[0].annotations
        assert ours is not None and theirs is not None
        for hint in ("read_only_hint", "idempotent_hint", "open_world_hint"):
            assert getattr(ours, hint) == getattr(theirs, hint), (declared["name"], hint)
        if not theirs.read_only_hint:  # MCP: destructiveHint means something only for a tool that writes
            assert ours.destructive_hint == theirs.destructive_hint, declared["name"]
