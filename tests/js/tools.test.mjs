// The tools against the CODAP model the browser test host uses (kept equal to real CODAP by
// tests/e2e/test_fake_host_parity.py): how many messages each tool sends, what it asks CODAP for, and that the
// numbers it reports are CODAP's.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createTools, jsonPreview } from "../../core/codap_relay/plugin/js/tools/index.js";
import { makeRng } from "../../core/codap_relay/plugin/js/data.js";
import { createCodapModel } from "../e2e/codap_host/codap_model.js";

function setup() {
  const model = createCodapModel();
  const messages = [];
  const call = async (request) => {
    messages.push(request);
    return model.answer(structuredClone(request)); // postMessage clones, so must this
  };
  const tools = createTools({ call, rng: makeRng(7) });
  return { model, messages, tools };
}

/** Messages sent and requests made by one tool call. */
async function counted(env, tool, args) {
  const before = env.messages.length;
  const result = await env.tools[tool](args);
  const sent = env.messages.slice(before);
  return { result, sent: sent.length, requests: sent.flatMap((m) => (Array.isArray(m) ? m : [m])) };
}

async function document(env, datasets) {
  for (let i = 0; i < datasets; i++) {
    await env.tools.create_codap_dataset({ datasetName: `d${i}`, dataType: "sample_students", recordCount: 200 });
  }
  await env.tools.create_codap_graph({ datasetName: "d0", graphType: "scatterplot", xAttribute: "grade", yAttribute: "score" });
}

test("each tool sends a fixed handful of messages, whatever the number of datasets, attributes or cases", async () => {
  const small = setup();
  await document(small, 1);
  const large = setup();
  await document(large, 3);
  const calls = [
    ["get_codap_status", {}],
    ["get_codap_datasets", {}],
    ["create_codap_dataset", { datasetName: "new", dataType: "sample_students", recordCount: 1000 }],
    ["add_codap_cases", { datasetName: "d0", cases: Array.from({ length: 1800 }, (_, i) => ({ grade: 9, score: i % 100 })) }],
    ["create_codap_graph", { datasetName: "d0", graphType: "bar_chart", xAttribute: "favorite_subject" }],
    ["export_codap_data", { datasetName: "d0", format: "csv" }],
    ["codap_api", { action: "get", resource: "dataContextList" }],
  ];
  const expected = { get_codap_status: 4, get_codap_datasets: 3, create_codap_dataset: 5, add_codap_cases: 4,
    create_codap_graph: 9, export_codap_data: 3, codap_api: 1 }; // a bar chart's counts: one read of the cases; where a graph or table lands: two
  for (const [tool, args] of calls) {
    const a = await counted(small, tool, args);
    const b = await counted(large, tool, args);
    assert.equal(a.sent, expected[tool], tool);
    assert.equal(b.sent, expected[tool], `${tool} with three datasets`);
  }
});

test("datasets are addressed by id and read whole with get dataContext only for their set-aside cases", async () => {
  const env = setup();
  await document(env, 2);
  await env.tools.get_codap_status({});
  await env.tools.add_codap_cases({ datasetName: "d1", cases: [{ grade: 10 }] });
  const log = env.model.state.log;
  const wholes = () => log.filter((r) => r.type === "dataContext" && r.action === "get").length;
  assert.equal(wholes(), 0);
  // The export must say which cases are set aside, and only the whole dataset's description says so: once.
  await env.tools.export_codap_data({ datasetName: "d1", includeMetadata: true });
  assert.equal(wholes(), 1);
  const addressed = log.map((r) => /^dataContext\[([^\]]*)\]/.exec(r.resource ?? "")?.[1]).filter(Boolean);
  assert.ok(addressed.length > 10);
  assert.ok(addressed.every((sel) => /^\d+$/.test(sel)), addressed.join(" "));
});

test("a dataset whose name is another dataset's title is still the one the tools change", async () => {
  const env = setup();
  await env.tools.codap_api({ action: "create", resource: "dataContext",
    values: { name: "decoy", title: "twin", collections: [{ name: "decoy", attrs: [{ name: "v" }] }] } });
  await env.tools.create_codap_dataset({ datasetName: "twin", dataType: "random_numbers", recordCount: 3 });
  const added = await env.tools.add_codap_cases({ datasetName: "twin", cases: [{ x: 1 }] });
  assert.equal(added.structuredContent.totalCases, 4);
  assert.equal(env.model.dataset("twin").items.length, 4);
  assert.equal(env.model.dataset("decoy").items.length, 0);
  const graph = await env.tools.create_codap_graph({ datasetName: "twin", graphType: "scatterplot", xAttribute: "x", yAttribute: "y" });
  assert.equal(graph.structuredContent.plotType, "scatterPlot");
  assert.deepEqual(graph.structuredContent.notes, []);
});

test("totals are the counts CODAP gives in the same message as the change", async () => {
  const env = setup();
  await env.tools.create_codap_dataset({ datasetName: "grow", dataType: "random_numbers", recordCount: 1000 });
  for (let round = 1; round <= 5; round++) {
    const cases = Array.from({ length: 1800 }, (_, i) => ({ index: i, x: 1, colour: "red" }));
    const { structuredContent: s } = await env.tools.add_codap_cases({ datasetName: "grow", cases });
    assert.equal(s.added, 1800);
    assert.equal(s.totalCases, 1000 + 1800 * round);
    assert.deepEqual(s.ignoredFields, ["colour"]);
  }
  assert.equal(env.model.dataset("grow").items.length, 10_000);
});

test("graphs say what CODAP made, read back from CODAP", async () => {
  const env = setup();
  await env.tools.create_codap_dataset({ datasetName: "s", dataType: "sample_students", recordCount: 50 });
  const made = async (graphType, xAttribute, yAttribute) =>
    (await env.tools.create_codap_graph({ datasetName: "s", graphType, xAttribute, yAttribute })).structuredContent;
  assert.equal((await made("scatterplot", "grade", "score")).made, "scatter plot");
  assert.equal((await made("line_graph", "age", "height_cm")).made, "scatter plot with connecting lines");
  assert.equal((await made("bar_chart", "favorite_subject")).plotType, "barChart");
  const numericBars = await made("bar_chart", "grade");
  assert.equal(numericBars.plotType, "barChart");
  assert.match(numericBars.notes[0], /one bar per distinct value/);
  const histogram = await made("histogram", "math_score");
  assert.equal(histogram.plotType, "dotPlot");
  assert.match(histogram.notes.join(" "), /Group into Bins/);
  await assert.rejects(made("scatterplot", "grade", "shoe_size"), (e) => e.code === "attribute_not_found");
});

test("jsonPreview is JSON.stringify(value, null, 1) until it is cut at 60,000 characters", () => {
  const rows = [{ a: 1, b: "x\ny" }, { a: 2, b: "" }];
  assert.equal(jsonPreview(rows), JSON.stringify(rows, null, 1));
  assert.equal(jsonPreview([]), "[]");
  const withMeta = { metadata: { name: "d", attributes: [{ name: "a" }] }, rows };
  assert.equal(jsonPreview(withMeta), JSON.stringify(withMeta, null, 1));
  assert.equal(jsonPreview({ metadata: { n: 1 }, rows: [] }), JSON.stringify({ metadata: { n: 1 }, rows: [] }, null, 1));
  const big = Array.from({ length: 10_000 }, (_, i) => ({ index: i, name: `row ${i}` }));
  const shown = jsonPreview(big);
  assert.ok(shown.length < 60_100);
  assert.ok(JSON.stringify(big, null, 1).startsWith(shown.split("\n…")[0]));
  assert.match(shown, /truncated here; structuredContent has all 10000 rows/);
});

test("without an injected generator, generated data follows from the call's arguments, so a replay makes it again", async () => {
  const made = async (args) => {
    const model = createCodapModel();
    const tools = createTools({ call: async (r) => (Array.isArray(r) ? r.map((x) => model.answer(structuredClone(x))) : model.answer(r)) });
    await tools.create_codap_dataset(args);
    return model.dataset(args.datasetName).items.map((i) => i.values);
  };
  const args = { datasetName: "students", dataType: "sample_students", recordCount: 30 };
  const first = await made(args);
  assert.deepEqual(await made(args), first);
  assert.notDeepEqual(await made({ ...args, datasetName: "others" }), first);
  assert.notDeepEqual(await made({ ...args, dataType: "random_numbers" }), first);
});
