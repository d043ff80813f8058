"""The real CODAP app (a static production build) for browser tests: find or unpack it, and drive a page of it.

The build comes from ``$CODAP_DIST`` (an unpacked build: a folder with ``index.html``) or from the archive
``../shared/codap/codap-v3.1.0.tar.gz`` beside the checkout, unpacked once into ``.tools/``. Where neither
exists, tests that need it skip with a reason that says how to get one; with ``REAL_PARTS_REQUIRED=1`` (set by
``.ci/run``) they fail instead, so CI can never pass by skipping them (real_parts.py).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from . import CHECKOUT as ROOT
from .plugin_page import (
    DEADLINE,
    PluginFrameReader,
    call_tool,
    close_tabs,
    new_page,
    ok_result,
    reload_frame,
    wait_until,
)

CODAP_VERSION = "3.1.0"
ARCHIVE = ROOT.parent / "shared" / "codap" / f"codap-v{CODAP_VERSION}.tar.gz"
UNPACKED = ROOT / ".tools" / f"codap-v{CODAP_VERSION}"
HOW_TO_GET = (
    f"set CODAP_DIST to an unpacked CODAP v3 build (a folder with index.html), or put codap-v{CODAP_VERSION}.tar.gz "
    f"in {ARCHIVE.parent}; to build one: clone concord-consortium/codap at tag {CODAP_VERSION}, then `npm ci` and "
    "`npm run build:webpack` in its v3/ folder make v3/dist/ (README, Development)"
)
# CODAP's own switches for a page that is ready to use at once.
CODAP_FLAGS = "noEntryModal&hideSplashScreen&noComponentAnimation"

# Browser variants (switches for the ``browser_args`` fixture) and page variants, as people's browsers are.
#
# Playwright starts chromium with ThirdPartyStoragePartitioning among its --disable-features, so a third-party
# frame gets no storage at all (as with "block third-party cookies" without partitioning): that is the default
# here. Chrome itself partitions third-party storage. Chromium reads only the last --disable-features switch, so
# an empty one after Playwright's turns its list off and gives Chrome's own default back. (Dropping Playwright's
# switch with ignore_default_args would need its exact text, which changes with every Playwright release.)
# Tests check in the frame which behaviour they got, so none can pass under the wrong one.
CHROME_DEFAULT_STORAGE = ["--disable-features="]


LNA_BLOCKED = "net::ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_CHECKS"


def public_origin(url: str) -> list[str]:
    """Switches that make chromium treat ``url`` (an https server on loopback) as a public site, as it treats
    codap.concord.org: Local Network Access then applies to its requests to loopback, and its certificate
    (self-signed) is accepted."""
    host_port = urlsplit(url).netloc
    return [f"--ip-address-space-overrides={host_port}=public", "--ignore-certificate-errors"]


def other_site(url: str) -> str:
    """The same loopback server under another site (localhost for 127.0.0.1), so a frame from the other name is
    third-party, as the plugin is inside codap.concord.org."""
    return url.replace("//127.0.0.1:", "//localhost:", 1)


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost and its key, as PEM files in ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


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

# CODAP keeps each tile's resize borders in place with an animation-frame loop (floating-ui's autoUpdate with
# animationFrame: true), so a CODAP page with the plugin open renders 60 frames a second while nothing changes:
# 0.08 s of CPU a second, idle, in headless Chromium here, more with each tile, for every page a test holds open.
# Test pages run CODAP's animation frames at 10 a second instead: each callback still runs, in order, with the
# frame's time, at most 100 ms late (measured idle: 0.03 s of CPU a second; three real-CODAP test files: 13 % less
# browser CPU). Only CODAP's own page: the plugin's frame runs as shipped. The benchmark's pages, the test of
# CODAP's defaults and the pictures' tests (the plugin's settle check counts on a display's rate) keep the display's
# rate (codap_pages' full_frame_rate).
_TEN_FRAMES_A_SECOND = """
if (location.origin === %(origin)s && window.top === window) {
  const nativeFrame = window.requestAnimationFrame.bind(window);
  const waiting = new Map();
  let nextId = 1;
  let scheduled = false;
  let last = 0;
  const run = (time) => {
    scheduled = false;
    last = performance.now();
    const due = [...waiting.values()];
    waiting.clear();
    for (const callback of due) {
      try { callback(time); } catch (error) { setTimeout(() => { throw error; }); }
    }
  };
  window.requestAnimationFrame = (callback) => {
    const id = nextId++;
    waiting.set(id, callback);
    if (!scheduled) {
      scheduled = true;
      setTimeout(() => nativeFrame(run), Math.max(0, last + 100 - performance.now()));
    }
    return id;
  };
  window.cancelAnimationFrame = (id) => { waiting.delete(id); };
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


_STORAGE_PROBE = """
async () => {
  let sessionStorageUse;
  try {
    sessionStorage.setItem("probe", "1");
    sessionStorage.removeItem("probe");
    sessionStorageUse = "ok";
  } catch (e) {
    sessionStorageUse = String(e);
  }
  return { sessionStorage: sessionStorageUse, firstParty: await document.hasStorageAccess() };
}
"""


def di_call(frame: Any, request: dict[str, Any] | list[dict[str, Any]]) -> Any:
    """One Data Interactive message from ``frame`` (a plugin's frame) to the CODAP page around it; CODAP's reply."""
    return frame.evaluate(_DI_CALL, request)


class CodapPage(PluginFrameReader):
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

    def shown(self, element_id: str) -> str:
        """The text of a message element of the plugin (``notice``, ``storage-note``), or "" while it is hidden."""
        script = "(id) => { const e = document.getElementById(id); return e.hidden ? '' : e.textContent; }"
        return str(self.frame.evaluate(script, element_id))

    def frame_storage(self) -> dict[str, Any]:
        """What the browser lets the plugin's frame keep: whether sessionStorage can be used (or the error it
        throws), and whether the frame has unpartitioned (first-party) storage access."""
        result: dict[str, Any] = self.frame.evaluate(_STORAGE_PROBE)
        return result

    def plugin_failed(self, reason: str) -> bool:
        """Whether loading the plugin's page failed with ``reason`` (e.g. a Local Network Access block)."""
        self.page.wait_for_timeout(50)  # let Playwright deliver the events it holds (it does so only when called)
        base = self.plugin_url.split("?", 1)[0]
        return any(m.startswith(f"requestfailed: {base}") and reason in m for m in self.console)

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

    # --- the LLM's side: tool calls over HTTP, as an HTTP-tool LLM makes them ---------------------------------

    def tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """One tool call through the relay; the relay's whole answer (``status``, ``result`` or ``error``)."""
        return call_tool(self.relay, self.code(), name, args)

    def done(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A tool call that must succeed; its whole result (``content`` with a text first, ``structuredContent``)."""
        return ok_result(self.tool(name, args))

    def failed(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A tool call that must fail; its error (``message``, ``code``, ``data``)."""
        body = self.tool(name, args)
        assert body["status"] == "failed", body
        error: dict[str, Any] = body["error"]
        return error

    def dataset_names(self) -> list[str]:
        """The datasets' names, as CODAP lists them."""
        listed = self.ok({"action": "get", "resource": "dataContextList"})
        return [str(d["name"]) for d in listed]

    def components(self) -> list[dict[str, Any]]:
        values = self.ok({"action": "get", "resource": "componentList"})
        assert isinstance(values, list)
        return values

    def component_ids(self) -> set[int]:
        return {int(c["id"]) for c in self.components()}

    def close_components(self, keep: Collection[int] = ()) -> int:
        """Close every component but the plugin's own frame and those in ``keep`` (the datasets stay); how many
        were closed. CODAP's work for each change grows with the components open: a dataset and a graph cost 1.7 s
        of the browser's CPU in an empty document and 6.5 s beside 16 tables and graphs. A page that a module's
        tests share is tidied this way after each test (tests/e2e/conftest.py)."""
        plugin = int(self.ok({"action": "get", "resource": "interactiveFrame"})["id"])
        others = sorted(self.component_ids() - set(keep) - {plugin})
        if others:
            replies = self.di([{"action": "delete", "resource": f"component[{cid}]"} for cid in others])
            assert all(r.get("success") for r in replies), replies
        return len(others)

    def drop_what_was_made(self, datasets: Collection[str], components: Collection[int]) -> None:
        """Delete the datasets not in ``datasets`` and close the components not in ``components``: a test's own, so
        the next test on a shared page starts from a small document (CODAP gives and rebuilds the whole document for
        each setting its plugin API cannot reach). The components go first: a dataset deleted under an open graph
        detached the plugin's frame in a run here."""
        made = [n for n in self.dataset_names() if n not in datasets]
        if made:
            self.close_components(keep=components)
            self.di([{"action": "delete", "resource": f"dataContext[{n}]"} for n in made])

    def reload_plugin(self) -> None:
        """Reload the plugin's frame alone (CODAP and its document stay), as a person's reload of the frame does."""
        reload_frame(lambda: self.frame)

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        return path


def blocked_then_allowed(open_codap: Any, plugin_url: str, public_codap: str) -> CodapPage:
    """The README's local path as a person meets it: CODAP from a public https site, the plugin on loopback.
    Until the site may "access other apps and services on this device" (Local Network Access), Chrome blocks the
    plugin's frame and nothing of the plugin runs. Headless chromium cannot show that question and answers as a
    person's Block does ("denied"). The person then allows it in the site's settings and reloads CODAP, as the
    README says; returns the page, paired."""
    codap: CodapPage = open_codap(plugin_url, codap=public_codap, wait=False)
    wait_until(lambda: codap.plugin_failed(LNA_BLOCKED), "Chrome to block the plugin's frame", 30)
    state = codap.page.evaluate("async () => (await navigator.permissions.query({name: 'loopback-network'})).state")
    assert state == "denied", state
    codap.page.context.grant_permissions(["local-network-access"], origin=public_codap)  # "Apps on device: Allow"
    # The reload is over once the plugin pairs (wait_paired's own deadline): waiting for the page's load event
    # first (Playwright's default, 30 s) only added a second, shorter deadline that a loaded machine overran.
    codap.page.reload(wait_until="commit")
    codap.wait_paired()
    return codap


@contextlib.contextmanager
def codap_pages(
    browser: Any, codap_url: str, *, webgl: bool = False, full_frame_rate: bool = False
) -> Iterator[Callable[..., CodapPage]]:
    """A factory of real CODAP pages (one browser context each) with the plugin from ``plugin_url``; all are closed
    on exit. ``codap`` serves CODAP from another base URL than ``codap_url`` (https, another site);
    ``webgl`` keeps CODAP's default WebGL graphs (software-rendered here: slow, see above); ``full_frame_rate``
    its animation frames at the display's rate (the benchmark's pages)."""
    contexts: list[Any] = []

    def factory(
        plugin_url: str,
        *,
        wait: bool = True,
        init_script: str | None = None,
        context_options: dict[str, Any] | None = None,
        codap: str | None = None,
    ) -> CodapPage:
        base = codap or codap_url
        context = browser.new_context(**{"viewport": {"width": 1400, "height": 900}, **(context_options or {})})
        contexts.append(context)
        origin = {"origin": json.dumps("{0.scheme}://{0.netloc}".format(urlsplit(base)))}
        if not webgl:
            context.add_init_script(_NO_GRAPHICS_ACCELERATION % origin)
        if not full_frame_rate:
            context.add_init_script(_TEN_FRAMES_A_SECOND % origin)
        if init_script:
            context.add_init_script(init_script)
        page, messages = new_page(context)
        # A frame the browser refuses (Local Network Access) leaves no console message: record failed loads too.
        page.on("requestfailed", lambda r: messages.append(f"requestfailed: {r.url} {r.failure}"))
        codap_page = CodapPage(page, base, plugin_url, console=messages)
        codap_page.open(wait=wait)
        return codap_page

    try:
        yield factory
    finally:
        for context in contexts:
            close_tabs(context)


def animation_frames(page: Any, seconds: float = 1.0) -> int:
    """How many animation frames CODAP's page ran in ``seconds`` (a requestAnimationFrame loop of its own)."""
    count: int = page.evaluate(
        """(ms) => new Promise((resolve) => {
            let frames = 0;
            const end = performance.now() + ms;
            const tick = (time) => { frames += 1; if (time < end) requestAnimationFrame(tick); else resolve(frames); };
            requestAnimationFrame(tick);
        })""",
        seconds * 1000,
    )
    return count


def settle(seconds: float = 0.2) -> None:
    """A short pause for CODAP to render after a change (screenshots only; never for correctness)."""
    time.sleep(seconds)
