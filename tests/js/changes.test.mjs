import assert from "node:assert/strict";
import { test } from "node:test";

import { ChangeReporter, changeOf } from "../../core/codap_relay/plugin/js/changes.js";

test("CODAP's notices name the datasets that changed and whether the list did", () => {
  assert.deepEqual(changeOf({ resource: "dataContextChangeNotice[Mammals]", values: [{ operation: "createCases" }] }), {
    datasets: ["Mammals"],
    listed: false,
  });
  assert.deepEqual(changeOf({ resource: "dataContextChangeNotice[Mammals]", values: { operation: "updateDataContext" } }), {
    datasets: ["Mammals"],
    listed: true,
  });
  assert.deepEqual(changeOf({ resource: "dataContextChangeNotice[Mammals]", values: { operation: "deleteCases" } }), {
    datasets: ["Mammals"],
    listed: false,
  });
  assert.deepEqual(
    changeOf({ resource: "documentChangeNotice", values: { operation: "dataContextDeleted", deletedContext: "Old" } }),
    { datasets: ["Old"], listed: true },
  );
  assert.deepEqual(changeOf({ resource: "component", values: { operation: "delete", type: "DG.GraphView" } }), {
    datasets: [],
    listed: true,
  });
  assert.deepEqual(changeOf({ resource: "undoChangeNotice", values: { operation: "undoableActionPerformed" } }), {
    datasets: [],
    listed: false,
  });
});

test("a burst of notices becomes one post, at most one per interval", async () => {
  const timers = [];
  const posts = [];
  const reporter = new ChangeReporter({
    post: async (note) => posts.push(note),
    setTimer: (fn) => timers.push(fn),
    clearTimer: () => {},
  });
  for (let i = 0; i < 50; i++) reporter.hear({ resource: "dataContextChangeNotice[A]", values: { operation: "createCases" } });
  reporter.hear({ resource: "documentChangeNotice", values: { operation: "dataContextCountChanged" } });
  assert.equal(timers.length, 1);
  await timers[0]();
  assert.deepEqual(posts, [{ datasets: ["A"], listChanged: true }]);
  reporter.ranTool("create_codap_graph");
  assert.equal(timers.length, 2);
  reporter.stop();
  await timers[1]();
  assert.equal(posts.length, 1); // stopped: nothing more is sent
});
