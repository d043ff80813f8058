// CODAP behind another tab: what the plugin knows of CODAP's drawing (drawing.js), pictures it will not call drawn
// (tools/pictures.js), and what a graph holds, read from CODAP's data (tools/graph_data.js). CODAP's side is the
// test host's model with v3.1.0's dataDisplay answers; the page's visibility is a fake document the test flips.

import assert from "node:assert/strict";
import { test } from "node:test";

import { makeRng } from "../../core/codap_relay/plugin/js/data.js";
import { DRAW_MS, DrawWatch, drawnCall } from "../../core/codap_relay/plugin/js/drawing.js";
import { parseDataUri } from "../../core/codap_relay/plugin/js/imaging.js";
import { describeGraphData } from "../../core/codap_relay/plugin/js/tools/graph_data.js";
import { graphStateFrom } from "../../core/codap_relay/plugin/js/tools/graph_state.js";
import { createTools } from "../../core/codap_relay/plugin/js/tools/index.js";
import { createCodapModel } from "../e2e/codap_host/codap_model.js";

/** A document whose visibility the test sets, firing visibilitychange as a browser does. */
function fakeDocument(visibilityState = "visible") {
  const listeners = [];
  return {
    visibilityState,
    addEventListener: (type, fn) => type === "visibilitychange" && listeners.push(fn),
    set(state) {
      this.visibilityState = state;
      for (const fn of listeners) fn();
    },
  };
}

/** A PNG's signature and IHDR (its size), then filler, as a data URI. */
function png(width, height) {
  const bytes = new Uint8Array(1024);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  new DataView(bytes.buffer).setUint32(16, width);
  new DataView(bytes.buffer).setUint32(20, height);
  return `data:image/png;base64,${Buffer.from(bytes).toString("base64")}`;
}

const raster = {
  async decode(uri) {
    const bytes = Buffer.from(parseDataUri(uri).base64, "base64");
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  },
  async encode() {
    throw new Error("not scaled in these tests");
  },
};

/** The tools over the fake CODAP, a clock the test moves, and a DrawWatch on a fake document; changing messages
 * count as changes as main.js counts them (drawnCall). */
function setup({ hidden = false } = {}) {
  const model = createCodapModel();
  const doc = fakeDocument(hidden ? "hidden" : "visible");
  const env = { model, doc, clock: 0, messages: [], pauses: [] };
  const drawing = new DrawWatch({ doc, now: () => env.clock });
  const answer = (r) =>
    /^dataDisplay\[/.test(r.resource) ? { success: true, values: { exportDataUri: png(340, 300) } } : model.answer(structuredClone(r));
  const call = drawnCall(async (request) => {
    env.messages.push(request);
    return Array.isArray(request) ? request.map(answer) : answer(request);
  }, drawing);
  env.drawing = drawing;
  env.tools = createTools({
    call,
    rng: makeRng(11),
    raster,
    drawing,
    sleep: async (ms) => {
      env.pauses.push(ms);
      env.clock += ms;
    },
    now: () => env.clock,
  });
  env.pictureRequests = () => env.messages.flat().filter((r) => /^dataDisplay\[/.test(r.resource)).length;
  return env;
}

const scatter = { datasetName: "s", graphType: "scatterplot", xAttribute: "grade", yAttribute: "score" };

/** The fake CODAP's values of an attribute, one per case. */
const valuesOf = (env, name) =>
  env.model.answer({ action: "get", resource: "dataContext[s].itemSearch[*]" }).values.map((i) => i.values[name]);

test("DrawWatch: a change counts as drawn once the page has been shown DRAW_MS after it", () => {
  const doc = fakeDocument();
  let t = 10_000;
  const watch = new DrawWatch({ doc, now: () => t });
  assert.deepEqual(watch.state(), { hidden: false, drawn: false, drawnInMs: DRAW_MS, hiddenForMs: 0 });
  t += DRAW_MS;
  assert.equal(watch.state().drawn, true, "what CODAP held when the plugin started, shown for a second");
  watch.changed();
  t += 400;
  assert.deepEqual(watch.state(), { hidden: false, drawn: false, drawnInMs: DRAW_MS - 400, hiddenForMs: 0 });
  doc.set("hidden"); // hidden 400 ms after the change: CODAP may not have drawn it
  t += 60_000;
  assert.deepEqual(watch.state(), { hidden: true, drawn: false, drawnInMs: null, hiddenForMs: 60_000 });
  doc.set("visible");
  t += DRAW_MS;
  doc.set("hidden");
  t += 5000;
  assert.deepEqual(watch.state(), { hidden: true, drawn: true, drawnInMs: 0, hiddenForMs: 5000 }, "drawn, then hidden");
  watch.changed(); // a change while hidden is never drawn while it stays hidden
  t += 600_000;
  assert.equal(watch.state().drawn, false);
});

test("DrawWatch: a plugin that starts in a hidden tab counts nothing as drawn until the tab is shown", () => {
  const doc = fakeDocument("hidden");
  let t = 0;
  const watch = new DrawWatch({ doc, now: () => t });
  t += 30_000;
  assert.deepEqual(watch.state(), { hidden: true, drawn: false, drawnInMs: null, hiddenForMs: 30_000 });
  doc.set("visible");
  t += DRAW_MS;
  assert.equal(watch.state().drawn, true);
});

test("a graph made while CODAP's tab is hidden has no picture: the answer says so, what to do, and its data", async () => {
  const env = setup();
  await env.tools.create_codap_dataset({ datasetName: "s", dataType: "sample_students", recordCount: 20 });
  env.clock += 5000;
  env.doc.set("hidden");
  env.clock += 90_000;
  const made = await env.tools.create_codap_graph({ ...scatter, includeImage: true });
  assert.deepEqual(made.content.map((c) => c.type), ["text"], "no picture is attached");
  assert.equal(env.pictureRequests(), 0, "CODAP is not asked for a picture it has not drawn");
  const { text } = made.content[0];
  assert.match(text, /CODAP has not drawn graph "s" \(id \d+\) as it is now, so there is no picture of it: CODAP's tab is in the background \(hidden for 90 s\)/);
  assert.match(text, /Bring CODAP's browser tab to the front \(or restore its window\), then ask for the picture again\./);
  assert.doesNotMatch(text, /attached|settled/);
  const sc = made.structuredContent;
  assert.equal(sc.image, undefined);
  assert.deepEqual(sc.imageNotDrawn, {
    reason: "codap_hidden",
    hiddenSeconds: 90,
    whatToDo: "Bring CODAP's browser tab to the front (or restore its window), then ask for the picture again.",
  });
  // what it holds, from the data CODAP has: checked against the model's own values
  const grades = valuesOf(env, "grade");
  const scores = valuesOf(env, "score");
  assert.equal(sc.graphData.dataset, "s");
  assert.equal(sc.graphData.cases, 20);
  assert.equal(sc.graphData.plotted, 20);
  const [x, y] = sc.graphData.attributes;
  assert.deepEqual([x.role, x.attribute, x.type, x.min, x.max], ["x", "grade", "numeric", Math.min(...grades), Math.max(...grades)]);
  assert.deepEqual([y.role, y.attribute, y.min, y.max], ["y", "score", Math.min(...scores), Math.max(...scores)]);
  assert.match(text, new RegExp(`What it holds, from CODAP's data: 20 cases of "s" \\(all plotted\\); x = grade: numbers from ${x.min} to ${x.max}`));

  // asked for again while still hidden: the same answer from get_codap_graph_image, never a picture
  env.clock += 60_000;
  const again = await env.tools.get_codap_graph_image({});
  assert.deepEqual(again.content.map((c) => c.type), ["text"]);
  assert.equal(again.structuredContent.drawn, false);
  assert.equal(again.structuredContent.settled, undefined, "an undrawn picture is never called settled");
  assert.equal(again.structuredContent.notDrawn.hiddenSeconds, 150);
  assert.match(again.content[0].text, /^Graph "s" \(id \d+\): scatter plot of "s", x = grade, y = score\. CODAP has not drawn/);
  assert.deepEqual(again.structuredContent.graphData, sc.graphData);

  // brought to the front: CODAP draws it, and the picture is waited for until it has had a second to
  env.doc.set("visible");
  env.pauses.length = 0;
  const shown = await env.tools.get_codap_graph_image({});
  assert.equal(shown.structuredContent.drawn, true);
  assert.equal(shown.structuredContent.codapHidden, false);
  assert.equal(env.pauses[0], DRAW_MS, "CODAP gets its second to draw before the picture is taken");
  assert.deepEqual(shown.content.map((c) => c.type), ["text", "image"]);
});

test("a graph CODAP drew before its tab was hidden keeps its picture, taken once, and said to be from before", async () => {
  const env = setup();
  await env.tools.create_codap_dataset({ datasetName: "s", dataType: "sample_students", recordCount: 12 });
  await env.tools.create_codap_graph(scatter);
  env.clock += 3000;
  env.doc.set("hidden");
  env.clock += 120_000;
  env.pauses.length = 0;
  const before = env.pictureRequests();
  const result = await env.tools.get_codap_graph_image({});
  assert.deepEqual(result.content.map((c) => c.type), ["text", "image"]);
  assert.equal(env.pictureRequests() - before, 1, "nothing moves on a hidden page: one picture is the settled one");
  assert.deepEqual(env.pauses, []);
  const sc = result.structuredContent;
  assert.deepEqual([sc.drawn, sc.settled, sc.codapHidden], [true, true, true]);
  assert.match(result.content[0].text, /CODAP's tab is in the background \(hidden for 2 min\): this is the graph as CODAP drew it before, unchanged since\./);
  assert.equal(sc.graphData.cases, 12);

  // a graph made now is not drawn; it changes no other graph, which keeps its picture
  const made = await env.tools.create_codap_graph({ ...scatter, yAttribute: "age", includeImage: true });
  assert.equal(made.structuredContent.imageNotDrawn.reason, "codap_hidden");
  const still = await env.tools.get_codap_graph_image({ graph: sc.graphId });
  assert.equal(still.structuredContent.drawn, true);

  // a change to the data while hidden (cases added): the graph is no longer drawn as it is
  await env.tools.add_codap_cases({ datasetName: "s", cases: [{ grade: 9, score: 50 }, { grade: 12 }] });
  const changed = await env.tools.get_codap_graph_image({ graph: sc.graphId });
  assert.equal(changed.structuredContent.drawn, false);
  assert.deepEqual(
    [changed.structuredContent.graphData.cases, changed.structuredContent.graphData.plotted],
    [14, 13],
    "the case with no score is counted, not plotted",
  );
  assert.match(changed.content[0].text, /14 cases of "s" \(13 plotted; 1 have no value on an axis\)/);
});

/** A graph's state (graph_state.js) from its `get component` values alone. */
const stateOf = (component) => graphStateFrom({ id: 1, ...component }, [], null, null, null);

/** describeGraphData over a dataset given as collections of attributes and items. */
function dataReader(collections, items) {
  const dataset = {
    id: 7,
    name: "d",
    title: "d",
    collections: collections.map(([name, attributes], i) => ({
      name, id: i + 1, attributes: attributes.map(([n, type]) => ({ name: n, id: n, type })),
    })),
  };
  return {
    findDataset: async (name) => {
      assert.equal(name, "d");
      return { id: 7, name: "d", title: "d" };
    },
    describeDatasets: async (_, { extra }) => {
      assert.deepEqual(extra.map((r) => r.resource), ["dataContext[7].itemSearch[*]"], "the cases ride along");
      return { datasets: [dataset], extra: [{ success: true, values: items.map((values, id) => ({ id, values })) }] };
    },
    must: (request, reply) => reply,
  };
}

test("what a graph holds: categories by count, numbers with the axis's range, cases of a parent collection", async () => {
  const rows = [
    { room: "A", kind: "oak", h: 3 }, { room: "A", kind: "oak", h: 5 }, { room: "A", kind: "elm", h: "" },
    { room: "B", kind: "oak", h: 9 }, { room: "B", kind: "ash", h: 1 },
  ];
  const reader = dataReader([["rooms", [["room", "categorical"]]], ["trees", [["kind", "categorical"], ["h", "numeric"]]]], rows);
  const detail = {
    dataContext: "d", plotType: "dotPlot", xAttributeName: "h", xLowerBound: 0, xUpperBound: 10,
    legendAttributeName: "kind", hiddenCases: [101], filterFormula: "h < 9", displayOnlySelectedCases: null,
  };
  const { text, data } = await describeGraphData(reader, stateOf(detail));
  assert.deepEqual(data, {
    dataset: "d",
    cases: 5,
    plotted: 3, // 4 with a value of h, one of them hidden in the graph
    hiddenInGraph: 1,
    setAside: null, // known from CODAP's document only
    onlySelected: false,
    filterFormula: "h < 9",
    attributes: [
      { role: "x", attribute: "h", type: "numeric", withValue: 4, missing: 1, min: 1, max: 9, mean: 4.5, axis: [0, 10] },
      { role: "legend", attribute: "kind", type: "categorical", withValue: 5, missing: 0,
        categories: [{ value: "oak", count: 3 }, { value: "elm", count: 1 }, { value: "ash", count: 1 }] },
    ],
  });
  assert.equal(
    text,
    '5 cases of "d" (3 plotted; 1 have no value on an axis; 1 hidden in this graph); x = h: numbers from 1 to 9, ' +
      "mean 4.5 (1 without a value); the axis shows 0 to 10; legend kind: oak 3, elm 1, ash 1; it shows only the " +
      "cases for which h < 9 is true (the counts are before that).",
  );

  // a graph of the parent collection's attribute alone plots the rooms: two cases, not five
  const rooms = await describeGraphData(reader, stateOf({ dataContext: "d", xAttributeName: "room", hiddenCases: [] }));
  assert.equal(rooms.data.cases, 2);
  assert.deepEqual(rooms.data.attributes[0].categories, [{ value: "A", count: 1 }, { value: "B", count: 1 }]);

  // set aside in the dataset (known from CODAP's document, through the graph's state)
  const aside = await describeGraphData(reader, graphStateFrom({ id: 1, dataContext: "d", xAttributeName: "h" }, [], null, null, 2));
  assert.equal(aside.data.setAside, 2);
  assert.match(aside.text, /; 2 cases of the dataset set aside, shown nowhere\.$/);

  const none = await describeGraphData(reader, stateOf({ dataContext: "", xAttributeName: null }));
  assert.equal(none.text, "The graph shows no dataset yet.");
});

test("what a graph holds: many categories are counted, not listed; a text attribute of numbers counts as numbers", async () => {
  const rows = Array.from({ length: 30 }, (_, i) => ({ who: `p${i % 20}`, n: String(i) }));
  const reader = dataReader([["people", [["who", "categorical"], ["n", ""]]]], rows);
  const { data, text } = await describeGraphData(reader, stateOf({ dataContext: "d", xAttributeName: "who", yAttributeName: "n" }));
  const [who, n] = data.attributes;
  assert.equal(who.categories.length, 12);
  assert.equal(who.otherCategories, 8);
  assert.match(text, /who: p0 2, p1 2, .*, and 8 other categories;/);
  assert.deepEqual([n.type, n.min, n.max], ["numeric", 0, 29]);
});
