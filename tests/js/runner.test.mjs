import assert from "node:assert/strict";
import { test } from "node:test";

import { RelayClient, RelayHttpError } from "../../core/codap_relay/plugin/js/relay.js";
import { Runner } from "../../core/codap_relay/plugin/js/runner.js";
import { MemoryStorage, PluginStore } from "../../core/codap_relay/plugin/js/storage.js";

function until(predicate) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      if (predicate()) return resolve();
      if (Date.now() - started > 2000) return reject(new Error("condition not met"));
      setTimeout(poll, 1);
    };
    poll();
  });
}

/** A timeline like performance's, with a clock the test moves. */
class FakeTimeline {
  constructor() {
    this.t = 0;
    this.entries = [];
  }
  now() {
    this.t += 5;
    return this.t;
  }
  measure(name, { start, end, detail }) {
    this.entries.push({ name, startTime: start, duration: end - start, detail });
  }
  clearMeasures(name) {
    this.entries = this.entries.filter((e) => e.name !== name);
  }
}

function harness({ failPosts = 0, storage = new MemoryStorage(), timeline = new FakeTimeline() } = {}) {
  const ran = [];
  const posted = [];
  let failures = failPosts;
  const tools = {
    echo: async (args) => {
      ran.push(args.n);
      await new Promise((r) => setTimeout(r, 2));
      return { n: args.n };
    },
    boom: async () => {
      throw new Error("kaput");
    },
  };
  const store = new PluginStore(storage, "http://relay");
  const runner = new Runner({
    tools,
    store,
    post: async (id, body) => {
      if (failures > 0) {
        failures -= 1;
        throw new TypeError("network down");
      }
      posted.push({ id, body });
    },
    sleep: () => new Promise((r) => setTimeout(r, 0)),
    timeline,
  });
  return { runner, ran, posted, store, storage, timeline };
}

test("runs in seq order, one at a time, each id once", async () => {
  const { runner, ran, posted } = harness();
  runner.enqueue({ id: "b", tool: "echo", args: { n: 2 }, seq: 2 });
  runner.enqueue({ id: "a", tool: "echo", args: { n: 1 }, seq: 1 }); // arrives late, runs after the first
  runner.enqueue({ id: "c", tool: "echo", args: { n: 3 }, seq: 3 });
  runner.enqueue({ id: "b", tool: "echo", args: { n: 2 }, seq: 2 }); // redelivered: ignored
  await until(() => posted.length === 3);
  assert.deepEqual(ran, [2, 1, 3]);
  assert.deepEqual(posted.map((p) => p.id).sort(), ["a", "b", "c"]);
});

test("failed POSTs are retried until accepted", async () => {
  const { runner, posted, store } = harness({ failPosts: 3 });
  runner.enqueue({ id: "x", tool: "echo", args: { n: 1 }, seq: 1 });
  await until(() => posted.length === 1);
  await until(() => store.entry("x")?.posted === true);
});

/**
 * A runner posting through the real RelayClient to a fake fetch that gives ``answers`` in turn, on a clock that
 * only ``sleep`` moves: ``posts`` holds the clock's time at each POST /response.
 */
function postingOnAFakeClock(answers) {
  let clock = 0;
  const posts = [];
  const client = new RelayClient("http://relay", async (url, init) => {
    assert.equal(`${init.method} ${url}`, "POST http://relay/response?code=ABCD2345"); // the token checked before the body
    posts.push(clock);
    const [status, headers] = answers.shift();
    return new Response(JSON.stringify(status < 300 ? { status: "completed" } : { error: "busy", message: "wait" }), {
      status,
      headers,
    });
  });
  const store = new PluginStore(new MemoryStorage(), "http://relay");
  const runner = new Runner({
    tools: { echo: async () => ({ ok: true }) },
    store,
    post: (id, body) => client.postResponse("ABCD2345", "token", id, body),
    now: () => clock,
    sleep: async (ms) => {
      clock += ms;
    },
  });
  return { runner, store, posts };
}

for (const status of [503, 429]) {
  test(`a ${status} with Retry-After is retried after that wait, not the backoff`, async () => {
    const { runner, store, posts } = postingOnAFakeClock([[status, { "Retry-After": "2" }], [202, {}]]);
    runner.enqueue({ id: "w", tool: "echo", args: {}, seq: 1 });
    await until(() => store.entry("w")?.posted === true);
    assert.equal(posts.length, 2);
    const waited = posts[1] - posts[0];
    assert.ok(waited >= 2000 && waited <= 3000, `retried after ${waited} ms`); // 2 s plus at most 1 s of jitter
  });
}

test("a huge Retry-After is waited out for at most a minute (plus jitter); without one the backoff stays", async () => {
  const { runner, store, posts } = postingOnAFakeClock([
    [503, { "Retry-After": "3600" }],
    [503, {}],
    [202, {}],
  ]);
  runner.enqueue({ id: "h", tool: "echo", args: {}, seq: 1 });
  await until(() => store.entry("h")?.posted === true);
  const [capped, backoff] = [posts[1] - posts[0], posts[2] - posts[1]];
  assert.ok(capped >= 60_000 && capped <= 75_000, `retried after ${capped} ms`);
  assert.ok(backoff >= 750 && backoff <= 1250, `backed off ${backoff} ms`); // the second attempt's: 1 s, jittered
});

test("tool errors and unknown tools are answered with an error body", async () => {
  const { runner, posted } = harness();
  runner.enqueue({ id: "e1", tool: "boom", args: {}, seq: 1 });
  runner.enqueue({ id: "e2", tool: "missing", args: {}, seq: 2 });
  await until(() => posted.length === 2);
  assert.match(posted[0].body.error.message, /kaput/);
  assert.equal(posted[1].body.error.code, "unknown_tool");
});

test("after a reload a stored outcome is re-posted, not re-run", async () => {
  const storage = new MemoryStorage();
  const first = harness({ storage, failPosts: 1000 });
  first.runner.enqueue({ id: "r1", tool: "echo", args: { n: 1 }, seq: 1 });
  await until(() => first.store.entry("r1")?.state === "done");
  first.runner.stop();

  const second = harness({ storage });
  second.runner.resume();
  second.runner.enqueue({ id: "r1", tool: "echo", args: { n: 1 }, seq: 1 }); // the relay redelivers it
  await until(() => second.posted.length >= 1);
  assert.deepEqual(second.ran, []);
  assert.deepEqual(second.posted[0].body, { result: { n: 1 } });
});

test("a request that was running during a reload is answered as indeterminate", async () => {
  const storage = new MemoryStorage();
  const store = new PluginStore(storage, "http://relay");
  store.markStarted("s1", { tool: "echo", seq: 1 });
  const { runner, ran, posted } = harness({ storage });
  runner.enqueue({ id: "s1", tool: "echo", args: { n: 1 }, seq: 1 });
  await until(() => posted.length === 1);
  assert.deepEqual(ran, []);
  assert.equal(posted[0].body.error.code, "plugin_reloaded");
});

test("404 and 409 from the relay end delivery without retrying forever", async () => {
  const store = new PluginStore(new MemoryStorage(), "http://relay");
  let calls = 0;
  const runner = new Runner({
    tools: { echo: async () => ({}) },
    store,
    post: async () => {
      calls += 1;
      throw new RelayHttpError(409, { error: "already_answered" });
    },
    sleep: () => new Promise((r) => setTimeout(r, 0)),
  });
  runner.enqueue({ id: "d", tool: "echo", args: {}, seq: 1 });
  await until(() => store.entry("d")?.posted === true);
  assert.equal(calls, 1);
});

test("a result the relay refuses (400) is answered with an error saying so, not retried forever", async () => {
  const store = new PluginStore(new MemoryStorage(), "http://relay");
  const sent = [];
  const runner = new Runner({
    tools: { picture: async () => ({ content: [{ type: "image", data: "eA==", mimeType: "image/png" }] }) },
    store,
    post: async (id, body) => {
      sent.push(body);
      if (body.result) throw new RelayHttpError(400, { error: "invalid_result", message: "result.content[0].data is not a image/png image." });
    },
    sleep: () => new Promise((r) => setTimeout(r, 0)),
  });
  runner.enqueue({ id: "p", tool: "picture", args: {}, seq: 1 });
  await until(() => store.entry("p")?.posted === true);
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[1].error, {
    message: "The relay refused this tool's result: result.content[0].data is not a image/png image.",
    code: "result_refused",
  });
});

test("each request's time from its event to its answer's first POST is a User Timing measure", async () => {
  const { runner, posted, timeline } = harness({ failPosts: 2 });
  runner.enqueue({ id: "m1", tool: "echo", args: { n: 1 }, seq: 1 });
  runner.enqueue({ id: "m2", tool: "boom", args: {}, seq: 2 });
  await until(() => posted.length === 2);
  assert.deepEqual(timeline.entries.map((e) => e.name), ["codap-relay echo m1", "codap-relay boom m2"]); // retries add none
  const [first, second] = timeline.entries;
  assert.equal(first.detail.tool, "echo");
  assert.equal(first.detail.ok, true);
  assert.equal(second.detail.ok, false);
  assert.ok(first.detail.runMs > 0 && first.duration >= first.detail.queuedMs + first.detail.runMs);
  assert.ok(second.detail.queuedMs > 0); // it waited for the first
});

test("the timeline keeps only the newest 200 measures", async () => {
  const { runner, posted, timeline } = harness();
  for (let i = 1; i <= 205; i++) runner.enqueue({ id: `q${i}`, tool: "boom", args: {}, seq: i });
  await until(() => posted.length === 205);
  assert.equal(timeline.entries.length, 200);
  assert.equal(timeline.entries[0].name, "codap-relay boom q6");
});
