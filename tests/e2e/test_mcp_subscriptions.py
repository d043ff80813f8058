"""MCP subscriptions against the plugin in the real CODAP app, with the official Python SDK client
(``Client.listen``, ``subscriptions/listen``): a long-lived relay (as ``codap-relay serve`` runs) tells a subscribed
client when a dataset changed, through a tool or in CODAP directly, and when datasets come and go; the deployed
shape (local-api: one function per endpoint) does not declare subscriptions at all.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from codap_relay_tooling.testing.plugin_page import McpClient
from codap_relay_tooling.testing.real_codap import CodapPage
from codap_relay_tooling.testing.real_parts import need

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
MCP_TOOLS = ROOT / ".tools" / "mcp" / "node_modules"
NODE = MCP_TOOLS / "node" / "bin" / "node"
TS_CLIENT = MCP_TOOLS / "@modelcontextprotocol" / "client" / "dist" / "index.mjs"

ROWS = [{"name": "Ann", "height": 150}, {"name": "Bo", "height": 162}]


@pytest.fixture(scope="module")
def codap(pages: Callable[..., CodapPage], relay_url: str) -> CodapPage:
    page = pages(f"{relay_url}/plugin/")
    page.done(
        "create_codap_dataset",
        {"datasetName": "watched data", "dataType": "custom", "recordCount": 2, "customData": ROWS},
    )
    page.done(
        "create_codap_dataset",
        {"datasetName": "other data", "dataType": "custom", "recordCount": 2, "customData": ROWS},
    )
    return page


@pytest.fixture(scope="module")
def mcp(codap: CodapPage) -> Iterator[McpClient]:
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as client:
        yield client


WATCHED = "codap://datasets/" + quote("watched data", safe="")
CASES = WATCHED + "/cases"
OTHER = "codap://datasets/" + quote("other data", safe="")


def test_only_the_long_lived_server_declares_subscriptions(mcp: McpClient, request: pytest.FixtureRequest) -> None:
    resources = mcp.capabilities().resources
    if request.node.callspec.params.get("relay_url") == "local_api":
        # a Lambda function's answer is buffered until it ends: a stream that never ends could not reach the client
        assert not resources.subscribe and not resources.list_changed
    else:
        assert resources.subscribe is True and resources.list_changed is True


OTHER_CASES = OTHER + "/cases"


@pytest.mark.in_process
def test_a_subscribed_client_hears_of_changes_by_tools_and_in_codap(codap: CodapPage, mcp: McpClient) -> None:
    listening = mcp.listen([WATCHED, CASES, OTHER, OTHER_CASES])
    try:
        # the datasets' own creation may still be on its way (CODAP's notices, then the plugin's 0.5 s batching)
        start = listening.settled()
        # a case added through a tool: the dataset and its cases, and nothing of the other dataset
        codap.done("add_codap_cases", {"datasetName": "watched data", "cases": [{"name": "Cy", "height": 171}]})
        mark = max(
            listening.wait_for(("updated", WATCHED), after=start), listening.wait_for(("updated", CASES), after=start)
        )
        assert codap.ok({"action": "get", "resource": "dataContext[watched data].itemCount"}) == 3
        assert [e for e in listening.seen(start) if e[1] in (OTHER, OTHER_CASES)] == []
        # a change made in CODAP itself, to the dataset no tool touched: only CODAP's notice can report it
        codap.ok({"action": "create", "resource": "dataContext[other data].item", "values": [{"name": "Di"}]})
        mark = max(listening.wait_for(("updated", OTHER), after=mark), listening.wait_for(("updated", OTHER_CASES)))
        assert codap.ok({"action": "get", "resource": "dataContext[other data].itemCount"}) == 3
        # a dataset created by a tool, then one created in CODAP itself: the resource list changed each time
        codap.done(
            "create_codap_dataset",
            {"datasetName": "new data", "dataType": "custom", "recordCount": 1, "customData": ROWS[:1]},
        )
        listening.wait_for(("list_changed", ""), after=mark)
        mark = listening.settled()  # what comes next answers the change made in CODAP
        codap.ok({"action": "create", "resource": "dataContext", "values": {"name": "direct data"}})
        listening.wait_for(("list_changed", ""), after=mark)
        names = [d["name"] for d in codap.ok({"action": "get", "resource": "dataContextList"})]
        assert {"new data", "direct data"} <= set(names)
    finally:
        listening.close()


class TsListener:
    """tests/e2e/ts_listen.mjs: the TypeScript SDK's client listening, its events read line by line."""

    def __init__(self, url: str, uris: list[str]) -> None:
        env = {**os.environ, "MCP_CLIENT": str(TS_CLIENT), "PATH": f"{NODE.parent}{os.pathsep}{os.environ['PATH']}"}
        self.proc = subprocess.Popen(
            [str(NODE), str(Path(__file__).with_name("ts_listen.mjs")), url, *uris],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next_matching(self, wanted: dict[str, Any], timeout: float = 20) -> dict[str, Any]:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                stderr = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
                raise AssertionError(f"no {wanted} from the TypeScript client within {timeout} s {stderr}") from None
            if all(line.get(k) == v for k, v in wanted.items()):
                return line

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.mark.in_process
def test_the_typescript_sdk_client_hears_a_case_added(codap: CodapPage) -> None:
    need(NODE.exists() and TS_CLIENT.exists(), "the MCP test tools")
    listener = TsListener(f"{codap.relay}/mcp/{codap.code()}", [CASES])
    try:
        assert listener.next_matching({"ready": True})["subscribe"] is True
        codap.done("add_codap_cases", {"datasetName": "watched data", "cases": [{"name": "Ed", "height": 149}]})
        listener.next_matching({"method": "notifications/resources/updated", "uri": CASES})
        names = [item["values"]["name"] for item in codap.items("watched data")]
        assert "Ed" in names
    finally:
        listener.close()
