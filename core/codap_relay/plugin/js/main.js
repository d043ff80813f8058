// Wiring: CODAP handshake, session (kept across reloads), stream, runner, and the UI.

import { CodapPhone } from "./codap.js";
import { TOOLS } from "./manifest.js";
import { RelayClient, StreamConnection, relayBaseFrom } from "./relay.js";
import { Runner } from "./runner.js";
import { claudeDesktopConfig, httpPrompt, mcpUrl } from "./snippets.js";
import { PluginStore } from "./storage.js";
import { createTools } from "./tools.js";
import { createUI } from "./ui.js";

const VERSION = "1.0.0";
const FRAME = { width: 380, height: 600 };

const params = new URL(location.href).searchParams;
const relayBase = relayBaseFrom(location);
const watchdogMs = Number(params.get("watchdog") || 45) * 1000;
const ui = createUI();
const client = new RelayClient(relayBase);
const store = new PluginStore(globalThis.sessionStorage, relayBase);

const phone = new CodapPhone({ win: window });
const tools = createTools({ call: (request) => phone.call(request), pluginVersion: VERSION });

let session = null;
let stream = null;
let runner = null;

function setupFrame() {
  if (!phone.embedded) {
    ui.setCodapStatus("not inside CODAP (open it with codap.concord.org/app/?di=<this URL>)");
    return;
  }
  phone.start();
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

async function newSession(reason) {
  const created = await client.createSession(TOOLS);
  session = {
    code: created.code,
    token: created.browserToken,
    ttl: created.ttl,
    expiresAt: Date.parse(created.expiresAt) || Date.now() + created.ttl * 1000,
  };
  store.clearSession();
  store.saveSession(session);
  if (reason) ui.notice(reason);
  return session;
}

async function restoreOrCreate() {
  const saved = store.loadSession();
  if (saved) {
    try {
      const status = await client.sessionStatus(saved.code);
      if (status) {
        session = { ...saved, expiresAt: Date.parse(status.expiresAt) || saved.expiresAt };
        return session;
      }
      return newSession("The previous code expired, so this is a new one. Give it to your LLM again.");
    } catch {
      session = saved; // relay unreachable: the stream will keep trying with this session
      return session;
    }
  }
  return newSession(null);
}

function connect() {
  stream?.stop();
  runner?.stop();
  ui.setSession(session, relayBase);
  ui.showSuperseded(false);
  const { code, token } = session;
  runner = new Runner({
    tools,
    store,
    post: (id, body) => client.postResponse(code, token, id, body),
    onActivity: (update) => ui.activity(update),
  });
  stream = new StreamConnection({
    base: relayBase,
    code,
    token,
    client,
    watchdogMs,
    handlers: {
      onStatus: (state) => {
        ui.setStatus(state);
        if (state === "connected") refreshExpiry();
      },
      onAlive: refreshExpiry,
      onRequest: (request) => {
        refreshExpiry();
        runner.enqueue(request);
      },
      onSuperseded: () => {
        ui.setStatus("moved");
        ui.showSuperseded(true);
      },
      onGone: async (kind) => {
        runner.stop();
        ui.setStatus("reconnecting");
        const why = kind === "closed" ? "The session was ended" : "The code expired";
        try {
          await newSession(`${why}, so this is a new code. Give it to your LLM again.`);
          connect();
        } catch (err) {
          ui.setStatus("error");
          ui.notice(`${why} and a new code could not be created: ${err.message}. Reload the plugin to try again.`);
        }
      },
      onCursorReset: () => ui.notice("The relay restarted its queue; unanswered requests are being sent again."),
    },
  });
  runner.resume();
  stream.open(null); // after a (re)load the relay sends every unanswered request; the ledger dedupes
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // CODAP's iframe may not grant clipboard-write; fall back to a selected textarea + execCommand
    const area = document.getElementById("copied");
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

function wireControls() {
  const texts = {
    code: () => session.code,
    mcp: () => mcpUrl(relayBase, session.code),
    claude: () => claudeDesktopConfig(relayBase, session.code),
    prompt: () => httpPrompt(relayBase, session.code),
  };
  const names = { code: "Code", mcp: "MCP URL", claude: "Claude Desktop config", prompt: "Prompt" };
  const copy = async (kind) => {
    if (!session) return;
    const text = texts[kind]();
    ui.showCopied(text);
    const ok = await copyText(text);
    ui.notice(ok ? `${names[kind]} copied.` : `Copy was blocked; select the text below and copy it yourself.`);
  };
  ui.on("copy-code", () => copy("code"));
  ui.onCopy((kind) => copy(kind));
  ui.on("connect-here", () => {
    ui.notice("Connected here again; the other tab stops serving this session.");
    connect();
  });
  ui.on("new-code", async () => {
    const old = session;
    try {
      await newSession("New code created. The old code no longer works.");
      if (old) client.endSession(old.code, old.token).catch(() => {});
      connect();
    } catch (err) {
      ui.notice(`Could not create a new code: ${err.message}`);
    }
  });
  addEventListener("offline", () => ui.setStatus("offline"));
  addEventListener("online", () => {
    if (stream && !stream.stopped) stream.open(stream.cursor);
  });
}

async function start() {
  setupFrame();
  wireControls();
  try {
    await restoreOrCreate();
  } catch (err) {
    ui.setStatus("error");
    ui.notice(`Could not reach the relay at ${relayBase}: ${err.message}. Check your connection and reload.`);
    return;
  }
  connect();
}

start();
