// Slow CODAP, said out loud: a message unanswered past the threshold is reported (and its end too), each tool's
// CODAP time is summed, a slow tool's answer carries a line and _meta for the model, and a timeout names the tool
// and the CODAP request it waited for.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CodapPhone, SLOW_CODAP_MS, describeRequest } from "../../core/codap_relay/plugin/js/codap.js";
import { ToolError } from "../../core/codap_relay/plugin/js/errors.js";
import {
  BLOCK_NOTE_MS,
  BlockWatch,
  WAIT_META,
  slowNotes,
  slowStatusText,
  withCodapWaits,
} from "../../core/codap_relay/plugin/js/slow.js";

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
  assert.match(text, /Graphics Acceleration: Turn off/);
  assert.match(text, /hardware acceleration/);
});

function toolsOn(waits, run) {
  const phone = { queue: [], takeWaits: () => phone.queue.shift() ?? { messages: 0, totalMs: 0, slowestMs: 0, slowest: "" } };
  phone.queue.push({ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, waits); // before the tool, after it
  return withCodapWaits({ get_codap_status: run }, phone, { slowMs: 3000 }).get_codap_status;
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
  assert.match(note, /Graphics Acceleration: Turn off/);
  assert.deepEqual(
    { ...result._meta[WAIT_META], cause: undefined, fix: undefined },
    { codapMs: 25_312, messages: 3, slowestMs: 25_100, slowestRequest: "get interactiveFrame, get componentList", blockedMs: 0, cause: undefined, fix: undefined },
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
    assert.match(e.message, /Graphics Acceleration: Turn off/);
    assert.deepEqual(e.data, { codapRequest: "get componentList", tool: "get_codap_status" });
    return true;
  });
  const refused = new ToolError("no such dataset", "dataset_not_found");
  await assert.rejects(toolsOn(undefined, async () => { throw refused; })({}), (e) => e === refused);
});

/** A page whose timers the test fires by hand, with a clock it moves. */
function clockedPage() {
  const page = { t: 1_000_000, ticks: [], visibilityState: "visible", onVisibility: null };
  page.win = {
    setInterval: (fn) => page.ticks.push(fn),
    document: {
      get visibilityState() { return page.visibilityState; },
      addEventListener: (type, fn) => type === "visibilitychange" && (page.onVisibility = fn),
    },
  };
  page.after = (ms) => { page.t += ms; page.ticks.forEach((fn) => fn()); };
  return page;
}

test("a stop of the page is noticed afterwards, unless the tab was hidden or the computer slept", () => {
  const page = clockedPage();
  const seen = [];
  const watch = new BlockWatch({ win: page.win, now: () => page.t, everyMs: 250, onBlock: (b) => seen.push(b.blockedMs) });
  watch.start();
  page.after(250);
  page.after(2_900); // late by 2.65 s: not slow
  page.after(7_650); // CODAP drew for 7.4 s
  assert.deepEqual(seen, [7_400]);
  page.visibilityState = "hidden";
  page.onVisibility();
  page.after(60_000); // a hidden tab's timers are slowed down on purpose
  page.visibilityState = "visible";
  page.onVisibility();
  page.after(30_000);
  page.after(3_600_250); // an hour asleep
  assert.deepEqual(seen, [7_400]);
  assert.deepEqual(watch.take(), { blockedMs: 7_400, endedAt: 1_000_000 + 250 + 2_900 + 7_650 });
  assert.deepEqual(watch.take(), { blockedMs: 0, endedAt: 0 });
});

test("a tool whose request waited behind a stop of the page tells the model so", async () => {
  let t = 50_000;
  const stops = [{ blockedMs: 7_370, endedAt: 49_400 }, { blockedMs: 0, endedAt: 0 }]; // just before it started
  const blocks = { take: () => stops.shift() };
  const quick = { messages: 3, totalMs: 12, slowestMs: 6, slowest: "get componentList" };
  const phone = { queue: [{ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, quick], takeWaits: () => phone.queue.shift() };
  const tool = withCodapWaits({ get_codap_status: async () => answer() }, phone, { blocks, now: () => t }).get_codap_status;
  const result = await tool({});
  const note = result.content[0].text.split("\n")[1];
  assert.match(note, /^CODAP was slow: its page, which runs this plugin too, was busy for 7\.4 s while this call waited to run or ran\. /);
  assert.match(note, /Graphics Acceleration: Turn off/);
  assert.equal(result._meta[WAIT_META].blockedMs, 7_370);
  assert.equal(result._meta[WAIT_META].slowestMs, 6);
  // A stop long before the call is not its own.
  t = 60_000;
  stops.push({ blockedMs: 7_370, endedAt: 49_400 }, { blockedMs: 0, endedAt: 0 });
  phone.queue.push({ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, quick);
  assert.deepEqual(await tool({}), answer());
});

test("the person's note after a stop stays a while, then goes unless a message is still slow", () => {
  const shown = [];
  const timers = [];
  let pending = 0;
  const notes = slowNotes({ show: (text) => shown.push(text), slowPending: () => pending, setTimer: (fn, ms) => timers.push([fn, ms]) });
  notes.onBlock({ blockedMs: 22_000 });
  assert.match(shown[0], /^CODAP was slow to answer: its page, and this plugin with it, was busy for 22\.0 s just now\. /);
  assert.equal(timers[0][1], BLOCK_NOTE_MS);
  notes.onBlock({ blockedMs: 5_000 });
  timers[0][0](); // the first note's time is up, but a newer note stands
  assert.equal(shown.length, 2);
  pending = 1;
  timers[1][0](); // a message is slow now: its note stays
  assert.equal(shown.length, 2);
  pending = 0;
  notes.onSlow({ request: "get componentList", waitedMs: 3_000 });
  notes.onSlow(null);
  assert.equal(shown.at(-1), null);
});

test("where the page was stopped and a message was slow too, the stop is said, the message as a detail", async () => {
  const stops = [{ blockedMs: 0, endedAt: 0 }, { blockedMs: 42_532, endedAt: 1 }];
  const slow = { messages: 3, totalMs: 17_657, slowestMs: 17_622, slowest: "get interactiveFrame, get dataContextList, and 1 more" };
  const phone = { queue: [{ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, slow], takeWaits: () => phone.queue.shift() };
  const tool = withCodapWaits({ get_codap_status: async () => answer() }, phone, { blocks: { take: () => stops.shift() } }).get_codap_status;
  const note = (await tool({})).content[0].text.split("\n")[1];
  assert.match(
    note,
    /^CODAP was slow: its page, which runs this plugin too, was busy for 42\.5 s while this call waited to run or ran \(the slowest of its 3 messages: 17\.6 s for "get interactiveFrame, get dataContextList, and 1 more"\)\. /,
  );
});

test("where a message waited longer than the stops seen, the message's time is said", async () => {
  const stops = [{ blockedMs: 0, endedAt: 0 }, { blockedMs: 46_800, endedAt: 1 }];
  const slow = { messages: 9, totalMs: 71_900, slowestMs: 71_300, slowest: "get dataContext[3].itemCount" };
  const phone = { queue: [{ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, slow], takeWaits: () => phone.queue.shift() };
  const tool = withCodapWaits({ t: async () => answer() }, phone, { blocks: { take: () => stops.shift() } }).t;
  const result = await tool({});
  assert.match(result.content[0].text.split("\n")[1], /^CODAP was slow: it took 71\.9 s to answer this call's 9 messages, 71\.3 s for "get dataContext\[3\]\.itemCount"\. /);
  assert.equal(result._meta[WAIT_META].blockedMs, 46_800);
});

test("the UI's slow note covers the notice and the CODAP line, and puts back what it covered", async () => {
  const { createUI } = await import("../../core/codap_relay/plugin/js/ui.js");
  const els = new Map();
  const doc = {
    getElementById: (id) => els.get(id) ?? els.set(id, { id, textContent: "", hidden: id === "notice", addEventListener() {} }).get(id),
    querySelectorAll: () => [],
  };
  const realInterval = globalThis.setInterval;
  globalThis.setInterval = () => 0;
  let view;
  try {
    view = createUI(/** @type {any} */ (doc));
  } finally {
    globalThis.setInterval = realInterval;
  }
  const notice = doc.getElementById("notice");
  const line = doc.getElementById("codap-status");
  view.setCodapStatus("connected");
  view.notice("A new code: the old one expired.");
  view.codapSlow("CODAP is slow to answer (waiting 3.0 s …)");
  view.codapSlow("CODAP is slow to answer (waiting 3.0 s …), again"); // a second slow message: one note
  assert.deepEqual([notice.textContent, notice.hidden, line.textContent], ["CODAP is slow to answer (waiting 3.0 s …), again", false, "CODAP: slow to answer"]);
  view.codapSlow(null);
  assert.deepEqual([notice.textContent, notice.hidden, line.textContent], ["A new code: the old one expired.", false, "CODAP: connected"]);
  view.notice("");
  view.codapSlow("CODAP is slow to answer (waiting 3.0 s …)");
  view.notice("Reconnecting…"); // another notice replaced it meanwhile: it stays
  view.codapSlow(null);
  assert.deepEqual([notice.textContent, line.textContent], ["Reconnecting…", "CODAP: connected"]);
});

test("before CODAP answered the handshake, a wait is not reported as CODAP being slow", async () => {
  const seen = [];
  const phone = new CodapPhone({ win: windows({ value: 1 }), timeline: null, slowMs: 10, timeoutMs: 40, onSlow: (s) => seen.push(s) });
  // not started: no handshake, so the call waits in the queue
  await assert.rejects(phone.call({ action: "get", resource: "componentList" }), /did not complete the plugin handshake/);
  assert.deepEqual(seen, []);
});

test("while CODAP's tab is hidden, a slow call says the hidden tab is why and to bring it to the front", async () => {
  let hidden = true;
  const phone = { queue: [], takeWaits: () => phone.queue.shift() ?? { messages: 0, totalMs: 0, slowestMs: 0, slowest: "" } };
  phone.queue.push({ messages: 0, totalMs: 0, slowestMs: 0, slowest: "" }, { messages: 8, totalMs: 13_900, slowestMs: 4_900, slowest: "get document" });
  const tool = withCodapWaits({ add_codap_cases: async () => answer() }, phone, { hidden: () => hidden }).add_codap_cases;
  const result = await tool({});
  const note = result.content[0].text.split("\n")[1];
  assert.match(note, /^CODAP was slow: it took 13\.9 s to answer this call's 8 messages, 4\.9 s for "get document"\. CODAP's tab is in the background/);
  assert.match(note, /Fix: bring CODAP's browser tab to the front/);
  assert.doesNotMatch(note, /Graphics Acceleration/);
  assert.match(result._meta[WAIT_META].cause, /background/);
  hidden = false;
  const shown = [];
  slowNotes({ show: (t) => shown.push(t), slowPending: () => 1, hidden: () => true }).onSlow({ request: "get document", waitedMs: 3100 });
  assert.match(shown[0], /^CODAP is slow to answer \(waiting 3\.1 s for "get document"\)\. CODAP's tab is in the background/);
});
