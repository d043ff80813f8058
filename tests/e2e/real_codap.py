"""The real CODAP app (a static production build) for browser tests: find or unpack it, and drive a page of it.

The build comes from ``$CODAP_DIST`` (an unpacked build: a folder with ``index.html``) or from the archive
``../shared/codap/codap-v3.1.0.tar.gz`` beside the checkout, unpacked once into ``.tools/``. Where neither
exists, tests that need it skip with a reason that says how to get one; with ``CODAP_REQUIRED=1`` (set by
``.ci/run``) they fail instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from plugin_page import DEADLINE, new_page, reload_frame, wait_until

from support import ROOT

CODAP_VERSION = "3.1.0"
ARCHIVE = ROOT.parent / "shared" / "codap" / f"codap-v{CODAP_VERSION}.tar.gz"
UNPACKED = ROOT / ".tools" / f"codap-v{CODAP_VERSION}"
HOW_TO_GET = (
    f"the real CODAP build is not here: set CODAP_DIST to an unpacked CODAP v3 build (a folder with index.html), "
    f"or put codap-v{CODAP_VERSION}.tar.gz in {ARCHIVE.parent} (a static build of concord-consortium/codap, "
    f"tag {CODAP_VERSION}: `npm run build` in its v3/ folder, then tar the dist/ folder)"
)
# CODAP's own switches for a page that is ready to use at once.
CODAP_FLAGS = "noEntryModal&hideSplashScreen&noComponentAnimation"

# CODAP draws graph points with WebGL. Headless Chromium on a machine without a GPU runs WebGL in software
# (SwiftShader), where each new graph blocks CODAP's page for 10-25 s ("GPU stall due to ReadPixels") and every
# plugin request waits behind it: that was the 15 s first get_codap_status after a graph. CODAP's own setting
# for such machines, Settings > "Disable graphics acceleration" (persistentState.disableGraphicsAcceleration in
# localStorage), makes it draw points on a 2D canvas instead, as a person on that machine would choose. The
# benchmark measures both ways; the tests use CODAP's setting so that they wait for CODAP, not for SwiftShader.
_NO_GRAPHICS_ACCELERATION = """
if (location.origin === %(origin)s && window.top === window) {
  try {
    const state = JSON.parse(localStorage.getItem("persistentState") || "{}");
    localStorage.setItem("persistentState", JSON.stringify({ ...state, disableGraphicsAcceleration: true }));
  } catch (e) {}
}
"""


def codap_dist() -> Path | None:
    """The folder of an unpacked CODAP build, unpacking the archive on first use; None if there is none."""
    env = os.environ.get("CODAP_DIST")
    if env:
        path = Path(env)
        return path if (path / "index.html").is_file() else None
    if (UNPACKED / "index.html").is_file():
        return UNPACKED
    if not ARCHIVE.is_file():
        return None
    UNPACKED.parent.mkdir(parents=True, exist_ok=True)
    # Unpack beside the target and rename into place, so a concurrent or interrupted run never sees half a build.
    scratch = Path(tempfile.mkdtemp(dir=UNPACKED.parent, prefix=".codap-unpack-"))
    try:
        with tarfile.open(ARCHIVE) as archive:
            archive.extractall(scratch, filter="data")
        (inner,) = [p for p in scratch.iterdir() if (p / "index.html").is_file()]
        try:
            inner.rename(UNPACKED)
        except OSError:  # another run won the race
            if not (UNPACKED / "index.html").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return UNPACKED


def codap_required() -> bool:
    return os.environ.get("CODAP_REQUIRED", "").lower() in ("1", "true", "yes")


# Sends one Data Interactive request from inside the plugin's frame, the way any plugin does (iframe-phone over
# postMessage), and resolves with CODAP's reply. It bypasses the plugin's own code, so tests read what CODAP
# holds through a channel the code under test cannot bend. The plugin ignores replies to uuids it did not send.
_DI_CALL = """
(request) => new Promise((resolve, reject) => {
  const uuid = "test-" + Math.random().toString(36).slice(2) + "-" + Date.now();
  const timer = setTimeout(() => {
    removeEventListener("message", onMessage);
    reject(new Error("CODAP did not answer"));
  }, 20000);
  function onMessage(event) {
    let data = event.data;
    if (typeof data === "string") { try { data = JSON.parse(data); } catch { return; } }
    const content = data && data.type === "data-interactive" && data.content;
    if (!content || content.messageType !== "returnValue" || content.uuid !== uuid) return;
    clearTimeout(timer);
    removeEventListener("message", onMessage);
    resolve(content.value);
  }
  addEventListener("message", onMessage);
  parent.postMessage({ type: "data-interactive", content: { messageType: "call", uuid, value: request } }, "*");
})
"""


def di_call(frame: Any, request: dict[str, Any] | list[dict[str, Any]]) -> Any:
    """One Data Interactive message from ``frame`` (a plugin's frame) to the CODAP page around it; CODAP's reply."""
    return frame.evaluate(_DI_CALL, request)


class CodapPage:
    """One browser page of the real CODAP app with the plugin loaded from ``?di=``."""

    def __init__(self, page: Any, codap_url: str, plugin_url: str, *, console: list[str]) -> None:
        self.page = page
        self.codap_url = codap_url
        self.plugin_url = plugin_url
        self.console = console

    @property
    def relay(self) -> str:
        """The relay that serves the plugin (the plugin talks to the relay it came from)."""
        return self.plugin_url.split("/plugin/", 1)[0]

    @property
    def url(self) -> str:
        return f"{self.codap_url}/?di={quote(self.plugin_url, safe='')}&{CODAP_FLAGS}"

    def open(self, *, wait: bool = True) -> None:
        self.page.goto(self.url)
        if wait:
            self.wait_paired()

    @property
    def frame(self) -> Any:
        """The plugin's frame (CODAP appends ``?lang=…`` to its URL, so it is found by prefix)."""
        base = self.plugin_url.split("?", 1)[0]
        for _ in range(2):
            found = [f for f in self.page.frames if f.url.startswith(base)]
            if found:
                return found[-1]
            # page.frames is Playwright's local view, updated only while the sync API runs its event loop:
            # give it a moment to hear about frames CODAP created since the last call.
            self.page.wait_for_timeout(50)
        raise AssertionError(f"no plugin frame from {base} among {[f.url for f in self.page.frames]}")

    def _safe(self, fn: Any) -> Any:
        try:
            return fn()
        except Exception:  # the frame may not exist yet, or be navigating
            return None

    def text(self, selector: str) -> str:
        return str(self.frame.locator(selector).inner_text())

    def code(self) -> str:
        return self.text("#code").replace("-", "").strip()

    def status(self) -> str:
        return self.text("#status")

    def wait_paired(self, timeout: float = 3 * DEADLINE) -> str:
        """Until the plugin shows a code, its stream is connected and CODAP answered its handshake."""

        def paired() -> bool:
            return self.status() == "Connected" and len(self.code()) == 8 and "connected" in self.text("#codap-status")

        wait_until(
            lambda: self._safe(paired),
            "the plugin to pair inside CODAP",
            timeout,
        )
        return self.code()

    def di(self, request: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """One Data Interactive request to CODAP, sent from the plugin's frame but not through the plugin."""
        return di_call(self.frame, request)

    def ok(self, request: dict[str, Any]) -> Any:
        """A request that must succeed; returns its ``values``."""
        reply = self.di(request)
        assert isinstance(reply, dict) and reply.get("success") is True, f"{json.dumps(request)} -> {reply}"
        return reply.get("values")

    def items(self, dataset: str) -> list[dict[str, Any]]:
        """Every item of a dataset as CODAP holds it: ``[{id, values: {...}}]``."""
        values = self.ok({"action": "get", "resource": f"dataContext[{dataset}].itemSearch[*]"})
        assert isinstance(values, list)
        return values

    def components(self) -> list[dict[str, Any]]:
        values = self.ok({"action": "get", "resource": "componentList"})
        assert isinstance(values, list)
        return values

    def reload_plugin(self) -> None:
        """Reload the plugin's frame alone (CODAP and its document stay), as a person's reload of the frame does."""
        reload_frame(lambda: self.frame)

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        return path


@contextlib.contextmanager
def codap_pages(browser: Any, codap_url: str, *, webgl: bool = False) -> Iterator[Callable[..., CodapPage]]:
    """A factory of real CODAP pages (one browser context each) with the plugin from ``plugin_url``; all are closed
    on exit. ``webgl`` keeps CODAP's default WebGL graphs (software-rendered here: slow, see above)."""
    contexts: list[Any] = []
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(codap_url))

    def factory(
        plugin_url: str,
        *,
        wait: bool = True,
        init_script: str | None = None,
        context_options: dict[str, Any] | None = None,
    ) -> CodapPage:
        context = browser.new_context(**{"viewport": {"width": 1400, "height": 900}, **(context_options or {})})
        contexts.append(context)
        if not webgl:
            context.add_init_script(_NO_GRAPHICS_ACCELERATION % {"origin": json.dumps(origin)})
        if init_script:
            context.add_init_script(init_script)
        page, messages = new_page(context)
        codap = CodapPage(page, codap_url, plugin_url, console=messages)
        codap.open(wait=wait)
        return codap

    try:
        yield factory
    finally:
        for context in contexts:
            context.close()


def settle(seconds: float = 0.2) -> None:
    """A short pause for CODAP to render after a change (screenshots only; never for correctness)."""
    time.sleep(seconds)
