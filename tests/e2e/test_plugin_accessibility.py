"""The plugin page for everyone (WCAG 2.2 A and AA): axe-core finds nothing in each of the plugin's states, every
control works from the keyboard with a visible focus, a screen reader hears names, the code character by character
and one calm live region, and the page holds up with reduced motion, in a narrow frame and at 200 % zoom.

The fake CODAP host (tests/e2e/codap_host) is fast; one check runs inside the real CODAP build."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.axe import axe_violations, describe
from codap_relay_tooling.testing.plugin_page import PluginPage, call_tool, new_page, plugin_storage, submit, wait_until
from codap_relay_tooling.testing.real_codap import CodapPage

# The relay is not under test here: what the page shows is the same whichever relay served it.
pytestmark = [pytest.mark.browser, pytest.mark.in_process]

# The controls in the order Tab reaches them once the plugin is paired (the activity list is focusable so that
# keyboard users can scroll it).
TAB_ORDER = ["copy-code", "mcp", "claude", "prompt", "log", "download-trace", "replay-trace", "new-code"]
LIVE = "[aria-live], [role=status], [role=alert], [role=log], [role=marquee], [role=timer], output"


def assert_no_violations(frame: Any, what: str) -> None:
    violations = axe_violations(frame)
    assert not violations, f"axe, {what}:\n{describe(violations)}"


def spelled(code: str) -> str:
    return f"{' '.join(code[:4])}, {' '.join(code[4:])}"


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two ``rgb(r, g, b)`` colours."""

    def luminance(colour: str) -> float:
        channels = [int(c) / 255 for c in re.findall(r"\d+", colour)[:3]]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def announcements(frame: Any) -> list[str]:
    """What the live region said since ``listen_to_announcer``."""
    said: list[str] = frame.evaluate("() => window.__said")
    return said


def listen_to_announcer(frame: Any) -> None:
    frame.evaluate(
        """() => {
            window.__said = [];
            const region = document.getElementById('announcer');
            new MutationObserver(() => window.__said.push(region.textContent))
                .observe(region, {childList: true, characterData: true, subtree: true});
        }"""
    )


def calls_counted(texts: list[str]) -> int:
    """How many tool calls the announcements account for ("get_codap_datasets done." is one)."""
    total = 0
    for text in texts:
        many = re.search(r"(\d+) calls finished", text)
        total += int(many.group(1)) if many else len(re.findall(r"\b\w+_codap_\w+ (?:done|failed)", text))
    return total


@pytest.fixture
def unpaired(browser: Any, host_url: str, relay_url: str) -> Iterator[Any]:
    """Factory: the plugin in the test host with its requests for a code answered by ``answer(route)``; not
    waited for, since it may never pair."""
    contexts: list[Any] = []

    def factory(answer: Any) -> PluginPage:
        context = browser.new_context(viewport={"width": 900, "height": 700})
        contexts.append(context)
        page, messages = new_page(context)
        page.route("**/api/sessions", answer)
        plugin = PluginPage(page, relay_url, host_url, console=messages)
        page.goto(f"{host_url}/?di={quote(plugin.plugin_url, safe='')}")
        return plugin

    yield factory
    for context in contexts:
        context.close()


def trace_with(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A trace file (docs/plugin.md) as Playwright's file chooser takes it."""
    body = {
        "format": "codap-relay-trace",
        "version": 1,
        "exportedAt": "2026-05-04T10:00:00Z",
        "plugin": "1.0.0",
        "calls": [
            {
                "tool": tool,
                "args": args,
                "status": "completed",
                "summary": None,
                "error": None,
                "at": "2026-05-04T10:00:00Z",
                "completedAt": None,
                "latencyMs": None,
                "via": "llm",
            }
            for tool, args in calls
        ],
    }
    return {"name": "shared.json", "mimeType": "application/json", "buffer": json.dumps(body).encode()}


def active(frame: Any) -> str:
    return str(frame.evaluate("() => document.activeElement.id || document.activeElement.dataset.copy || ''"))


# --- axe in each state ------------------------------------------------------------------------------------


def test_waiting_for_a_code(unpaired: Any) -> None:
    plugin = unpaired(
        lambda route: route.fulfill(
            status=429, headers={"Retry-After": "30"}, json={"error": "rate_limited", "message": "slow down"}
        )
    )
    wait_until(lambda: plugin._safe(lambda: plugin.status()) == "Waiting…", "the plugin to wait for a code")
    frame = plugin.frame
    assert frame.get_by_role("img", name="Pairing code: none yet").is_visible()
    assert not any(plugin.copy_buttons().values())  # nothing to copy, and Tab skips them
    wait_until(lambda: "no need to reload" in frame.locator("#announcer").inner_text(), "the wait announced")
    assert_no_violations(frame, "waiting for a code")


def test_paired_with_calls_and_an_error_in_light_and_dark(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame = plugin.frame
    assert_no_violations(frame, "paired, no calls yet")
    code = plugin.code()
    made = {"datasetName": "a11y", "dataType": "sample_students", "recordCount": 5}
    call_tool(relay_url, code, "create_codap_dataset", made)
    failed = call_tool(relay_url, code, "export_codap_data", {"datasetName": "absent"})
    assert failed["status"] == "failed"
    wait_until(lambda: len(frame.locator("#log li.state-failed").all()) == 1, "the error in the activity log")
    wait_until(lambda: "failed" in frame.locator("#announcer").inner_text(), "the error announced")
    assert "export_codap_data" in frame.locator("#announcer").inner_text()
    # The same page in both colour schemes: CODAP is light whatever the system says, and so is the plugin.
    for scheme in ("light", "dark"):
        plugin.page.emulate_media(color_scheme=scheme)
        assert_no_violations(frame, f"activity with an error, {scheme} scheme")
    error = frame.locator("#log li.state-failed .entry-result").evaluate(
        "(el) => [getComputedStyle(el).color, getComputedStyle(document.documentElement).backgroundColor]"
    )
    assert contrast(*error) >= 4.5, error


def test_the_session_ended_and_no_new_code(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    token = json.loads(next(v for k, v in plugin_storage(plugin.frame).items() if k.endswith(":session")))["token"]
    plugin.page.route(
        "**/api/sessions",
        lambda route: route.fulfill(status=400, json={"error": "validation", "message": "no codes today"}),
    )
    ended = web.delete(f"{relay_url}/api/sessions/{plugin.code()}", headers={"Authorization": f"Bearer {token}"})
    assert ended.status_code == 200, ended.text
    wait_until(lambda: plugin.status() == "Not connected", "the plugin to say it has no code")
    frame = plugin.frame
    assert "could not be created" in plugin.text("#notice")
    wait_until(lambda: "could not be created" in frame.locator("#announcer").inner_text(), "the failure announced")
    assert frame.get_by_role("img", name="Pairing code: none yet").is_visible()
    pill = frame.locator("#status").evaluate("(el) => [getComputedStyle(el).color, 'rgb(255, 255, 255)']")
    assert contrast(*pill) >= 4.5, pill
    assert_no_violations(frame, "session ended, no new code")


# --- keyboard ----------------------------------------------------------------------------------------------


def test_keyboard_order_focus_ring_and_keys(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame, keyboard = plugin.frame, plugin.page.keyboard
    frame.locator("h1").click()  # where Tab starts from, as a person clicking the plugin's title
    seen = []
    for _ in TAB_ORDER:
        keyboard.press("Tab")
        ring = frame.evaluate(
            """() => { const el = document.activeElement, s = getComputedStyle(el);
                return {visible: el.matches(':focus-visible'), style: s.outlineStyle, width: parseFloat(s.outlineWidth),
                        colour: s.outlineColor, background: getComputedStyle(document.body).backgroundColor}; }"""
        )
        seen.append(active(frame))
        assert ring["visible"] and ring["style"] == "solid" and ring["width"] >= 2, (seen[-1], ring)
        # the ring stands out from the white page (WCAG 1.4.11: 3:1 for what shows focus)
        assert contrast(ring["colour"], "rgb(255, 255, 255)") >= 3, ring
    assert seen == TAB_ORDER
    keyboard.press("Shift+Tab")
    assert active(frame) == "replay-trace"
    # Space and Enter press buttons.
    frame.locator("#copy-code").focus()
    keyboard.press("Space")
    wait_until(lambda: frame.locator("#copied").input_value() == plugin.code(), "Space to copy the code")
    frame.locator("#download-trace").focus()
    keyboard.press("Enter")
    wait_until(lambda: "nothing to save yet" in plugin.text("#notice"), "Enter to press Download trace")
    old = plugin.code()
    frame.locator("#new-code").focus()
    keyboard.press("Enter")
    wait_until(lambda: plugin._safe(plugin.code) not in (old, "…", None), "Enter to make a new code")


def test_replay_dialog_traps_focus_returns_it_and_closes_on_escape(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame, keyboard = plugin.frame, plugin.page.keyboard
    wipe = trace_with([("delete_codap_dataset", {"datasetName": "kept"})])

    def open_dialog() -> None:
        with plugin.page.expect_file_chooser() as chooser:
            frame.locator("#replay-trace").click()
        chooser.value.set_files(wipe)
        wait_until(lambda: frame.locator("#replay-dialog").evaluate("(d) => d.open"), "the replay question")

    open_dialog()
    wait_until(lambda: "Replay it?" in frame.locator("#announcer").inner_text(), "the question announced")
    assert "The dialog lists 1 call." in frame.locator("#announcer").inner_text()
    dialog = frame.get_by_role("dialog", name="Replay this trace?")
    assert dialog.is_visible()
    tree = dialog.aria_snapshot()
    assert '- button "Replay anyway"' in tree and '- button "Cancel"' in tree, tree
    assert "1 call of delete_codap_dataset can change or delete anything" in dialog.inner_text()
    assert frame.locator("#replay-dialog #replay-calls li").all_inner_texts() == ["delete_codap_dataset · kept"]
    assert active(frame) == "cancel-replay"  # the harmless answer first
    assert_no_violations(frame, "replay dialog open")
    inside = "() => document.getElementById('replay-dialog').contains(document.activeElement)"
    stops = []
    for key in ["Tab"] * 4 + ["Shift+Tab"] * 4:
        keyboard.press(key)
        assert frame.evaluate(inside), f"{key} left the dialog"
        stops.append(active(frame))
    assert set(stops) == {"confirm-replay", "cancel-replay", "replay-calls"}, stops
    keyboard.press("Escape")
    wait_until(lambda: not frame.locator("#replay-dialog").evaluate("(d) => d.open"), "Escape to close the dialog")
    assert active(frame) == "replay-trace"
    assert plugin.text("#replay-text").endswith("you cancelled it. Nothing was changed.")
    # Answered with the keyboard: Cancel by Space, focus back on the opener again.
    open_dialog()
    keyboard.press("Space")
    wait_until(lambda: not frame.locator("#replay-dialog").evaluate("(d) => d.open"), "Cancel to close the dialog")
    assert active(frame) == "replay-trace"
    assert plugin.host("count('delete', 'dataContext')") == 0


# --- screen readers ----------------------------------------------------------------------------------------


def test_names_the_code_spelled_and_one_live_region(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame = plugin.frame
    code = plugin.code()
    tree = frame.locator("body").aria_snapshot()
    assert f'img "Pairing code: {spelled(code)}"' in tree, tree
    assert code[:4] not in tree and code[4:] not in tree, "the code is in the tree as a word"
    # Every button on show has a name in the tree (those shown later are checked where they show: the dialog's in
    # its own test).
    named = re.findall(r'- button "([^"]+)"', tree)
    assert named == [
        "Copy code",
        "Copy MCP URL",
        "Copy Claude Desktop config",
        "Copy prompt for HTTP tools",
        "Download trace",
        "Replay trace…",
        "New code",
    ], tree
    assert frame.get_by_role("button").count() == len(named)
    assert re.search(r'list "Activity"', tree), tree
    # shown only during a replay, named already
    assert frame.get_by_role("progressbar", name="Replay progress", include_hidden=True).count() == 1
    live = frame.locator(LIVE).evaluate_all("(els) => els.map(e => e.id)")
    assert live == ["announcer"], live
    assert frame.locator("#announcer").get_attribute("aria-live") == "polite"
    wait_until(lambda: f"Pairing code: {spelled(code)}." in frame.locator("#announcer").inner_text(), "the code said")


def test_a_burst_of_ten_calls_is_a_few_announcements(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame, code = plugin.frame, plugin.code()
    plugin.host("pause()")  # CODAP holds the first call: the ten finish together when it lets go
    ids = [submit(relay_url, code, "get_codap_datasets", {}) for _ in range(9)]
    ids.append(submit(relay_url, code, "export_codap_data", {"datasetName": "absent"}))
    wait_until(lambda: len(plugin.log_entries()) == 10, "the ten calls to reach the plugin")
    listen_to_announcer(frame)
    plugin.host("resume()")
    wait_until(lambda: calls_counted(announcements(frame)) >= 10, "every call announced", timeout=15)
    said = announcements(frame)
    assert calls_counted(said) == 10, said
    assert len(said) <= 3, said  # at most one write per 2 s, after a 0.3 s settle; ten writes without it
    assert any("export_codap_data" in s and "absent" in s for s in said), said
    # A log long enough to scroll: keyboard users can still reach and scroll it.
    assert frame.locator("#log").evaluate("(log) => log.scrollHeight > log.clientHeight")
    assert_no_violations(frame, "a scrolling activity log")


# --- motion, zoom and small frames ------------------------------------------------------------------------

MOVING = """() => [...document.querySelectorAll('*')].filter(el => {
    const s = getComputedStyle(el);
    return s.animationName !== 'none' || s.transitionDuration.split(',').some(d => parseFloat(d) > 0);
}).map(el => el.id || el.tagName)"""

IN_VIEW = "(el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }"

OVERFLOW = """() => {
    const root = document.scrollingElement, width = root.clientWidth;
    const controls = [...document.querySelectorAll('button, textarea, #log, #code, h1, #status')]
        .filter(el => el.getClientRects().length)
        .filter(el => { const r = el.getBoundingClientRect(); return r.left < -0.5 || r.right > width + 0.5; })
        .map(el => el.id || el.dataset.copy || el.tagName);
    return {scroll: root.scrollWidth, width, outside: controls};
}"""


def test_reduced_motion_stops_every_transition(open_plugin: Any, relay_url: str) -> None:
    plugin = open_plugin(relay_url)
    frame = plugin.frame
    plugin.page.emulate_media(reduced_motion="no-preference")
    assert "copy-code" in frame.evaluate(MOVING)  # the buttons fade their hover colour normally
    plugin.page.emulate_media(reduced_motion="reduce")
    assert frame.evaluate(MOVING) == []


@pytest.mark.parametrize(
    ("width", "height"),
    [(320, 600), (190, 300)],
    ids=["reflow_320px", "codap_frame_at_200_percent"],
)
def test_narrow_frames_scroll_only_down(open_plugin: Any, relay_url: str, width: int, height: int) -> None:
    """WCAG 1.4.10 at 320 CSS px, and the plugin's own 380 x 600 frame at 200 % zoom (190 x 300 CSS px): nothing
    scrolls sideways or sticks out, and every control can still be reached and pressed."""
    plugin = open_plugin(relay_url)
    call_tool(relay_url, plugin.code(), "export_codap_data", {"datasetName": "a rather long missing dataset name"})
    frame = plugin.frame
    wait_until(lambda: len(plugin.log_entries()) == 1, "the call in the log")
    plugin.page.evaluate(
        "([w, h]) => Object.assign(document.getElementById('plugin').style, {width: w + 'px', height: h + 'px'})",
        [width, height],
    )
    wait_until(lambda: frame.evaluate("() => innerWidth") == width, "the frame to narrow")
    frame.locator("#copy-code").click()  # shows the copied-text box too
    layout = frame.evaluate(OVERFLOW)
    assert layout["scroll"] <= layout["width"] and layout["outside"] == [], layout
    controls = frame.locator("button:visible, textarea:visible").all()
    assert len(controls) == 8  # the seven buttons of a paired page and the copied-text box
    for control in controls:
        control.scroll_into_view_if_needed(timeout=3000)
        assert control.evaluate(IN_VIEW)
    frame.locator("#new-code").click()  # the last control, pressed with the page scrolled down
    wait_until(lambda: "New code created" in plugin.text("#notice"), "the last control to work")


# --- inside the real CODAP build ---------------------------------------------------------------------------


def test_inside_real_codap(codap: CodapPage) -> None:
    codap.done("create_codap_dataset", {"datasetName": "a11y", "dataType": "sample_students", "recordCount": 5})
    codap.failed("export_codap_data", {"datasetName": "absent"})
    frame = codap.frame
    wait_until(lambda: frame.locator("#log li.state-failed").count() == 1, "the error in the activity log")
    assert_no_violations(frame, "paired inside CODAP, with a call and an error")
    layout = frame.evaluate(OVERFLOW)
    assert layout["scroll"] <= layout["width"] and layout["outside"] == [], layout
    assert frame.get_by_role("img", name=f"Pairing code: {spelled(codap.code())}").is_visible()
