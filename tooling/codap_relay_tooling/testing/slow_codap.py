"""A CODAP that is slow to answer, on demand: an init script for the plugin's frame that holds back CODAP's next
replies to the plugin for a given time, as a CODAP page blocked by drawing its WebGL graphs in software does
(docs/plugin.md, "When CODAP is slow"). That real stall lasts from 2 s to over a minute here depending on the
machine's load, too unsteady for a short test; this one is exact.

Only the plugin's frame is touched, and only CODAP's replies to the plugin's own requests: the replies to a test's
reads (``di_call``, uuids ``test-…``) and to the plugin's notices (busy, idle: ``notice-…``) are never held back.
"""

from __future__ import annotations

from typing import Any

SLOW_CODAP_REPLIES = """
if (location.pathname.includes("/plugin/")) {
  const add = window.addEventListener.bind(window);
  const decided = new WeakMap(); // event -> whether it is held back (one decision for all listeners)
  window.__slowCodap = { ms: 0, times: 0 };
  window.addEventListener = function (type, listener, options) {
    if (type !== "message" || typeof listener !== "function") return add(type, listener, options);
    return add(type, (event) => {
      if (!decided.has(event)) {
        let data = event.data;
        if (typeof data === "string") { try { data = JSON.parse(data); } catch { data = null; } }
        const content = data && data.type === "data-interactive" && data.content;
        const slow = window.__slowCodap;
        const hold = Boolean(content && content.messageType === "returnValue" &&
          !/^(test|notice)-/.test(String(content.uuid)) && slow.times > 0);
        if (hold) slow.times -= 1;
        decided.set(event, hold);
      }
      if (decided.get(event)) setTimeout(() => listener.call(window, event), window.__slowCodap.ms);
      else listener.call(window, event);
    }, options);
  };
}
"""


def slow_codap(frame: Any, ms: int, times: int = 1) -> None:
    """CODAP's next ``times`` replies to the plugin in ``frame`` arrive ``ms`` later (needs SLOW_CODAP_REPLIES)."""
    frame.evaluate("([ms, times]) => { window.__slowCodap = { ms, times }; }", [ms, times])
