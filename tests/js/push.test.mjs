// The push channel's client (push.js) against a fake WebSocket: attach with the cursor, strict seq order with
// hold-and-resume, resumed.upTo, dedupe, pointer fetch, pings, the watchdog, the ends, and the fall back to SSE.
import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { ANSWER_MAX_BYTES, PushConnection } from "../../core/codap_relay/plugin/js/push.js";
import { HIDDEN_TIMER_LATE_MS, PING_REPLY_MS, REFUSALS_BEFORE_FALLBACK } from "../../core/codap_relay/plugin/js/push_socket.js";
import { RelayClient, RelayHttpError } from "../../core/codap_relay/plugin/js/relay.js";

class FakeSocket {
  static opened = [];
  constructor(url) {
    this.url = url;
    this.sent = [];
    this.closed = null;
    FakeSocket.opened.push(this);
  }
  send(text) {
    if (this.closed !== null) throw new Error("socket closed");
    this.sent.push(JSON.parse(text));
  }
  close(code) {
    this.closed = code ?? 1005;
  }
  // --- what the network and the relay do
  accept() {
    this.readyState = 1; // OPEN
    this.onopen?.({});
  }
  receive(message) {
    this.onmessage?.({ data: JSON.stringify(message) });
  }
  fail() {
    this.onerror?.({});
    this.onclose?.({ code: 1006 });
  }
  sentOf(action) {
    return this.sent.filter((m) => m.action === action);
  }
}

const last = () => FakeSocket.opened.at(-1);
const flush = () => new Promise((resolve) => setImmediate(resolve));
const request = (seq, extra = {}) => ({ event: "tool-request", seq, id: `r${seq}`, tool: "t", args: { n: seq }, ...extra });

function recorder() {
  const rec = { statuses: [], requests: [], withdrawn: [], gone: [], superseded: 0, alive: 0, fallbacks: 0 };
  rec.handlers = {
    onStatus: (s) => rec.statuses.push(s),
    onRequest: (r) => rec.requests.push(r),
    onWithdrawn: (w) => rec.withdrawn.push(w),
    onSuperseded: () => rec.superseded++,
    onGone: (kind) => rec.gone.push(kind),
    onAlive: () => rec.alive++,
    onFallback: () => rec.fallbacks++,
  };
  rec.seqs = () => rec.requests.map((r) => r.seq);
  return rec;
}

function connection(rec, { client = {}, ...options } = {}) {
  FakeSocket.opened = [];
  return new PushConnection({
    base: "https://relay.example/v1",
    url: "wss://push.example/v1",
    code: "ABCD2345",
    token: "tok",
    tab: "tab-1",
    handlers: rec.handlers,
    WebSocketImpl: /** @type {any} */ (FakeSocket),
    client: /** @type {any} */ (client),
    backoff: { random: () => 0.5 }, // no jitter: attempt n waits 500 * 2^n ms
    ...options,
  });
}

/** Open, attach, and answer the attach with nothing pending up to ``upTo``. */
async function attached(conn, { cursor = null, upTo = 3, pingSeconds = 2 } = {}) {
  conn.open(cursor);
  last().accept();
  last().receive({ event: "resumed", after: cursor, upTo, pingSeconds });
  await flush();
  return last();
}

test("attach carries code, token, tab and the cursor; the answer to it connects and sets the cursor", async () => {
  const rec = recorder();
  const conn = connection(rec);
  conn.open(7);
  assert.equal(last().url, "wss://push.example/v1");
  assert.deepEqual(last().sent, []);
  last().accept();
  assert.deepEqual(last().sent, [{ action: "attach", code: "ABCD2345", token: "tok", tab: "tab-1", after: 7 }]);
  assert.deepEqual(rec.statuses, [], "not connected before the relay answers the attach");
  last().receive(request(8));
  last().receive({ event: "resumed", after: 7, upTo: 9, pingSeconds: 15 });
  await flush();
  assert.deepEqual(rec.statuses, ["connected"]);
  assert.deepEqual(rec.requests, [{ id: "r8", tool: "t", args: { n: 8 }, seq: 8 }]);
  assert.equal(conn.cursor, 9, "seq 9 never came: answered, withdrawn or expired");
  assert.equal(conn.pingMs, 15_000);
  conn.stop();
});

test("5 before 4: 5 is held and the plugin resumes from its cursor; 4 and 5 then run in order, once each", async () => {
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn, { upTo: 3 });
  ws.receive(request(5));
  await flush();
  assert.deepEqual(rec.seqs(), [], "5 must not run before 4");
  assert.deepEqual(ws.sentOf("resume"), [{ action: "resume", code: "ABCD2345", token: "tok", after: 3 }]);
  ws.receive(request(5)); // a second early one asks nothing more: one resume is under way
  assert.equal(ws.sentOf("resume").length, 1);
  // the relay's resume: everything unanswered after 3, then resumed
  ws.receive(request(4));
  ws.receive(request(5));
  ws.receive({ event: "resumed", after: 3, upTo: 5 });
  await flush();
  assert.deepEqual(rec.seqs(), [4, 5]);
  assert.equal(conn.cursor, 5);
  assert.equal(conn.held.size, 0);
  ws.receive(request(6));
  await flush();
  assert.deepEqual(rec.seqs(), [4, 5, 6]);
  assert.equal(ws.sentOf("resume").length, 1, "in order again: no resume");
  conn.stop();
});

test("the gap closes by itself when the missing seq is pushed before the resume's answer", async () => {
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn, { upTo: 3 });
  ws.receive(request(5));
  ws.receive(request(4)); // two writers' pushes crossed on the way
  await flush();
  assert.deepEqual(rec.seqs(), [4, 5]);
  ws.receive(request(4)); // the resume's copies: already handed on
  ws.receive(request(5));
  ws.receive({ event: "resumed", after: 3, upTo: 5 });
  await flush();
  assert.deepEqual(rec.seqs(), [4, 5]);
  conn.stop();
});

test("resumed.upTo moves the cursor past seqs that will never come", async () => {
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn, { upTo: 3 });
  ws.receive(request(7));
  await flush();
  assert.deepEqual(ws.sentOf("resume"), [{ action: "resume", code: "ABCD2345", token: "tok", after: 3 }]);
  // 4, 5, 6 were answered by then (or withdrawn): the resume sends only 7
  ws.receive(request(7));
  ws.receive({ event: "resumed", after: 3, upTo: 7 });
  await flush();
  assert.deepEqual(rec.seqs(), [7]);
  assert.equal(conn.cursor, 7);
  // a push that raced past the resume's end: 9 was held when upTo said 7, and 8 is past upTo too
  ws.receive(request(9));
  ws.receive({ event: "resumed", after: 7, upTo: 8 }); // 8 withdrawn: the held 9 runs without another resume
  await flush();
  assert.deepEqual(rec.seqs(), [7, 9]);
  assert.equal(conn.cursor, 9);
  conn.stop();
});

test("a request held past the resume's upTo asks again, and then runs", async () => {
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn, { upTo: 3 });
  ws.receive(request(6));
  ws.receive({ event: "resumed", after: 3, upTo: 4 }); // 5 was written after the resume looked
  await flush();
  assert.deepEqual(rec.seqs(), []);
  assert.deepEqual(ws.sentOf("resume"), [{ action: "resume", code: "ABCD2345", token: "tok", after: 3 }, { action: "resume", code: "ABCD2345", token: "tok", after: 4 }]);
  ws.receive(request(5));
  await flush();
  assert.deepEqual(rec.seqs(), [5, 6]);
  conn.stop();
});

test("duplicates are handed on once; after a reload (no cursor) the attach's resume comes in order", async () => {
  const rec = recorder();
  const conn = connection(rec);
  conn.open(null);
  const ws = last();
  ws.accept();
  assert.equal(ws.sentOf("attach")[0].after, null);
  // a push that crossed the attach's resume, then the resume itself
  ws.receive(request(3));
  ws.receive(request(2));
  ws.receive(request(3));
  ws.receive({ event: "resumed", after: null, upTo: 3, pingSeconds: 2 });
  ws.receive(request(3));
  ws.receive(request(2));
  await flush();
  assert.deepEqual(rec.seqs(), [2, 3]);
  conn.stop();
});

test("after a re-attach, a stale copy from before the cursor is not handed on again", async () => {
  const rec = recorder();
  const conn = connection(rec);
  conn.open(5);
  const ws = last();
  ws.accept();
  ws.receive(request(4)); // a late push of a request this page already ran
  ws.receive(request(6));
  ws.receive({ event: "resumed", after: 5, upTo: 6, pingSeconds: 2 });
  await flush();
  assert.deepEqual(rec.seqs(), [6]);
  conn.stop();
});

test("cursor-reset: the relay starts over; nothing runs until its resumed, which sets the cursor anew", async () => {
  const rec = recorder();
  let resets = 0;
  rec.handlers.onCursorReset = () => resets++;
  const conn = connection(rec);
  conn.open(40); // a cursor from before the relay's store was reset
  const ws = last();
  ws.accept();
  ws.receive({ event: "cursor-reset", lastEventId: 40, lastSeq: 3 });
  assert.equal(conn.cursor, null);
  ws.receive(request(3));
  ws.receive(request(2));
  ws.receive({ event: "resumed", after: 0, upTo: 3, pingSeconds: 2 });
  await flush();
  assert.equal(resets, 1);
  assert.deepEqual(rec.seqs(), [2, 3]);
  assert.equal(conn.cursor, 3);
  assert.deepEqual(ws.sentOf("resume"), [], "the reset's own resume is under way: no other asked for");
  conn.stop();
});

test("withdrawn, heartbeat and malformed messages", async () => {
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn);
  ws.receive({ event: "withdrawn", id: "r9", tool: "t", args: { a: 1 } });
  ws.receive({ event: "heartbeat" });
  ws.onmessage({ data: "not json" });
  ws.receive({ event: "error", code: "bad_input", message: "?" });
  ws.receive({ event: "tool-request", seq: "x", id: "r4" });
  await flush();
  assert.deepEqual(rec.withdrawn, [{ id: "r9", tool: "t", args: { a: 1 } }]);
  assert.equal(rec.alive, 1);
  assert.deepEqual(rec.seqs(), []);
  assert.equal(ws.closed, null, "none of it breaks the connection");
  conn.stop();
});

test("a pointer is fetched with the token, in its turn: a later inline request waits for it", async () => {
  const rec = recorder();
  const fetched = [];
  let release;
  const client = {
    fetchRequest(pointer, token) {
      fetched.push([pointer, token]);
      return new Promise((resolve) => {
        release = () => resolve({ id: "r4", tool: "big", args: { rows: [1, 2, 3] }, seq: 4 });
      });
    },
  };
  const conn = connection(rec, { client });
  const ws = await attached(conn, { upTo: 3 });
  ws.receive({ event: "tool-request", seq: 4, id: "r4", tool: "big", pointer: "/api/sessions/ABCD2345/requests/r4" });
  ws.receive(request(5));
  await flush();
  assert.deepEqual(fetched, [["/api/sessions/ABCD2345/requests/r4", "tok"]]);
  assert.deepEqual(rec.seqs(), [], "5 waits for 4's fetch");
  assert.equal(conn.cursor, 5, "both are in hand: no resume needed");
  release();
  await flush();
  assert.deepEqual(rec.requests, [
    { id: "r4", tool: "big", args: { rows: [1, 2, 3] }, seq: 4 },
    { id: "r5", tool: "t", args: { n: 5 }, seq: 5 },
  ]);
  assert.equal(ws.sentOf("resume").length, 0);
  conn.stop();
});

test("a pointer the relay no longer has (404) is skipped; the next request still runs", async () => {
  const rec = recorder();
  const client = {
    async fetchRequest() {
      throw new RelayHttpError(404, { code: "request_not_found" });
    },
  };
  const conn = connection(rec, { client });
  const ws = await attached(conn, { upTo: 3 });
  ws.receive({ event: "tool-request", seq: 4, id: "r4", tool: "big", pointer: "/api/sessions/ABCD2345/requests/r4" });
  ws.receive(request(5));
  await flush();
  await flush();
  assert.deepEqual(rec.seqs(), [5]);
  conn.stop();
});

test("RelayClient.fetchRequest GETs the pointer under the relay's base with the Bearer token", async () => {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 200, json: async () => ({ id: "r4", tool: "t", args: {}, seq: 4 }), headers: new Map() };
  };
  const client = new RelayClient("https://relay.example/v1", fetchImpl);
  assert.deepEqual(await client.fetchRequest("/api/sessions/ABCD2345/requests/r4", "tok"), {
    id: "r4",
    tool: "t",
    args: {},
    seq: 4,
  });
  assert.equal(calls[0].url, "https://relay.example/v1/api/sessions/ABCD2345/requests/r4");
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
  assert.equal(calls[0].init.method, undefined, "a GET");
});

test("pings every pingSeconds with the cursor; silence for 2.5 pings reconnects and re-attaches with the cursor", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    const ws = await attached(conn, { upTo: 3, pingSeconds: 2 });
    ws.receive(request(4));
    await flush();
    mock.timers.tick(1999);
    assert.equal(ws.sentOf("ping").length, 0);
    mock.timers.tick(1);
    assert.deepEqual(ws.sentOf("ping"), [{ action: "ping", code: "ABCD2345", token: "tok", after: 4 }]);
    ws.receive({ event: "heartbeat" }); // the answer keeps the watchdog quiet
    mock.timers.tick(2000);
    assert.equal(ws.sentOf("ping").length, 2);
    // no answer to that ping or the next: 5 s (2.5 × 2 s) after the last heartbeat the socket counts as dead
    mock.timers.tick(2999);
    assert.equal(ws.closed, null);
    mock.timers.tick(1);
    assert.equal(ws.closed, 1000, "the silent socket is closed");
    assert.equal(rec.statuses.at(-1), "reconnecting");
    assert.equal(FakeSocket.opened.length, 1, "the reconnect waits its backoff");
    mock.timers.tick(500); // backoff's first step without jitter
    assert.equal(FakeSocket.opened.length, 2);
    last().accept();
    assert.equal(last().sentOf("attach")[0].after, 4, "re-attach carries the cursor");
    assert.equal(ws.sentOf("ping").length, 3, "the dead socket pings no more");
    last().receive({ event: "resumed", after: 4, upTo: 4, pingSeconds: 2 });
    await flush();
    assert.equal(rec.statuses.at(-1), "connected");
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a dropped socket reconnects with backoff that grows while attaches fail, and resets once attached", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    await attached(conn, { upTo: 3 });
    last().fail();
    assert.equal(rec.statuses.at(-1), "reconnecting");
    mock.timers.tick(500);
    assert.equal(FakeSocket.opened.length, 2);
    last().fail(); // one failed open after a good connection: not yet a reason to give up on push
    assert.equal(rec.fallbacks, 0);
    mock.timers.tick(999);
    assert.equal(FakeSocket.opened.length, 2, "the second wait is longer");
    mock.timers.tick(1);
    assert.equal(FakeSocket.opened.length, 3);
    last().accept();
    last().receive({ event: "resumed", after: 3, upTo: 3, pingSeconds: 2 });
    await flush();
    assert.equal(conn.attempt, 0);
    assert.equal(conn.failures, 0);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

for (const kind of ["closed", "expired"]) {
  test(`${kind} ends the connection for good and says so`, async () => {
    mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
    try {
      const rec = recorder();
      const conn = connection(rec);
      const ws = await attached(conn);
      ws.receive({ event: kind });
      assert.deepEqual(rec.gone, [kind]);
      assert.equal(conn.stopped, true);
      assert.equal(ws.closed, 1000);
      mock.timers.tick(600_000);
      assert.equal(FakeSocket.opened.length, 1, "no reconnect");
      assert.equal(ws.sentOf("ping").length, 0, "no pings after the end");
    } finally {
      mock.timers.reset();
    }
  });
}

test("superseded stops the connection and tells the page; open() later takes the session back", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    const ws = await attached(conn, { upTo: 5 });
    ws.receive({ event: "superseded" });
    assert.equal(rec.superseded, 1);
    assert.equal(ws.closed, 1000);
    mock.timers.tick(600_000);
    assert.equal(FakeSocket.opened.length, 1);
    conn.open(conn.cursor); // "Connect here"
    last().accept();
    assert.equal(last().sentOf("attach")[0].after, 5);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a refused handshake (429, 5xx at $connect) is retried with backoff and is not a failure", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    conn.open(12);
    let wait = 500;
    for (let refused = 1; refused < REFUSALS_BEFORE_FALLBACK; refused++) {
      last().fail(); // closed before it opened: the browser does not say why
      assert.equal(conn.failures, 0, "a refusal is not a failure");
      assert.equal(rec.fallbacks, 0);
      assert.equal(rec.statuses.at(-1), "reconnecting");
      const before = FakeSocket.opened.length;
      mock.timers.tick(wait - 1);
      assert.equal(FakeSocket.opened.length, before, `refusal ${refused}: not before the backoff`);
      mock.timers.tick(1);
      assert.equal(FakeSocket.opened.length, before + 1);
      wait *= 2;
    }
    last().accept(); // the quota let it through at last
    last().receive({ event: "resumed", after: 12, upTo: 12, pingSeconds: 2 });
    await flush();
    assert.equal(rec.statuses.at(-1), "connected");
    assert.deepEqual([conn.refusals, conn.failures, conn.attempt], [0, 0, 0]);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("refusals that go on fall back to SSE with the cursor kept, and not for good: open() tries push again", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    conn.open(12);
    for (let refused = 1; refused <= REFUSALS_BEFORE_FALLBACK; refused++) {
      last().fail(); // a proxy that refuses every upgrade
      mock.timers.tick(60_000);
    }
    assert.equal(rec.fallbacks, 1);
    assert.equal(conn.stopped, true);
    assert.equal(conn.cursor, 12, "the SSE stream starts from here");
    assert.equal(FakeSocket.opened.length, REFUSALS_BEFORE_FALLBACK, "no socket after the fall back");
    conn.open(12); // the page, a while later
    assert.equal(FakeSocket.opened.length, REFUSALS_BEFORE_FALLBACK + 1);
    last().fail();
    assert.equal(rec.fallbacks, 1, "a fresh start: one refusal is no reason to fall back again");
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("sockets that open but never attach (refused, or silent) count as failures too", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec, { attachTimeoutMs: 3000 });
    conn.open(null);
    last().accept();
    last().receive({ event: "error", code: "unauthorized", message: "no" });
    assert.equal(rec.fallbacks, 0);
    mock.timers.tick(500);
    last().accept(); // a proxy that lets the upgrade through and then passes nothing
    mock.timers.tick(2999);
    assert.equal(rec.fallbacks, 0);
    mock.timers.tick(1);
    assert.equal(rec.fallbacks, 1);
  } finally {
    mock.timers.reset();
  }
});

test("a WebSocket constructor that throws (a CSP) counts as a failed open", () => {
  const rec = recorder();
  let tries = 0;
  const conn = connection(rec, {
    WebSocketImpl: /** @type {any} */ (
      class {
        constructor() {
          tries++;
          throw new Error("Refused to connect: Content Security Policy");
        }
      }
    ),
  });
  conn.open(null);
  assert.equal(rec.fallbacks, 0);
  conn.open(null); // the retry, run at once here
  assert.equal(tries, 2);
  assert.equal(rec.fallbacks, 1);
  conn.stop();
});

test("stop() and pause() leave no timer behind and close the socket", async () => {
  // Timers of the whole process: another test's stray one may fire meanwhile, so "none left" is "no more than before"
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
  const before = timers();
  const rec = recorder();
  const conn = connection(rec);
  const ws = await attached(conn, { pingSeconds: 1 });
  assert.ok(timers() > before, "attached: ping and watchdog timers run");
  conn.pause();
  assert.ok(timers() <= before);
  assert.equal(ws.closed, 1000);
  ws.fail(); // the close event of a socket it let go changes nothing
  assert.equal(FakeSocket.opened.length, 1);
  assert.ok(timers() <= before);
  await attached(conn, { cursor: conn.cursor, pingSeconds: 1 });
  assert.equal(FakeSocket.opened.length, 2, "open() after pause() attaches again");
  last().fail(); // a reconnect is scheduled now
  assert.ok(timers() > before);
  conn.stop();
  assert.ok(timers() <= before);
  assert.equal(conn._watchdog, null);
  assert.equal(conn._ping, null);
  assert.equal(conn._retry, null);
});

test("a ping timer that fires long after it should (the machine slept) reopens the socket at once", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    let wall = 0;
    const rec = recorder();
    const conn = connection(rec, { now: () => wall });
    const ws = await attached(conn, { upTo: 2, pingSeconds: 2 });
    wall += 2000;
    mock.timers.tick(2000);
    assert.equal(ws.sentOf("ping").length, 1, "on time: a ping");
    ws.receive({ event: "heartbeat" });
    wall += 120_000; // asleep for two minutes (longer than a hidden tab's timer is ever late); it fires on waking
    mock.timers.tick(2000);
    assert.equal(ws.sentOf("ping").length, 1, "no ping into a socket that slept");
    assert.equal(ws.closed, 1000);
    mock.timers.tick(500);
    last().accept();
    assert.equal(last().sentOf("attach")[0].after, 2, "re-attach carries the cursor");
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a socket that neither opens nor fails (a stalled proxy) counts as a failed open after attachTimeoutMs", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec, { attachTimeoutMs: 3000 });
    conn.open(null); // never accepted, never failed
    mock.timers.tick(2999);
    assert.equal(last().closed, null);
    mock.timers.tick(1);
    assert.equal(last().closed, 1000, "the stalled socket is given up on");
    assert.equal(rec.statuses.at(-1), "reconnecting");
    mock.timers.tick(500);
    assert.equal(FakeSocket.opened.length, 2, "and another is opened after the backoff");
    mock.timers.tick(3000); // the second stalls too: two failed opens in a row fall back to the stream
    assert.equal(rec.fallbacks, 1);
  } finally {
    mock.timers.reset();
  }
});

test("each ping is set when the relay's answer to the last comes, so it stays a fresh timer in a hidden tab", async () => {
  // Chrome runs a chain of timers (a setInterval, a timer set by a timer) at most once a minute in a tab hidden a
  // minute, and a timer set from a socket's message as any other: the next ping counts from the heartbeat.
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    const ws = await attached(conn, { upTo: 3, pingSeconds: 2 });
    mock.timers.tick(2000);
    assert.equal(ws.sentOf("ping").length, 1);
    mock.timers.tick(300);
    ws.receive({ event: "heartbeat" }); // 300 ms after the ping
    mock.timers.tick(1999);
    assert.equal(ws.sentOf("ping").length, 1, "not 2 s after the last ping but 2 s after its answer");
    mock.timers.tick(1);
    assert.equal(ws.sentOf("ping").length, 2);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a ping a minute late (a hidden tab's timers) keeps the socket; only a longer stop counts as sleep", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  try {
    let wall = 0;
    const rec = recorder();
    const conn = connection(rec, { now: () => wall });
    const ws = await attached(conn, { upTo: 2, pingSeconds: 20 });
    wall += 20_000 + HIDDEN_TIMER_LATE_MS - 1000; // due at 20 s, run a minute late, as Chrome runs a hidden tab's
    mock.timers.tick(20_000);
    assert.equal(ws.sentOf("ping").length, 1, "a late ping is still a ping");
    assert.equal(ws.closed, null);
    assert.equal(FakeSocket.opened.length, 1, "and no new socket");
    ws.receive({ event: "heartbeat" });
    wall += 20_000 + HIDDEN_TIMER_LATE_MS + 1000; // later than a hidden tab's timer ever is: the machine slept
    mock.timers.tick(20_000);
    assert.equal(ws.sentOf("ping").length, 1);
    assert.equal(ws.closed, 1000);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("an answer goes over the socket and is taken when the relay says answered; a refusal is POST's", async () => {
  const rec = recorder();
  const conn = connection(rec);
  assert.equal(conn.answer("r1", { result: 1 }), null, "not attached: the caller posts it");
  const ws = await attached(conn);
  const taken = conn.answer("r1", { result: { n: 1 } });
  assert.ok(taken);
  assert.deepEqual(ws.sentOf("answer"), [{ action: "answer", code: "ABCD2345", token: "tok", id: "r1", result: { n: 1 } }]);
  ws.receive({ event: "answered", id: "r1" });
  await taken;
  const refused = conn.answer("r2", { error: { message: "no" } });
  ws.receive({ event: "answer-refused", id: "r2", status: 409, code: "already_answered", message: "first stands" });
  await assert.rejects(refused, (err) => err instanceof RelayHttpError && err.status === 409);
  conn.stop();
});

test("an answer too large for one message, or one the socket loses, is left to POST /response", async () => {
  const rec = recorder();
  const conn = connection(rec);
  await attached(conn);
  assert.equal(conn.answer("big", { result: { text: "x".repeat(ANSWER_MAX_BYTES) } }), null);
  const lost = conn.answer("r3", { result: 3 });
  last().fail(); // the socket dies before the relay's word: the caller posts it, which the relay takes once
  await assert.rejects(lost, (err) => !(err instanceof RelayHttpError));
  conn.stop();
});

test("pings minutes apart: a ping the relay does not answer within PING_REPLY_MS means a dead socket", async () => {
  mock.timers.enable({ apis: ["setTimeout", "setInterval", "Date"] });
  try {
    const rec = recorder();
    const conn = connection(rec);
    const ws = await attached(conn, { upTo: 3, pingSeconds: 480 });
    mock.timers.tick(480_000);
    assert.equal(ws.sentOf("ping").length, 1);
    ws.receive({ event: "heartbeat" });
    mock.timers.tick(480_000); // the next ping
    assert.equal(ws.sentOf("ping").length, 2);
    mock.timers.tick(PING_REPLY_MS - 1); // nearly its whole wait for an answer
    assert.equal(ws.closed, null);
    mock.timers.tick(1);
    assert.equal(ws.closed, 1000, "dead within a ping and PING_REPLY_MS, not 2.5 pings (20 minutes)");
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});
