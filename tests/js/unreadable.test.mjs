// A request the plugin cannot read (an SSE or push event whose data is not JSON, or holds a number JSON cannot
// hold) is answered with an error the model sees, for its id, in its turn; never dropped in silence. Without an id
// there is nothing to answer, and the person is told.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PushConnection } from "../../core/codap_relay/plugin/js/push.js";
import { readEventData } from "../../core/codap_relay/plugin/js/request_data.js";
import { StreamConnection } from "../../core/codap_relay/plugin/js/stream.js";
import { Runner } from "../../core/codap_relay/plugin/js/runner.js";
import { MemoryStorage, PluginStore } from "../../core/codap_relay/plugin/js/storage.js";

const flush = () => new Promise((resolve) => setImmediate(resolve));

test("the id and tool are recovered from data that is not JSON; the request's values never are", () => {
  const python = '{"id": "r-1", "tool": "codap_api", "args": {"n": Infinity, "s": "NaN \\" Infinity", "m": -Infinity}}';
  const read = readEventData(python);
  assert.equal(read.data, null);
  assert.match(read.unreadable, /could not read this request as JSON/);
  assert.deepEqual([read.id, read.tool], ["r-1", "codap_api"]);
  assert.equal(read.found.args.s, 'NaN " Infinity', "text inside strings is left alone");
  assert.deepEqual([readEventData('{"id": "r\\"2", "tool": ').id, readEventData("garbage").id], ['r"2', null]);
  const huge = readEventData('{"id": "r-3", "tool": "t", "args": {"n": 1e999}}'); // JSON.parse reads it as Infinity
  assert.deepEqual([huge.data, huge.id, huge.unreadable], [null, "r-3", "the request holds a number JSON cannot hold (such as 1e999)"]);
  assert.deepEqual(readEventData('{"id": "ok", "args": {"n": 1.5}}'), { data: { id: "ok", args: { n: 1.5 } } });
});

/** A runner whose one tool records its calls, and the answers it posts. */
function runner() {
  const ran = [];
  const posted = [];
  const r = new Runner({
    tools: { codap_api: async (args) => ran.push(args) },
    store: new PluginStore(new MemoryStorage(), "http://relay"),
    post: async (id, body) => posted.push({ id, body }),
    sleep: async () => {},
    timeline: null,
  });
  return { r, ran, posted };
}

class FakeEventSource {
  static last = null;
  constructor(url) {
    this.url = url;
    this.listeners = {};
    FakeEventSource.last = this;
  }
  addEventListener(kind, fn) {
    this.listeners[kind] = fn;
  }
  close() {}
}

test("over SSE: an unreadable request is answered with unreadable_request for its id and its tool never runs", async () => {
  const { r, ran, posted } = runner();
  const unreadable = [];
  const conn = new StreamConnection({
    base: "https://relay.example/v1", code: "ABCD2345", token: "tok", EventSourceImpl: FakeEventSource, client: /** @type {any} */ ({}),
    handlers: { onStatus() {}, onRequest: (q) => r.enqueue(q), onUnreadable: (why) => unreadable.push(why), onSuperseded() {}, onGone() {} },
  });
  conn.open(null);
  const send = (data, lastEventId) => FakeEventSource.last.listeners["tool-request"]({ data, lastEventId });
  send('{"id": "r-1", "tool": "codap_api", "args": {"action": "get", "n": Infinity}}', "1");
  send('{"id": "r-2", "tool": "codap_api", "args": {"action": "get"}}', "2");
  send("{not json at all", "3");
  await flush();
  await flush();
  assert.deepEqual(ran, [{ action: "get" }], "only the readable request ran");
  assert.deepEqual(posted.map((p) => [p.id, p.body.error?.code ?? "result"]), [["r-1", "unreadable_request"], ["r-2", "result"]]);
  assert.match(posted[0].body.error.message, /could not read this request as JSON .*it did not run\. Send it again with finite numbers/);
  assert.equal(unreadable.length, 1);
  conn.stop();
});

class FakeSocket {
  static last = null;
  constructor() {
    this.sent = [];
    FakeSocket.last = this;
  }
  send(text) {
    this.sent.push(JSON.parse(text));
  }
  close() {}
}

test("over push: an unreadable request is answered in its seq's turn, so the requests after it still run", async () => {
  const { r, ran, posted } = runner();
  const unreadable = [];
  const conn = new PushConnection({
    base: "https://relay.example/v1", url: "wss://push.example/v1", code: "ABCD2345", token: "tok", tab: "tab-1",
    WebSocketImpl: /** @type {any} */ (FakeSocket), client: /** @type {any} */ ({}), backoff: { random: () => 0.5 },
    handlers: {
      onStatus() {}, onRequest: (q) => r.enqueue(q), onUnreadable: (why) => unreadable.push(why), onAlive() {},
      onSuperseded() {}, onGone() {}, onFallback() {},
    },
  });
  conn.open(null);
  const ws = FakeSocket.last;
  ws.onopen({});
  ws.onmessage({ data: JSON.stringify({ event: "resumed", after: null, upTo: 0, pingSeconds: 30 }) });
  await flush();
  ws.onmessage({ data: '{"event": "tool-request", "seq": 1, "id": "r-1", "tool": "codap_api", "args": {"n": NaN}}' });
  ws.onmessage({ data: JSON.stringify({ event: "tool-request", seq: 2, id: "r-2", tool: "codap_api", args: { action: "get" } }) });
  ws.onmessage({ data: "\u0000garbage" });
  for (let i = 0; i < 5; i++) await flush();
  assert.deepEqual(posted.map((p) => [p.id, p.body.error?.code ?? "result"]), [["r-1", "unreadable_request"], ["r-2", "result"]]);
  assert.deepEqual(ran, [{ action: "get" }]);
  assert.equal(conn.cursor, 2);
  assert.equal(unreadable.length, 1);
  conn.stop();
});
