// The analysis tools against a scripted CODAP: how many messages they send whatever the number of cases, the
// formulas they ask CODAP to evaluate, and what they refuse before changing anything. What CODAP computes is
// checked against the real CODAP build in tests/e2e/test_tools_analysis.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createAnalysisTools } from "../../core/codap_relay/plugin/js/tools/analysis.js";
import { createToolContext } from "../../core/codap_relay/plugin/js/tools/context.js";

/** A flat dataset "D" (id 1, collection id 2) of `cases` cases with attributes x and g (values a, b). */
function scripted(cases, statsText = null) {
  const messages = [];
  const answer = (r) => {
    if (r.resource === "dataContextList") return { success: true, values: [{ id: 1, name: "D", title: "D" }] };
    if (r.resource.endsWith(".collectionList")) return { success: true, values: [{ id: 2, name: "c", title: "c" }] };
    if (r.resource.endsWith(".attributeList")) {
      return { success: true, values: [{ id: 3, name: "x" }, { id: 4, name: "g" }] };
    }
    if (r.resource.endsWith(".collection[2]")) return { success: true, values: { attrs: [{ id: 3, name: "x" }, { id: 4, name: "g" }] } };
    if (r.resource.endsWith(".caseCount")) return { success: true, values: cases };
    if (r.resource.endsWith(".attribute[4]")) return { success: true, values: { _categoryMap: { __order: ["a", "b"] } } };
    if (r.action === "create" && r.resource.endsWith(".attribute")) return { success: true, values: { attrs: [] } };
    return { success: true };
  };
  let created = null;
  const call = async (requests) => {
    messages.push(requests);
    return requests.map((r) => {
      if (r.action === "create" && r.resource.endsWith(".attribute")) created = r.values;
      if (r.resource.endsWith(".caseByIndex[0]") && created) {
        const values = Object.fromEntries(created.map((a) => [a.name, a.name.endsWith("stats") ? statsText(a.formula) : ""]));
        return { success: true, values: { case: { id: 9, values: { x: 1, ...values } } } };
      }
      return answer(r);
    });
  };
  const tools = createAnalysisTools(createToolContext({ call }));
  return { tools, messages, created: () => created };
}

const fields = (formula) => formula.split(', "|", ').length;

test("statistics take the same few messages for 10 or 50,000 cases, in one formula of CODAP's aggregates", async () => {
  for (const cases of [10, 50_000]) {
    const env = scripted(cases, (f) => Array.from({ length: fields(f) }, (_, i) => String(i + 0.5)).join("|"));
    const out = await env.tools.compute_codap_statistics({
      datasetName: "D", attributes: ["x"], statistics: ["mean", "sd", "iqr"], groupBy: "g", where: "x > 0",
    });
    assert.equal(env.messages.length, 5, `${cases} cases`);
    const made = env.created();
    assert.deepEqual(made.map((a) => a.hidden), [true, true]);
    assert.equal(made[0].formula, "x > 0");
    assert.match(made[1].formula, /^concat\(count\(if\(`__codapRelayTemp\w+_where`, `g` = "a", false\)\), "\|", mean\(`x`, if/);
    assert.match(made[1].formula, /percentile\(`x`, 0\.75, if\(.*\) - percentile\(`x`, 0\.25, if/);
    // The temporary attributes are removed in the same message that adds them.
    const last = env.messages[env.messages.length - 1];
    assert.equal(last[0].action, "create");
    assert.deepEqual(last.slice(2).map((r) => r.action), ["delete", "delete"]);
    assert.deepEqual(out.structuredContent.rows.map((r) => [r.group, r.cases, r.mean]), [
      ["a", 0.5, 1.5], ["b", 4.5, 5.5], ["(no value)", 8.5, 9.5],
    ]);
  }
});

test("too much work for CODAP is refused before anything is added", async () => {
  const env = scripted(1_000_000, () => "");
  await assert.rejects(
    env.tools.compute_codap_statistics({ datasetName: "D", attributes: ["x"], statistics: ["mean", "median"] }),
    (e) => e.code === "too_much_work" && /fewer statistics/.test(e.message),
  );
  assert.equal(env.created(), null);
});

test("the percentile statistic needs its argument", async () => {
  const env = scripted(10, () => "");
  await assert.rejects(
    env.tools.compute_codap_statistics({ datasetName: "D", attributes: ["x"], statistics: ["percentile"] }),
    (e) => e.code === "invalid_arguments" && /percentile/.test(e.message),
  );
  assert.equal(env.messages.length, 0);
});

test("the selection lists the selected rows as items (item ids), in one message bounded by maxCases", async () => {
  // 300 of 500 cases selected; the scripted CODAP answers itemByCaseID[c] with the item id c + 1000.
  const messages = [];
  const call = async (requests) => {
    messages.push(requests);
    return requests.map((r) => {
      if (r.resource === "dataContextList") return { success: true, values: [{ id: 1, name: "D", title: "D" }] };
      if (r.resource.endsWith(".collectionList")) return { success: true, values: [{ id: 2, name: "c", title: "c" }] };
      if (r.resource.endsWith(".attributeList")) return { success: true, values: [{ id: 3, name: "x" }] };
      if (r.resource.endsWith(".caseCount")) return { success: true, values: 500 };
      if (r.resource.endsWith(".selectionList")) {
        return { success: true, values: Array.from({ length: 300 }, (_, i) => ({ caseID: i + 1 })) };
      }
      const m = /\.itemByCaseID\[(\d+)\]$/.exec(r.resource);
      if (m) return { success: true, values: { id: Number(m[1]) + 1000, values: { x: Number(m[1]) } } };
      return { success: false, values: { error: `unexpected ${r.resource}` } };
    });
  };
  const tools = createAnalysisTools(createToolContext({ call }));
  const { structuredContent: out } = await tools.get_codap_selection({ datasetName: "D", maxCases: 3 });
  assert.deepEqual(messages[messages.length - 1].map((r) => r.resource),
    [1, 2, 3].map((c) => `dataContext[1].itemByCaseID[${c}]`));
  assert.deepEqual(out.caseIds, [1001, 1002, 1003]);
  assert.deepEqual(out.cases[0], { caseId: 1001, values: { x: 1 } });
  assert.equal(out.selectedCount, 300);
  assert.equal(out.moreSelected, 297);
});

test("selecting by a condition reads the rows it selects in the message that changes the selection, bounded by maxCases", async () => {
  // 300 of 500 cases match; the scripted CODAP answers itemByCaseID[c] with the item id c + 1000.
  const messages = [];
  const call = async (requests) => {
    messages.push(requests);
    return requests.map((r) => {
      if (r.resource === "dataContextList") return { success: true, values: [{ id: 1, name: "D", title: "D" }] };
      if (r.resource.endsWith(".collectionList")) return { success: true, values: [{ id: 2, name: "c", title: "c" }] };
      if (r.resource.endsWith(".attributeList")) return { success: true, values: [{ id: 3, name: "x" }] };
      if (r.resource.endsWith(".caseCount")) return { success: true, values: 500 };
      if (r.resource.endsWith(".selectionList")) return { success: true, values: [] };
      if (r.resource.includes(".caseFormulaSearch[")) {
        return { success: true, values: Array.from({ length: 300 }, (_, i) => ({ id: i + 1 })) };
      }
      if (r.action === "create" && r.resource.endsWith(".selectionList")) return { success: true };
      const m = /\.itemByCaseID\[(\d+)\]$/.exec(r.resource);
      if (m) return { success: true, values: { id: Number(m[1]) + 1000, values: { x: Number(m[1]) } } };
      return { success: false, values: { error: `unexpected ${r.resource}` } };
    });
  };
  const tools = createAnalysisTools(createToolContext({ call }));
  const { structuredContent: out, content } = await tools.select_codap_cases({ datasetName: "D", where: "x > 0", maxCases: 2 });
  const last = messages[messages.length - 1];
  assert.equal(last[0].action, "create");
  assert.deepEqual(last.slice(3).map((r) => r.resource), [1, 2].map((c) => `dataContext[1].itemByCaseID[${c}]`));
  assert.deepEqual(out.cases, [{ caseId: 1001, values: { x: 1 } }, { caseId: 1002, values: { x: 2 } }]);
  assert.equal(out.truncated, true);
  assert.match(content[0].text, /… and 298 more \(300 in all\)/);
});
