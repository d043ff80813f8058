// The plugin's session controller (session.js) on fakes: the real RelayClient over a fake fetch (so the requests
// it sends are checked), a store in memory, a UI that records its calls, channels that record how they were opened
// (or the real PushConnection on a socket that cannot open), and a clock whose timers run when the test says.
import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { PushConnection } from "../../core/codap_relay/plugin/js/push.js";
import { RelayClient } from "../../core/codap_relay/plugin/js/relay.js";
import { PUSH_BLOCKED, SessionController } from "../../core/codap_relay/plugin/js/session.js";
import { RELOAD_GRACE_MS } from "../../core/codap_relay/plugin/js/session_keeper.js";
import { MemoryStorage, PluginStore } from "../../core/codap_relay/plugin/js/storage.js";

const BASE = "https://relay.example/v1";
const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Timers that run only when the test advances the clock. */
class Clock {
  constructor(now = Date.parse("2026-03-01T10:00:00Z")) {
    this.time = now;
    this.timers = new Map();
    this.next = 1;
  }
  now = () => this.time;
  setTimer = (fn, ms) => {
    const id = this.next++;
    this.timers.set(id, { fn, at: this.time + ms, ms });
    return id;
  };
  clearTimer = (id) => {
    this.timers.delete(id);
  };
  /** The delays of the timers pending now. */
  pending() {
    return [...this.timers.values()].map((t) => t.ms);
  }
  async advance(ms) {
    const until = this.time + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
      await flush();
    }
    this.time = until;
    await flush();
  }
}

function reply(status, body = null, headers = {}) {
  return { ok: status >= 200 && status < 300, status, headers: { get: (name) => headers[name] ?? null }, json: async () => body };
}

/** A relay behind a fake fetch: each request is recorded as "METHOD /path", answered by the first route that matches. */
function fakeRelay(routes) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    const path = url.slice(BASE.length);
    const line = `${init.method ?? "GET"} ${path.split("?")[0]}`;
    requests.push({ line, path, init });
    for (const [pattern, answer] of routes) {
      if (pattern === line) return typeof answer === "function" ? answer({ path, init }) : answer;
    }
    return reply(404, { error: "not_found" });
  };
  return { client: new RelayClient(BASE, fetch), requests, lines: () => requests.map((r) => r.line) };
}

/** The page's UI: every call, in order. */
function fakeUI() {
  const calls = [];
  const ui = new Proxy({}, { get: (_, name) => (...args) => calls.push([name, ...args]) });
  return { ui, calls, of: (name) => calls.filter((c) => c[0] === name).map((c) => c.slice(1)) };
}

/** Channels that record their opening; each behaves as its kind's open/stop/pause/cursor. */
function fakeChannels() {
  const made = [];
  const channel = (kind) => (options) => {
    const c = { kind, options, opens: [], stopped: true, paused: 0, cursor: null };
    c.open = (cursor = c.cursor) => {
      c.opens.push(cursor);
      c.cursor = cursor;
      c.stopped = false;
    };
    c.stop = () => {
      c.stopped = true;
    };
    c.pause = () => {
      c.paused++; // the socket closes; the channel is not stopped: pageshow opens it again
    };
    made.push(c);
    return c;
  };
  return { made, channels: { stream: channel("stream"), push: channel("push"), pushable: () => true } };
}

function fakeApps() {
  const made = [];
  return {
    made,
    connectedApps: (options) => {
      const apps = { options, refreshes: 0, asked: [], allow: true };
      apps.refresh = async () => {
        apps.refreshes++;
      };
      apps.ask = async (args) => {
        apps.asked.push(args);
        return apps.allow ? { allow: true, number: "47" } : { allow: false };
      };
      made.push(apps);
      return apps;
    },
  };
}

const CREATED = { code: "NEWC2345", browserToken: "tok-new", ttl: 600, expiresAt: "2026-03-01T10:10:00Z" };
const STORED = { code: "OLDC2345", token: "tok-old", ttl: 600, expiresAt: 1, changes: null, push: null };

function setup({ routes = [], stored = null, persistent = true, frame = {}, channels, tools = {} } = {}) {
  const relay = fakeRelay(routes);
  const store = new PluginStore(new MemoryStorage(), BASE);
  if (stored) store.saveSession(stored);
  const ui = fakeUI();
  const fakes = fakeChannels();
  const apps = fakeApps();
  const clock = new Clock();
  const controller = new SessionController({
    client: relay.client,
    store,
    persistent,
    ui: ui.ui,
    tools,
    manifest: { tools: [{ name: "t" }], readOnly: new Set() },
    relayBase: BASE,
    watchdogMs: 45_000,
    tab: "tab-1",
    frame: { reloadExpected: false, whenConnected: async () => {}, handshakeMs: 15_000, ...frame },
    channels: channels ?? fakes.channels,
    connectedApps: apps.connectedApps,
    setTimer: clock.setTimer,
    clearTimer: clock.clearTimer,
    now: clock.now,
    random: () => 0.5,
  });
  return { controller, relay, store, ui, made: fakes.made, apps: apps.made, clock };
}

test("a stored session the relay still knows is restored with the relay's expiry and connected, without a new code", async () => {
  const { controller, relay, ui, made, apps } = setup({
    stored: { ...STORED, push: "wss://push.example/v1" },
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { code: "OLDC2345", expiresAt: "2026-03-01T10:07:00Z" })],
      ["GET /api/sessions/OLDC2345/grants", reply(200, { persistent: true, apps: [] })],
    ],
  });
  await controller.start();
  assert.deepEqual(relay.lines(), ["GET /api/sessions/OLDC2345"]);
  assert.equal(relay.requests[0].init.headers.Authorization, "Bearer tok-old");
  assert.equal(controller.session.expiresAt, Date.parse("2026-03-01T10:07:00Z"));
  assert.deepEqual(ui.of("setSession"), [[controller.session, BASE]]);
  assert.deepEqual(ui.of("setChannel"), [["push"]]);
  assert.equal(made.length, 1);
  assert.equal(made[0].kind, "push");
  assert.equal(made[0].options.url, "wss://push.example/v1");
  assert.deepEqual([made[0].options.code, made[0].options.token, made[0].options.tab], ["OLDC2345", "tok-old", "tab-1"]);
  assert.deepEqual(made[0].opens, [null], "after a (re)load the relay sends every unanswered request");
  assert.equal(apps.length, 1);
  assert.equal(apps[0].refreshes, 1);
  await apps[0].options.list();
  assert.equal(relay.lines().at(-1), "GET /api/sessions/OLDC2345/grants", "the apps of this code, with its token");
  assert.deepEqual(ui.of("notice"), [], "nothing to tell: the same code goes on");
});

test("a stored session the relay no longer knows goes into the history and a new code replaces it", async () => {
  const { controller, relay, store, ui, made } = setup({
    stored: STORED,
    routes: [["POST /api/sessions", reply(201, CREATED)]],
  });
  await controller.start();
  assert.deepEqual(relay.lines().slice(0, 2), ["GET /api/sessions/OLDC2345", "POST /api/sessions"]);
  assert.deepEqual(store.history().map((s) => s.code), ["OLDC2345"]);
  assert.equal(store.loadSession().code, "NEWC2345");
  assert.deepEqual(ui.of("notice"), [["The previous code expired, so this is a new one. Give it to your LLM again."]]);
  assert.deepEqual(made.map((c) => [c.kind, c.options.code]), [["stream", "NEWC2345"]]);
});

test("an unreachable relay keeps the stored session: the stream goes on trying with it", async () => {
  const { controller, relay, made } = setup({
    stored: STORED,
    routes: [["GET /api/sessions/OLDC2345", () => Promise.reject(new TypeError("Failed to fetch"))]],
  });
  await controller.start();
  assert.equal(controller.session.code, "OLDC2345");
  assert.ok(!relay.lines().includes("POST /api/sessions"));
  assert.deepEqual(made.map((c) => [c.kind, c.options.code]), [["stream", "OLDC2345"]]);
});

test("with none stored, a frame CODAP is about to reload waits for the reload, then creates, stores and connects one", async () => {
  const { controller, relay, store, ui, made, clock } = setup({
    frame: { reloadExpected: true },
    routes: [["POST /api/sessions", ({ init }) => reply(201, { ...CREATED, changes: "/api/changes/x", push: 42 })]],
  });
  const started = controller.start();
  await flush();
  assert.deepEqual(relay.lines(), [], "no code before the frame settled");
  assert.deepEqual(clock.pending().sort((a, b) => a - b), [RELOAD_GRACE_MS, 15_000]);
  await clock.advance(RELOAD_GRACE_MS);
  await started;
  assert.deepEqual(relay.lines(), ["POST /api/sessions"]);
  assert.deepEqual(JSON.parse(relay.requests[0].init.body).tools, [{ name: "t" }]);
  assert.deepEqual(store.loadSession(), {
    code: "NEWC2345",
    token: "tok-new",
    ttl: 600,
    expiresAt: Date.parse(CREATED.expiresAt),
    changes: "/api/changes/x",
    push: null, // not a URL: no push channel
  });
  assert.deepEqual(ui.of("notice"), [[null]]);
  assert.deepEqual(made.map((c) => c.kind), ["stream"]);
  assert.ok(controller.reporter, "a relay that takes change notices gets them");
});

test("a 429 with Retry-After is waited out with a countdown, then the code comes by itself", async () => {
  let asked = 0;
  const { controller, relay, ui, made, clock } = setup({
    routes: [
      [
        "POST /api/sessions",
        () => (++asked === 1 ? reply(429, { error: "rate_limited", message: "Too many" }, { "Retry-After": "4" }) : reply(201, CREATED)),
      ],
    ],
  });
  const started = controller.start();
  await flush();
  assert.deepEqual(ui.of("setStatus"), [["waiting"]]);
  const [[until, render]] = ui.of("countdown");
  const waitMs = 4000 + 0.5 * 2000; // Retry-After plus half its jitter (random 0.5)
  assert.equal(until, clock.now() + waitMs);
  assert.match(render(4), /^Too many plugins on this network asked the relay for a code.*in 4 s; there is no need to reload\.$/);
  await clock.advance(waitMs - 1);
  assert.equal(asked, 1, "never before the Retry-After");
  await clock.advance(1);
  await started;
  assert.equal(asked, 2);
  assert.equal(controller.session.code, "NEWC2345");
  assert.deepEqual(made.map((c) => c.options.code), ["NEWC2345"]);
  assert.deepEqual(relay.lines().filter((l) => l === "POST /api/sessions").length, 2);
});

test("renew: the new code replaces the old, which is ended at the relay and kept for the trace; one at a time", async () => {
  let asked = 0;
  const { controller, relay, store, ui, made } = setup({
    stored: STORED,
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })],
      ["POST /api/sessions", () => (++asked, reply(201, CREATED))],
      ["DELETE /api/sessions/OLDC2345", reply(204)],
    ],
  });
  await controller.start();
  const renewed = controller.renew();
  await controller.renew(); // a second click while the first is under way asks for nothing
  await renewed;
  assert.equal(asked, 1);
  assert.deepEqual(relay.lines(), ["GET /api/sessions/OLDC2345", "POST /api/sessions", "DELETE /api/sessions/OLDC2345"]);
  assert.ok(ui.of("clearSession").length === 1);
  assert.deepEqual(ui.of("notice"), [["New code created. The old code no longer works."]]);
  assert.deepEqual(made.map((c) => [c.options.code, c.stopped]), [["OLDC2345", true], ["NEWC2345", false]]);
  assert.deepEqual(store.history().map((s) => s.code), ["OLDC2345"]);
  assert.equal(store.loadSession().code, "NEWC2345");
});

test("renew refused: the old code is shown again, still working", async () => {
  const { controller, relay, ui, made } = setup({
    stored: STORED,
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })],
      ["POST /api/sessions", reply(400, { error: "bad_request", message: "no tools" })],
    ],
  });
  await controller.start();
  await controller.renew();
  assert.ok(!relay.lines().includes("DELETE /api/sessions/OLDC2345"));
  assert.equal(ui.of("setSession").at(-1)[0].code, "OLDC2345");
  assert.match(ui.of("notice").at(-1)[0], /^Could not create a new code: /);
  assert.equal(made.length, 1);
  assert.equal(made[0].stopped, false);
});

test("push failing twice falls back to the stream, says so once, and tries push again after 1 min, then 2", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    let sockets = 0;
    class Blocked {
      constructor() {
        sockets++;
        throw new Error("Refused to connect: Content Security Policy");
      }
    }
    const streams = [];
    const channels = {
      push: (options) => new PushConnection({ ...options, WebSocketImpl: Blocked, backoff: { random: () => 0.5 } }),
      stream: (options) => {
        const sse = { options, opens: [], stopped: true, cursor: null };
        sse.open = (cursor) => {
          sse.opens.push(cursor);
          sse.cursor = cursor;
          sse.stopped = false;
        };
        sse.stop = () => (sse.stopped = true);
        streams.push(sse);
        return sse;
      },
      pushable: () => true,
    };
    const { controller, ui, clock } = setup({
      channels,
      stored: { ...STORED, push: "wss://push.example/v1" },
      routes: [["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })]],
    });
    await controller.start();
    assert.equal(sockets, 1);
    assert.equal(streams.length, 0, "one failure is not enough");
    mock.timers.tick(500); // the push channel's own retry
    assert.equal(sockets, 2);
    assert.equal(streams.length, 1, "the second failure in a row falls back");
    assert.equal(controller.stream, streams[0]);
    assert.deepEqual(streams[0].opens, [null], "from the push channel's cursor");
    assert.deepEqual(ui.of("setChannel"), [["push"], ["stream"]]);
    assert.deepEqual(ui.of("notice"), [[PUSH_BLOCKED]]);
    assert.deepEqual(clock.pending(), [60_000], "push is tried again in a minute (random 0.5: no jitter)");

    streams[0].cursor = 7; // requests came over the stream meanwhile
    await clock.advance(59_999);
    assert.equal(sockets, 2);
    await clock.advance(1);
    assert.equal(sockets, 3, "push again");
    assert.equal(streams[0].stopped, true);
    assert.ok(controller.stream instanceof PushConnection);
    assert.equal(controller.stream.cursor, 7, "from the stream's cursor");
    assert.deepEqual(ui.of("setChannel").at(-1), ["push"]);
    mock.timers.tick(500);
    assert.equal(streams.length, 2, "failed again: the stream again");
    assert.deepEqual(streams[1].opens, [7]);
    assert.deepEqual(ui.of("notice"), [[PUSH_BLOCKED]], "told once per page");
    assert.deepEqual(clock.pending(), [120_000], "each fall back waits longer");
    controller.stream.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a new code clears the pending retry of push, and a retry that fires all the same does nothing", async () => {
  const { controller, clock, made } = setup({
    stored: { ...STORED, push: "wss://push.example/v1" },
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })],
      ["POST /api/sessions", reply(201, { ...CREATED, push: "wss://push.example/v1" })],
    ],
  });
  await controller.start();
  made[0].stop(); // as a push channel does before it falls back
  made[0].options.handlers.onFallback();
  assert.deepEqual(clock.pending(), [60_000]);
  const [retry] = clock.timers.values();
  await controller.renew();
  assert.deepEqual(clock.pending(), [], "connect() clears the retry");
  retry.fn(); // one already on its way: the page moved on, so push is not tried for the old code
  assert.equal(controller.stream, made[2]);
  assert.deepEqual(made.map((c) => [c.kind, c.options.code, c.stopped]), [
    ["push", "OLDC2345", true],
    ["stream", "OLDC2345", true],
    ["push", "NEWC2345", false],
  ]);
});

test("superseded: the page says so and takes the session back when asked", async () => {
  const { controller, ui, made } = setup({
    stored: STORED,
    routes: [["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })]],
  });
  await controller.start();
  made[0].options.handlers.onSuperseded();
  assert.deepEqual(ui.of("setStatus").at(-1), ["moved"]);
  assert.deepEqual(ui.of("showSuperseded"), [[false], [true]]);
  controller.connectHere();
  assert.deepEqual(ui.of("notice").at(-1), ["Connected here again; the other tab stops serving this session."]);
  assert.deepEqual(ui.of("showSuperseded").at(-1), [false]);
  assert.deepEqual(made.map((c) => [c.options.code, c.stopped]), [["OLDC2345", true], ["OLDC2345", false]]);
});

test("a code the relay expired is replaced by a new one; one it ended, with no new code to be had, says so", async () => {
  let refuse = false;
  const { controller, relay, ui, made, store } = setup({
    stored: STORED,
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })],
      ["POST /api/sessions", () => (refuse ? reply(400, { error: "bad_request", message: "no" }) : reply(201, CREATED))],
    ],
  });
  await controller.start();
  const runner = controller.runner;
  await made[0].options.handlers.onGone("expired");
  assert.equal(runner.stopped, true);
  assert.deepEqual(ui.of("setStatus").slice(-1), [["reconnecting"]]);
  assert.deepEqual(ui.of("notice").at(-1), ["The code expired, so this is a new code. Give it to your LLM again."]);
  assert.deepEqual(made.map((c) => c.options.code), ["OLDC2345", "NEWC2345"]);
  assert.deepEqual(store.history().map((s) => s.code), ["OLDC2345"]);
  assert.ok(relay.lines().includes("POST /api/sessions"));

  refuse = true;
  await made[1].options.handlers.onGone("closed");
  assert.deepEqual(ui.of("setStatus").at(-1), ["error"]);
  assert.match(ui.of("notice").at(-1)[0], /^The session was ended and a new code could not be created: .*\. Reload the plugin to try again\.$/);
  assert.equal(made.length, 2, "no channel without a code");
});

test("a request runs and its answer is posted; a consent question goes to the person, then the apps are looked at again", async () => {
  const { controller, relay, made, apps, clock } = setup({
    stored: STORED,
    tools: { t: async (args) => ({ doubled: args.n * 2 }) },
    routes: [
      ["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })],
      ["POST /response", reply(200, { ok: true })],
    ],
  });
  await controller.start();
  const { handlers } = made[0].options;
  handlers.onRequest({ id: "r1", seq: 1, tool: "t", args: { n: 21 } });
  await flush();
  const posted = relay.requests.filter((r) => r.line === "POST /response").map((r) => JSON.parse(r.init.body));
  assert.deepEqual(posted, [{ code: "OLDC2345", id: "r1", result: { doubled: 42 } }]);

  handlers.onRequest({ id: "c1", seq: 2, tool: "codap_relay_consent", args: { app: "Claude" } });
  await flush();
  assert.deepEqual(apps[0].asked, [{ app: "Claude" }]);
  const consent = relay.requests.filter((r) => r.line === "POST /response").map((r) => JSON.parse(r.init.body));
  assert.deepEqual(consent.at(-1), { code: "OLDC2345", id: "c1", result: { allow: true, number: "47" } });
  assert.deepEqual(clock.pending(), [1500, 4000, 10_000]);
  await clock.advance(10_000);
  assert.equal(apps[0].refreshes, 4);
});

test("pagehide ends a memory-only session and detaches a stored one; pageshow and online reopen from the cursor", async () => {
  for (const persistent of [false, true]) {
    const { controller, relay, made } = setup({
      stored: STORED,
      persistent,
      routes: [["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })]],
    });
    await controller.start();
    controller.hide(false);
    assert.equal(made[0].paused, 1);
    const last = relay.requests.at(-1);
    if (persistent) {
      assert.equal(last.path, "/api/sessions/OLDC2345/detach?tab=tab-1&token=tok-old");
    } else {
      assert.equal(last.line, "DELETE /api/sessions/OLDC2345");
      assert.equal(last.init.keepalive, true);
    }
  }
  const { controller, made } = setup({
    stored: STORED,
    routes: [["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })]],
  });
  await controller.start();
  made[0].cursor = 5;
  controller.show(false);
  controller.reopen();
  assert.deepEqual(made[0].opens, [null, 5], "online: reopened from its cursor; a pageshow not from the cache: nothing");
  controller.hide(true);
  controller.show(true);
  assert.deepEqual(made[0].opens, [null, 5, 5], "back from the back-forward cache: reopened from its cursor");
  made[0].stop();
  controller.show(true);
  controller.reopen();
  assert.equal(made[0].opens.length, 3, "a stopped channel stays stopped");
});

test("connected: the expiry slides from now, and a wait for room's notice is cleared", async () => {
  const { controller, ui, made, clock } = setup({
    stored: STORED,
    routes: [["GET /api/sessions/OLDC2345", reply(200, { expiresAt: "2026-03-01T10:07:00Z" })]],
  });
  await controller.start();
  const { handlers } = made[0].options;
  handlers.onWaitForRoom({ ms: 5000 });
  assert.deepEqual(ui.of("setStatus").slice(-2), [["waiting"], ["room"]]);
  assert.match(ui.of("countdown").at(-1)[1](5), /^The relay is serving as many CODAP windows as it may at once\./);
  handlers.onStatus("connected");
  assert.deepEqual(ui.of("setExpiry").at(-1), [clock.now() + 600_000]);
  assert.deepEqual(ui.of("notice").at(-1), [null]);
  const notices = ui.of("notice").length;
  handlers.onStatus("connected");
  assert.equal(ui.of("notice").length, notices, "cleared once");
});
