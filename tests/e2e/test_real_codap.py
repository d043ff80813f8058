"""The plugin inside the real CODAP app (a v3 production build): it pairs, and a tool call from the LLM side
changes what CODAP itself holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from plugin_page import call_tool, ok_result

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_plugin_pairs_in_real_codap_and_a_tool_changes_codap(open_codap: Any, relay_url: str) -> None:
    codap = open_codap(f"{relay_url}/plugin/")
    code = codap.code()
    frame = codap.ok({"action": "get", "resource": "interactiveFrame"})
    assert frame["title"] == "CODAP Relay" and frame["version"] == "1.0.0"

    rows = [{"name": "Ada", "score": 91}, {"name": "Ben", "score": 78}]
    args = {"datasetName": "class", "dataType": "custom", "recordCount": 2, "customData": rows}
    result = ok_result(call_tool(relay_url, code, "create_codap_dataset", args))
    assert result["structuredContent"]["recordCount"] == 2
    held = sorted((i["values"]["name"], i["values"]["score"]) for i in codap.items("class"))
    assert held == [("Ada", 91), ("Ben", 78)]
    assert any(c["type"] == "caseTable" for c in codap.components())
    codap.screenshot(ARTIFACTS / "real-codap-paired.png")
