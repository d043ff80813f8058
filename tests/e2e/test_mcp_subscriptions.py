"""MCP subscriptions against the plugin in the real CODAP app, with the official Python SDK client
(``Client.listen``, ``subscriptions/listen``): a long-lived relay (as ``codap-relay serve`` runs) tells a subscribed
client when a dataset changed, through a tool or in CODAP directly, and when datasets come and go; the deployed
shape (local-api: one function per endpoint) does not declare subscriptions at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from codap_relay.testing.plugin_page import McpClient
from codap_relay.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser]

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
        # a case added through a tool: the dataset and its cases, and nothing of the other dataset
        codap.done("add_codap_cases", {"datasetName": "watched data", "cases": [{"name": "Cy", "height": 171}]})
        mark = max(listening.wait_for(("updated", WATCHED)), listening.wait_for(("updated", CASES)))
        assert codap.ok({"action": "get", "resource": "dataContext[watched data].itemCount"}) == 3
        assert [e for e in listening.seen() if e[1] in (OTHER, OTHER_CASES)] == []
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
