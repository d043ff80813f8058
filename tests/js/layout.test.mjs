// Where a component goes beside, below or instead of another without covering a third (tools/layout.js).
import assert from "node:assert/strict";
import test from "node:test";

import { CODAP_HEADER, placementText, visibleCanvas } from "../../core/codap_relay/plugin/js/tools/component_place.js";
import { GAP, boxOf, freePlace, overlaps, placed, placeText, withLayout } from "../../core/codap_relay/plugin/js/tools/layout.js";

const table = { left: 390, top: 5, width: 245, height: 234 };
const note = { left: 645, top: 5, width: 300, height: 100 };

test("each place lines the box up with the other's edges, GAP apart", () => {
  const size = { width: 300, height: 200 };
  assert.deepEqual(placed("right_of", size, table), { left: 390 + 245 + GAP, top: 5, ...size });
  assert.deepEqual(placed("below", size, table), { left: 390, top: 5 + 234 + GAP, ...size });
  assert.deepEqual(placed("left_of", size, table), { left: 390 - 300 - GAP, top: 5, ...size });
  assert.deepEqual(placed("above", size, table), { left: 390, top: 5 - 200 - GAP, ...size });
  assert.deepEqual(placed("instead_of", size, table), { left: 390, top: 5, ...size });
});

test("a free place is kept; a taken one gives the nearest free place that covers nothing", () => {
  const wanted = placed("below", { width: 300, height: 200 }, table);
  assert.deepEqual(freePlace(wanted, [table, note]), wanted);
  const taken = placed("right_of", { width: 300, height: 200 }, table);
  const free = freePlace(taken, [table, note]);
  assert.ok(![table, note].some((o) => overlaps(free, o)), JSON.stringify(free));
  // the nearest: under the note (a move of 105 px down), not past it to the right (310 px)
  assert.deepEqual(free, { left: taken.left, top: note.top + note.height + GAP, width: 300, height: 200 });
  // off the canvas (left of x = 0) is no place either
  const left = freePlace(placed("left_of", { width: 500, height: 50 }, table), [table, note]);
  assert.ok(left.left >= 0 && left.top >= 0 && ![table, note].some((o) => overlaps(left, o)), JSON.stringify(left));
});

test("among many components the place found covers none of them", () => {
  const crowd = [];
  for (let i = 0; i < 6; i++) for (let j = 0; j < 4; j++) crowd.push({ left: i * 210, top: j * 160, width: 200, height: 150 });
  const free = freePlace({ left: 100, top: 100, width: 250, height: 250 }, crowd);
  assert.ok(!crowd.some((o) => overlaps(free, o)), JSON.stringify(free));
});

test("the status marks minimized components and which shown ones overlap", () => {
  const components = [
    { id: 1, position: { left: 0, top: 0 }, size: { width: 100, height: 100 } },
    { id: 2, position: { left: 50, top: 50 }, size: { width: 100, height: 100 } },
    { id: 3, position: { left: 0, top: 200 }, size: { width: 100, height: 300 } },
    { id: 4, position: { left: 0, top: 260 }, size: { width: 100, height: 100 } },
    { id: 5, hidden: true, position: { left: 0, top: 0 }, size: { width: 500, height: 500 } },
  ];
  const state = { components: [{ guid: 3, layout: { height: 34 }, savedHeight: 300 }, { guid: 4, layout: { height: 100 } }] };
  const out = withLayout(components, state);
  assert.deepEqual(out.map((c) => [c.id, c.minimized ?? false, c.covers ?? []]), [
    [1, false, [2]],
    [2, false, [1]],
    [3, true, []], // minimized to its title bar (34 px): no longer over component 4
    [4, false, []],
    [5, false, []],
  ]);
  assert.equal(placeText(out[2]), " (id 3) at (0, 200), 100 × 300 px, minimized");
  assert.equal(placeText(out[0]), " (id 1) at (0, 0), 100 × 100 px, overlapping 2");
  assert.equal(placeText(out[4]), " (id 5) at (0, 0), 500 × 500 px, hidden");
});

test("a free place within the canvas a person sees comes before a nearer one beyond it", () => {
  const wall = { left: 0, top: 0, width: 800, height: 500 };
  const wanted = { left: 250, top: 200, width: 300, height: 100 };
  // nearest overall: below the wall (300 px down), beyond a canvas 560 px tall; within it: right of the wall
  assert.deepEqual(freePlace(wanted, [wall]), { left: 250, top: 510, width: 300, height: 100 });
  assert.deepEqual(freePlace(wanted, [wall], { width: 1200, height: 560 }), { left: 810, top: 200, width: 300, height: 100 });
  // no room within it: the nearest beyond it
  assert.deepEqual(freePlace(wanted, [wall], { width: 900, height: 560 }), { left: 250, top: 510, width: 300, height: 100 });
});

test("a slider and the calculator are as big as CODAP draws them, not as it says", () => {
  const at = { position: { left: 10, top: 20 } };
  assert.deepEqual(boxOf({ ...at, type: "slider", dimensions: { width: 300, height: 73 } }), { left: 10, top: 20, width: 300, height: 98 });
  assert.deepEqual(boxOf({ ...at, type: "calculator", dimensions: { width: 137, height: 162 } }), { left: 10, top: 20, width: 166, height: 196 });
  assert.deepEqual(boxOf({ ...at, type: "text", dimensions: { width: 300, height: 100 } }), { left: 10, top: 20, width: 300, height: 100 });
  assert.equal(boxOf({ type: "slider" }), null);
});

test("the visible canvas is the browser window less CODAP's header, and the answer says where a component went", () => {
  assert.deepEqual(visibleCanvas({ outerWidth: 1400, outerHeight: 900 }), { width: 1400, height: 900 - CODAP_HEADER });
  assert.equal(visibleCanvas({}), null);
  const text = placementText({ position: { left: 10, top: 800 }, size: { width: 300, height: 98 }, overlaps: [], beyondVisibleCanvas: true,
    movedFrom: { left: 550, top: 343 }, visibleCanvas: { width: 1400, height: 783 } });
  assert.match(text, /at \(10, 800\), 300 × 98 px, moved there from \(550, 343\)/);
  assert.match(text, /beyond the canvas the person sees \(about 1400 × 783 px\)/);
  assert.match(placementText({ position: { left: 0, top: 0 }, size: { width: 5, height: 5 }, overlaps: [3], beyondVisibleCanvas: null }), /overlaps 3/);
});
