"""Firefox and WebKit for the browser tests, each behind one small driver-neutral interface (``Engine``): open a
URL, evaluate JavaScript in the plugin's frame or the top page, click in the frame, reload the frame, screenshot.

- Firefox: Debian's ``firefox-esr``, driven over WebDriver BiDi directly (Debian ships no geckodriver): started
  headless with ``--remote-debugging-port=0`` on a fresh, empty profile; the WebSocket URL is read from its stderr.
- WebKit: Debian's ``webkit2gtk-driver`` (WebKitWebDriver, classic W3C WebDriver over HTTP) and the MiniBrowser it
  starts, on a display of its own (``Xvfb``).

Each runs with the browser's shipped privacy defaults unless a test asks for storage to be blocked; what each
launch changes is in ``FIREFOX_PREFS`` / ``WEBKIT_ARGS``, and tests check in the frame which storage behaviour
they got. Install the browsers with ``scripts/install-test-deps``.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from . import system_packages, web
from .plugin_page import wait_until
from .real_codap import _DI_CALL, _STORAGE_PROBE, CODAP_FLAGS
from .servers import free_port

FIREFOX = "firefox-esr"
WEBKIT_DRIVER = "WebKitWebDriver"
# Where Debian's libwebkit2gtk-4.1-0 puts MiniBrowser (under the multiarch folder: x86_64-linux-gnu, aarch64-…).
MINIBROWSER = "MiniBrowser"


def minibrowser() -> str:
    """MiniBrowser's path, looked up when it is needed: apt may install it after this module is imported."""
    return next(iter(sorted(glob.glob("/usr/lib/*/webkit2gtk-4.1/MiniBrowser"))), MINIBROWSER)


XVFB = "Xvfb"
VIEWPORT = (1400, 900)

# Firefox's storage settings per variant, written to the fresh profile's user.js. "default" writes nothing: a
# profile as a new user has it (Total Cookie Protection on). Firefox's remote agent itself applies its
# "recommended preferences" when started for automation (updates, telemetry, first-run pages off;
# privacy.trackingprotection.enabled=false, which is already the default outside private windows); none touches
# cookies or storage partitioning.
FIREFOX_PREFS: dict[str, dict[str, Any]] = {
    "default": {},
    # Settings > Privacy > Custom > Cookies: "All cross-site cookies": third-party frames get no storage at all.
    # (cookieBehavior=2, "All cookies", blocks CODAP's own first-party localStorage too: CODAP's page throws a
    # SecurityError and stays blank, with no plugin frame at all, so that setting cannot run a plugin.)
    "blocked": {"network.cookie.cookieBehavior": 1},
}
# MiniBrowser's switches. WebKitGTK's own defaults leave Intelligent Tracking Prevention off, which no user has:
# Safari and GNOME Web (Epiphany) ship with it on, so it is turned on. MiniBrowser's cookie policy default is
# "no-third-party", as Safari's and GNOME Web's. There is no storage-blocked variant: WebKitGTK has no setting for
# WebCore's storage blocking policy (Safari's "Block all cookies" sets it through private preferences), and its
# cookie policy "never" (--cookies-policy=never) governs cookies only: a cross-site frame keeps partitioned
# sessionStorage under it.
WEBKIT_ARGS = ["--enable-itp"]


def _call(function: str) -> str:
    """A function that runs ``function`` (its source) on JSON-text arguments and answers JSON text, so both
    protocols pass strings only: ``{"ok": value}`` or ``{"error": message}``. The source is part of the script the
    driver compiles (not eval'd in the page, which the relay's CSP forbids)."""
    return f"""async (argsJson) => {{
  try {{
    const value = await ({function})(...JSON.parse(argsJson));
    return JSON.stringify({{ ok: value === undefined ? null : value }});
  }} catch (e) {{
    return JSON.stringify({{ error: String((e && e.stack) || e) + " " + String(e) }});
  }}
}}"""


# The plugin's frame: an iframe of CODAP's page whose URL has /plugin/ in it (CODAP adds ?lang=… to the URL).
_PLUGIN_FRAME = "/plugin/"


class EngineError(AssertionError):
    """The browser or its driver refused a command (or the page's script threw)."""


class Engine(ABC):
    """One browser, driven the same way whatever its protocol. Methods act on its one tab."""

    name: str
    version: str

    @abstractmethod
    def open(self, url: str) -> None:
        """Navigate the tab to ``url`` and wait for its load."""

    @abstractmethod
    def evaluate(self, function: str, *args: Any, frame: bool = True) -> Any:
        """Call the JavaScript function ``function`` (its source) with JSON ``args`` in the plugin's frame (or the
        top page); its JSON result, after awaiting a promise."""

    @abstractmethod
    def click(self, selector: str) -> None:
        """A real pointer click (the driver's input, not element.click()) on ``selector`` in the plugin's frame."""

    @abstractmethod
    def screenshot(self, path: Path) -> Path:
        """A PNG of the tab's viewport."""

    @abstractmethod
    def close(self) -> None: ...

    def reload_frame(self) -> None:
        """Reload the plugin's frame alone (CODAP and its document stay), as a person's reload of the frame does."""
        self.evaluate("() => { window.__beforeReload = true; setTimeout(() => location.reload(), 0); }")
        end = time.monotonic() + 20
        while time.monotonic() < end:
            with contextlib.suppress(EngineError):
                if self.evaluate("() => document.readyState !== 'loading' && !window.__beforeReload"):
                    return
            time.sleep(0.05)
        raise EngineError("the plugin's frame did not reload")

    @staticmethod
    def _answer(raw: Any) -> Any:
        if not isinstance(raw, str):
            raise EngineError(f"the page answered {raw!r}")
        answer = json.loads(raw)
        if "error" in answer:
            raise EngineError(answer["error"])
        return answer["ok"]


# --- Firefox over WebDriver BiDi ---------------------------------------------------------------------------


class BiDiFirefox(Engine):
    """Debian's firefox-esr, headless, on a fresh profile, driven over WebDriver BiDi (one WebSocket)."""

    name = "firefox"

    def __init__(self, *, storage: str = "default") -> None:
        from websockets.sync.client import connect

        self._profile = Path(tempfile.mkdtemp(prefix="codap-relay-firefox-"))
        prefs = "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in FIREFOX_PREFS[storage].items())
        if prefs:
            (self._profile / "user.js").write_text(prefs)
        command = [FIREFOX, "--headless", "--remote-debugging-port=0", "--no-remote", "--profile", str(self._profile)]
        env = {**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"}
        self._process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)
        self._stderr: list[str] = []
        found = threading.Event()
        url: list[str] = []

        def read_stderr() -> None:  # drained for the browser's whole life, so it never blocks on a full pipe
            assert self._process.stderr is not None
            for line in iter(self._process.stderr.readline, b""):
                text = line.decode(errors="replace")
                self._stderr.append(text)
                match = re.search(r"WebDriver BiDi listening on (ws://\S+)", text)
                if match and not found.is_set():
                    url.append(match.group(1))
                    found.set()

        threading.Thread(target=read_stderr, daemon=True).start()
        if not found.wait(30):
            self.close()
            raise EngineError(f"firefox did not start WebDriver BiDi: {''.join(self._stderr)[-2000:]}")
        # Held through an ExitStack: websockets wants its connection used as a context manager.
        self._held = contextlib.ExitStack()
        self._ws = self._held.enter_context(connect(f"{url[0]}/session", max_size=None, open_timeout=10))
        self._next = 0
        session = self._send("session.new", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": False}}})
        self.version = str(session["capabilities"]["browserVersion"])
        tree = self._send("browsingContext.getTree", {"maxDepth": 0})
        self._top = str(tree["contexts"][0]["context"])
        width, height = VIEWPORT
        self._send(
            "browsingContext.setViewport", {"context": self._top, "viewport": {"width": width, "height": height}}
        )

    def _send(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        end = time.monotonic() + timeout
        while True:
            message = json.loads(self._ws.recv(timeout=max(0.1, end - time.monotonic())))
            if message.get("id") != ident:
                continue  # an event (none is subscribed) or a late answer
            if message.get("type") == "error":
                raise EngineError(f"{method}: {message.get('error')}: {message.get('message')}")
            return message["result"]

    def _plugin_context(self) -> str:
        tree = self._send("browsingContext.getTree", {"root": self._top})
        found: list[str] = []

        def walk(contexts: list[dict[str, Any]]) -> None:
            for context in contexts:
                if _PLUGIN_FRAME in str(context.get("url", "")):
                    found.append(str(context["context"]))
                walk(context.get("children") or [])

        walk(tree["contexts"][0].get("children") or [])
        if not found:
            raise EngineError("no plugin frame in the page yet")
        return found[-1]

    def open(self, url: str) -> None:
        self._send("browsingContext.navigate", {"context": self._top, "url": url, "wait": "complete"})

    def evaluate(self, function: str, *args: Any, frame: bool = True) -> Any:
        context = self._plugin_context() if frame else self._top
        result = self._send(
            "script.callFunction",
            {
                "functionDeclaration": _call(function),
                "arguments": [{"type": "string", "value": json.dumps(args)}],
                "target": {"context": context},
                "awaitPromise": True,
            },
        )
        if result.get("type") == "exception":
            raise EngineError(str(result.get("exceptionDetails", {}).get("text")))
        return self._answer(result["result"].get("value"))

    def click(self, selector: str) -> None:
        # BiDi's pointer move does not scroll (WebDriver classic's element click does): a notice above the button
        # can push it below the frame's fold, and the move would fail "out of bounds"
        self.evaluate("(s) => document.querySelector(s)?.scrollIntoView({block: 'center'})", selector)
        context = self._plugin_context()
        located = self._send(
            "browsingContext.locateNodes",
            {"context": context, "locator": {"type": "css", "value": selector}, "maxNodeCount": 1},
        )
        if not located["nodes"]:
            raise EngineError(f"nothing matches {selector} in the plugin's frame")
        node = {"sharedId": located["nodes"][0]["sharedId"]}
        pointer = [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": {"type": "element", "element": node}},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]
        actions = [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": pointer}]
        self._send("input.performActions", {"context": context, "actions": actions})

    def screenshot(self, path: Path) -> Path:
        data = self._send("browsingContext.captureScreenshot", {"context": self._top})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._send("browser.close", {}, timeout=10)
        with contextlib.suppress(Exception):
            self._held.close()
        _stop(self._process)
        shutil.rmtree(self._profile, ignore_errors=True)


# --- WebKit over classic WebDriver -------------------------------------------------------------------------


class WebDriverWebKit(Engine):
    """MiniBrowser (WebKitGTK) through WebKitWebDriver, on the X display ``display``."""

    name = "webkit"

    def __init__(self, display: str) -> None:
        port = free_port()
        env = {**os.environ, "DISPLAY": display}
        self._process = subprocess.Popen(
            [WEBKIT_DRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        self._http = web.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        end = time.monotonic() + 20
        while True:
            with contextlib.suppress(httpx.TransportError):
                if self._http.get("/status").status_code == 200:
                    break
            if time.monotonic() > end or self._process.poll() is not None:
                self.close()
                raise EngineError("WebKitWebDriver did not start")
            time.sleep(0.05)
        options = {"binary": minibrowser(), "args": ["--automation", *WEBKIT_ARGS]}
        capabilities = {"alwaysMatch": {"browserName": "MiniBrowser", "webkitgtk:browserOptions": options}}
        created = self._command("POST", "/session", {"capabilities": capabilities}, session=False)
        self._session = str(created["sessionId"])
        self.version = str(created["capabilities"].get("browserVersion", "?"))
        width, height = VIEWPORT
        self._command("POST", "/window/rect", {"width": width, "height": height})
        self._in_frame = False

    def _command(self, method: str, path: str, body: dict[str, Any] | None = None, *, session: bool = True) -> Any:
        url = f"/session/{self._session}{path}" if session else path
        response = self._http.request(method, url, json=body if method == "POST" else None)
        value = response.json().get("value")
        if response.status_code != 200:
            raise EngineError(f"{method} {path}: {value}")
        return value

    def _to_top(self) -> None:
        self._command("POST", "/frame", {"id": None})
        self._in_frame = False

    def _to_plugin(self) -> None:
        """Make the plugin's iframe the current browsing context (found afresh: CODAP may replace the frame)."""
        self._to_top()
        script = "return [...document.querySelectorAll('iframe')].filter(f => f.src.includes(arguments[0])).pop()"
        element = self._command("POST", "/execute/sync", {"script": script, "args": [_PLUGIN_FRAME]})
        if not element:
            raise EngineError("no plugin frame in the page yet")
        self._command("POST", "/frame", {"id": element})
        self._in_frame = True

    def open(self, url: str) -> None:
        self._to_top()
        self._command("POST", "/url", {"url": url})

    def evaluate(self, function: str, *args: Any, frame: bool = True) -> Any:
        if frame:
            self._to_plugin()
        elif self._in_frame:
            self._to_top()
        script = f"const done = arguments[1]; ({_call(function)})(arguments[0]).then(done);"
        raw = self._command("POST", "/execute/async", {"script": script, "args": [json.dumps(args)]})
        return self._answer(raw)

    def click(self, selector: str) -> None:
        self._to_plugin()
        element = self._command("POST", "/element", {"using": "css selector", "value": selector})
        element_id = next(iter(element.values()))
        self._command("POST", f"/element/{element_id}/click", {})

    def screenshot(self, path: Path) -> Path:
        self._to_top()
        data = self._command("GET", "/screenshot")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if getattr(self, "_session", None):
                self._command("DELETE", "")
        self._http.close()
        _stop(self._process)


# --- processes ---------------------------------------------------------------------------------------------


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# The real part (codap_relay_tooling.testing.real_parts) each program is.
PART = {FIREFOX: "Firefox", WEBKIT_DRIVER: "WebKit's driver", MINIBROWSER: "WebKit's driver", XVFB: "Xvfb"}


def missing(engine: str) -> list[str]:
    """The programs ``engine`` needs that are not installed here (empty when it can run; while apt still installs
    them, this waits for it)."""
    system_packages.wait()
    needed = {"firefox": [FIREFOX], "webkit": [WEBKIT_DRIVER, minibrowser(), XVFB]}[engine]
    return [p for p in needed if shutil.which(p) is None and not Path(p).is_file()]


@contextlib.contextmanager
def xvfb() -> Iterator[str]:
    """A virtual X display of its own (Xvfb picks a free display number and tells it on a pipe); yields ``:N``."""
    read, write = os.pipe()
    width, height = VIEWPORT
    process = subprocess.Popen(
        [XVFB, "-displayfd", str(write), "-screen", "0", f"{width + 100}x{height + 200}x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise EngineError("Xvfb did not start")
        yield f":{number}"
    finally:
        _stop(process)


@contextlib.contextmanager
def launch(engine: str, *, storage: str = "default", display: str | None = None) -> Iterator[Engine]:
    """One browser of ``engine`` ("firefox" or "webkit") with ``storage`` ("default", or "blocked" for Firefox's
    third-party storage blocked); WebKit needs
    an X ``display`` (see ``xvfb``). Closed on exit."""
    browser: Engine
    if engine == "firefox":
        browser = BiDiFirefox(storage=storage)
    else:
        if display is None:
            raise ValueError("WebKit needs an X display")
        if storage != "default":
            raise ValueError("WebKitGTK cannot block storage (see WEBKIT_ARGS)")
        browser = WebDriverWebKit(display)
    try:
        yield browser
    finally:
        browser.close()


# --- the real CODAP in one engine's tab --------------------------------------------------------------------

# What the plugin shows: status pill, code, CODAP handshake, notice and storage note ("" while hidden).
_SHOWN = """() => {
  const text = (id) => { const e = document.getElementById(id); return !e || e.hidden ? "" : e.textContent; };
  return { status: text("status"), code: text("code").replace("-", "").trim(), codap: text("codap-status"),
           notice: text("notice"), storageNote: text("storage-note") };
}"""

# The plugin's own end of its session (DELETE with its browser token, as relay.js's endSession sends it), made
# in its frame with the session it stored; used where the browser lets it store one.
_END_STORED_SESSION = """async (code) => {
  const key = Object.keys(sessionStorage).find((k) => k.endsWith(":session"));
  const session = JSON.parse(sessionStorage.getItem(key));
  if (session.code !== code) throw new Error("the stored session is not the one shown");
  const response = await fetch(new URL("../api/sessions/" + code, location.href),
    { method: "DELETE", headers: { Authorization: "Bearer " + session.token } });
  return response.status;
}"""


class CodapTab:
    """The real CODAP app at ``codap_url`` in ``engine``'s tab, with the plugin from ``plugin_url`` (``?di=``)."""

    def __init__(self, engine: Engine, codap_url: str, plugin_url: str) -> None:
        self.engine = engine
        self.codap_url = codap_url
        self.plugin_url = plugin_url

    @property
    def relay(self) -> str:
        return self.plugin_url.split("/plugin/", 1)[0]

    def open(self) -> str:
        """Open CODAP with the plugin and wait until it is paired; its code."""
        self.engine.open(f"{self.codap_url}/?di={quote(self.plugin_url, safe='')}&{CODAP_FLAGS}")
        return self.wait_paired()

    def shown(self) -> dict[str, str]:
        """What the plugin shows now (see ``_SHOWN``)."""
        result: dict[str, str] = self.engine.evaluate(_SHOWN)
        return result

    def wait_paired(self, other_than: str | None = None, timeout: float = 60) -> str:
        """Until the plugin shows a code (not ``other_than``), its stream is connected and CODAP answered its
        handshake; the code."""

        def paired() -> str | None:
            with contextlib.suppress(EngineError):
                now = self.shown()
                code = now["code"]
                if now["status"] == "Connected" and len(code) == 8 and "connected" in now["codap"]:
                    return code if code != other_than else None
            return None

        code: str = wait_until(paired, f"the plugin to pair inside CODAP in {self.engine.name}", timeout)
        return code

    def frame_storage(self) -> dict[str, Any]:
        """What the browser lets the plugin's frame keep (see real_codap.CodapPage.frame_storage)."""
        result: dict[str, Any] = self.engine.evaluate(_STORAGE_PROBE)
        return result

    def di(self, request: dict[str, Any]) -> Any:
        """One Data Interactive request to CODAP, sent from the plugin's frame but not through the plugin."""
        return self.engine.evaluate(_DI_CALL, request)

    def ok(self, request: dict[str, Any]) -> Any:
        reply = self.di(request)
        assert isinstance(reply, dict) and reply.get("success") is True, f"{json.dumps(request)} -> {reply}"
        return reply.get("values")

    def items(self, dataset: str) -> list[dict[str, Any]]:
        values = self.ok({"action": "get", "resource": f"dataContext[{dataset}].itemSearch[*]"})
        assert isinstance(values, list)
        return values

    def end_stored_session(self, code: str) -> int:
        """End the session as the plugin does (DELETE with its stored browser token); the relay's status."""
        status: int = self.engine.evaluate(_END_STORED_SESSION, code)
        return status
