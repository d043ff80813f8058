// What a raw request meant to change, compared with what CODAP holds after it (tools/raw_check.js).
import assert from "node:assert/strict";
import test from "node:test";

import { checkFor, notTakenText } from "../../core/codap_relay/plugin/js/tools/raw_check.js";

const ok = (values) => ({ success: true, values });

test("a dataset's name and a graph's plot type are named as not taken, with what to do instead", () => {
  const rename = checkFor({ action: "update", resource: "dataContext[H]", values: { name: "Heights", title: "Heights" } });
  const { notTaken } = rename.compare([ok({ name: "H", title: "H" })], [ok({ name: "H", title: "Heights" })]);
  assert.deepEqual(notTaken.map((n) => n.key), ["name"]);
  assert.match(notTaken[0].why, /update_codap_dataset title/);
  const plot = checkFor({ action: "update", resource: "component[G]", values: { plotType: "histogram", pointSize: 2 } });
  const graph = { id: 7, type: "graph", plotType: "dotPlot", pointSize: 2 };
  const out = plot.compare([ok({ ...graph, pointSize: 1 })], [ok(graph), ok([{ id: 7, hidden: false }])]);
  assert.deepEqual(out.notTaken.map((n) => [n.key, n.now]), [["plotType", "dotPlot"]]);
  assert.match(notTakenText(out.notTaken), /did not take this value: plotType \(asked "histogram"; CODAP has "dotPlot"/);
});

test("a component's visibility is read from the component list, keys CODAP does not read back are unverified", () => {
  const hide = checkFor({ action: "update", resource: "component[5]", values: { isVisible: false, center: [1, 2] } });
  const map = { id: 5, type: "map" };
  const shown = hide.compare([ok(map)], [ok(map), ok([{ id: 5, hidden: false }])]);
  assert.deepEqual([shown.notTaken.map((n) => n.key), shown.unverified], [["isVisible"], ["center"]]);
  const hidden = hide.compare([ok(map)], [ok(map), ok([{ id: 5, hidden: true }])]);
  assert.deepEqual(hidden.notTaken, []);
});

test("an attribute's editable, read the wrong way round by CODAP, says how to get it right", () => {
  const c = checkFor({ action: "update", resource: "dataContext[H].collection[H].attribute[w]", values: { editable: false, unit: "kg" } });
  const { notTaken } = c.compare([ok({ editable: true, unit: "" })], [ok({ editable: true, unit: "kg" })]);
  assert.deepEqual(notTaken.map((n) => n.key), ["editable"]);
  assert.match(notTaken[0].why, /wrong way round.*editable true/);
});

test("an item's value for no attribute is named; numbers match their text; reads and creates of data are not checked", () => {
  const c = checkFor({ action: "update", resource: "dataContext[H].itemByID[3]", values: { h: "150", nope: 1 } });
  const item = ok({ id: 3, values: { h: 150, w: 50 } });
  assert.deepEqual(c.compare([item], [item]).notTaken.map((n) => n.key), ["nope"]);
  assert.equal(checkFor({ action: "get", resource: "component[G]" }), null);
  assert.equal(checkFor({ action: "create", resource: "dataContext[H].item", values: [{ h: 1 }] }), null);
});
