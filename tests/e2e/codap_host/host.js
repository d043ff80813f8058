// The browser side of the CODAP test host: it embeds the plugin given by ?di=<url> (as CODAP does), speaks
// iframe-phone's parent endpoint, and answers from the in-memory model in codap_model.js.
// Tests reach it as window.codapHost: the model's state, pause()/resume() to hold CODAP mid-request.

import { createCodapModel } from "./codap_model.js";

const frame = document.getElementById("plugin");
const model = createCodapModel({
  onFrameResize: ({ width, height }) => {
    frame.style.width = `${width}px`;
    frame.style.height = `${height}px`;
  },
});
const host = { connected: false, pluginReplies: [] };
let held = null; // when paused, requests wait here (tests use it to hold CODAP mid-request)
let nextCall = 1;

function start() {
  const params = new URL(location.href).searchParams;
  const di = new URL(params.get("di"));
  di.searchParams.set("lang", "en"); // CODAP appends these when it loads a plugin
  di.searchParams.set("locale", "en-US");
  const origin = di.origin;
  frame.src = di.href;

  const post = (message) => frame.contentWindow.postMessage(message, origin);
  const respond = (uuid, value) => post({ type: "data-interactive", content: { messageType: "returnValue", uuid, value } });

  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== origin) return;
    const data = typeof event.data === "string" ? JSON.parse(event.data) : event.data;
    if (data?.type === "hello") {
      // a new hello means the plugin page reloaded: calls held for the old page are lost with it
      if (held) held = null;
      host.connected = true;
      post({ type: "hello", origin: location.origin });
      const uuid = `host-${nextCall++}`;
      post({ type: "data-interactive", content: { messageType: "call", uuid, value: { message: "codap-present" } } });
      return;
    }
    if (data?.type !== "data-interactive" || !data.content) return;
    const { messageType, uuid, value } = data.content;
    if (messageType === "returnValue") {
      host.pluginReplies.push(value);
      return;
    }
    if (messageType !== "call") return;
    const run = () => respond(uuid, model.answer(value));
    if (held) held.push(run);
    else run();
  });
}

window.codapHost = {
  state: model.state,
  host,
  pause() {
    held = held ?? [];
  },
  resume() {
    const runs = held ?? [];
    held = null;
    runs.forEach((run) => run());
  },
  dataset: (name) => model.dataset(name),
  count: (action, type) => model.count(action, type),
};

start();
