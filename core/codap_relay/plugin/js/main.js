// @ts-check
// Wiring: CODAP handshake, session (kept across reloads where the browser allows storage), stream, runner, UI.

import { CONSENT_TOOL, ConnectedApps, pluginIdentity } from "./apps.js";
import { ChangeReporter } from "./changes.js";
import { CodapPhone } from "./codap.js";
import { withBusySignal } from "./busy.js";
import { BlockWatch, slowNotes, withCodapWaits } from "./slow.js";
import { plural } from "./format.js";
import { canvasRaster } from "./imaging.js";
import { PushConnection } from "./push.js";
import {
  RelayClient,
  RelayHttpError,
  StreamConnection,
  backoffMs,
  createSessionWhenAllowed,
  newTabId,
  relayBaseFrom,
} from "./relay.js";
import { Replayer } from "./replay.js";
import { Runner } from "./runner.js";
import { claudeDesktopConfig, httpPrompt, mcpUrl } from "./snippets.js";
import { PluginStore, openStorage } from "./storage.js";
import { createTools, loadManifest } from "./tools/index.js";
import { MAX_TRACE_BYTES, buildTrace, traceFileName } from "./trace.js";
import { createUI } from "./ui.js";
import { VERSION } from "./version.js";

/**
 * @import {ChannelHandlers, CodapNotification, Session} from "./types.js"
 */

const FRAME = { width: 380, height: 600 };

const params = new URL(location.href).searchParams;
const relayBase = relayBaseFrom(location);
const watchdogMs = Number(params.get("watchdog") || 45) * 1000;
const handshakeMs = Number(params.get("handshake") || 15) * 1000;
const ui = createUI();
const client = new RelayClient(relayBase);
const identity = pluginIdentity(relayBase);
client.identity = identity.key; // apps connected through OAuth follow this browser's key to each new code
const storage = openStorage(globalThis);
const store = new PluginStore(storage.storage, relayBase);

// CODAP's notifications to the plugin, heard by the tools that wait for one (the journal's document snapshots).
/** @type {Set<(value: CodapNotification) => void>} */
const listeners = new Set();
// What the person reads while CODAP is slow, or after it stopped this page (slow.js).
const notes = slowNotes({ show: (text) => ui.codapSlow(text), slowPending: () => phone.slowPending });
const blocks = new BlockWatch({ win: window, onBlock: notes.onBlock });
const phone = new CodapPhone({
  win: window,
  onNotification: (value) => {
    for (const listener of listeners) listener(value);
  },
  onSlow: notes.onSlow,
});
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
        call: (request) => phone.call(request),
        notice: (request, waitMs) => phone.notify(request, waitMs),
        tell: (text) => ui.notice(text),
        pluginVersion: VERSION,
        raster: canvasRaster(),
        listen,
      },
      manifest,
    ),
    phone,
    { blocks },
  ),
  phone,
);

/** @type {Session | null} */
let session = null;
/** @type {StreamConnection | PushConnection | null} */
let stream = null;
/** @type {Runner | null} */
let runner = null;
/** @type {Promise<Session> | null} */
let obtaining = null; // the session being created, so clicks and events do not ask twice
/** @type {ChangeReporter | null} */
let reporter = null; // tells a long-lived relay what CODAP said changed (MCP subscriptions)
/** @type {ConnectedApps | null} */
let apps = null; // the apps connected through OAuth, and their consent questions (apps.js)
listen((notice) => {
  try {
    reporter?.hear(notice);
  } catch {
    // a notice this cannot read must not keep it from the tools' own listeners
  }
});
let pushFallbacks = 0; // times the push channel gave way to SSE on this page: each waits longer to try push again
/** @type {ReturnType<typeof setTimeout> | null} */
let pushRetry = null; // the timer that tries push again after a fall back
let waitedForRoom = false; // the stream waited for room: its countdown notice goes once it connects
const tab = newTabId(); // this page's id at the relay: pagehide detaches the streams opened under it
const replayer = new Replayer({
  store,
  runner: () => /** @type {Runner} */ (runner), // a replay starts once there is one (replayFile)
  tools: TOOLS,
  readOnly: manifest.readOnly,
  destructive: manifest.destructive,
  onProgress: (view) => ui.setReplay(view),
  persistent: storage.persistent,
});

// CODAP v3 reloads a plugin's frame once, right after the handshake, to add its language (?lang=…&locale=…).
// A session created before that reload is lost with the page and still counts against the relay's per-address
// limit, so a frame that has no locale yet waits briefly for the reload before it asks for a code.
const RELOAD_GRACE_MS = 2000;
const reloadExpected = phone.embedded && !params.has("locale");

const MEMORY_ONLY =
  "This browser blocks third-party storage, so the code lives in this page only. Reloading the plugin or CODAP " +
  "ends this code and shows a new one for your LLM. To keep it across reloads, allow third-party cookies for " +
  "this CODAP site.";

const PUSH_BLOCKED =
  "This network or browser does not let the plugin keep its WebSocket to the relay, so it uses the relay's " +
  "event stream instead. Everything works the same.";

/** @type {Record<string, (error: Error) => string>} */
const WAITING = {
  busy: () =>
    "Too many plugins on this network asked the relay for a code in the last minute (a class sharing one " +
    "internet address can reach the limit). This page gets its code by itself",
  unavailable: () => "The relay is briefly unavailable. This page tries again by itself",
  room: () =>
    "The relay is serving as many CODAP windows as it may at once. This page keeps its code (give it to your LLM " +
    "now if you like) and connects by itself when a place frees up; it looks again",
  unreachable: (error) =>
    `Cannot reach the relay at ${relayBase} (${error.message}). Check that it is running and that this ` +
    "computer is online. Trying again",
};

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

function refreshExpiry() {
  // the relay slides the expiry whenever the stream is alive
  if (!session) return;
  session.expiresAt = Date.now() + session.ttl * 1000;
  ui.setExpiry(session.expiresAt);
}

/** @param {{reason: string, ms: number, error: unknown}} wait */
function showWaiting({ reason, ms, error }) {
  ui.setStatus("waiting");
  const text = WAITING[reason](/** @type {Error} */ (error));
  ui.countdown(Date.now() + ms, (seconds) => `${text} in ${seconds} s; there is no need to reload.`);
}

/**
 * A new session, waiting out the relay's limits; one at a time however often it is asked for.
 * @param {string | null} reason what the person is told once it is there
 */
function newSession(reason) {
  obtaining ??= createSession(reason).finally(() => {
    obtaining = null;
  });
  return obtaining;
}

/** @param {string | null} reason */
async function createSession(reason) {
  const created = await createSessionWhenAllowed(client, TOOLS, { onWait: showWaiting });
  const previous = session;
  session = {
    code: created.code,
    token: created.browserToken,
    ttl: created.ttl,
    expiresAt: Date.parse(created.expiresAt) || Date.now() + created.ttl * 1000,
    changes: typeof created.changes === "string" ? created.changes : null,
    push: typeof created.push === "string" ? created.push : null, // the push channel's URL, when offered
  };
  store.clearSession();
  if (previous) store.addHistory(previous); // its trace can still be saved while the relay keeps its log
  store.saveSession(session);
  ui.notice(reason);
  return session;
}

/** @param {number} ms */
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when this page is the one CODAP keeps (or when it does not reload the frame after all). */
function frameSettled() {
  if (!reloadExpected) return Promise.resolve();
  return Promise.race([phone.whenConnected().then(() => delay(RELOAD_GRACE_MS)), delay(handshakeMs)]);
}

async function restoreOrCreate() {
  const saved = store.loadSession();
  if (saved) {
    try {
      const status = await client.sessionStatus(saved.code, saved.token);
      if (status) {
        session = { ...saved, expiresAt: Date.parse(status.expiresAt) || saved.expiresAt };
        return session;
      }
      store.addHistory(saved);
      return newSession("The previous code expired, so this is a new one. Give it to your LLM again.");
    } catch {
      session = saved; // relay unreachable: the stream will keep trying with this session
      return session;
    }
  }
  await frameSettled();
  return newSession(null);
}

/** Connects the session there is (restoreOrCreate or newSession made it). */
function connect() {
  stream?.stop();
  runner?.stop();
  ui.setSession(/** @type {Session} */ (session), relayBase);
  ui.showSuperseded(false);
  const { code, token, changes } = /** @type {Session} */ (session);
  reporter?.stop();
  reporter = changes ? new ChangeReporter({ post: (note) => client.postChanges(changes, token, note) }) : null;
  apps = new ConnectedApps({
    list: () => client.connectedApps(code, token),
    disconnect: (id) => client.disconnectApp(code, token, id),
    announce: (text) => ui.notice(text),
  });
  apps.refresh();
  runner = new Runner({
    tools,
    store,
    post: (id, body) => client.postResponse(code, token, id, body),
    onActivity: (update) => {
      ui.activity({ ...update, code }); // rows are per code: ids repeat across codes
      // CODAP tells other plugins, not this one, of the components this plugin's own tools make or remove
      if (update.status === "done" && !manifest.readOnly.has(/** @type {string} */ (update.tool))) reporter?.ranTool(/** @type {string} */ (update.tool));
    },
  });
  /** @type {{base: string, code: string, token: string, client: RelayClient, watchdogMs: number, tab: string, handlers: ChannelHandlers}} */
  const options = {
    base: relayBase,
    code,
    token,
    client,
    watchdogMs,
    tab,
    handlers: {
      onStatus: (state) => {
        ui.setStatus(state);
        if (state === "connected") {
          refreshExpiry();
          if (waitedForRoom) ui.notice(null); // the countdown to the next look is over
          waitedForRoom = false;
        }
      },
      onWaitForRoom: ({ ms }) => {
        waitedForRoom = true;
        showWaiting({ reason: "room", ms, error: null });
        ui.setStatus("room");
      },
      onAlive: refreshExpiry,
      onRequest: (request) => {
        refreshExpiry();
        if (request.tool === CONSENT_TOOL) {
          answerConsent(request, code, token);
          return;
        }
        /** @type {Runner} */ (runner).enqueue(request);
      },
      onSuperseded: () => {
        ui.setStatus("moved");
        ui.showSuperseded(true);
      },
      onGone: async (kind) => {
        /** @type {Runner} */ (runner).stop();
        ui.setStatus("reconnecting");
        ui.clearSession();
        const why = kind === "closed" ? "The session was ended" : "The code expired";
        try {
          await newSession(`${why}, so this is a new code. Give it to your LLM again.`);
          connect();
        } catch (err) {
          ui.setStatus("error");
          ui.notice(`${why} and a new code could not be created: ${/** @type {Error} */ (err).message}. Reload the plugin to try again.`);
        }
      },
      onWithdrawn: ({ id, tool, args }) => ui.activity({ id, tool, args, status: "withdrawn", code }),
      onUnreadable: (why) => ui.notice(`The relay sent something the plugin could not read, and it could not tell which request it was: ${why}.`),
      onCursorReset: () => ui.notice("The relay restarted its queue; unanswered requests are being sent again."),
      onFallback: () => {
        if (pushFallbacks++ === 0) ui.notice(PUSH_BLOCKED);
        const sse = new StreamConnection(options);
        stream = sse;
        ui.setChannel("stream");
        sse.open(/** @type {PushConnection} */ (pushed).cursor); // only a push channel falls back
        // Not for good: a refusal may have been API Gateway's at a busy moment. Later (1 min, then longer), the
        // stream makes way for push again, from its cursor; if push fails again, this comes back here.
        clearTimeout(/** @type {number} */ (pushRetry)); // clearTimeout takes null too
        pushRetry = setTimeout(() => {
          if (stream !== sse || sse.stopped) return; // the page moved on (a new code, superseded)
          sse.stop();
          stream = pushed = new PushConnection({ ...options, url: /** @type {string} */ (/** @type {Session} */ (session).push) });
          ui.setChannel("push");
          stream.open(sse.cursor ?? null);
        }, backoffMs(pushFallbacks - 1, { base: 60_000, max: 30 * 60_000 }));
      },
    },
  };
  clearTimeout(/** @type {number} */ (pushRetry));
  const push = /** @type {Session} */ (session).push && globalThis.WebSocket;
  /** @type {PushConnection | null} */
  let pushed = push ? new PushConnection({ ...options, url: /** @type {string} */ (/** @type {Session} */ (session).push) }) : null;
  stream = pushed ?? new StreamConnection(options);
  ui.setChannel(push ? "push" : "stream");
  runner.resume();
  stream.open(null); // after a (re)load the relay sends every unanswered request; the ledger dedupes
}

/**
 * The relay asks whether an app may use this CODAP (someone typed this code on its consent page).
 * @param {import("./types.js").ToolRequest} request
 * @param {string} code
 * @param {string} token
 */
async function answerConsent(request, code, token) {
  const allow = await /** @type {ConnectedApps} */ (apps).ask(request.args ?? {});
  try {
    await client.postResponse(code, token, request.id, { result: { allow } });
  } catch (err) {
    ui.notice(`The answer could not reach the relay: ${/** @type {Error} */ (err).message}. Start again from the app.`);
  }
  // the relay makes the grant when the consent page next looks (about once a second): look again after it
  for (const ms of [1500, 4000, 10_000]) setTimeout(() => apps?.refresh(), ms);
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
  const sessions = [...store.history(), ...(session ? [session] : [])];
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
  if (!runner) {
    ui.setReplay({ outcome: "refused", message: "The plugin is still starting; replay the file once it shows a code." });
    return;
  }
  await replayer.start(file.name, await file.text());
}

function wireControls() {
  // (read only while there is a session: copy checks)
  /** @type {Record<string, () => string>} */
  const texts = {
    code: () => /** @type {Session} */ (session).code,
    mcp: () => mcpUrl(relayBase, /** @type {Session} */ (session).code),
    claude: () => claudeDesktopConfig(relayBase, /** @type {Session} */ (session).code),
    prompt: () => httpPrompt(relayBase, /** @type {Session} */ (session).code),
  };
  /** @type {Record<string, string>} */
  const names = { code: "Code", mcp: "MCP URL", claude: "Claude Desktop config", prompt: "Prompt" };
  /** @param {string | undefined} kind */
  const copy = async (kind) => {
    if (!session) return;
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
  ui.on("connect-here", () => {
    ui.notice("Connected here again; the other tab stops serving this session.");
    connect();
  });
  ui.on("new-code", async () => {
    if (obtaining) return;
    const old = session;
    ui.clearSession(); // the old code ends as soon as the new one is there: not one to copy now
    try {
      await newSession("New code created. The old code no longer works.");
      if (old) client.endSession(old.code, old.token).catch(() => {});
      connect();
    } catch (err) {
      if (old) ui.setSession(old, relayBase); // it still works
      ui.notice(`Could not create a new code: ${/** @type {Error} */ (err).message}`);
    }
  });
  addEventListener("pagehide", (event) => {
    if (!session) return;
    /** @type {{pause?: () => void} | null} */ (stream)?.pause?.(); // a push socket closes now (the relay then drops it as the consumer)
    // Nothing of a memory-only session survives the unload: end it now, so the LLM is told the session ended
    // instead of its requests waiting for a page that is gone. A stored session is kept for the reload.
    if (!storage.persistent && !event.persisted) {
      client.endSession(session.code, session.token, { keepalive: true }).catch(() => {});
      return;
    }
    // A kept session: detach this page's stream. On AWS a streamed response runs on after its client left, so
    // without this the stream would keep the session "connected" and hold a stream function for up to 14 min.
    client.detach(session.code, session.token, tab).catch(() => {});
  });
  addEventListener("pageshow", (event) => {
    // back from the back-forward cache: this page detached its stream on pagehide, so it attaches again
    if (event.persisted && stream && !stream.stopped) stream.open(stream.cursor);
  });
  addEventListener("offline", () => ui.setStatus("offline"));
  addEventListener("online", () => {
    if (stream && !stream.stopped) stream.open(stream.cursor);
  });
}

async function start() {
  if (!storage.persistent) {
    console.info(`codap-relay: storage unavailable, keeping the session in memory (${storage.reason})`);
    ui.setStorageNote(MEMORY_ONLY);
  }
  setupFrame();
  wireControls();
  replayer.recover();
  try {
    await restoreOrCreate();
  } catch (err) {
    ui.setStatus("error");
    const what =
      err instanceof RelayHttpError
        ? `The relay at ${relayBase} refused to create a pairing code (${err.message})`
        : `The plugin failed while starting (${/** @type {Error} */ (err).message})`;
    ui.notice(`${what}. Reload the plugin to try again; if this keeps happening, check the relay's settings.`);
    return;
  }
  connect();
}

globalThis.codapRelayStarted = true; // all modules loaded and set up: from here on start() reports its own failures
start();
