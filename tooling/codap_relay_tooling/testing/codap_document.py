"""CODAP's saved document (v2 JSON), read from a test as any plugin subscribed to documents reads it: ``get
document`` from the plugin's frame, and the ``document`` notification CODAP sends back. It bypasses the plugin's
own code, so a test reads what CODAP holds (a graph's bins, its Measure menu's switches) through a channel the
code under test cannot bend."""

from __future__ import annotations

from typing import Any

from .real_codap import CodapPage

# The plugin's frame is subscribed to documents (its interactiveFrame update): CODAP answers `get document` at once
# and sends the document as a notification, which every listener in the frame hears.
_READ = """
() => new Promise((resolve, reject) => {
  const timer = setTimeout(() => { removeEventListener("message", heard); reject(new Error("no document")); }, 20000);
  function heard(event) {
    let data = event.data;
    if (typeof data === "string") { try { data = JSON.parse(data); } catch { return; } }
    const content = data && data.type === "data-interactive" && data.content;
    const v = content && content.messageType === "call" ? content.value : null;
    if (v && v.resource === "document" && v.values && v.values.operation === "newDocumentState") {
      clearTimeout(timer);
      removeEventListener("message", heard);
      resolve(v.values.state);
    }
  }
  addEventListener("message", heard);
  const value = { action: "get", resource: "document" };
  const content = { messageType: "call", uuid: "test-doc-" + Date.now(), value };
  parent.postMessage({ type: "data-interactive", content }, "*");
})
"""


def read_document(codap: CodapPage) -> dict[str, Any]:
    """CODAP's document as it saves it now."""
    state: dict[str, Any] = codap.frame.evaluate(_READ)
    return state


def graph_storage(codap: CodapPage, graph_id: int) -> dict[str, Any]:
    """A graph's componentStorage in CODAP's saved document."""
    for component in read_document(codap).get("components", []):
        if int(component["guid"]) == int(graph_id):
            storage: dict[str, Any] = component["componentStorage"]
            return storage
    raise AssertionError(f"CODAP's document has no component {graph_id}")


def plot_storage(codap: CodapPage, graph_id: int) -> dict[str, Any]:
    """A graph's first plot model as CODAP saves it: its class and storage (bins, adornments, switches)."""
    model: dict[str, Any] = graph_storage(codap, graph_id)["plotModels"][0]
    return {"plotClass": model["plotClass"], **model.get("plotModelStorage", {})}
