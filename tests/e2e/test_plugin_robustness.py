"""The plugin under stress in a real browser: a dropped stream, a reload mid-queue, a second tab, and MCP."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.plugin_page import (
    McpClient,
    PluginPage,
    answer,
    call_tool,
    hold_socket_answers,
    ok_result,
    plugin_ledger,
    plugin_storage,
    session_copy_script,
    submit,
    wait_until,
)
from codap_relay_tooling.testing.restartable_relay import RestartableRelay


def posted_answer(url: str) -> bool:
    """The plugin's answers, ?code= and all (a glob would not match the query)."""
    return urlsplit(url).path.endswith("/response")


pytestmark = pytest.mark.browser


@pytest.fixture
def restartable() -> Iterator[RestartableRelay]:
    relay = RestartableRelay()
    relay.start()
    yield relay
    relay.close()


@contextlib.contextmanager
def new_codes_held(plugin: PluginPage) -> Iterator[list[Any]]:
    """The plugin's requests for a new code (POST /api/sessions) held until the block ends, so the page can be
    seen while it waits for one."""
    held: list[Any] = []
    plugin.page.route("**/api/sessions", lambda route: held.append(route))
    try:
        yield held
    finally:
        for route in held:
            route.continue_()
        plugin.page.unroute("**/api/sessions")


def executed(plugin: PluginPage, action: str, resource_type: str) -> int:
    """How many requests of ``action`` on resources of this type (``item``, ``component``…) CODAP processed."""
    return int(plugin.host(f"count({json.dumps(action)}, {json.dumps(resource_type)})"))


def test_stream_dropped_mid_queue_loses_nothing_and_runs_nothing_twice(
    open_plugin: Any, restartable: RestartableRelay
) -> None:
    relay = restartable.url
    plugin = open_plugin(relay)
    code = plugin.code()
    plugin.host("pause()")  # CODAP busy: the first request stays in flight, the others queue in the plugin
    ids = [
        submit(
            relay, code, "create_codap_dataset", {"datasetName": "drop", "dataType": "random_numbers", "recordCount": 4}
        ),
        submit(
            relay,
            code,
            "add_codap_cases",
            {"datasetName": "drop", "cases": [{"index": 5, "x": 1, "y": 2, "group": "A"}]},
        ),
        submit(
            relay,
            code,
            "create_codap_graph",
            {"datasetName": "drop", "graphType": "scatterplot", "xAttribute": "x", "yAttribute": "y"},
        ),
    ]
    wait_until(lambda: len(plugin.log_entries()) == 3, "all three requests to reach the plugin")
    restartable.kill()
    wait_until(lambda: plugin.status() in ("Reconnecting…", "Offline"), "the plugin to notice the drop")
    plugin.host("resume()")  # the plugin runs its queue while the relay is down; the POSTs must wait and retry
    wait_until(lambda: executed(plugin, "create", "component") == 2, "graph and table created")  # caseTable + graph
    restartable.start()
    wait_until(lambda: plugin.status() == "Connected", "the plugin to reconnect")
    for rid in ids:
        assert answer(relay, code, rid)["status"] == "completed"
    later = ok_result(call_tool(relay, code, "get_codap_datasets", {}))
    assert later["structuredContent"]["datasets"][0]["caseCount"] == 5
    assert executed(plugin, "create", "dataContext") == 1
    assert executed(plugin, "create", "item") == 2  # the dataset's rows, then the added case
    assert executed(plugin, "create", "component") == 2


def test_reload_mid_queue_reposts_stored_results_and_never_reruns(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    code = plugin.code()
    relay = relay_url
    # the relay cannot be reached for answers, posted or over a push socket: results pile up in sessionStorage
    plugin.page.context.route(posted_answer, lambda route: route.abort())
    hold_socket_answers(plugin.frame)
    first = [
        submit(
            relay, code, "create_codap_dataset", {"datasetName": "rl", "dataType": "sample_students", "recordCount": 6}
        ),
        submit(relay, code, "add_codap_cases", {"datasetName": "rl", "cases": [{"name": "Zed", "grade": 10}]}),
    ]
    wait_until(
        lambda: len(plugin.host('dataset("rl")')["items"]) == 7 if plugin.host('dataset("rl")') else False,
        "both requests executed in CODAP",
    )
    wait_until(
        lambda: all(plugin_ledger(plugin.frame).get(i, {}).get("state") == "done" for i in first),
        "both outcomes stored",
    )
    plugin.host("pause()")  # the next request reaches CODAP but gets no answer before the reload
    in_flight = submit(
        relay, code, "create_codap_graph", {"datasetName": "rl", "graphType": "histogram", "xAttribute": "age"}
    )
    queued = submit(relay, code, "export_codap_data", {"datasetName": "rl", "format": "csv"})
    wait_until(lambda: len(plugin.log_entries()) == 4, "four requests in the plugin")
    wait_until(
        lambda: plugin_ledger(plugin.frame).get(in_flight, {}).get("state") == "started", "the graph request in flight"
    )
    stored = plugin_ledger(plugin.frame)
    assert all(stored[i]["state"] == "done" and not stored[i]["posted"] for i in first)
    assert queued not in stored

    plugin.reload_plugin()  # the host drops calls in flight from the old page when the new one says hello
    plugin.page.context.unroute(posted_answer)
    assert plugin.wait_connected() == code  # same session after the reload

    for rid in first:
        assert answer(relay, code, rid)["status"] == "completed"
    lost = answer(relay, code, in_flight)
    assert lost["status"] == "failed" and lost["error"]["code"] == "plugin_reloaded"
    exported = answer(relay, code, queued)
    assert exported["status"] == "completed"
    assert exported["result"]["structuredContent"]["rowCount"] == 7
    assert executed(plugin, "create", "dataContext") == 1
    assert executed(plugin, "create", "item") == 2
    assert executed(plugin, "get", "itemSearch") == 1
    replayed = [e for e in plugin.log_entries() if e["id"] in first]
    assert len(replayed) == 2 and all(e["cls"] == "state-done" for e in replayed)


def test_superseded_tab_can_take_the_session_back(open_plugin: Any, relay_url: str) -> None:
    tab1 = open_plugin(relay_url)
    code = tab1.code()
    tab2 = open_plugin(relay_url, init_script=session_copy_script(tab1.frame, relay_url))  # a duplicated tab
    assert tab2.code() == code
    wait_until(lambda: tab1.frame.locator("#superseded").is_visible(), "tab 1 to show it moved")
    assert "moved to another tab" in tab1.text("#superseded")
    assert tab1.status() == "Moved to another tab"
    assert not any(tab1.copy_buttons().values())  # the code is served in the other tab

    ok_result(
        call_tool(
            relay_url,
            code,
            "create_codap_dataset",
            {"datasetName": "t2", "dataType": "random_numbers", "recordCount": 2},
        )
    )
    assert tab2.host('dataset("t2")') is not None and tab1.host('dataset("t2")') is None

    tab1.frame.locator("#connect-here").click()
    wait_until(lambda: tab1.status() == "Connected", "tab 1 to reconnect")
    assert all(tab1.copy_buttons().values())
    wait_until(lambda: tab2.frame.locator("#superseded").is_visible(), "tab 2 to show it moved")
    ok_result(
        call_tool(
            relay_url,
            code,
            "create_codap_dataset",
            {"datasetName": "t1", "dataType": "random_numbers", "recordCount": 2},
        )
    )
    assert tab1.host('dataset("t1")') is not None and tab2.host('dataset("t1")') is None


def test_new_code_ends_the_old_session(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    old = plugin.code()
    assert all(plugin.copy_buttons().values())
    with new_codes_held(plugin) as held:
        plugin.frame.locator("#new-code").click()
        wait_until(lambda: plugin.code() == "…" and held, "the plugin to ask for a new code")  # reading pumps events
        assert not any(plugin.copy_buttons().values())  # the old code is on its way out: nothing to copy
    new = wait_until(lambda: (c := plugin.code()) != old and c != "…" and c, "a new code")
    wait_until(lambda: plugin.status() == "Connected", "the new session to connect")
    assert all(plugin.copy_buttons().values())
    # The plugin ends the old session beside opening the new one: through local-api its DELETE can land after the
    # new session connects (seen once on a loaded run), so the end is awaited, then checked.
    gone = wait_until(
        lambda: (r := web.get(f"{relay_url}/api/sessions/{old}")).status_code == 404 and r, "the old session to end"
    )
    assert gone.status_code == 404 and "ended" in gone.json()["message"]
    ok_result(call_tool(relay_url, new, "get_codap_status", {"includeDatasets": False}))


def test_a_session_ended_elsewhere_offers_nothing_to_copy_until_its_new_code(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    old = plugin.code()
    saved = next(v for k, v in plugin_storage(plugin.frame).items() if k.endswith(":session"))
    with new_codes_held(plugin) as held:
        ended = web.delete(
            f"{relay_url}/api/sessions/{old}", headers={"Authorization": f"Bearer {json.loads(saved)['token']}"}
        )
        assert ended.status_code == 200, ended.text
        wait_until(lambda: plugin.code() == "…" and held, "the plugin to see its session end")
        assert not any(plugin.copy_buttons().values())
    wait_until(lambda: plugin.code() not in (old, "…"), "a new code")
    wait_until(lambda: plugin.status() == "Connected", "the new session to connect")
    assert all(plugin.copy_buttons().values())


def test_keyboard_reaches_every_control(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    plugin.frame.locator("#copy-code").focus()
    seen = []
    for _ in range(9):
        seen.append(plugin.frame.evaluate("() => document.activeElement.id || document.activeElement.dataset.copy"))
        plugin.page.keyboard.press("Tab")
    # the activity list is focusable, so that keyboard users can scroll it
    assert seen[:8] == ["copy-code", "mcp", "claude", "prompt", "log", "download-trace", "replay-trace", "new-code"]
    plugin.frame.locator("#copy-code").focus()
    plugin.page.keyboard.press("Enter")
    wait_until(lambda: plugin.frame.locator("#copied").input_value() == plugin.code(), "the code to be copied")
    plugin.frame.locator("#download-trace").focus()
    plugin.page.keyboard.press("Enter")
    wait_until(lambda: "nothing to save yet" in plugin.text("#notice"), "the trace button to answer")


def test_mcp_client_drives_the_plugin(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    with McpClient(f"{relay_url}/mcp/{plugin.code()}") as mcp:
        assert "codap_api" in [t.name for t in mcp.tools()]
        result = mcp.call(
            "create_codap_dataset", {"datasetName": "via mcp", "dataType": "time_series", "recordCount": 10}
        )
        assert result.is_error is False, result
        assert "Created dataset" in result.content[0].text and result.structured_content["recordCount"] == 10
        assert len(plugin.host('dataset("via mcp")')["items"]) == 10
        failed = mcp.call("export_codap_data", {"datasetName": "absent"})
        assert failed.is_error is True and 'no dataset named "absent"' in failed.content[0].text
