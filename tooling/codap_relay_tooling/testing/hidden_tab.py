"""CODAP's tab behind another, as in a person's browser: the page hidden, its timers slowed, no animation frames.

- Chromium: Debian's chromium, started here, headed on an X display (``engines.xvfb``), reached only over the
  DevTools protocol: ``PUT /json/new`` opens a tab (in front), ``/json/activate/{id}`` brings one to the front, and a
  WebSocket to a tab's ``webSocketDebuggerUrl`` evaluates in it. Not Playwright: it starts chromium with background
  throttling and renderer backgrounding switched off, and a page it drives counts as visible behind another tab;
  headless pages are never hidden. The switches are the tests' own (``chromium.CHROMIUM_ARGS``, for this closed
  network) without --headless. One browser to a display: Chrome tracks window occlusion on X11 too, and a window
  covered by another browser's is hidden.
- Firefox: Debian's firefox-esr over WebDriver BiDi (``engines.BiDiFirefox``); a tab created and activated in front
  of CODAP's hides it (``browsingContext.create`` and ``activate``), headless too.

What hidden means there, measured with ``TimerProbe`` (Chromium 156, Firefox 153 ESR): document.visibilityState is
"hidden" in CODAP's page and in the plugin's frame; Chromium runs no animation frame at all, and runs timers once a
second, then, once the page has been hidden a minute, a timer set by a timer (a setInterval, a chain of setTimeouts)
at most once a minute: Chrome's intensive wake-up throttling. Its grace is five minutes only for a page still
loading (``--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/10`` shortens that one); a loaded page
such as CODAP gets a fixed minute. Firefox runs timers once a second and animation frames now and then (a few a
minute), without a once-a-minute regime.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from . import web
from .chromium import CHROMIUM_ARGS, chromium_path
from .engines import VIEWPORT, BiDiFirefox, Engine, EngineError, _call, _stop
from .plugin_page import wait_until

# Brings Chrome's grace before once-a-minute timers down to ten seconds for a page hidden while it loads (a loaded
# page's minute is fixed, see above): a page reloaded behind the chat is throttled as soon as it can be.
INTENSIVE_THROTTLING = "--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/10"
# How long a loaded page stays hidden before Chrome runs its chained timers once a minute.
CHROME_GRACE_SECONDS = 60.0
_PLUGIN_FRAME = "/plugin/"

# Counts, in the plugin's frame, each EventSource and WebSocket it makes (every channel the plugin opens or reopens)
# and each time one opens (an EventSource also reconnects by itself, as when a stream function's time is up).
# Kept in the frame's sessionStorage, so a reload of the frame keeps the count. Instrumentation only: the
# constructors still make the browser's own objects.
CHANNEL_COUNTER = """
(() => {
  if (!location.pathname.includes(__FRAME__)) return;
  const key = "codap-relay-test:channels";
  const bump = (kind, url) => {
    try {
      const opened = JSON.parse(sessionStorage.getItem(key) || "[]");
      opened.push({ kind, url: String(url).replace(/([?&](code|token)=)[^&]*/g, "$1…"), at: Date.now() });
      sessionStorage.setItem(key, JSON.stringify(opened));
    } catch (e) {}  // no storage in this frame: nothing is counted
  };
  for (const [name, Native] of [["EventSource", window.EventSource], ["WebSocket", window.WebSocket]]) {
    if (!Native) continue;
    const Counted = function (url, options) {
      bump(name, url);
      const made = new Native(url, options);
      made.addEventListener("open", () => bump(name + " open", url));
      return made;
    };
    Counted.prototype = Native.prototype;
    Object.assign(Counted, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
    window[name] = Counted;
  }
})();
""".replace("__FRAME__", json.dumps(_PLUGIN_FRAME))

_CHANNELS = "() => JSON.parse(sessionStorage.getItem('codap-relay-test:channels') || '[]')"


@dataclass(frozen=True)
class TimerReport:
    """What a page's timers did while probed: when a 1-second setInterval ran (seconds from the probe's start), how
    long the probe ran, whether an animation frame ran, and the page's visibility when read."""

    ticks: list[float]
    span: float
    frames: int
    visibility: str

    def gaps(self) -> list[float]:
        """Seconds between one run and the next, and from the last to the reading."""
        times = [0.0, *self.ticks, self.span]
        return [b - a for a, b in itertools.pairwise(times)]

    def per_minute(self, start: float, end: float | None = None) -> float:
        """How many times a minute the interval ran from ``start`` to ``end`` seconds (the end of the probe)."""
        stop = self.span if end is None else end
        return 60 * sum(1 for t in self.ticks if start <= t < stop) / max(1e-9, stop - start)

    def slowed_at(self, gap: float = 10.0) -> float | None:
        """When the interval first went ``gap`` seconds or more without running (seconds from the start): where
        once-a-second timers became once-a-minute ones. None if it never did."""
        times = [0.0, *self.ticks, self.span]
        return next((a for a, b in itertools.pairwise(times) if b - a >= gap), None)


# A 1-second setInterval (a chain of timers, as the plugin's pings were) and one animation frame asked for.
_PROBE_START = """() => {
  if (window.__timerProbe) clearInterval(window.__timerProbe.timer);
  const probe = { start: performance.now(), ticks: [], frames: 0 };
  probe.timer = setInterval(() => probe.ticks.push(performance.now()), 1000);
  requestAnimationFrame(() => { probe.frames += 1; });
  window.__timerProbe = probe;
  return document.visibilityState;
}"""
_PROBE_READ = """() => {
  const probe = window.__timerProbe;
  if (!probe) return null;
  return { ticks: probe.ticks.map((t) => (t - probe.start) / 1000), span: (performance.now() - probe.start) / 1000,
           frames: probe.frames, visibility: document.visibilityState };
}"""
_PROBE_STOP = "() => { if (window.__timerProbe) clearInterval(window.__timerProbe.timer); delete window.__timerProbe; }"


class HideableTab(Engine):
    """An engine whose CODAP tab can be put behind another tab and brought back."""

    def hide(self) -> None:
        """Open a tab in front of CODAP's (a person switching to the chat); CODAP's page is then hidden."""
        raise NotImplementedError

    def show(self) -> None:
        """Bring CODAP's tab back to the front."""
        raise NotImplementedError

    def visibility(self) -> dict[str, str]:
        """document.visibilityState of CODAP's page and of the plugin's frame."""
        state = "() => document.visibilityState"
        return {"page": str(self.evaluate(state, frame=False)), "frame": str(self.evaluate(state))}

    def wait_visibility(self, state: str, timeout: float = 10) -> None:
        wait_until(lambda: set(self.visibility().values()) == {state}, f"CODAP's page to be {state}", timeout)

    def start_probe(self, *, frame: bool) -> str:
        """Start a TimerProbe in the plugin's frame or CODAP's page; the page's visibility then."""
        return str(self.evaluate(_PROBE_START, frame=frame))

    def read_probe(self, *, frame: bool, stop: bool = True) -> TimerReport:
        raw = self.evaluate(_PROBE_READ, frame=frame)
        if raw is None:
            raise EngineError("no timer probe in that page (it was reloaded?)")
        if stop:
            self.evaluate(_PROBE_STOP, frame=frame)
        ticks = [float(t) for t in raw["ticks"]]
        return TimerReport(ticks, float(raw["span"]), int(raw["frames"]), str(raw["visibility"]))

    def channels(self) -> list[dict[str, Any]]:
        """Every EventSource and WebSocket the plugin's frame made, and each time one opened, in order: ``kind`` is
        "EventSource", "EventSource open", "WebSocket" or "WebSocket open" (see CHANNEL_COUNTER)."""
        opened: list[dict[str, Any]] = self.evaluate(_CHANNELS)
        return opened

    def idle(self, seconds: float) -> None:
        """Wait, keeping the driver's connection read (its events must not pile up)."""
        time.sleep(seconds)


# --- Chromium over plain CDP ----------------------------------------------------------------------------------


class CdpSocket:
    """One DevTools WebSocket: commands by id; events are read past (kept only when asked for)."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self._held = contextlib.ExitStack()
        self._ws = self._held.enter_context(connect(url, max_size=None, open_timeout=10))
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.keep: set[str] = set()

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        end = time.monotonic() + timeout
        while True:
            message = self._read(max(0.1, end - time.monotonic()))
            if message.get("id") != ident:
                continue
            if "error" in message:
                raise EngineError(f"{method}: {message['error']}")
            return message.get("result", {})

    def _read(self, timeout: float) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self._ws.recv(timeout=timeout))
        if message.get("method") in self.keep:
            self.events.append(message)
        return message

    def drain(self, seconds: float) -> None:
        """Read events for ``seconds`` (or until the socket is quiet that long)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            with contextlib.suppress(TimeoutError):
                self._read(left)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._held.close()


class CdpChromium(HideableTab):
    """Debian's chromium, headed on ``display``, its CODAP tab driven over plain CDP."""

    name = "chromium"

    def __init__(self, display: str, *, extra_args: tuple[str, ...] = ()) -> None:
        executable = chromium_path()
        if executable is None:
            raise EngineError("Debian's chromium is not installed (scripts/install-test-deps)")
        self._profile = Path(tempfile.mkdtemp(prefix="codap-relay-chromium-"))
        width, height = VIEWPORT
        args = [a for a in CHROMIUM_ARGS if a != "--headless"]
        command = [
            executable,
            *args,
            "--remote-debugging-port=0",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "--no-default-browser-check",
            INTENSIVE_THROTTLING,
            *extra_args,
            "about:blank",
        ]
        env = {**os.environ, "DISPLAY": display}
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        port_file = self._profile / "DevToolsActivePort"
        try:
            wait_until(lambda: port_file.is_file() and port_file.read_text().strip(), "chromium's DevTools port", 30)
        except AssertionError:
            self.close()
            raise
        self.base = f"http://127.0.0.1:{int(port_file.read_text().split()[0])}"
        self.version = str(web.get(f"{self.base}/json/version").json()["Browser"])
        target = self._new_tab("about:blank")
        self._tab_id = str(target["id"])
        self._front: str | None = None
        self._cdp = CdpSocket(str(target["webSocketDebuggerUrl"]))
        self._cdp.keep = {"Runtime.executionContextCreated", "Runtime.executionContextDestroyed", "Page.loadEventFired"}
        self._cdp.call("Page.enable")
        self._cdp.call("Runtime.enable")
        self._cdp.call("Page.addScriptToEvaluateOnNewDocument", {"source": CHANNEL_COUNTER})

    def _new_tab(self, url: str) -> dict[str, Any]:
        target: dict[str, Any] = web.request("PUT", f"{self.base}/json/new?{quote(url, safe='')}").json()
        return target

    def add_init_script(self, source: str) -> None:
        """A script run in every new document of CODAP's tab (its frames too) before the page's own."""
        self._cdp.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def open(self, url: str) -> None:
        self._cdp.events.clear()
        self._cdp.call("Page.navigate", {"url": url})
        end = time.monotonic() + 60
        while not any(e["method"] == "Page.loadEventFired" for e in self._cdp.events):
            if time.monotonic() > end:
                raise EngineError(f"{url} did not load")
            self._cdp.drain(0.2)

    def _context(self, frame: bool) -> int | None:
        """The execution context of the plugin's frame (its newest document), or None for CODAP's page."""
        if not frame:
            return None
        tree = self._cdp.call("Page.getFrameTree")["frameTree"]
        found: list[str] = []

        def walk(node: dict[str, Any]) -> None:
            if _PLUGIN_FRAME in str(node["frame"].get("url", "")):
                found.append(str(node["frame"]["id"]))
            for child in node.get("childFrames") or []:
                walk(child)

        walk(tree)
        if not found:
            raise EngineError("no plugin frame in the page yet (or it runs in a process of its own)")
        destroyed = {e["params"]["executionContextId"] for e in self._cdp.events if e["method"].endswith("Destroyed")}
        contexts = [
            e["params"]["context"]
            for e in self._cdp.events
            if e["method"] == "Runtime.executionContextCreated"
            and e["params"]["context"].get("auxData", {}).get("frameId") == found[-1]
            and e["params"]["context"].get("auxData", {}).get("isDefault")
            and e["params"]["context"]["id"] not in destroyed
        ]
        if not contexts:
            raise EngineError("the plugin's frame has no script context yet")
        return int(contexts[-1]["id"])

    def evaluate(self, function: str, *args: Any, frame: bool = True) -> Any:
        params: dict[str, Any] = {
            "expression": f"({_call(function)})({json.dumps(json.dumps(list(args)))})",
            "awaitPromise": True,
            "returnByValue": True,
        }
        context = self._context(frame)
        if context is not None:
            params["contextId"] = context
        result = self._cdp.call("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            raise EngineError(str(result["exceptionDetails"].get("text")))
        return self._answer(result["result"].get("value"))

    def click(self, selector: str) -> None:
        where = """(s) => { const e = document.querySelector(s); if (!e) throw new Error("nothing matches " + s);
          e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2]; }"""
        x, y = self.evaluate(where, selector)
        frame_at = """(p) => {
          const f = [...document.querySelectorAll("iframe")].filter((f) => f.src.includes(p)).pop();
          const r = f.getBoundingClientRect(); return [r.left + f.clientLeft, r.top + f.clientTop]; }"""
        left, top = self.evaluate(frame_at, _PLUGIN_FRAME, frame=False)
        for kind in ("mousePressed", "mouseReleased"):
            point = {"x": left + x, "y": top + y, "button": "left", "clickCount": 1}
            self._cdp.call("Input.dispatchMouseEvent", {"type": kind, **point})

    def screenshot(self, path: Path) -> Path:
        """A PNG of CODAP's tab. It makes the browser draw the page: never take one while a test needs it hidden."""
        import base64

        data = self._cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def hide(self) -> None:
        front = self._new_tab("about:blank")
        self._front = str(front["id"])
        web.get(f"{self.base}/json/activate/{self._front}")
        self.wait_visibility("hidden")

    def show(self) -> None:
        web.get(f"{self.base}/json/activate/{self._tab_id}")
        if self._front is not None:
            web.get(f"{self.base}/json/close/{self._front}")
            self._front = None
        self.wait_visibility("visible")

    def idle(self, seconds: float) -> None:
        self._cdp.drain(seconds)

    def close(self) -> None:
        if hasattr(self, "_cdp"):
            self._cdp.close()
        _stop(self._process)
        shutil.rmtree(self._profile, ignore_errors=True)


# --- Firefox over WebDriver BiDi ------------------------------------------------------------------------------


class HideableFirefox(BiDiFirefox, HideableTab):
    """firefox-esr over WebDriver BiDi, with a tab it can put in front of CODAP's."""

    def __init__(self) -> None:
        super().__init__()
        self._front: str | None = None
        self._send("script.addPreloadScript", {"functionDeclaration": f"() => {{ {CHANNEL_COUNTER} }}"})

    def hide(self) -> None:
        self._front = str(self._send("browsingContext.create", {"type": "tab"})["context"])
        self._send("browsingContext.activate", {"context": self._front})
        self.wait_visibility("hidden")

    def show(self) -> None:
        self._send("browsingContext.activate", {"context": self._top})
        if self._front is not None:
            self._send("browsingContext.close", {"context": self._front})
            self._front = None
        self.wait_visibility("visible")


@contextlib.contextmanager
def hideable(engine: str, display: str | None = None) -> Iterator[HideableTab]:
    """A browser whose CODAP tab can be hidden: "chromium" (headed on ``display``) or "firefox"."""
    browser: HideableTab
    if engine == "chromium":
        if display is None:
            raise ValueError("headed chromium needs an X display (engines.xvfb)")
        browser = CdpChromium(display)
    else:
        browser = HideableFirefox()
    try:
        yield browser
    finally:
        browser.close()
