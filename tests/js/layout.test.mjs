// Where a component goes beside, below or instead of another without covering a third (tools/layout.js).
import assert from "node:assert/strict";
import test from "node:test";

import { GAP, freePlace, overlaps, placed, placeText, withLayout } from "../../core/codap_relay/plugin/js/tools/layout.js";

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
