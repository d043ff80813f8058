// CODAP's Undo for the tools' calls: the requests that reverse a call, read from the documents before and after
// it (inverse.js), the new ids a redone call gets (journal.js), and CODAP's busy signal around each tool (busy.js).

import assert from "node:assert/strict";
import { test } from "node:test";

import { BUSY, BUSY_DELAY_MS, IDLE, RENEW_MS, withBusySignal } from "../../core/codap_relay/plugin/js/busy.js";
import { inverseOf } from "../../core/codap_relay/plugin/js/tools/inverse.js";
import { recordedByCodap } from "../../core/codap_relay/plugin/js/tools/journal.js";
import { newIds } from "../../core/codap_relay/plugin/js/tools/restore_points.js";

const text = (guid, title, left = 10) => ({
  type: "DG.TextView",
  guid,
  componentStorage: { title, name: title, text: "{}" },
  layout: { left, top: 5, width: 300, height: 100 },
});
const trees = (height, attrName = "height") => ({
  guid: 1,
  name: "Trees",
  title: "Trees",
  collections: [
    {
      guid: 2,
      name: "Trees",
      attrs: [{ guid: 3, name: attrName }],
      cases: [{ guid: 4, values: { [attrName]: 3 } }, { guid: 5, values: { [attrName]: height } }],
    },
  ],
});

test("a component, a case value and an attribute's name are each set back by their own request", () => {
  const before = { components: [], contexts: [trees(5)], globalValues: [] };
  const after = { components: [text(9, "Note")], contexts: [trees(9, "tall")], globalValues: [] };
  const { requests, cannot } = inverseOf(before, after);
  assert.deepEqual(cannot, []);
  assert.deepEqual(requests, [
    { action: "delete", resource: "component[9]" },
    { action: "update", resource: "dataContext[1].case", values: [{ id: 5, values: { tall: 5 } }] },
    { action: "update", resource: "dataContext[1].collection[2].attribute[3]", values: { name: "height" } },
  ]);
});

test("a moved and retitled component goes back; a deletion is named as what no request puts back", () => {
  const moved = inverseOf({ components: [text(9, "Note")] }, { components: [text(9, "Notes", 400)] });
  assert.deepEqual(moved.requests, [
    { action: "update", resource: "component[9]", values: { position: { left: 10, top: 5 }, title: "Note", name: "Note" } },
  ]);
  const gone = inverseOf({ components: [text(9, "Note")], contexts: [trees(5)] }, { components: [], contexts: [] });
  assert.deepEqual(gone.cannot, ['component "Note" deleted (id 9)', 'dataset "Trees" deleted (id 1)']);
});

test("cases set aside are brought back and cases brought back set aside again, none deleted", () => {
  const aside = { ...trees(5), collections: [{ ...trees(5).collections[0], cases: [trees(5).collections[0].cases[0]] }],
    setAsideItems: [{ id: "77", values: { height: 5 } }] };
  const setAside = inverseOf({ contexts: [trees(5)] }, { contexts: [aside] });
  assert.deepEqual(setAside, {
    requests: [{ action: "notify", resource: "dataContext[1]", values: { request: "setAside", operation: "restore", caseIDs: ["ITEM77"] } }],
    cannot: [],
  });
  const restored = inverseOf({ contexts: [aside] }, { contexts: [trees(5)] });
  assert.deepEqual(restored, {
    requests: [{ action: "notify", resource: "dataContext[1]", values: { request: "setAside", caseIDs: ["ITEM77"] } }],
    cannot: [],
  });
});

test("a graph's settings go back from CODAP's description of it: attributes first, bounds last", () => {
  const graph = (storage) => ({ type: "DG.GraphView", guid: 7, componentStorage: { title: "G", ...storage }, layout: { left: 1 } });
  const before = { detail: { dataContext: "p", xAttributeID: 1, legendAttributeID: null, pointColor: "#e6805b",
    displayOnlySelectedCases: null, filterFormula: "", xLowerBound: 140, xUpperBound: 190, yLowerBound: null } };
  const after = { detail: { dataContext: "p", xAttributeID: 2, legendAttributeID: 3, pointColor: "#ff0000",
    displayOnlySelectedCases: true, filterFormula: "h > 1", xLowerBound: 0, xUpperBound: 9, yLowerBound: 4 } };
  const { requests, cannot } = inverseOf({ components: [graph({ a: 1 })] }, { components: [graph({ a: 2 })] },
    { before: { 7: before }, after: { 7: after } });
  assert.deepEqual(cannot, []);
  assert.deepEqual(requests, [
    { action: "update", resource: "component[7]", values: { xAttributeID: 1, legendAttributeID: null } },
    { action: "update", resource: "component[7]", values: { displayOnlySelectedCases: false, filterFormula: "", pointColor: "#e6805b" } },
    // the y axis had no bounds (a category): it follows its attribute
    { action: "update", resource: "component[7]", values: { xLowerBound: 140, xUpperBound: 190 } },
  ]);
  // without CODAP's description of the graph, its change is named as what no request puts back
  assert.deepEqual(inverseOf({ components: [graph({ a: 1 })] }, { components: [graph({ a: 2 })] }).cannot, ['component "G" changed']);
});

test("a legend's colours go back; the colours CODAP gives new values itself are no change", () => {
  const attr = (map) => ({ ...trees(5), collections: [{ ...trees(5).collections[0], attrs: [{ guid: 3, name: "height", _categoryMap: map }] }] });
  const { requests } = inverseOf({ contexts: [attr({ A: "#111111", __order: ["A"] })] },
    { contexts: [attr({ A: "#00ff00", B: "#222222", __order: ["A", "B"] })] });
  assert.deepEqual(requests, [{ action: "update", resource: "dataContext[1].collection[2].attribute[3]", values: { colormap: { A: "#111111" } } }]);
  assert.deepEqual(inverseOf({ contexts: [attr({ A: "#1" })] }, { contexts: [attr({ A: "#1", C: "#3" })] }).requests, []);
});

test("the requests CODAP keeps a step of itself: statistics, a Rescale, a rebuild; not a component's update", () => {
  assert.equal(recordedByCodap({ action: "create", resource: "component[4].adornment", values: { type: "Mean" } }), true);
  assert.equal(recordedByCodap({ action: "delete", resource: "component[4].adornment", values: { type: "Mean" } }), true);
  assert.equal(recordedByCodap({ action: "get", resource: "component[4].adornment[Mean]" }), false);
  assert.equal(recordedByCodap({ action: "notify", resource: "component[4]", values: { request: "autoScale" } }), true);
  assert.equal(recordedByCodap({ action: "update", resource: "document", values: {} }), true);
  assert.equal(recordedByCodap({ action: "update", resource: "component[4]", values: { pointColor: "#ff0000" } }), false);
});

test("the ids a call made are found in document order, for its redo to renumber", () => {
  const a = JSON.stringify({ components: [text(9, "A")] });
  const b = JSON.stringify({ components: [text(9, "A"), text(12, "B")], contexts: [trees(5)] });
  assert.deepEqual(newIds(a, b), ["12", "1", "2", "3", "4", "5"]);
});

test("a quick call never shows CODAP busy; one past the delay does and ends idle, also when it fails", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  const sent = [];
  const phone = { notify: async (request) => sent.push(request) };
  const gates = [];
  const gate = () => new Promise((resolve, reject) => gates.push({ resolve, reject }));
  const tools = withBusySignal(
    {
      quick: async () => "read",
      quickFails: async () => {
        throw new Error("no");
      },
      slow: () => gate(),
    },
    phone,
    { setTimeout, clearTimeout, setInterval, clearInterval },
  );
  // Quick: answered or failed before the delay, CODAP hears nothing, then or later.
  assert.equal(await tools.quick({}), "read");
  await assert.rejects(tools.quickFails({}), /no/);
  t.mock.timers.tick(BUSY_DELAY_MS * 2);
  assert.deepEqual(sent, []);
  // Slow: busy once the delay has passed, idle at its end; a second call meanwhile shares the busy period.
  const slow = tools.slow({});
  t.mock.timers.tick(BUSY_DELAY_MS - 1);
  assert.deepEqual(sent, []);
  t.mock.timers.tick(1);
  assert.deepEqual(sent, [BUSY]);
  const overlapping = tools.quick({});
  gates[0].resolve("drawn");
  assert.equal(await slow, "drawn");
  await overlapping;
  assert.deepEqual(sent, [BUSY, IDLE]);
  // Slow and failing (a timeout): busy, renewed before CODAP's own 60 s limit, then idle.
  const failing = tools.slow({});
  t.mock.timers.tick(BUSY_DELAY_MS);
  assert.deepEqual(sent, [BUSY, IDLE, BUSY]);
  t.mock.timers.tick(RENEW_MS);
  assert.deepEqual(sent, [BUSY, IDLE, BUSY, BUSY]);
  gates[1].reject(new Error("CODAP did not answer"));
  await assert.rejects(failing, /did not answer/);
  assert.deepEqual(sent, [BUSY, IDLE, BUSY, BUSY, IDLE]);
  t.mock.timers.tick(RENEW_MS * 2);
  assert.equal(sent.length, 5); // nothing after idle
});

test("no busy signal is sent while CODAP's tab is hidden: nobody sees it, and each message costs a hidden tab time", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  const sent = [];
  let hidden = true;
  const gates = [];
  const tools = withBusySignal(
    { slow: () => new Promise((resolve) => gates.push(resolve)) },
    { notify: async (request) => sent.push(request) },
    { setTimeout, clearTimeout, setInterval, clearInterval },
    () => hidden,
  );
  const call = tools.slow({});
  t.mock.timers.tick(BUSY_DELAY_MS + RENEW_MS);
  gates[0]("done");
  await call;
  assert.deepEqual(sent, []);
  hidden = false; // shown again: as before
  const next = tools.slow({});
  t.mock.timers.tick(BUSY_DELAY_MS);
  gates[1]("done");
  await next;
  assert.deepEqual(sent, [BUSY, IDLE]);
});
