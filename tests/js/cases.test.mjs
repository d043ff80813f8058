// The case tools against a scripted CODAP: a list of updates goes to CODAP as one request (one change, one step
// of its Undo) whatever the number of updates, and an update that cannot be made stops them all before any change.
// What CODAP holds after each tool is checked against the real CODAP build in tests/e2e/test_tools_cases.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createCaseTools } from "../../core/codap_relay/plugin/js/tools/cases.js";
import { createToolContext } from "../../core/codap_relay/plugin/js/tools/context.js";

/**
 * A flat dataset "D" (id 1, collection id 2) with attributes x and g; case c (1-5) is item c + 100 with x = c. A
 * condition `x > n` or `x = n` is searched as CODAP would.
 */
function scripted() {
  const messages = [];
  const answer = (r) => {
    if (r.resource === "dataContextList") return { success: true, values: [{ id: 1, name: "D", title: "D" }] };
    if (r.resource.endsWith(".collectionList")) return { success: true, values: [{ id: 2, name: "c", title: "c" }] };
    if (r.resource.endsWith(".attributeList")) return { success: true, values: [{ id: 3, name: "x" }, { id: 4, name: "g" }] };
    if (r.resource.endsWith(".collection[2]")) return { success: true, values: { attrs: [{ id: 3, name: "x" }, { id: 4, name: "g" }] } };
    if (r.resource.endsWith(".caseCount")) return { success: true, values: 5 };
    const search = /caseFormulaSearch\[x ([>=]) (\d+)\]$/.exec(r.resource);
    if (search) {
      const n = Number(search[2]);
      const ids = [1, 2, 3, 4, 5].filter((c) => (search[1] === ">" ? c > n : c === n));
      return { success: true, values: ids.map((id) => ({ id })) };
    }
    const byCase = /\.itemByCaseID\[(\d+)\]$/.exec(r.resource);
    if (byCase) return { success: true, values: { id: Number(byCase[1]) + 100, values: { x: Number(byCase[1]), g: "a" } } };
    if (r.action === "update" && r.resource.endsWith(".item")) {
      return { success: true, values: { changedCases: r.values.map((v) => v.id) } };
    }
    return { success: false, values: { error: `unexpected ${r.action} ${r.resource}` } };
  };
  const call = async (requests) => {
    messages.push(requests);
    return requests.map(answer);
  };
  return { tools: createCaseTools(createToolContext({ call })), messages };
}

const changes = (messages) => messages.flat().filter((r) => r.action === "update");

test("a list of updates is one request to CODAP, each row with every update's values, the later one's on a clash", async () => {
  const env = scripted();
  const { structuredContent: out, content } = await env.tools.update_codap_cases({
    datasetName: "D",
    updates: [
      { where: "x > 3", values: { g: "high" } },
      { where: "x = 5", values: { g: "top", x: 50 } },
      { where: "x = 1", values: { g: "" } },
    ],
  });
  const [change, ...more] = changes(env.messages);
  assert.equal(more.length, 0);
  assert.deepEqual(change.values, [
    { id: 104, values: { g: "high" } },
    { id: 105, values: { g: "top", x: 50 } },
    { id: 101, values: { g: "" } },
  ]);
  assert.deepEqual(out.updates.map((u) => [u.changed, u.caseIds]), [[2, [104, 105]], [1, [105]], [1, [101]]]);
  assert.deepEqual(out.updates[1].before, [{ caseId: 105, values: { g: "a", x: 5 } }]);
  assert.equal(out.changed, 3);
  assert.match(content[0].text, /1 case \(105\) is in more than one update/);
});

test("an update that matches nothing stops the list before any change, and the error names it", async () => {
  const env = scripted();
  await assert.rejects(
    env.tools.update_codap_cases({
      datasetName: "D",
      updates: [{ where: "x > 3", values: { g: "high" } }, { where: "x > 9", values: { g: "none" } }],
    }),
    (e) => e.code === "empty_selection" && e.data.update === 1 && /^Update 2 of 2 \(matching x > 9\)/.test(e.message),
  );
  assert.equal(changes(env.messages).length, 0);
  await assert.rejects(
    env.tools.update_codap_cases({ datasetName: "D", where: "x > 1", values: { g: 1 }, updates: [{ where: "x > 1", values: { g: 2 } }] }),
    (e) => e.code === "invalid_arguments" && /not both/.test(e.message),
  );
});
