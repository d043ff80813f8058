// Pictures of graphs: finding the graph, waiting for CODAP's first drawing of a new one, fitting the picture for
// the model. CODAP's side is the test host's model, plus CODAP v3.1.0's dataDisplay answers (exportDataUri, the
// nested "DataDisplay not found" for other components, the plain one before a new graph is drawn); pictures go
// through a raster that computes sizes instead of drawing.

import assert from "node:assert/strict";
import { test } from "node:test";

import { makeRng } from "../../core/codap_relay/plugin/js/data.js";
import { base64Bytes, fitPicture, parseDataUri } from "../../core/codap_relay/plugin/js/imaging.js";
import { codapError } from "../../core/codap_relay/plugin/js/codap_query.js";
import { createTools } from "../../core/codap_relay/plugin/js/tools/index.js";
import { createCodapModel } from "../e2e/codap_host/codap_model.js";

/** A PNG's first bytes (signature and IHDR with its size) followed by `length` bytes of filler, as a data URI. */
function png(width, height, length = 1000) {
  const bytes = new Uint8Array(24 + length);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  new DataView(bytes.buffer).setUint32(16, width);
  new DataView(bytes.buffer).setUint32(20, height);
  return `data:image/png;base64,${Buffer.from(bytes).toString("base64")}`;
}

/** Decodes the size a PNG declares; encodes to a made-up length per pixel (PNG 3 bytes, JPEG 0.5). */
const raster = {
  encoded: [],
  async decode(uri) {
    const bytes = Buffer.from(parseDataUri(uri).base64, "base64");
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  },
  async encode(picture, width, height, mimeType) {
    this.encoded.push([width, height, mimeType]);
    const perPixel = mimeType === "image/png" ? 3 : 0.5;
    return Buffer.alloc(Math.ceil(width * height * perPixel)).toString("base64");
  },
};

/**
 * `picture(n)` is CODAP's picture at its nth drawing (n from 0): the same each time once the graph has settled.
 * The first `blankAnswers` requests find no picture yet.
 */
function setup({ blankAnswers = 0, picture = png(340, 300), frames = () => picture } = {}) {
  const model = createCodapModel();
  const messages = [];
  const pauses = [];
  let clock = 0;
  let blanks = blankAnswers;
  let drawn = 0;
  const display = (resource) => {
    const id = Number(/^dataDisplay\[(\d+)\]$/.exec(resource)[1]);
    const comp = model.answer({ action: "get", resource: `component[${id}]` });
    if (!comp.success) return { success: false, values: { error: "Component not found" } };
    if (comp.values.type !== "graph") {
      return { success: null, values: { error: { success: false, values: { error: "DataDisplay not found" } } } };
    }
    if (blanks-- > 0) return { success: false, values: { error: "DataDisplay not found" } };
    return { success: true, values: { exportDataUri: frames(drawn++) } };
  };
  const answer = (r) => (/^dataDisplay\[/.test(r.resource) ? display(r.resource) : model.answer(structuredClone(r)));
  const call = async (request) => {
    messages.push(request);
    return Array.isArray(request) ? request.map(answer) : answer(request);
  };
  const tools = createTools({
    call,
    rng: makeRng(7),
    raster,
    sleep: async (ms) => {
      pauses.push(ms);
      clock += ms;
    },
    now: () => clock,
  });
  return { model, messages, tools, pauses };
}

async function withGraphs(env) {
  await env.tools.create_codap_dataset({ datasetName: "s", dataType: "sample_students", recordCount: 20 });
  const a = await env.tools.create_codap_graph({
    datasetName: "s", graphType: "scatterplot", xAttribute: "grade", yAttribute: "score", title: "Scores",
  });
  const b = await env.tools.create_codap_graph({ datasetName: "s", graphType: "bar_chart", xAttribute: "favorite_subject" });
  return [a.structuredContent.graphId, b.structuredContent.graphId];
}

test("a graph found by title, name or id comes back as CODAP's own PNG when it is small enough", async () => {
  const picture = png(340, 300, 40_000);
  const env = setup({ picture });
  const [scores, bars] = await withGraphs(env);
  for (const graph of ["Scores", "scores", String(scores), scores]) {
    const before = env.messages.length;
    const result = await env.tools.get_codap_graph_image({ graph });
    // and what the graph holds: its dataset's id, then its collections (two messages, the cases in the first)
    assert.equal(env.messages.length - before, 7, "component list, details, a picture and the same again, the data");
    const [text, image] = result.content;
    assert.equal(image.type, "image");
    assert.equal(`data:${image.mimeType};base64,${image.data}`, picture); // byte for byte
    assert.match(text.text, /^Picture of graph "Scores" \(id \d+\): scatter plot of "s", x = grade, y = score\. PNG, 340 × 300 px, 40 KB\. What it holds, from CODAP's data: 20 cases of "s" \(all plotted\); x = grade: numbers from 9 to 12, mean [\d.]+; y = score: numbers from \d+ to \d+, mean [\d.]+\.$/);
    assert.deepEqual(
      [result.structuredContent.graphId, result.structuredContent.width, result.structuredContent.scaled],
      [scores, 340, false],
    );
  }
  const byId = await env.tools.get_codap_graph_image({ graph: bars });
  assert.equal(byId.structuredContent.plotType, "barChart");
});

test("a new graph's picture is asked for again after growing pauses until CODAP has drawn it", async () => {
  const env = setup({ blankAnswers: 5 });
  await env.tools.create_codap_dataset({ datasetName: "s", dataType: "random_numbers", recordCount: 5 });
  const result = await env.tools.create_codap_graph({
    datasetName: "s", graphType: "scatterplot", xAttribute: "x", yAttribute: "y", includeImage: true,
  });
  assert.deepEqual(env.pauses, [50, 100, 200, 400, 800, 100]);
  assert.equal(result.content[1].type, "image");
  assert.match(result.content[0].text, /Its picture is attached: PNG, 340 × 300 px/);
  assert.equal(result.structuredContent.image.width, 340);
  assert.deepEqual(result.structuredContent.notes, []);
});

test("a picture counts once two taken a moment apart are the same: points still moving are waited for", async () => {
  const moving = (n) => png(340, 300, 1000 + Math.min(n, 6)); // six frames of an animation, then still
  const env = setup({ frames: moving });
  await withGraphs(env);
  env.pauses.length = 0;
  const result = await env.tools.get_codap_graph_image({ graph: "Scores" });
  assert.equal(`data:image/png;base64,${result.content[1].data}`, moving(99));
  assert.deepEqual(env.pauses, [100, 100, 100, 100, 100, 100, 100]);
  assert.equal(result.structuredContent.settled, true);
  const restless = setup({ frames: (n) => png(340, 300, 1000 + n) }); // never the same twice
  await withGraphs(restless);
  const last = await restless.tools.get_codap_graph_image({ graph: "Scores" });
  assert.equal(last.structuredContent.settled, false);
  assert.match(last.content[0].text, /still changing the graph after 20 s: this is the last picture it gave/);
});

test("a picture that never comes ends the wait after 20 s with a tool error; the graph itself still counts", async () => {
  const env = setup({ blankAnswers: Infinity });
  const [scores] = await withGraphs(env);
  await assert.rejects(env.tools.get_codap_graph_image({ graph: "Scores" }), (e) => {
    assert.equal(e.code, "graph_image_unavailable");
    assert.match(e.message, /no picture of graph "Scores" \(id \d+\) within 20 s \(it answered "DataDisplay not found"\)/);
    assert.match(e.message, /minimized or hidden/);
    assert.equal(e.data.graphId, scores);
    return true;
  });
  assert.equal(env.pauses.reduce((a, b) => a + b, 0), 20_000);
  assert.ok(env.pauses.every((ms) => ms <= 1000));
  const made = await env.tools.create_codap_graph({
    datasetName: "s", graphType: "scatterplot", xAttribute: "age", yAttribute: "score", includeImage: true,
  });
  assert.equal(made.content.length, 1);
  assert.match(made.structuredContent.notes.at(-1), /^No picture: CODAP gave no picture/);
});

test("other components and unknown names are tool errors that name the graphs there are", async () => {
  const env = setup();
  await assert.rejects(env.tools.get_codap_graph_image({}), (e) => e.code === "invalid_arguments" && /no graphs/.test(e.message));
  const [scores, bars] = await withGraphs(env);
  const table = env.model.state.components.find((c) => c.type === "caseTable").id;
  await assert.rejects(env.tools.get_codap_graph_image({ graph: table }), (e) => {
    assert.equal(e.code, "not_a_graph");
    assert.ok(e.message.startsWith(`Component ${table} is a case table in CODAP, not a graph`), e.message);
    assert.ok(e.message.includes(`"Scores" (id ${scores})`) && e.message.includes(`(id ${bars})`), e.message);
    return true;
  });
  await assert.rejects(env.tools.get_codap_graph_image({ graph: "Heights" }), (e) => {
    assert.equal(e.code, "graph_not_found");
    assert.deepEqual(e.data.available.length, 2);
    return true;
  });
  await assert.rejects(env.tools.get_codap_graph_image({}), (e) => e.code === "invalid_arguments" && /Say which graph/.test(e.message));
  await assert.rejects(env.tools.get_codap_graph_image({ graph: "Scores", maxSize: 10 }), (e) => e.code === "invalid_arguments");
});

test("CODAP's nested failure for a non-graph data display is unwrapped to its words", () => {
  const nested = { success: null, values: { error: { success: false, values: { error: "DataDisplay not found" } } } };
  assert.equal(codapError(nested), "DataDisplay not found");
  assert.equal(codapError({ success: false, values: { error: "Component not found" } }), "Component not found");
  assert.equal(codapError({ success: false }), "CODAP reported a failure without a message");
});

test("a large picture is scaled to maxSize, then re-encoded as JPEG, then made smaller until it fits", async () => {
  raster.encoded = [];
  const big = png(2000, 1500, 3_000_000);
  const scaled = await fitPicture(big, { maxSize: 400, raster });
  assert.deepEqual([scaled.mimeType, scaled.width, scaled.height, scaled.scaled, scaled.reencoded], ["image/png", 400, 300, true, false]);
  assert.deepEqual(scaled.original, { width: 2000, height: 1500, bytes: base64Bytes(parseDataUri(big).base64) });
  const jpeg = await fitPicture(big, { maxSize: 1000, maxBytes: 400_000, raster }); // PNG 2.25 MB, JPEG 375 KB
  assert.deepEqual([jpeg.mimeType, jpeg.width, jpeg.height, jpeg.reencoded], ["image/jpeg", 1000, 750, true]);
  const smaller = await fitPicture(big, { maxSize: 1000, maxBytes: 100_000, raster });
  assert.equal(smaller.mimeType, "image/jpeg");
  assert.ok(smaller.bytes <= 100_000 && smaller.width < 1000, JSON.stringify(smaller));
  assert.ok(Math.abs(smaller.height / smaller.width - 0.75) < 0.01);
  await assert.rejects(fitPicture("data:text/html;base64,PGI+", { raster }), (e) => e.code === "graph_image_unavailable");
  const empty = { ...raster, decode: async () => ({ width: 0, height: 0 }) };
  await assert.rejects(fitPicture(png(1, 1), { raster: empty }), (e) => /empty picture/.test(e.message));
});

test("the text says when the picture was scaled or re-encoded", async () => {
  const env = setup({ picture: png(1600, 1200, 2_000_000) });
  await withGraphs(env);
  const result = await env.tools.get_codap_graph_image({ graph: "Scores", maxSize: 400 });
  assert.match(result.content[0].text, /PNG, 400 × 300 px, \d+ KB\. CODAP drew it at 1600 × 1200 px; it was scaled down to at most 400 px/);
  const huge = setup({ picture: png(1600, 1200, 2_000_000) });
  await withGraphs(huge);
  const jpeg = await huge.tools.get_codap_graph_image({ graph: "Scores", maxSize: 1600 });
  assert.equal(jpeg.content[1].mimeType, "image/jpeg");
  assert.match(jpeg.content[0].text, /JPEG, 1600 × 1200 px.*re-encoded as JPEG to stay small/);
});

test("a hidden graph is refused at once; one drawn at no size (minimized) after 2 s of empty pictures", async () => {
  const env = setup();
  const [scores] = await withGraphs(env);
  const listed = env.model.answer({ action: "get", resource: "componentList" });
  const hiding = async (request) => {
    const reply = await env.model.answer(request);
    return request.resource === "componentList" ? { ...reply, values: reply.values.map((c) => ({ ...c, hidden: c.id === scores })) } : reply;
  };
  assert.ok(listed.success);
  const hidden = createTools({
    call: async (r) => (Array.isArray(r) ? Promise.all(r.map(hiding)) : hiding(r)),
    raster,
    sleep: async () => {},
  });
  await assert.rejects(hidden.get_codap_graph_image({ graph: "Scores" }), (e) => {
    assert.equal(e.code, "graph_image_unavailable");
    assert.match(e.message, /is hidden in CODAP.*hidden false/);
    return true;
  });
  const minimized = setup({ picture: "data:," }); // CODAP's picture of a canvas with no size
  await withGraphs(minimized);
  await assert.rejects(minimized.tools.get_codap_graph_image({ graph: "Scores" }), (e) => /only an empty picture/.test(e.message));
  const waited = minimized.pauses.reduce((a, b) => a + b, 0);
  assert.ok(waited >= 2000 && waited < 3000, String(waited));
});
