// Slow CODAP, said out loud: a message unanswered past the threshold is reported (and its end too), each tool's
// CODAP time is summed, a slow tool's answer carries a line and _meta for the model, and a timeout names the tool
// and the CODAP request it waited for.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CodapPhone, SLOW_CODAP_MS, describeRequest } from "../../core/codap_relay/plugin/js/codap.js";
import { ToolError } from "../../core/codap_relay/plugin/js/errors.js";
import { WAIT_META, slowStatusText, withCodapWaits } from "../../core/codap_relay/plugin/js/slow.js";

/** A plugin window whose parent answers each call after `delayMs` (never, when null). */
function windows(delayMs) {
  const listeners = [];
  const parent = {
    postMessage(message) {
      const reply = (data, ms) => setTimeout(() => listeners.forEach((fn) => fn({ source: parent, data })), ms);
      if (message.type === "hello") reply({ type: "hello" }, 1);
      if (message.content?.messageType === "call" && delayMs.value !== null) {
        const value = { success: true, values: {} };
        reply({ type: "data-interactive", content: { messageType: "returnValue", uuid: message.content.uuid, value } }, delayMs.value);
      }
    },
  };
  return {
    parent,
    addEventListener: (type, fn) => type === "message" && listeners.push(fn),
    setInterval: (fn, ms) => setInterval(fn, ms),
    clearInterval: (t) => clearInterval(t),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t),
  };
}

function phoneWith(delay, options = {}) {
  const seen = [];
  const phone = new CodapPhone({ win: windows(delay), helloTimeoutMs: 50, timeline: null, onSlow: (s) => seen.push(s), ...options });
  phone.start();
  return { phone, seen };
}

test("the threshold is three seconds, a named constant", () => {
  assert.equal(SLOW_CODAP_MS, 3000);
});

test("a request is described as a person reads it", () => {
  assert.equal(describeRequest({ action: "get", resource: "componentList" }), "get componentList");
  const three = [{ action: "get", resource: "a" }, { action: "get", resource: "b" }, { action: "create", resource: "c" }];
  assert.equal(describeRequest(three), "get a, get b, and 1 more");
});

test("a message past the threshold is reported while it waits, and its end when it is answered", async () => {
  const delay = { value: 60 };
  const { phone, seen } = phoneWith(delay, { slowMs: 20 });
  await phone.call([{ action: "get", resource: "interactiveFrame" }, { action: "get", resource: "componentList" }]);
  assert.equal(seen.length, 2);
  assert.equal(seen[0].request, "get interactiveFrame, get componentList");
  assert.ok(seen[0].waitedMs >= 20, String(seen[0].waitedMs));
  assert.equal(seen[1], null);
  const waits = phone.takeWaits();
  assert.equal(waits.messages, 1);
  assert.equal(waits.slowest, "get interactiveFrame, get componentList");
  assert.ok(waits.slowestMs >= Math.max(50, seen[0].waitedMs) && waits.totalMs === waits.slowestMs, JSON.stringify(waits));
  assert.deepEqual(phone.takeWaits(), { messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }); // taken once
});

test("a quick message is not reported", async () => {
  const { phone, seen } = phoneWith({ value: 1 }, { slowMs: 50 });
  await phone.call({ action: "get", resource: "dataContextList" });
  assert.deepEqual(seen, []);
});

test("a timeout names the CODAP request it waited for, and ends the slow note", async () => {
  const { phone, seen } = phoneWith({ value: null }, { slowMs: 10, timeoutMs: 40 });
  await assert.rejects(phone.call({ action: "get", resource: "componentList" }), (e) => {
    assert.equal(e.code, "codap_timeout");
    assert.match(e.message, /^CODAP did not answer "get componentList" within 0 s\./);
    assert.equal(e.data.codapRequest, "get componentList");
    return true;
  });
  assert.deepEqual(seen.map((s) => s && s.request), ["get componentList", null]);
});

test("the person's note gives what CODAP waits for, how long, the cause and the fix", () => {
  const text = slowStatusText({ request: "get componentList", waitedMs: 3200 });
  assert.match(text, /^CODAP is slow to answer \(waiting 3\.2 s for "get componentList"\)\./);
  assert.match(text, /without graphics acceleration/);
  assert.match(text, /Disable graphics acceleration/);
  assert.match(text, /hardware acceleration/);
});

function toolsOn(waits, run) {
  const phone = { queue: [], takeWaits: () => phone.queue.shift() ?? { messages: 0, totalMs: 0, slowestMs: 0, slowest: "" } };
  phone.queue.push({ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, waits); // before the tool, after it
  return withCodapWaits({ get_codap_status: run }, phone, 3000).get_codap_status;
}

const answer = () => ({ content: [{ type: "text", text: "CODAP is connected." }, { type: "image", data: "x" }], structuredContent: { a: 1 } });

test("a slow tool's answer tells the model how long CODAP took and why, in its text and in _meta", async () => {
  const tool = toolsOn({ messages: 3, totalMs: 25_312, slowestMs: 25_100, slowest: "get interactiveFrame, get componentList" }, async () => answer());
  const result = await tool({});
  const [text, image] = result.content;
  assert.equal(image.type, "image");
  assert.deepEqual(result.structuredContent, { a: 1 }); // the outputSchema's part is untouched
  const [first, note] = text.text.split("\n");
  assert.equal(first, "CODAP is connected.");
  assert.match(note, /^CODAP was slow: it took 25\.3 s to answer this call's 3 messages, 25\.1 s for "get interactiveFrame, get componentList"\. /);
  assert.match(note, /Disable graphics acceleration/);
  assert.deepEqual(
    { ...result._meta[WAIT_META], cause: undefined, fix: undefined },
    { codapMs: 25_312, messages: 3, slowestMs: 25_100, slowestRequest: "get interactiveFrame, get componentList", cause: undefined, fix: undefined },
  );
});

test("a quick tool's answer is unchanged", async () => {
  const tool = toolsOn({ messages: 2, totalMs: 2_900, slowestMs: 2_000, slowest: "get componentList" }, async () => answer());
  assert.deepEqual(await tool({}), answer());
});

test("a CODAP timeout names the tool and the CODAP request; other errors pass unchanged", async () => {
  const timedOut = toolsOn(undefined, async () => {
    throw new ToolError('CODAP did not answer "get componentList" within 20 s. Check…', "codap_timeout", { codapRequest: "get componentList" });
  });
  await assert.rejects(timedOut({}), (e) => {
    assert.equal(e.code, "codap_timeout");
    assert.match(e.message, /^get_codap_status was waiting for CODAP: CODAP did not answer "get componentList" within 20 s\./);
    assert.match(e.message, /Disable graphics acceleration/);
    assert.deepEqual(e.data, { codapRequest: "get componentList", tool: "get_codap_status" });
    return true;
  });
  const refused = new ToolError("no such dataset", "dataset_not_found");
  await assert.rejects(toolsOn(undefined, async () => { throw refused; })({}), (e) => e === refused);
});
