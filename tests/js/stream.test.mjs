// The stream's life at a deployed relay: the page's id on every stream, the detach request pagehide sends, and
// a stream refused for want of room (503 + Retry-After), which waits, keeps its code alive and connects later.
import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { RelayClient, RelayHttpError, RelayTimeoutError, newTabId } from "../../core/codap_relay/plugin/js/relay.js";
import { StreamConnection } from "../../core/codap_relay/plugin/js/stream.js";

class FakeEventSource {
  static opened = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.listeners = {};
    FakeEventSource.opened.push(this);
  }
  addEventListener(kind, fn) {
    this.listeners[kind] = fn;
  }
  close() {
    this.readyState = 2;
  }
  /** The relay refused the stream (any HTTP error): EventSource gives up and says only "error". */
  refuse() {
    this.readyState = 2;
    this.onerror?.({});
  }
}

function recorder() {
  const statuses = [];
  const waits = [];
  let alive = 0;
  const handlers = {
    onStatus: (s) => statuses.push(s),
    onAlive: () => alive++,
    onWaitForRoom: (w) => waits.push(w),
    onRequest() {},
    onSuperseded() {},
    onGone() {},
  };
  return { handlers, statuses, waits, alive: () => alive };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

test("every stream carries the page's id, and detach is a bodiless keepalive POST the browser sends unpreflighted", async () => {
  const id = newTabId();
  assert.match(id, /^[0-9a-f]{32}$/);
  assert.notEqual(id, newTabId());

  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 200, json: async () => ({ code: "ABCD2345", detached: true }), headers: new Map() };
  };
  const client = new RelayClient("https://relay.example/v1", fetchImpl);
  assert.deepEqual(await client.detach("ABCD2345", "tok", "tab-1"), { code: "ABCD2345", detached: true });
  const [{ url, init }] = calls;
  assert.equal(url, "https://relay.example/v1/api/sessions/ABCD2345/detach?tab=tab-1&token=tok");
  assert.equal(init.method, "POST");
  assert.equal(init.keepalive, true);
  assert.equal(init.headers, undefined); // no Authorization header, no body: a simple request, no preflight
  assert.equal(init.body, undefined);

  FakeEventSource.opened = [];
  const conn = new StreamConnection({
    base: "https://relay.example/v1",
    code: "ABCD2345",
    token: "tok",
    tab: "tab-1",
    handlers: recorder().handlers,
    EventSourceImpl: FakeEventSource,
    client,
  });
  conn.open(7);
  const opened = new URL(FakeEventSource.opened[0].url);
  assert.equal(opened.searchParams.get("tab"), "tab-1");
  assert.equal(opened.searchParams.get("lastEventId"), "7");
  conn.stop();
});

test("a stream refused for want of room waits Retry-After, says so, keeps its code alive, then connects", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    FakeEventSource.opened = [];
    const looks = [];
    let room = false;
    const client = {
      async sessionStatus(code, token) {
        looks.push(["status", code, token]);
        return { code, connected: false };
      },
      async checkStream(code, token) {
        looks.push(["check", code, token]);
        if (!room) throw new RelayHttpError(503, { error: "INTEGRATION_FAILURE" }, 5);
        return true;
      },
    };
    const rec = recorder();
    const conn = new StreamConnection({
      base: "https://relay.example/v1",
      code: "ABCD2345",
      token: "tok",
      handlers: rec.handlers,
      EventSourceImpl: FakeEventSource,
      client,
    });
    conn.open(null);
    FakeEventSource.opened[0].refuse();
    await flush();
    // The token goes with the status call: that is what keeps the code alive while the stream cannot run.
    assert.deepEqual(looks, [["status", "ABCD2345", "tok"], ["check", "ABCD2345", "tok"]]);
    assert.equal(rec.alive(), 1);
    assert.equal(rec.statuses.at(-1), "room");
    assert.equal(rec.waits.length, 1);
    const [{ ms }] = rec.waits;
    assert.ok(ms >= 5000 && ms <= 7500, `waits ${ms} ms for a Retry-After of 5 s`);

    mock.timers.tick(ms - 1);
    await flush();
    assert.equal(looks.length, 2, "never before the Retry-After");
    mock.timers.tick(1);
    await flush();
    assert.equal(looks.length, 4, "looks again: the status (alive again) and the check");
    assert.equal(rec.alive(), 2);
    assert.ok(!rec.statuses.slice(1).includes("reconnecting"), "the word stays 'room' while it waits");
    assert.equal(FakeEventSource.opened.length, 1, "no stream opened while there is no room");

    room = true;
    mock.timers.tick(rec.waits[1].ms);
    await flush();
    mock.timers.tick(1000); // the first reopen after the wait: backoff's first step (at most 625 ms)
    await flush();
    assert.equal(FakeEventSource.opened.length, 2, "room at last: the stream opens");
    assert.equal(conn.waitingForRoom, false);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a refusal other than for room reopens with backoff, as before", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    FakeEventSource.opened = [];
    const client = {
      sessionStatus: async (code) => ({ code }),
      checkStream: async () => {
        throw new RelayHttpError(403, { error: "token_invalid" }, null);
      },
    };
    const rec = recorder();
    const conn = new StreamConnection({
      base: "https://relay.example/v1",
      code: "ABCD2345",
      token: "tok",
      handlers: rec.handlers,
      EventSourceImpl: FakeEventSource,
      client,
    });
    conn.open(null);
    FakeEventSource.opened[0].refuse();
    await flush();
    assert.deepEqual(rec.waits, []);
    assert.equal(rec.statuses.at(-1), "reconnecting");
    mock.timers.tick(1000);
    assert.equal(FakeEventSource.opened.length, 2);
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a stream whose connection is taken and never answered is given up after the watchdog, first open or retry", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    FakeEventSource.opened = [];
    const rec = recorder();
    const conn = new StreamConnection({
      base: "https://relay.example/v1",
      code: "ABCD2345",
      token: "tok",
      watchdogMs: 5000,
      handlers: rec.handlers,
      EventSourceImpl: FakeEventSource,
      client: /** @type {any} */ ({}),
    });
    conn.open(null); // the first open hangs: no open, no error
    mock.timers.tick(4999);
    assert.equal(FakeEventSource.opened[0].readyState, 0);
    mock.timers.tick(1);
    assert.equal(FakeEventSource.opened[0].readyState, 2, "closed by the watchdog");
    mock.timers.tick(1000); // backoff, at most 625 ms on the first step
    assert.equal(FakeEventSource.opened.length, 2);

    const es = FakeEventSource.opened[1];
    es.onopen({});
    assert.equal(rec.statuses.at(-1), "connected");
    // the relay goes away: EventSource says "error" and retries by itself (readyState stays CONNECTING), but
    // its retry reaches a server that took the connection and never answers
    es.readyState = 0;
    es.onerror({});
    assert.equal(rec.statuses.at(-1), "reconnecting");
    mock.timers.tick(4999);
    assert.equal(FakeEventSource.opened.length, 2, "EventSource's own retry is given its time");
    mock.timers.tick(1);
    assert.equal(es.readyState, 2, "then the hung retry is closed");
    mock.timers.tick(1000);
    assert.equal(FakeEventSource.opened.length, 3, "and a new stream opened with the cursor");
    conn.stop();
  } finally {
    mock.timers.reset();
  }
});

test("a call nobody answers, or whose body stops coming, ends in a RelayTimeoutError at its deadline", async () => {
  // as fetch does: the promise (or the body's) rejects when the signal aborts
  const hung = (signal) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
  const never = async (_url, init) => hung(init.signal);
  const slowBody = async (_url, init) => ({ ok: true, status: 200, headers: new Map(), json: () => hung(init.signal) });
  for (const fetchImpl of [never, slowBody]) {
    const client = new RelayClient("https://relay.example/v1", fetchImpl, { callMs: 30 });
    const started = Date.now();
    await assert.rejects(client.sessionStatus("ABCD2345", "tok"), (err) => err instanceof RelayTimeoutError);
    await assert.rejects(client.checkStream("ABCD2345", "tok"), RelayTimeoutError);
    await assert.rejects(client.postResponse("ABCD2345", "tok", "r1", { status: "ok" }), RelayTimeoutError);
    assert.ok(Date.now() - started < 5000);
  }
  // a call answered in time is not cut: its deadline timer is cleared
  const quick = async () => ({ ok: true, status: 200, headers: new Map(), json: async () => ({ code: "ABCD2345" }) });
  const client = new RelayClient("https://relay.example/v1", quick, { callMs: 30 });
  assert.deepEqual(await client.sessionStatus("ABCD2345", "tok"), { code: "ABCD2345" });
  await new Promise((resolve) => setTimeout(resolve, 50));
  // an answer's deadline grows with its size, at a slow link's pace: 3 MB gets 20 s + 94 s
  const sized = new RelayClient("https://relay.example/v1", quick);
  assert.equal(sized._uploadMs("x".repeat(3_000_000)), 20_000 + 93_750);
  assert.equal(sized._uploadMs("{}"), 20_001);
});
