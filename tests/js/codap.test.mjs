// The iframe-phone transport against a scripted parent window: handshake, one reply per message (arrays
// included), the timing of each message, and what a timeout says about reads and changes.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CodapPhone } from "../../core/codap_relay/plugin/js/codap.js";

/** A plugin window whose parent answers like CODAP (or not at all, when `answer` is false). */
function windows({ answer = true } = {}) {
  const listeners = [];
  const sent = [];
  const parent = {
    postMessage(message) {
      sent.push(message);
      const reply = (data) => setTimeout(() => listeners.forEach((fn) => fn({ source: parent, data })), 1);
      if (message.type === "hello") reply({ type: "hello" });
      if (answer && message.content?.messageType === "call") {
        const value = message.content.value;
        const one = (r) => ({ success: true, values: r.resource });
        reply({
          type: "data-interactive",
          content: { messageType: "returnValue", uuid: message.content.uuid, value: Array.isArray(value) ? value.map(one) : one(value) },
        });
      }
    },
  };
  const win = {
    parent,
    addEventListener: (type, fn) => type === "message" && listeners.push(fn),
    setInterval: (fn, ms) => setInterval(fn, ms),
    clearInterval: (t) => clearInterval(t),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t),
  };
  return { win, sent };
}

class FakeTimeline {
  constructor() {
    this.t = 0;
    this.entries = [];
  }
  now() {
    return (this.t += 3);
  }
  measure(name, { start, end, detail }) {
    this.entries.push({ name, duration: end - start, detail });
  }
  clearMeasures(name) {
    this.entries = this.entries.filter((e) => e.name !== name);
  }
}

test("an array of requests is one message, answered by one array in order, and timed", async () => {
  const { win, sent } = windows();
  const timeline = new FakeTimeline();
  const phone = new CodapPhone({ win, timeline, helloTimeoutMs: 50 });
  phone.start();
  const replies = await phone.call([{ action: "get", resource: "a" }, { action: "get", resource: "b" }]);
  assert.deepEqual(replies.map((r) => r.values), ["a", "b"]);
  assert.equal(sent.filter((m) => m.content?.messageType === "call").length, 1);
  assert.deepEqual(timeline.entries.map((e) => [e.name, e.detail]), [["codap-relay message 1", { requests: 2, ok: true }]]);
  assert.ok(timeline.entries[0].duration > 0);
});

test("a read that times out says so; a change that times out says CODAP may still carry it out", async () => {
  const { win } = windows({ answer: false });
  const phone = new CodapPhone({ win, timeoutMs: 20, changeTimeoutMs: 40, helloTimeoutMs: 50 });
  phone.start();
  await phone.whenConnected();
  await assert.rejects(phone.call({ action: "get", resource: "x" }), (e) => {
    assert.equal(e.code, "codap_timeout");
    assert.doesNotMatch(e.message, /may still/);
    return true;
  });
  const started = Date.now();
  await assert.rejects(phone.call([{ action: "get", resource: "x" }, { action: "create", resource: "y" }]), (e) => {
    assert.equal(e.code, "codap_timeout");
    assert.match(e.message, /may still carry out the change/);
    return true;
  });
  assert.ok(Date.now() - started >= 35); // changes wait longer than reads
});

test("in a hidden tab a read waits as long as a change before it counts as unanswered", async () => {
  const { win } = windows({ answer: false });
  win.document = { visibilityState: "hidden" };
  const phone = new CodapPhone({ win, timeoutMs: 20, changeTimeoutMs: 80, helloTimeoutMs: 50 });
  phone.start();
  await phone.whenConnected();
  const started = Date.now();
  await assert.rejects(phone.call({ action: "get", resource: "x" }), (e) => {
    assert.equal(e.code, "codap_timeout");
    assert.ok(e.data.waitedMs >= 80, `waited ${e.data.waitedMs} ms`);
    return true;
  });
  assert.ok(Date.now() - started >= 75, "the browser slows a hidden tab: a read there waits past its usual limit");
  // Back in front, a read has its usual limit again.
  win.document.visibilityState = "visible";
  const again = Date.now();
  await assert.rejects(phone.call({ action: "get", resource: "x" }), (e) => e.code === "codap_timeout");
  assert.ok(Date.now() - again < 75);
});

test("the timeline keeps the newest 500 message measures", async () => {
  const { win } = windows();
  const timeline = new FakeTimeline();
  const phone = new CodapPhone({ win, timeline, helloTimeoutMs: 50 });
  phone.start();
  for (let i = 0; i < 503; i++) await phone.call({ action: "get", resource: "r" });
  assert.equal(timeline.entries.length, 500);
  assert.equal(timeline.entries[0].name, "codap-relay message 4");
});

test("messages go to CODAP's origin once known; only the hello goes to '*' before", async () => {
  const listeners = [];
  const targets = [];
  const parent = {
    postMessage(message, target) {
      targets.push([message.type === "hello" ? "hello" : message.content.messageType, target]);
      const reply = (data) =>
        setTimeout(() => listeners.forEach((fn) => fn({ source: parent, origin: "https://codap.example", data })), 1);
      if (message.type === "hello") reply({ type: "hello" });
      if (message.content?.messageType === "call") {
        reply({ type: "data-interactive", content: { messageType: "returnValue", uuid: message.content.uuid, value: { success: true } } });
      }
    },
  };
  const win = {
    parent,
    addEventListener: (type, fn) => type === "message" && listeners.push(fn),
    setInterval: (fn, ms) => setInterval(fn, ms),
    clearInterval: (t) => clearInterval(t),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t),
  };
  const phone = new CodapPhone({ win, helloTimeoutMs: 50 });
  phone.start();
  await phone.call({ action: "get", resource: "a" });
  assert.deepEqual(targets[0], ["hello", "*"]);
  assert.deepEqual(targets.at(-1), ["call", "https://codap.example"]);
  // another origin speaking from the parent window (it navigated) is not CODAP: ignored
  const before = targets.length;
  listeners.forEach((fn) =>
    fn({ source: parent, origin: "https://evil.example", data: { type: "data-interactive", content: { messageType: "call", uuid: "x", value: {} } } }),
  );
  assert.equal(targets.length, before);

  // where the browser names the parent's origin up front, even the hello goes only there
  const named = { ...win, location: { ancestorOrigins: ["https://codap.example"] } };
  targets.length = 0;
  const early = new CodapPhone({ win: named, helloTimeoutMs: 50 });
  early.start();
  await early.whenConnected();
  assert.deepEqual(targets[0], ["hello", "https://codap.example"]);
});
