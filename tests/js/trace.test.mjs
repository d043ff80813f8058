// Trace files and their replay: what a saved file holds (and what it never holds), which files are refused before
// anything runs, and a replay that runs each call at most once across reloads of the plugin frame.

import assert from "node:assert/strict";
import { test } from "node:test";

import { DESTRUCTIVE_TOOLS, READ_ONLY_TOOLS, TOOLS } from "./support/manifest.mjs";
import { Replayer } from "../../core/codap_relay/plugin/js/replay.js";
import { Runner } from "../../core/codap_relay/plugin/js/runner.js";
import { MemoryStorage, PluginStore } from "../../core/codap_relay/plugin/js/storage.js";
import {
  TRACE_VERSION,
  TraceError,
  buildTrace,
  readTrace,
  replayPlan,
  schemaProblem,
} from "../../core/codap_relay/plugin/js/trace.js";

const DATASET = { datasetName: "students", dataType: "sample_students", recordCount: 30 };
const GRAPH = { datasetName: "students", graphType: "scatterplot", xAttribute: "grade", yAttribute: "score" };
const MORE = { datasetName: "students", cases: [{ grade: 10, score: 88 }] };

/** Trace entries as the relay's GET …/log?view=trace gives them. */
function entry(seq, tool, args, status = "completed", summary = `${tool} done`) {
  return {
    seq, id: `secret-id-${seq}`, tool, args, status, summary, error: status === "failed" ? "codap_error" : null,
    queuedAt: `2026-05-04T10:00:0${seq}.000Z`, deliveredAt: null, completedAt: `2026-05-04T10:00:0${seq}.500Z`,
    latencyMs: 500,
  };
}

const RELAYED = [
  entry(1, "create_codap_dataset", DATASET),
  entry(2, "get_codap_datasets", {}),
  entry(3, "create_codap_graph", GRAPH),
  entry(4, "add_codap_cases", { datasetName: "nowhere", cases: [{ x: 1 }] }, "failed", "no dataset"),
  entry(5, "add_codap_cases", MORE),
];

function traceText(relayed = RELAYED, extra = {}) {
  return JSON.stringify({ ...buildTrace({ relayed, pluginVersion: "1.0.0" }), ...extra });
}

test("a saved trace holds each call's tool, arguments, outcome and timing, and no code, token or request id", () => {
  const trace = buildTrace({
    relayed: RELAYED,
    replayed: [{ tool: "add_codap_cases", args: MORE, status: "completed", summary: "Added 1 case", error: null,
      at: "2026-05-04T10:00:03.200Z", completedAt: "2026-05-04T10:00:03.300Z", latencyMs: 100 }],
    pluginVersion: "1.0.0",
    exportedAt: "2026-05-04T11:00:00.000Z",
  });
  assert.equal(trace.format, "codap-relay-trace");
  assert.equal(trace.version, TRACE_VERSION);
  assert.deepEqual(trace.calls.map((c) => [c.tool, c.via]), [
    ["create_codap_dataset", "llm"], ["get_codap_datasets", "llm"], ["create_codap_graph", "llm"],
    ["add_codap_cases", "replay"], ["add_codap_cases", "llm"], ["add_codap_cases", "llm"],
  ]);
  assert.deepEqual(trace.calls[0], {
    tool: "create_codap_dataset", args: DATASET, status: "completed", summary: "create_codap_dataset done",
    error: null, at: "2026-05-04T10:00:01.000Z", completedAt: "2026-05-04T10:00:01.500Z", latencyMs: 500, via: "llm",
  });
  assert.doesNotMatch(JSON.stringify(trace), /secret-id|seq|token|code"/);
});

test("the relay's consent questions (an app asking to connect) are left out of a saved trace, which replays", () => {
  const relayed = [...RELAYED, entry(6, "codap_relay_consent", { app: "Claude", redirect: "claude.ai" })];
  const trace = buildTrace({ relayed, pluginVersion: "1.0.0" });
  assert.deepEqual(trace.calls.map((c) => c.tool), RELAYED.map((e) => e.tool));
  assert.equal(readTrace(JSON.stringify(trace), TOOLS).length, RELAYED.length);
});

test("files that are not traces of this plugin's tools are refused before anything runs, saying why", () => {
  const refused = (text) => {
    try {
      readTrace(text, TOOLS);
    } catch (err) {
      assert.ok(err instanceof TraceError, err);
      return err.message;
    }
    assert.fail("accepted");
  };
  assert.match(refused("%PDF-1.7 ..."), /not JSON/);
  assert.match(refused(JSON.stringify({ name: "package", version: "1.0.0" })), /not a codap-relay trace/);
  assert.match(refused(JSON.stringify([1, 2])), /not a codap-relay trace/);
  assert.match(refused(traceText(RELAYED, { version: TRACE_VERSION + 1 })), /newer codap-relay plugin \(trace version 2\).*Update/);
  assert.match(refused(traceText(RELAYED, { version: "1" })), /damaged: its version is "1"/);
  assert.match(refused(traceText(RELAYED, { calls: {} })), /no list of "calls"/);
  const calls = JSON.parse(traceText()).calls;
  const withCall = (i, change) => traceText(RELAYED, { calls: calls.map((c, j) => (j === i ? { ...c, ...change } : c)) });
  assert.match(refused(withCall(2, { tool: "delete_everything" })), /^Call 3 of 5 uses the tool "delete_everything", which this plugin does not have/);
  assert.match(refused(withCall(0, { args: { ...DATASET, dataType: "census" } })), /Call 1 of 5 \(create_codap_dataset\).*args\.dataType must be one of/);
  assert.match(refused(withCall(0, { args: { datasetName: "x" } })), /args\.dataType is missing/);
  assert.match(refused(withCall(1, { args: { everything: true } })), /args\.everything is not an argument of this tool/);
  assert.match(refused(withCall(4, { status: undefined })), /Call 5 of 5 \(add_codap_cases\) is damaged: it has no status/);
  assert.equal(readTrace(traceText(), TOOLS).length, 5);
});

test("the schema check covers the plugin's own schemas", () => {
  const graphImage = TOOLS.find((t) => t.name === "get_codap_graph_image").inputSchema;
  assert.equal(schemaProblem(graphImage, { graph: 12, maxSize: 400 }, "args"), null);
  assert.equal(schemaProblem(graphImage, { graph: "Scores" }, "args"), null);
  assert.equal(schemaProblem(graphImage, { graph: true }, "args"), "args.graph must be string or integer");
  assert.equal(schemaProblem(graphImage, { maxSize: 5000 }, "args"), "args.maxSize must be at most 1600");
  const api = TOOLS.find((t) => t.name === "codap_api").inputSchema;
  assert.equal(schemaProblem(api, { action: "get", resource: "" }, "args"), "args.resource is too short");
  const cases = TOOLS.find((t) => t.name === "add_codap_cases").inputSchema;
  assert.equal(schemaProblem(cases, { datasetName: "d", cases: [{}, 3] }, "args"), "args.cases[1] must be object");
});

test("a replay runs the calls that changed CODAP; read-only tools (by annotation) and failed calls are skipped", () => {
  // Every tool annotated read-only, whichever family defines it (families add tools independently).
  assert.deepEqual([...READ_ONLY_TOOLS].sort(), TOOLS.filter((t) => t.annotations.readOnlyHint).map((t) => t.name).sort());
  for (const name of ["codap_api_help", "export_codap_data", "get_codap_datasets", "get_codap_graph_image", "get_codap_status"]) {
    assert.ok(READ_ONLY_TOOLS.has(name), name);
  }
  assert.ok(!READ_ONLY_TOOLS.has("create_codap_dataset"));
  const plan = replayPlan(readTrace(traceText(), TOOLS), READ_ONLY_TOOLS);
  assert.deepEqual(plan.map((p) => [p.call.tool, p.action, p.why]), [
    ["create_codap_dataset", "run", undefined],
    ["get_codap_datasets", "skip", "read-only"],
    ["create_codap_graph", "run", undefined],
    ["add_codap_cases", "skip", "failed when recorded"],
    ["add_codap_cases", "run", undefined],
  ]);
});

/**
 * A plugin page: storage, a runner whose tools record what ran, and a replayer with what it showed. `answer` is
 * the person's answer to the question every replay asks first (null: the test answers itself).
 */
function page({ storage = new MemoryStorage(), persistent = true, failOn = null, hold = null, answer = true } = {}) {
  const ran = [];
  const posted = [];
  const shown = [];
  const record = (name) => async (args) => {
    if (hold) await hold(name, args);
    ran.push([name, args]);
    if (failOn === ran.length) throw Object.assign(new Error("CODAP refused it"), { code: "codap_error" });
    return { content: [{ type: "text", text: `${name} ok\nmore` }] };
  };
  const tools = Object.fromEntries(TOOLS.map((t) => [t.name, record(t.name)]));
  const store = new PluginStore(storage, "http://relay");
  const runner = new Runner({ tools, store, post: async (id, body) => posted.push({ id, body }), sleep: async () => {} });
  const replayer = new Replayer({
    store, runner: () => runner, tools: TOOLS, readOnly: READ_ONLY_TOOLS, destructive: DESTRUCTIVE_TOOLS,
    onProgress: (v) => {
      shown.push(v);
      if (v.outcome === "confirm" && answer !== null) replayer.answer(answer);
    },
    persistent,
  });
  return { ran, posted, shown, store, runner, replayer, storage };
}

test("a replay runs its calls in order through the runner, posts nothing to the relay and shows its progress", async () => {
  const p = page();
  await p.replayer.start("lesson.json", traceText());
  assert.deepEqual(p.ran.map(([t]) => t), ["create_codap_dataset", "create_codap_graph", "add_codap_cases"]);
  assert.deepEqual(p.ran.map(([, a]) => a), [DATASET, GRAPH, MORE]);
  assert.deepEqual(p.posted, []);
  assert.deepEqual(p.store.ledger(), {}, "replayed calls are not relay requests");
  assert.deepEqual(p.shown.filter((v) => v.message.startsWith("Replaying")).map((v) => v.message), [
    "Replaying lesson.json: call 1 of 5 (create_codap_dataset)…",
    "Replaying lesson.json: call 3 of 5 (create_codap_graph)…",
    "Replaying lesson.json: call 5 of 5 (add_codap_cases)…",
  ]);
  const last = p.shown.at(-1);
  assert.deepEqual([last.outcome, last.done, last.total], ["finished", 5, 5]);
  assert.equal(last.message, "Replayed lesson.json: 3 calls run, 2 skipped (read-only, or failed when recorded).");
  assert.deepEqual(p.store.replayed().map((c) => [c.tool, c.status, c.summary]), [
    ["create_codap_dataset", "completed", "create_codap_dataset ok"],
    ["create_codap_graph", "completed", "create_codap_graph ok"],
    ["add_codap_cases", "completed", "add_codap_cases ok"],
  ]);
});

test("relayed requests waiting in the queue run before a replayed call; a new session drops the calls not yet run", async () => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const p = page({ hold: (name) => (name === "get_codap_status" ? gate : null) });
  p.runner.enqueue({ id: "r1", tool: "get_codap_status", args: {}, seq: 1 });
  const local = p.runner.runLocal({ id: "l1", tool: "create_codap_dataset", args: DATASET });
  p.runner.enqueue({ id: "r2", tool: "get_codap_datasets", args: {}, seq: 2 });
  const later = p.runner.runLocal({ id: "l2", tool: "add_codap_cases", args: MORE });
  release();
  assert.equal((await local).result.content[0].text, "create_codap_dataset ok\nmore");
  await later;
  assert.deepEqual(p.ran.map(([t]) => t), ["get_codap_status", "get_codap_datasets", "create_codap_dataset", "add_codap_cases"]);
  assert.deepEqual(p.posted.map((x) => x.id).sort(), ["r1", "r2"]);
  const stopped = page({ hold: () => new Promise(() => {}) }); // the first call never finishes
  stopped.runner.runLocal({ id: "a", tool: "create_codap_dataset", args: DATASET });
  const never = stopped.runner.runLocal({ id: "b", tool: "add_codap_cases", args: MORE });
  stopped.runner.stop();
  assert.equal((await never).error.code, "plugin_stopped");
  assert.equal((await stopped.runner.runLocal({ id: "c", tool: "add_codap_cases", args: MORE })).error.code, "plugin_stopped");
});

test("the first failure stops the replay with its reason; the same file again continues from that call", async () => {
  const storage = new MemoryStorage();
  const first = page({ storage, failOn: 2 });
  await first.replayer.start("lesson.json", traceText());
  const stop = first.shown.at(-1);
  assert.equal(stop.outcome, "stopped");
  assert.match(stop.message, /^Call 3 of 5 \(create_codap_graph\) failed: The plugin failed unexpectedly: CODAP refused it Nothing after it ran\./);
  assert.equal(first.ran.length, 2);
  const again = page({ storage });
  await again.replayer.start("lesson.json", traceText());
  assert.deepEqual(again.ran.map(([t]) => t), ["create_codap_graph", "add_codap_cases"]);
  assert.match(again.shown.at(-1).message, /2 calls run \(continued: calls that ran before were not run again\)/);
  const third = page({ storage }); // finished: the same file is a new replay
  await third.replayer.start("lesson.json", traceText());
  assert.equal(third.ran.length, 3);
});

test("a reload mid-replay: the call caught running is never run again, the calls before it neither", async () => {
  const storage = new MemoryStorage();
  let reachedGraph;
  const atGraph = new Promise((resolve) => (reachedGraph = resolve));
  const before = page({
    storage,
    hold: (name) => (name === "create_codap_graph" ? (reachedGraph(), new Promise(() => {})) : null),
  });
  before.replayer.start("lesson.json", traceText()); // never settles: the page goes away
  await atGraph;
  assert.deepEqual(before.ran.map(([t]) => t), ["create_codap_dataset"]);

  const after = page({ storage }); // the reloaded frame: same storage, new page
  after.replayer.recover();
  const view = after.shown.at(-1);
  assert.equal(view.outcome, "stopped");
  assert.match(view.message, /reloaded while call 3 \(create_codap_graph\) was running in CODAP.*will not run it again/);
  await after.replayer.start("lesson.json", traceText());
  assert.deepEqual(after.ran.map(([t]) => t), ["add_codap_cases"]);
  assert.equal(after.shown.at(-1).outcome, "finished");
});

test("where the browser keeps nothing, the replay still runs and says a reload would lose its progress", async () => {
  const quotaFull = { getItem: () => null, setItem: () => { throw new Error("QuotaExceededError"); }, removeItem: () => {} };
  const p = page({ storage: quotaFull });
  await p.replayer.start("lesson.json", traceText());
  assert.equal(p.ran.length, 3);
  assert.match(p.shown.find((v) => v.message.startsWith("Replaying")).message, /does not let the plugin keep the replay's progress/);
  assert.equal(p.store.replayed().length, 3, "kept in memory for the next saved trace");
  const blocked = page({ persistent: false });
  await blocked.replayer.start("lesson.json", traceText());
  assert.match(blocked.shown.find((v) => v.message.startsWith("Replaying")).message, /cannot tell which calls already ran/);
});

test("a refused file changes nothing and a running replay refuses a second one", async () => {
  const p = page();
  await p.replayer.start("notes.json", JSON.stringify({ hello: 1 }));
  assert.deepEqual([p.ran.length, p.shown.at(-1).outcome], [0, "refused"]);
  assert.match(p.shown.at(-1).message, /^notes\.json was not replayed: This file is not a codap-relay trace.*Nothing was changed\.$/);
  const readsOnly = traceText([entry(1, "get_codap_status", {}), entry(2, "create_codap_dataset", DATASET, "failed")]);
  await p.replayer.start("reads.json", readsOnly);
  assert.match(p.shown.at(-1).message, /nothing to replay: its 2 calls are read-only or failed when recorded/);
  assert.equal(p.store.loadReplay(), null);

  let release;
  const held = page({ hold: () => new Promise((resolve) => (release = resolve)) });
  const running = held.replayer.start("lesson.json", traceText());
  await held.replayer.start("other.json", traceText()); // while the first is asked or running
  assert.ok(held.shown.some((v) => v.outcome === "refused" && v.message === "A replay is running; stop it before starting another."));
  held.replayer.stop();
  release();
  await running;
  assert.equal(held.ran.length, 1);
  assert.match(held.shown.at(-1).message, /^Stopped by you before call 3\./);
});

test("earlier sessions are remembered for the trace, the newest five", () => {
  const store = new PluginStore(new MemoryStorage(), "http://relay");
  for (let i = 0; i < 7; i++) store.addHistory({ code: `CODE000${i}`, token: `t${i}`, ttl: 600 }, i);
  store.clearSession();
  assert.deepEqual(store.history().map((s) => s.code), ["CODE0002", "CODE0003", "CODE0004", "CODE0005", "CODE0006"]);
  assert.deepEqual(Object.keys(store.history()[0]).sort(), ["code", "endedAt", "token"]);
  store.forgetHistory("CODE0004"); // its log is gone from the relay
  assert.deepEqual(store.history().map((s) => s.code), ["CODE0002", "CODE0003", "CODE0005", "CODE0006"]);
});

test("before raw CODAP requests run, the person is asked; cancelling changes nothing", async () => {
  const raw = { action: "delete", resource: "dataContext[students]" };
  const text = traceText([...RELAYED, entry(6, "codap_api", raw)]);
  const asked = (p) => new Promise((resolve) => {
    const poll = () => (p.shown.at(-1)?.outcome === "confirm" ? resolve(p.shown.at(-1)) : setTimeout(poll, 1));
    poll();
  });
  const no = page({ answer: null });
  const cancelled = no.replayer.start("shared.json", text);
  const question = await asked(no);
  assert.equal(question.asking, true);
  assert.equal(question.message, "shared.json would make 4 calls in this CODAP document (listed below); 1 call of codap_api can change or delete anything in it. A replay runs at most 500 calls. Replay it?");
  assert.deepEqual(question.calls.map((c) => [c.n, c.tool, c.refused]), [[1, "create_codap_dataset", null], [3, "create_codap_graph", null], [5, "add_codap_cases", null], [6, "codap_api", null]]);
  assert.equal(question.calls[3].summary, "delete dataContext[students]");
  no.replayer.answer(false);
  await cancelled;
  assert.deepEqual([no.ran.length, no.shown.at(-1).outcome], [0, "refused"]);
  assert.match(no.shown.at(-1).message, /you cancelled it\. Nothing was changed\.$/);
  const yes = page({ answer: null });
  const running = yes.replayer.start("shared.json", text);
  await asked(yes);
  yes.replayer.answer(true);
  await running;
  assert.deepEqual(yes.ran.map(([t]) => t).at(-1), "codap_api");
  assert.equal(yes.shown.at(-1).outcome, "finished");
  const safe = page(); // nothing destructive: still asked, every call listed, none named as destructive
  await safe.replayer.start("lesson.json", traceText());
  const asking = safe.shown.filter((v) => v.outcome === "confirm");
  assert.deepEqual(asking.map((v) => v.message), [
    "lesson.json would make 3 calls in this CODAP document (listed below). A replay runs at most 500 calls. Replay it?"]);
  assert.deepEqual(asking[0].calls.map((c) => c.tool), ["create_codap_dataset", "create_codap_graph", "add_codap_cases"]);
  assert.ok(safe.shown.findIndex((v) => v.outcome === "confirm") < safe.shown.findIndex((v) => v.message.startsWith("Replaying")),
    "asked before the first call runs");
  const declined = page({ answer: false });
  await declined.replayer.start("lesson.json", traceText());
  assert.deepEqual([declined.ran.length, declined.shown.at(-1).outcome], [0, "refused"]);
});

test("a refused raw request is marked in the confirmation and never reaches the runner; the others run", async () => {
  const evil = { action: "create", resource: "component", values: { type: "webView", URL: "http://127.0.0.1:9/evil.html" } };
  const hide = { action: "update", resource: "interactiveFrame", values: { dimensions: { width: 1, height: 1 } } };
  const text = traceText([...RELAYED, entry(6, "codap_api", evil), entry(7, "codap_api", hide)]);
  const p = page({ answer: null });
  const running = p.replayer.start("shared.json", text);
  await new Promise((resolve) => {
    const poll = () => (p.shown.at(-1)?.outcome === "confirm" ? resolve() : setTimeout(poll, 1));
    poll();
  });
  const question = p.shown.at(-1);
  assert.match(question.message, /^shared\.json would make 3 calls in this CODAP document \(listed below\); 2 calls the plugin's policy refuses \(marked\) will be skipped and never sent to CODAP\. A replay runs at most 500 calls\. Replay it\?$/);
  assert.deepEqual(question.calls.map((c) => [c.n, c.tool, c.refused]), [
    [1, "create_codap_dataset", null], [3, "create_codap_graph", null], [5, "add_codap_cases", null],
    [6, "codap_api", "safe_component_types"], [7, "codap_api", "not_the_plugin"],
  ]);
  p.replayer.answer(true);
  await running;
  assert.deepEqual(p.ran.map(([t]) => t), ["create_codap_dataset", "create_codap_graph", "add_codap_cases"]);
  assert.equal(p.shown.at(-1).message,
    "Replayed shared.json: 3 calls run, 2 skipped (read-only, or failed when recorded), 2 refused by the plugin's policy (not sent to CODAP).");
  const only = page(); // nothing else to run: refused outright, nothing asked
  await only.replayer.start("evil.json", traceText([entry(1, "codap_api", evil)]));
  assert.equal(only.shown.at(-1).outcome, "refused");
  assert.match(only.shown.at(-1).message, /nothing to replay: 1 call the plugin's policy refuses \(never sent to CODAP\)/);
  assert.deepEqual(only.ran, []);
});

test("a replay runs at most 500 calls: a longer trace is refused whole, saying the cap", async () => {
  const many = Array.from({ length: 501 }, (_, i) => ({ ...entry(1, "add_codap_cases", MORE), seq: i }));
  const p = page();
  await p.replayer.start("long.json", traceText(many));
  assert.deepEqual([p.ran.length, p.shown.at(-1).outcome], [0, "refused"]);
  assert.equal(p.shown.at(-1).message,
    "long.json was not replayed: it holds 501 calls to run, and a replay runs at most 500. Split it into shorter traces. Nothing was changed.");
  const fine = page();
  await fine.replayer.start("ok.json", traceText(many.slice(0, 500)));
  assert.equal(fine.ran.length, 500);
});

test("keys are checked as own properties: constructor, toString and __proto__ never pass the schema check", () => {
  const status = TOOLS.find((t) => t.name === "get_codap_status").inputSchema;
  const api = TOOLS.find((t) => t.name === "codap_api").inputSchema;
  assert.equal(schemaProblem(status, JSON.parse('{"constructor": {}}'), "args"), "args.constructor is not an argument of this tool");
  assert.equal(schemaProblem(status, JSON.parse('{"toString": 1}'), "args"), "args.toString is not an argument of this tool");
  assert.equal(schemaProblem(status, JSON.parse('{"__proto__": {"includeDatasets": "x"}}'), "args"), "args.__proto__ is not an argument of this tool");
  const inherited = Object.create({ action: "get", resource: "dataContextList" });
  assert.equal(schemaProblem(api, inherited, "args"), "args.action is missing");
  const calls = JSON.parse(traceText()).calls;
  const bad = (args, tool = "get_codap_status") => traceText(RELAYED, { calls: [...calls, { ...calls[1], tool, args }] });
  assert.throws(() => readTrace(bad(JSON.parse('{"constructor": 1}')), TOOLS), /args\.constructor is not an argument/);
  assert.throws(() => readTrace(bad({}, "constructor"), TOOLS), /uses the tool "constructor", which this plugin does not have/);
  assert.throws(() => readTrace(bad({}, "__proto__"), TOOLS), /uses the tool "__proto__"/);
});
