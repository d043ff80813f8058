"""The plugin's pure JavaScript modules: their Node unit tests, and the manifest the plugin registers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codap_relay import __version__
from codap_relay.catalog import plugin_tools
from codap_relay.manifest import DEFAULT_TOOLS, check_manifest
from codap_relay_tooling.testing.plugin_manifest import plugin_manifest
from codap_relay_tooling.testing.real_parts import need

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "tests" / "js"
PLUGIN_JS = ROOT / "core" / "codap_relay" / "plugin" / "js"

NODE = shutil.which("node")


@pytest.fixture(autouse=True, scope="module")
def node_installed() -> None:
    need(NODE, "Node")


def test_node_unit_tests_pass() -> None:
    files = sorted(str(p) for p in JS_TESTS.glob("*.test.mjs"))
    assert files, "no Node tests found"
    proc = subprocess.run([NODE or "node", "--test", *files], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    failed = [
        "\n".join(lines[i : i + 30]) for i, line in enumerate(lines) if line.lstrip().startswith("not ok")
    ]  # each failing test with its error: a whole run's output is too long to read the failure from
    assert proc.returncode == 0, "\n".join(failed)[-6000:] + proc.stderr[-2000:]


def test_the_plugin_and_the_relay_read_the_same_definitions() -> None:
    assert plugin_manifest() == list(plugin_tools())


def _accepts_all_of(ours: dict[str, Any], seed: dict[str, Any], where: str) -> None:
    """Every value ``seed`` (a property's schema) accepts, ``ours`` accepts: same type, enum a superset, bounds
    no tighter."""
    assert ours.get("type") == seed.get("type"), where
    if "enum" in seed:
        assert set(seed["enum"]) <= set(ours.get("enum", seed["enum"])), where
    for low in ("minimum", "minLength"):
        if low in ours:
            assert low in seed and ours[low] <= seed[low], where
    for high in ("maximum", "maxLength"):
        if high in ours:
            assert high in seed and ours[high] >= seed[high], where


def test_the_plugins_seed_tools_accept_every_call_the_seed_accepts() -> None:
    """The seed's six keep their names, and every call valid under the seed's schemas stays valid: no new
    required argument, no narrower type, enum or bound, no closed object where the seed's was open."""
    ours = {t["name"]: t for t in plugin_tools()}
    for seed in DEFAULT_TOOLS:
        mine = ours[seed["name"]]["inputSchema"]
        theirs = seed["inputSchema"]
        assert set(mine.get("required", [])) <= set(theirs.get("required", [])), seed["name"]
        if theirs.get("additionalProperties", True) is not False:
            assert mine.get("additionalProperties", True) is not False, seed["name"]
        for prop, schema in theirs["properties"].items():
            _accepts_all_of(mine["properties"][prop], schema, f"{seed['name']}.{prop}")
        assert ours[seed["name"]]["title"] and isinstance(ours[seed["name"]]["annotations"], dict)


def test_every_plugin_tool_passes_the_relay_checks_and_declares_its_hints() -> None:
    tools = list(plugin_tools())
    check_manifest(tools)
    for tool in tools:
        assert isinstance(tool["title"], str) and tool["title"], tool["name"]
        assert tool["description"], tool["name"]
        hints = tool["annotations"]
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}, tool["name"]
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


def test_the_relays_fallback_hints_are_the_plugins_own() -> None:
    """For a manifest that declares no hints (the contract's seed manifest) the relay tells MCP clients what the
    plugin's definitions say of the same tool, so a client is told the same whichever manifest the session has."""
    from codap_relay.mcp.tools import mcp_tools

    for declared in plugin_tools():
        bare = {k: v for k, v in declared.items() if k not in ("title", "annotations")}
        ours, theirs = mcp_tools([bare])[0], mcp_tools([declared])[0]
        assert ours.annotations == theirs.annotations and ours.title == theirs.title, declared["name"]
