// The raw tool's policy (tools/policy.js): one list of rules, checked before anything reaches CODAP, for every
// spelling CODAP accepts; codap_api refuses with refused_by_policy and sends nothing; codap_api_help's reference.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { RULES, checkRequest, enforcePolicy, parseResource } from "../../core/codap_relay/plugin/js/tools/policy.js";
import { EXAMPLES, HELP, HELP_TOPICS, examplesText } from "../../core/codap_relay/plugin/js/tools/raw_help.js";
import { createRawTools } from "../../core/codap_relay/plugin/js/tools/raw.js";
import { createToolContext } from "../../core/codap_relay/plugin/js/tools/context.js";

const SELF = { id: 77, name: "codap-relay", title: "CODAP Relay" };
const rule = (request, self = SELF) => checkRequest(request, self)?.rule.id ?? null;

test("the resource is read as CODAP reads it: the last clause picks the handler, a later clause wins", () => {
  assert.deepEqual(parseResource("dataContext[a b].collection[c].attribute").clauses.map((c) => c.type), [
    "dataContext", "collection", "attribute"]);
  assert.equal(parseResource("component[1].component[2]").byType.component, "2");
  assert.equal(parseResource("dataContext[x].dataContextFromURL").type, "dataContextFromURL");
});

test("requests that load a URL, open a document or touch the plugin are refused, however they are spelled", () => {
  const refused = [
    [{ action: "create", resource: "component", values: { type: "webView", URL: "http://127.0.0.1/evil.html" } }, "safe_component_types"],
    [{ action: "create", resource: " Component ", values: { type: " WEBVIEW " } }, "safe_component_types"],
    [{ action: "CREATE", resource: "component", values: { type: "game", URL: "x" } }, "safe_component_types"],
    [{ action: "create", resource: "component", values: { type: "guideView", items: [] } }, "safe_component_types"],
    [{ action: "create", resource: "component", values: { type: "imageComponentView" } }, "safe_component_types"],
    [{ action: "create", resource: "component", values: { type: "plugin" } }, "safe_component_types"],
    [{ action: "create", resource: "component", values: {} }, "safe_component_types"],
    [{ action: "create", resource: "component", values: [{ type: "graph" }, { type: "webView" }] }, "safe_component_types"],
    [{ action: "create", resource: "component", values: { type: "text", text: '{"document":{"children":[{"type":"image","url":"http://x"}]}}' } }, "no_urls_in_components"],
    [{ action: "create", resource: "component", values: { type: "text", text: { document: { children: [{ type: "image", src: "http://x" }] } } } }, "no_urls_in_components"],
    [{ action: "update", resource: "component[12]", values: { URL: "http://x" } }, "no_urls_in_components"],
    [{ action: "update", resource: "component[12]", values: { currentGameUrl: "http://x" } }, "no_urls_in_components"],
    [{ action: "update", resource: "component[Map]", values: { geoRaster: { type: "png", url: "http://x" } } }, "no_urls_in_components"],
    [{ action: "update", resource: "component[12]", values: { items: [{ itemTitle: "a", Url: "http://x" }] } }, "no_urls_in_components"],
    [{ action: "create", resource: "dataContextFromURL", values: { URL: "http://x/a.csv" } }, "no_url_import"],
    [{ action: "create", resource: "DataContextFromUrl", values: { URL: "http://x/a.csv" } }, "no_url_import"],
    [{ action: "create", resource: "dataContext[d].dataContextFromURL", values: { URL: "x" } }, "no_url_import"],
    [{ action: "update", resource: "document", values: {} }, "no_document_change"],
    [{ action: "create", resource: "Document" }, "no_document_change"],
    [{ action: "delete", resource: "document" }, "no_document_change"],
    [{ action: "update", resource: "interactiveFrame", values: { dimensions: { width: 1, height: 1 } } }, "not_the_plugin"],
    [{ action: "notify", resource: "InteractiveFrame", values: { request: "startTour" } }, "not_the_plugin"],
    [{ action: "update", resource: "component[77]", values: { isVisible: false } }, "not_the_plugin"],
    [{ action: "update", resource: "component[ 77 ]", values: { position: { left: -5000, top: 0 } } }, "not_the_plugin"],
    [{ action: "update", resource: "component[WEBV77]", values: { dimensions: { width: 1, height: 1 } } }, "not_the_plugin"],
    [{ action: "delete", resource: "component[codap-relay]" }, "not_the_plugin"],
    [{ action: "update", resource: "component[cODAP rELAY]", values: { title: "x" } }, "not_the_plugin"],
    [{ action: "notify", resource: "component[1].component[77]", values: { request: "select" } }, "not_the_plugin"],
    [{ action: "update", resource: "dataContext[d].itemByID[1]", values: JSON.parse('{"__proto__": {"type": "webView"}}') }, "no_prototype_keys"],
    // A date scale over a slider's numbers (or any range under a day) freezes CODAP 3.1.0's page.
    [{ action: "update", resource: "component[5]", values: { scaleType: "date" } }, "date_slider_range"],
    [{ action: "update", resource: "component[Speed]", values: { scaleType: " Date ", lowerBound: 0, upperBound: 3600 } }, "date_slider_range"],
    [{ action: "create", resource: "component", values: { type: "slider", globalValueName: "g", scaleType: "date", lowerBound: 1e9 } }, "date_slider_range"],
    [{ action: "update", resource: "component[77 junk", values: {} }, "resource_form"],
    [{ action: "update", resource: "component [77]", values: {} }, "resource_form"],
    [{ action: "update", resource: "x;component[77]", values: {} }, "resource_form"],
    [{ action: "get" }, "resource_form"],
    [null, "resource_form"],
  ];
  for (const [request, id] of refused) assert.equal(rule(request), id, JSON.stringify(request));
});

test("the rest goes through: data, attributes, selection, safe components, other components, reading anything", () => {
  const allowed = [
    { action: "get", resource: "dataContextList" },
    { action: "get", resource: "interactiveFrame" },
    { action: "get", resource: "component[77]" },
    { action: "get", resource: "document" },
    { action: "create", resource: "dataContext[s].collection[s].attribute", values: [{ name: "url", formula: "a+b" }] },
    { action: "create", resource: "dataContext[s].item", values: [{ url: "http://not-loaded.example/", constructor: 1 }] },
    { action: "update", resource: "dataContext[s].itemByID[42]", values: { score: 90 } },
    { action: "create", resource: "dataContext[s].selectionList", values: [1, 2] },
    { action: "delete", resource: "dataContext[raw].itemSearch[x < 0]" },
    { action: "create", resource: "component", values: { type: "graph", dataContext: "s", xAttributeName: "a" } },
    { action: "create", resource: "component", values: { type: "text", text: "see https://example.org" } },
    { action: "create", resource: "component", values: { type: "slider", globalValueName: "g" } },
    { action: "update", resource: "component[5]", values: { scaleType: "date", lowerBound: 1704067200, upperBound: 1735689600 } },
    { action: "update", resource: "component[5]", values: { scaleType: "numeric" } },
    { action: "update", resource: "component[12]", values: { isVisible: false } },
    { action: "delete", resource: "component[Graph of s]" },
    { action: "notify", resource: "undoChangeNotice", values: { operation: "undoButtonPress" } },
  ];
  for (const request of allowed) assert.equal(rule(request), null, JSON.stringify(request));
});

test("one list: each rule is in codap_api's description and in codap_api_help's policy topic", () => {
  const defs = JSON.parse(readFileSync(new URL("../../core/codap_relay/plugin/js/tools/raw.json", import.meta.url), "utf8"));
  const api = defs.find((d) => d.name === "codap_api");
  const help = defs.find((d) => d.name === "codap_api_help");
  for (const r of RULES) {
    assert.ok(api.description.includes(`(${r.id}) ${r.rule}`), r.id);
    assert.ok(HELP.policy.includes(`${r.id}: ${r.rule} Instead: ${r.instead}`), r.id);
  }
  assert.deepEqual(help.inputSchema.properties.topic.enum, HELP_TOPICS);
  assert.equal(help.annotations.readOnlyHint, true);
  for (const topic of HELP_TOPICS) assert.ok(HELP[topic].length < 3000, `${topic}: ${HELP[topic].length} characters`);
});

/** codap_api over a fake CODAP that records every request and knows one plugin component. */
function raw({ frame = { success: true, values: { id: 77, name: "codap-relay", title: "CODAP Relay" } } } = {}) {
  const sent = [];
  const components = { 77: 77, "codap-relay": 77, "CODAP Relay": 77, WEBV77: 77, 12: 12, Scores: 12 };
  const answer = (r) => {
    if (r.resource === "interactiveFrame") return frame;
    const m = /^component\[(.*)\]$/.exec(r.resource);
    if (r.action === "get" && m) {
      const id = components[m[1]];
      return id ? { success: true, values: { id, type: id === 77 ? "game" : "graph" } } : { success: false, values: { error: "Component not found" } };
    }
    return { success: true, values: {} };
  };
  const call = async (request) => {
    sent.push(structuredClone(request));
    return Array.isArray(request) ? request.map(answer) : answer(request);
  };
  const tools = createRawTools(createToolContext({ call }));
  return { sent, tools, changes: () => sent.flat().filter((r) => r.action !== "get") };
}

test("codap_api refuses with refused_by_policy, naming the rule and what to use instead, and sends no change", async () => {
  const env = raw();
  const refusal = async (args) => {
    try {
      await env.tools.codap_api(args);
    } catch (err) {
      return err;
    }
    assert.fail("accepted");
  };
  const web = await refusal({ action: "create", resource: "component", values: { type: "webView", URL: "http://x" } });
  assert.equal(web.code, "refused_by_policy");
  assert.equal(web.data.rule, "safe_component_types");
  assert.match(web.message, /Nothing was sent to CODAP\. Instead: create_codap_graph/);
  assert.equal((await refusal({ action: "create", resource: "dataContextFromURL", values: { URL: "x" } })).data.instead, "import_codap_data");
  assert.deepEqual(env.sent, [], "statically refused requests ask CODAP nothing");
  // by title: CODAP says which component the name means
  const hide = await refusal({ action: "update", resource: "component[CODAP Relay]", values: { isVisible: false } });
  assert.equal(hide.data.rule, "not_the_plugin");
  // renamed by the person: only CODAP's answer can tell
  const env2 = raw({ frame: { success: true, values: { id: 77, name: "other", title: "Renamed" } } });
  await assert.rejects(env2.tools.codap_api({ action: "update", resource: "component[codap-relay]", values: { isVisible: false } }),
    (err) => err.code === "refused_by_policy" && /plugin's own component \(id 77\)/.test(err.message));
  assert.deepEqual(env2.changes(), []);
  assert.deepEqual(env2.sent[0].map((r) => r.resource), ["interactiveFrame", "component[codap-relay]"], "one message");
  // other components change
  await env2.tools.codap_api({ action: "update", resource: "component[Scores]", values: { isVisible: false } });
  assert.deepEqual(env2.changes().map((r) => r.resource), ["component[Scores]"]);
  assert.equal(env2.sent.filter((m) => JSON.stringify(m).includes("interactiveFrame")).length, 1, "the id is read once");
  // unknown plugin id: no named component changes
  const blind = raw({ frame: { success: false, values: { error: "no frame" } } });
  await assert.rejects(blind.tools.codap_api({ action: "delete", resource: "component[Scores]" }), /cannot tell which component is its own/);
  assert.deepEqual(blind.changes(), []);
});

test("enforcePolicy checks each request of an array, before any is sent", async () => {
  let asked = 0;
  const resolve = async (probes) => {
    asked += 1;
    return { self: SELF, replies: probes.map(() => ({ success: true, values: { id: 1 } })) };
  };
  await assert.rejects(enforcePolicy([{ action: "get", resource: "componentList" }, { action: "update", resource: "document" }], { resolve }),
    (err) => err.data.rule === "no_document_change");
  assert.equal(asked, 0);
  await enforcePolicy([{ action: "update", resource: "component[5]", values: { title: "t" } }], { resolve });
  assert.equal(asked, 1);
});

test("codap_api_help answers each topic without asking CODAP, and names the topics for an unknown one", async () => {
  const env = raw();
  const policy = await env.tools.codap_api_help({ topic: "policy" });
  assert.match(policy.content[0].text, /not_the_plugin/);
  assert.equal((await env.tools.codap_api_help({})).structuredContent.topic, "overview");
  await assert.rejects(env.tools.codap_api_help({ topic: "nope" }), (err) => err.data.available.includes("graphs"));
  assert.deepEqual(env.sent, []);
});

test("codap_api_help's examples are in its text and its structured answer, and the policy lets them through", async () => {
  const env = raw();
  for (const topic of HELP_TOPICS) {
    const examples = EXAMPLES[topic];
    const answer = await env.tools.codap_api_help({ topic });
    assert.deepEqual(answer.structuredContent.examples, examples.map((e) => e.request), topic);
    assert.ok(answer.content[0].text.endsWith(examplesText(examples)), topic);
    for (const { request } of examples) {
      assert.ok(HELP[topic].includes(`resource:${JSON.stringify(request.resource)}`), `${topic}: ${request.resource}`);
      // not refused (a text's value is rebuilt as rich text, as for any text)
      const resolve = async (probes) => ({ self: SELF, replies: probes.map(() => ({ success: true, values: { id: 2 } })) });
      const { requests } = await enforcePolicy(request, { resolve });
      assert.equal(requests.resource, request.resource, `${topic}: ${request.resource}`);
    }
  }
  assert.ok(examplesText(EXAMPLES.overview).includes('{action:"get", resource:"dataContextList"} -> [{name, title, id}]'));
});
