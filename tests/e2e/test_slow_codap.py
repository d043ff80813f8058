"""Slow CODAP, said out loud, in the real CODAP build: while CODAP is slow to answer the plugin says so with the
likely cause and the fix, the model reads how long CODAP took and why (text and ``_meta``), and a call that
outlasts the MCP wait gets an error naming the tool and the likely cause, never a hang.

The real stall (a graph drawn with WebGL in software blocks CODAP's page: 2.7 s with 50 points, 19-37 s with
1,000 on this machine, varying with its load) is too unsteady for a short test, so CODAP is made slow exactly:
its replies to the plugin are held back in the page (testing/slow_codap.py). Everything else is real."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.plugin_page import McpClient, answer, ok_result, submit, wait_until
from codap_relay_tooling.testing.real_codap import CodapPage, codap_pages
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import serve_app
from codap_relay_tooling.testing.slow_codap import SLOW_CODAP_REPLIES, slow_codap

BUSY_DELAY_MS = 400  # the plugin's busy.js: how long a call runs before CODAP shows busy
MCP_WAIT = 2  # seconds an MCP tools/call waits for the plugin here (15 by default)
HELD_MS = 4000  # CODAP's slow reply: past the plugin's 3 s threshold, and past MCP_WAIT


@pytest.fixture(scope="module")
def codap(browser: Any, codap_url: str) -> Iterator[CodapPage]:
    relay = Relay(e2e_settings(mcp_tool_timeout_seconds=MCP_WAIT), MemoryStore())
    with serve_app(build_app(relay)) as relay_url, codap_pages(browser, codap_url) as pages:
        yield pages(f"{relay_url}/plugin/", init_script=SLOW_CODAP_REPLIES)


def codap_busy(codap: CodapPage) -> bool:
    """Whether CODAP shows its busy state: the page dimmed under a wait cursor (its busy overlay)."""
    overlay = codap.page.locator(".busy-overlay")
    return bool(overlay.count() > 0 and overlay.first.evaluate("(e) => getComputedStyle(e).cursor") == "wait")


# Watches CODAP's page for its busy state at any moment (a quick call could show it and take it back between two
# reads of codap_busy): window.busySeen turns true the first time the busy overlay is there with its wait cursor.
_WATCH_BUSY = """
() => {
  window.busySeen = false;
  const check = () => {
    const overlay = document.querySelector(".busy-overlay");
    if (overlay && getComputedStyle(overlay).cursor === "wait") window.busySeen = true;
  };
  window.busyWatch?.disconnect();
  window.busyWatch = new MutationObserver(check);
  window.busyWatch.observe(document.body, { childList: true, subtree: true, attributes: true });
  check();
}
"""


def watch_busy(codap: CodapPage) -> None:
    codap.page.evaluate(_WATCH_BUSY)


def busy_seen(codap: CodapPage) -> bool:
    return bool(codap.page.evaluate("() => window.busySeen"))


def slow_note(codap: CodapPage) -> tuple[str, str]:
    return codap.shown("notice"), codap.text("#codap-status")


def test_the_person_and_the_model_hear_that_codap_is_slow(codap: CodapPage) -> None:
    watch_busy(codap)
    codap.done("get_codap_status", {})  # the document as it is, quickly: no note, and CODAP never shown busy
    assert "slow" not in " ".join(slow_note(codap))
    codap.done("codap_api", {"action": "get", "resource": "componentList"})
    assert not busy_seen(codap), "a quick call showed CODAP busy"

    slow_codap(codap.frame, HELD_MS)
    started = time.monotonic()
    request_id = submit(codap.relay, codap.code(), "get_codap_status", {})
    wait_until(lambda: codap_busy(codap), "CODAP to show busy while the tool runs")
    assert busy_seen(codap) and time.monotonic() - started >= BUSY_DELAY_MS / 1000  # not before the delay
    notice, line = wait_until(lambda: slow_note(codap) if "slow" in slow_note(codap)[0] else None, "the slow note")
    assert 3 <= time.monotonic() - started < HELD_MS / 1000, "the note came before 3 s or after CODAP answered"
    assert codap_busy(codap)
    assert line == "CODAP: slow to answer"
    assert notice.startswith('CODAP is slow to answer (waiting 3.0 s for "get interactiveFrame, get dataContextList,')
    assert "without graphics acceleration" in notice and '"Graphics Acceleration: Turn off"' in notice
    announced = codap.frame.locator("#announcer")  # the page's one live region: screen readers read the note out
    wait_until(lambda: "CODAP is slow to answer" in (announced.text_content() or ""), "the note read out")

    result = ok_result(answer(codap.relay, codap.code(), request_id))
    assert not codap_busy(codap)  # idle before the answer left the plugin
    text = result["content"][0]["text"]
    assert text.startswith("CODAP is connected (version 3.1.0); the document is ")
    (note,) = [line for line in text.splitlines() if line.startswith("CODAP was slow:")]
    assert 'for "get interactiveFrame, get dataContextList, and 1 more". CODAP answers on one thread' in note
    assert '"Graphics Acceleration: Turn off"' in note and "hardware acceleration" in note
    wait = result["_meta"]["codap-relay/codap-wait"]
    assert HELD_MS <= wait["slowestMs"] <= wait["codapMs"] < HELD_MS + 3000 and wait["messages"] >= 2
    assert f"{wait['codapMs'] / 1000:.1f} s" in note
    # the slow note leaves the structured answer as it was
    assert set(result["structuredContent"]) == {"codapVersion", "plugin", "document", "datasets", "components"}
    wait_until(lambda: slow_note(codap) == ("", "CODAP: connected"), "the note to go once CODAP answered")


def test_a_call_that_outlasts_the_mcp_wait_says_what_is_running_and_why(codap: CodapPage) -> None:
    slow_codap(codap.frame, HELD_MS)
    with McpClient(f"{codap.relay}/mcp/{codap.code()}") as mcp:
        started = time.monotonic()
        result = mcp.call("get_codap_datasets", {})
        assert time.monotonic() - started < MCP_WAIT + 2  # an error at the wait, not a hang
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("CODAP did not answer get_codap_datasets (request id ")
    assert f"within {MCP_WAIT} s. The plugin has received it, so CODAP is likely slow to answer" in text
    assert '"Graphics Acceleration: Turn off"' in text and "stays queued" in text
    # Meanwhile the person sees why, and CODAP shows busy while the call still runs past the model's timeout; the
    # plugin finishes the call once CODAP answers, and the note and the busy state go.
    assert codap_busy(codap)
    wait_until(lambda: "CODAP is slow to answer" in slow_note(codap)[0], "the slow note")
    late = answer(codap.relay, codap.code(), result.structured_content["requestId"])
    assert late["status"] == "completed" and "CODAP was slow:" in late["result"]["content"][0]["text"]
    assert not codap_busy(codap)
    wait_until(lambda: slow_note(codap) == ("", "CODAP: connected"), "the note to go once CODAP answered")


def test_a_stop_of_codaps_page_is_said_afterwards(codap: CodapPage) -> None:
    """What the real stall is: CODAP's page busy on its one thread. CODAP and the plugin are on one site here, so
    the browser runs both on that thread, and the plugin can say nothing until it ends; it says so afterwards."""
    busy = "(ms) => setTimeout(() => { const end = Date.now() + ms; while (Date.now() < end) {} }, 0)"
    codap.page.evaluate(busy, HELD_MS)  # CODAP's page (the top frame) stops, as while it draws WebGL in software
    result = ok_result(answer(codap.relay, codap.code(), submit(codap.relay, codap.code(), "get_codap_datasets", {})))
    (note,) = [line for line in result["content"][0]["text"].splitlines() if line.startswith("CODAP was slow:")]
    assert note.startswith("CODAP was slow: its page, which runs this plugin too, was busy for ")
    assert '"Graphics Acceleration: Turn off"' in note
    wait = result["_meta"]["codap-relay/codap-wait"]
    assert HELD_MS - 500 <= wait["blockedMs"] < HELD_MS + 2000 and wait["slowestMs"] < 3000
    notice, line = slow_note(codap)
    assert notice.startswith("CODAP was slow to answer: its page, and this plugin with it, was busy for ")
    assert line == "CODAP: slow to answer"
