"""The official MCP conformance suite and the MCP Inspector CLI against the real ``codap-relay serve`` and
``codap-relay local-api`` (the deployed shape on DynamoDB Local).

Both are npm packages that scripts/install-test-deps puts in .tools/mcp together with a Node 22 (the suite needs
Node >= 22; the machine's may be older).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codap_relay_tooling.testing import CHECKOUT, web
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.real_parts import need

MODULES = CHECKOUT / ".tools" / "mcp" / "node_modules"
NODE = MODULES / "node" / "bin" / "node"
CONFORMANCE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSPECTOR = MODULES / ".bin" / "mcp-inspector"


@pytest.fixture(autouse=True, scope="module")
def mcp_tools_installed() -> None:
    need(NODE.exists() and CONFORMANCE.exists() and INSPECTOR.exists(), "the MCP test tools")


def node_env() -> dict[str, str]:
    # The tools start further node processes by name: make ours the one found first.
    return {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


@pytest.fixture(scope="module", params=["serve", pytest.param("local_api", marks=pytest.mark.dynamodb_local)])
def mcp_url(request: pytest.FixtureRequest) -> Iterator[str]:
    # Host checks on, as a local deployment should have them: the dns-rebinding scenario depends on it (the
    # session's local-api has them on too).
    if request.param == "local_api":
        base = request.getfixturevalue("local_api").base
        code = web.post(f"{base}/api/sessions", json={}, timeout=10).json()["code"]
        yield f"{base}/mcp/{code}"
        return
    env = {**os.environ, "ALLOWED_HOSTS": "localhost,127.0.0.1,[::1]"}
    with serve_process("--store", "memory:", env=env) as (base, _proc):
        code = web.post(f"{base}/api/sessions", json={}, timeout=10).json()["code"]
        yield f"{base}/mcp/{code}"


@pytest.mark.parametrize("scenario", ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"])
def test_conformance_scenario(mcp_url: str, scenario: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [str(NODE), str(CONFORMANCE), "server", "--url", mcp_url, "--scenario", scenario, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=node_env(),
    )
    report = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, report
    (checks_file,) = tmp_path.glob("*/checks.json")
    checks: list[dict[str, Any]] = json.loads(checks_file.read_text())
    assert checks, report
    assert [c["status"] for c in checks] == ["SUCCESS"] * len(checks), json.dumps(checks, indent=1)


def inspector(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), str(INSPECTOR), "--cli", url, "--transport", "http", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=node_env(),
    )


def test_inspector_cli_lists_the_tools(mcp_url: str) -> None:
    run = inspector(mcp_url, "--method", "tools/list")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    tools = {t["name"]: t for t in json.loads(run.stdout)["tools"]}
    assert "get_codap_datasets" in tools and len(tools) == 6
    assert tools["get_codap_datasets"]["annotations"]["readOnlyHint"] is True


def test_inspector_cli_shows_the_unknown_code_message(mcp_url: str) -> None:
    run = inspector(mcp_url.rsplit("/", 1)[0] + "/ABCDEFGH", "--method", "tools/list")
    assert run.returncode != 0
    assert "open the codap-relay plugin" in run.stdout + run.stderr


def test_inspector_cli_lists_resources_templates_and_prompts(mcp_url: str) -> None:
    """The TypeScript SDK's view: with no plugin connected, the list holds the three fixed resources (reading the
    document's says the plugin is not connected); the templates and the six class prompts are always there."""
    run = inspector(mcp_url, "--method", "resources/list")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    listed = [r["uri"] for r in json.loads(run.stdout)["resources"]]
    assert listed == ["codap://datasets", "codap://components", "codap://activity"]
    run = inspector(mcp_url, "--method", "resources/templates/list")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    templates = {t["uriTemplate"] for t in json.loads(run.stdout)["resourceTemplates"]}
    assert templates == {"codap://datasets/{name}", "codap://datasets/{name}/cases", "codap://graphs/{name}/image"}
    run = inspector(mcp_url, "--method", "prompts/list")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    prompts = {p["name"]: p for p in json.loads(run.stdout)["prompts"]}
    assert len(prompts) >= 6 and {"explore_dataset", "fit_line", "explain_screen"} <= set(prompts)
    assert [a["name"] for a in prompts["fit_line"]["arguments"]] == ["datasetName", "xAttribute", "yAttribute"]
    run = inspector(mcp_url, "--method", "resources/read", "--uri", "codap://datasets")
    assert run.returncode != 0 and "not connected" in run.stdout + run.stderr
