import assert from "node:assert/strict";
import { test } from "node:test";

import { displayCode, firstLine, formatDuration, formatTimeLeft, summarizeArgs } from "../../core/codap_relay/plugin/js/format.js";
import { nameProblem } from "../../core/codap_relay/plugin/js/names.js";
import { claudeDesktopConfig, httpPrompt, mcpUrl } from "../../core/codap_relay/plugin/js/snippets.js";

test("summarizeArgs says what each tool was asked", () => {
  assert.equal(
    summarizeArgs("create_codap_dataset", { datasetName: "s", dataType: "sample_students", recordCount: 1 }),
    "s · sample_students · 1 record",
  );
  assert.equal(
    summarizeArgs("create_codap_dataset", { datasetName: "c", dataType: "custom", recordCount: 9, customData: [{}, {}] }),
    "c · custom · 2 records",
  );
  assert.equal(summarizeArgs("add_codap_cases", { datasetName: "s", cases: [{}, {}, {}] }), "s · 3 cases");
  assert.equal(
    summarizeArgs("create_codap_graph", { datasetName: "s", graphType: "scatterplot", xAttribute: "a", yAttribute: "b" }),
    "scatterplot of s: x=a, y=b",
  );
  assert.equal(
    summarizeArgs("create_codap_graph", { datasetName: "s", graphType: "bar_chart", xAttribute: "a", includeImage: true }),
    "bar_chart of s: x=a + picture",
  );
  assert.equal(summarizeArgs("get_codap_graph_image", { graph: "Scores", maxSize: 400 }), "graph Scores · at most 400 px");
  assert.equal(summarizeArgs("get_codap_graph_image", {}), "the only graph");
  assert.equal(firstLine({ result: { content: [{ type: "text", text: "Made it.\nDetails" }] } }), "Made it.");
  assert.equal(firstLine({ error: { message: "CODAP refused" } }), "CODAP refused");
  assert.equal(firstLine({ result: { n: 1 } }), '{"n":1}');
  assert.equal(firstLine(null), null);
  assert.equal(summarizeArgs("get_codap_status", { includeDatasets: false }), "components");
  assert.equal(summarizeArgs("export_codap_data", { datasetName: "s", format: "csv", includeMetadata: true }), "s as csv + metadata");
  assert.equal(summarizeArgs("codap_api", { action: "get", resource: "componentList" }), "get componentList");
  assert.equal(summarizeArgs("other_tool", {}), "no arguments");
  const long = summarizeArgs("other_tool", { text: "x".repeat(500) });
  assert.ok(long.length <= 90 && long.endsWith("…"));
});

test("durations and time left", () => {
  assert.equal(formatDuration(42.4), "42 ms");
  assert.equal(formatDuration(1234), "1.2 s");
  assert.equal(formatDuration(125_000), "2 min 5 s");
  assert.equal(formatTimeLeft(545), "9:05");
  assert.equal(formatTimeLeft(3725), "1:02:05");
  assert.equal(formatTimeLeft(0), "expired");
  assert.equal(formatTimeLeft(-3), "expired");
});

test("displayCode groups an 8-character code", () => {
  assert.equal(displayCode("ABCDEFGH"), "ABCD-EFGH");
  assert.equal(displayCode("ABC"), "ABC");
});

test("any non-empty name is accepted (the tools address datasets by id); blank or overlong ones are not", () => {
  assert.equal(nameProblem("Dataset", "my data.v2 (2024)"), null);
  assert.equal(nameProblem("Dataset", "a]b [c]"), null);
  assert.match(nameProblem("Dataset", "  "), /non-empty/);
  assert.match(nameProblem("Attribute", "x".repeat(201)), /longer than 200/);
});

test("snippets carry the code and the relay URL", () => {
  assert.equal(mcpUrl("https://r.example", "ABCDEFGH"), "https://r.example/mcp/ABCDEFGH");
  const config = JSON.parse(claudeDesktopConfig("https://r.example", "ABCDEFGH"));
  assert.deepEqual(config.mcpServers.codap.args.at(-1), "https://r.example/mcp/ABCDEFGH");
  const prompt = httpPrompt("https://r.example", "ABCDEFGH");
  assert.match(prompt, /llms\.txt\?code=ABCDEFGH/);
  assert.match(prompt, /POST https:\/\/r\.example\/request/);
});

test("a typed tool's arguments read in the log: shared ones in words, a URL by its host only", async () => {
  const { summarizeArgs: sum } = await import("../../core/codap_relay/plugin/js/format.js");
  assert.equal(
    sum("update_codap_cases", { datasetName: "plants", where: "height > 3", values: { ok: true } }),
    'plants · where height > 3 · values={"ok":true}',
  );
  assert.equal(sum("import_codap_data", { datasetName: "t", url: "https://data.example.org/a.csv?key=secret" }),
    "t · from data.example.org");
  assert.equal(sum("undo_codap", {}), "no arguments");
  assert.equal(sum("select_codap_cases", { datasetName: "p", caseIds: [1, 2], mode: "extend" }), "p · 2 case ids · mode=extend");
});
