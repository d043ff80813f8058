// @ts-check
// Wiring: CODAP handshake, the session (session.js, kept across reloads where the browser allows storage), tools, replay, UI.

import { pluginIdentity } from "./apps.js";
import { CodapPhone } from "./codap.js";
import { DrawWatch, drawnCall } from "./drawing.js";
import { withBusySignal } from "./busy.js";
import { BlockWatch, slowNotes, withCodapWaits } from "./slow.js";
import { plural } from "./format.js";
import { canvasRaster } from "./imaging.js";
import { limitMsFrom, relayBaseFrom } from "./page_url.js";
import { CALL_TIMEOUT_MS, RelayClient, RelayHttpError, newTabId } from "./relay.js";
import { Replayer } from "./replay.js";
import { claudeDesktopConfig, httpPrompt, mcpUrl } from "./snippets.js";
import { SessionController } from "./session.js";
import { PluginStore, openStorage } from "./storage.js";
import { createTools, loadManifest } from "./tools/index.js";
import { MAX_TRACE_BYTES, buildTrace, traceFileName } from "./trace.js";
import { createUI } from "./ui.js";
import { VERSION } from "./version.js";

/**
 * @import {CodapNotification, Session} from "./types.js"
 * @import {Runner} from "./runner.js"
 */

const FRAME = { width: 380, height: 600 };

const params = new URL(location.href).searchParams;
const relayBase = relayBaseFrom(location);
const watchdogMs = limitMsFrom(params, "watchdog", 45);
const handshakeMs = limitMsFrom(params, "handshake", 15);
const callMs = limitMsFrom(params, "calls", CALL_TIMEOUT_MS / 1000);
const ui = createUI();
const client = new RelayClient(relayBase, undefined, { callMs });
const identity = pluginIdentity(relayBase);
client.identity = identity.key; // apps connected through OAuth follow this browser's key to each new code
const storage = openStorage(globalThis);
const store = new PluginStore(storage.storage, relayBase);

// CODAP's notifications to the plugin, heard by the tools that wait for one (the journal's document snapshots).
/** @type {Set<(value: CodapNotification) => void>} */
const listeners = new Set();
// What the person reads while CODAP is slow, or after it stopped this page (slow.js).
const hidden = () => document.visibilityState === "hidden"; // CODAP's tab is behind another (drawing.js)
const notes = slowNotes({ show: (text) => ui.codapSlow(text), slowPending: () => phone.slowPending, hidden });
const blocks = new BlockWatch({ win: window, onBlock: notes.onBlock });
// Whether CODAP has drawn what it holds (drawing.js): every change to CODAP, this plugin's or one CODAP tells of,
// needs drawing again, which a hidden tab does not do.
const drawing = new DrawWatch();
const phone = new CodapPhone({
  win: window,
  onNotification: (value) => {
    // A notice of a change (data, selection, components) needs drawing again. CODAP asking for the plugin's state
    // is none, and its copy of the document after a change (newDocumentState) follows a change noticed already.
    if (value?.action !== "get" && value?.resource !== "document") drawing.changed();
    for (const listener of listeners) listener(value);
  },
  onSlow: notes.onSlow,
});
// Each changing message counts as a change to be drawn (drawing.js).
const callCodap = drawnCall((request) => phone.call(request), drawing);
/** @param {(value: CodapNotification) => void} listener */
const listen = (listener) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
const manifest = await loadManifest();
const TOOLS = manifest.tools;
const tools = withBusySignal(
  withCodapWaits(
    createTools(
      {
        call: callCodap,
        notice: (request, waitMs) => phone.notify(request, waitMs),
        tell: (text) => ui.notice(text),
        pluginVersion: VERSION,
        raster: canvasRaster(),
        listen,
        drawing,
      },
      manifest,
    ),
    phone,
    { blocks, hidden },
  ),
  phone,
  globalThis,
  hidden,
);

const tab = newTabId(); // this page's id at the relay: pagehide detaches the streams opened under it
// CODAP v3 reloads a plugin's frame once, right after the handshake, to add its language (session.js frameSettled).
const reloadExpected = phone.embedded && !params.has("locale");
// The session, its channels and its runner (session.js).
const controller = new SessionController({
  client,
  store,
  persistent: storage.persistent,
  ui,
  tools,
  manifest,
  relayBase,
  watchdogMs,
  tab,
  frame: { reloadExpected, whenConnected: () => phone.whenConnected(), handshakeMs },
});
listen((notice) => controller.hear(notice));
const replayer = new Replayer({
  store,
  runner: () => /** @type {Runner} */ (controller.runner), // a replay starts once there is one (replayFile)
  tools: TOOLS,
  readOnly: manifest.readOnly,
  destructive: manifest.destructive,
  onProgress: (view) => ui.setReplay(view),
  persistent: storage.persistent,
});

const MEMORY_ONLY =
  "This browser blocks third-party storage, so the code lives in this page only. Reloading the plugin or CODAP " +
  "ends this code and shows a new one for your LLM. To keep it across reloads, allow third-party cookies for " +
  "this CODAP site.";

function setupFrame() {
  if (!phone.embedded) {
    ui.setCodapStatus("not inside CODAP (open it with codap.concord.org/app/?di=<this URL>)");
    return;
  }
  phone.start();
  blocks.start();
  setTimeout(() => {
    if (phone.connected) return;
    ui.setCodapStatus("no answer yet. Is this page open inside CODAP? If this stays, reload CODAP.");
  }, handshakeMs);
  phone.whenConnected().then(async () => {
    ui.setCodapStatus("connected");
    try {
      await phone.call({
        action: "update",
        resource: "interactiveFrame",
        values: {
          name: "codap-relay",
          title: "CODAP Relay",
          version: VERSION,
          dimensions: FRAME,
          preventDataContextReorg: false,
          // CODAP sends its document to a subscribed plugin (the journal's restore points) and keeps the
          // plugin's own window as it is when a document is restored.
          subscribeToDocuments: true,
        },
      });
    } catch {
      // the frame keeps CODAP's default title and size; the tools still work
    }
  });
}

/** @param {string} text */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // CODAP's iframe may not grant clipboard-write; fall back to a selected textarea + execCommand
    const area = /** @type {HTMLTextAreaElement} */ (document.getElementById("copied"));
    area.hidden = false;
    area.value = text;
    area.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    }
  }
}

/** Save this tab's calls (every session it had, while the relay keeps their logs) as a trace file. */
async function downloadTrace() {
  const sessions = [...store.history(), ...(controller.session ? [controller.session] : [])];
  /** @type {import("./types.js").TraceEntry[]} */
  const relayed = [];
  let gone = 0;
  for (const { code, token } of sessions) {
    try {
      relayed.push(...(await client.traceEntries(code, token)));
    } catch (err) {
      if (err instanceof RelayHttpError && err.status === 404) {
        gone += 1; // ended longer ago than the relay keeps logs: not asked for again
        store.forgetHistory(code);
        continue;
      }
      ui.notice(`The trace could not be read from the relay (${/** @type {Error} */ (err).message}). Try again in a moment.`);
      return;
    }
  }
  const trace = buildTrace({ relayed, replayed: store.replayed(), pluginVersion: VERSION });
  const lost = gone ? ` The calls made under ${plural(gone, "earlier code")} are no longer kept by the relay.` : "";
  if (trace.calls.length === 0) {
    ui.notice(`There is nothing to save yet: no calls were made in this tab.${lost}`);
    return;
  }
  const name = traceFileName();
  ui.saveFile(name, JSON.stringify(trace, null, 1));
  ui.notice(`Saved ${name} with ${plural(trace.calls.length, "call")}.${lost}`);
}

/** @param {File} file */
async function replayFile(file) {
  if (file.size > MAX_TRACE_BYTES) {
    const limit = `${MAX_TRACE_BYTES / 1024 / 1024} MB`;
    ui.setReplay({ outcome: "refused", message: `${file.name} is larger than a trace can be (${limit}). Nothing was changed.` });
    return;
  }
  if (!controller.runner) {
    ui.setReplay({ outcome: "refused", message: "The plugin is still starting; replay the file once it shows a code." });
    return;
  }
  await replayer.start(file.name, await file.text());
}

function wireControls() {
  // (read only while there is a session: copy checks)
  /** @type {Record<string, () => string>} */
  const texts = {
    code: () => /** @type {Session} */ (controller.session).code,
    mcp: () => mcpUrl(relayBase, /** @type {Session} */ (controller.session).code),
    claude: () => claudeDesktopConfig(relayBase, /** @type {Session} */ (controller.session).code),
    prompt: () => httpPrompt(relayBase, /** @type {Session} */ (controller.session).code),
  };
  /** @type {Record<string, string>} */
  const names = { code: "Code", mcp: "MCP URL", claude: "Claude Desktop config", prompt: "Prompt" };
  /** @param {string | undefined} kind */
  const copy = async (kind) => {
    if (!controller.session) return;
    const text = texts[/** @type {string} */ (kind)]();
    ui.showCopied(text);
    const ok = await copyText(text);
    ui.notice(ok ? `${names[/** @type {string} */ (kind)]} copied.` : `Copy was blocked; select the text below and copy it yourself.`);
  };
  ui.on("copy-code", () => copy("code"));
  ui.onCopy((kind) => copy(kind));
  ui.on("download-trace", () => downloadTrace());
  ui.on("replay-trace", () => ui.chooseFile());
  ui.on("stop-replay", () => replayer.stop());
  ui.on("confirm-replay", () => replayer.answer(true));
  ui.on("cancel-replay", () => replayer.answer(false));
  ui.onFile((file) => replayFile(file));
  ui.on("connect-here", () => controller.connectHere());
  ui.on("new-code", () => controller.renew());
  addEventListener("pagehide", (event) => controller.hide(event.persisted));
  addEventListener("pageshow", (event) => controller.show(event.persisted));
  addEventListener("offline", () => ui.setStatus("offline"));
  addEventListener("online", () => controller.reopen());
}

async function start() {
  if (!storage.persistent) {
    console.info(`codap-relay: storage unavailable, keeping the session in memory (${storage.reason})`);
    ui.setStorageNote(MEMORY_ONLY);
  }
  setupFrame();
  wireControls();
  replayer.recover();
  await controller.start();
}

globalThis.codapRelayStarted = true; // all modules loaded and set up: from here on start() reports its own failures
start();
