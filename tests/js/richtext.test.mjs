// A text's value rebuilt from the rich-text allow-list (tools/richtext.js) and the policy around it: what a text box
// needs is kept, attrs, styles, images, unknown nodes and non-http links are dropped and named, a value too deep
// or too large is refused; codap_api and create_codap_text send only the rebuilt value.

import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_TEXT_CHARS, MAX_TEXT_DEPTH, rebuildText } from "../../core/codap_relay/plugin/js/tools/richtext.js";
import { MAX_JSON_CHARS, checkRequest, rebuildTexts, reviewRequest } from "../../core/codap_relay/plugin/js/tools/policy.js";
import { createComponentTools } from "../../core/codap_relay/plugin/js/tools/components.js";
import { createRawTools } from "../../core/codap_relay/plugin/js/tools/raw.js";
import { createToolContext } from "../../core/codap_relay/plugin/js/tools/context.js";

const OVERLAY = "position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;background:white";
const doc = (...children) => ({ document: { children } });
const p = (...children) => ({ type: "paragraph", children });

test("what a text box needs is kept as CODAP renders it: blocks, quotes, lists, http(s) links, the toolbar's marks", () => {
  const given = doc(
    { type: "heading1", align: "center", children: [{ text: "Title", bold: true }] },
    p({ text: "a " }, { text: "b", italic: true, underlined: true, code: true }, { type: "link", href: "https://example.org/x", children: [{ text: "link" }] }),
    { type: "bulleted-list", children: [{ type: "list-item", children: [{ text: "one" }] }, p({ text: "two" })] },
    { type: "block-quote", children: [{ text: "x", deleted: true }, { text: "2", superscript: true }, { text: "3", subscript: true }, { text: "red", color: "#d62728" }] },
  );
  const { value, dropped } = rebuildText(given);
  assert.deepEqual(value, doc(
    { type: "heading1", align: "center", children: [{ text: "Title", bold: true }] },
    p({ text: "a " }, { text: "b", italic: true, underlined: true, code: true }, { type: "link", href: "https://example.org/x", children: [{ text: "link" }] }),
    { type: "bulleted-list", children: [{ type: "list-item", children: [{ text: "one" }] }, { type: "list-item", children: [{ text: "two" }] }] },
    { type: "block-quote", children: [{ text: "x", deleted: true }, { text: "2", superscript: true }, { text: "3", subscript: true }, { text: "red", color: "#d62728" }] },
  ));
  assert.deepEqual(dropped, []);
  assert.deepEqual(rebuildText("line 1\nline 2").value, doc(p({ text: "line 1" }), p({ text: "line 2" })));
  assert.deepEqual(rebuildText("42").value, doc(p({ text: "42" })), "a string that parses to no object stays text");
  const link = { type: "link", href: "http://a.example/", children: [{ text: "a" }] };
  assert.deepEqual(rebuildText(doc(link, { text: "b" })).value, doc(p(link), p({ text: "b" })), "inline content at the top gets a paragraph");
});

test("attrs, styles, images, unknown nodes, colours that are not hex and non-http links are dropped, and named", () => {
  const given = doc(
    { type: "paragraph", attrs: { style: OVERLAY }, children: [{ text: "Sign in again", color: "red;background:url(http://127.0.0.1:9/a.png)", style: "x" }] },
    { type: "image", src: "http://127.0.0.1:9/a.png", children: [{ text: "" }] },
    p({ type: "image", url: "http://127.0.0.1:9/b.png", children: [{ text: "" }] }, { type: "link", href: "javascript:alert(1)", children: [{ text: "click" }] }),
    { type: "pull-quote", children: [{ text: "quoted" }] },
    { type: "paragraph", align: "left;background:url(http://x)", children: [{ text: "x" }] },
  );
  const { value, dropped } = rebuildText(given);
  assert.deepEqual(value, doc(p({ text: "Sign in again" }), p({ text: "click" }), p({ text: "quoted" }), p({ text: "x" })));
  assert.deepEqual(dropped.sort(), [
    "a color mark that is not a hex colour (#rrggbb)",
    "an align that is not left, center, right or justify",
    "attrs (HTML attributes)",
    "images ×2",
    "links that are not http or https (their text kept)",
    'nodes of type "pull-quote" (their text kept)',
    "styles",
  ]);
  // the same as a JSON string (CODAP would parse it as rich text)
  assert.deepEqual(rebuildText(JSON.stringify(given)).value, value);
});

test("a value too deep or too large is refused with a clear error, never passed through", () => {
  let deep = { text: "x" };
  for (let i = 0; i < 45; i++) deep = { type: i === 0 ? "image" : "paragraph", children: [deep] };
  for (const value of [doc(deep), JSON.stringify(doc(deep))]) {
    assert.throws(() => rebuildText(value), (err) => err.code === "text_refused" && err.message.includes(`deeper than ${MAX_TEXT_DEPTH} levels`));
  }
  assert.throws(() => rebuildText("x".repeat(MAX_TEXT_CHARS + 1)), (err) => err.code === "text_refused" && /characters long/.test(err.message));
  assert.throws(() => rebuildText({ document: {} }), (err) => err.code === "text_refused");
  assert.throws(() => rebuildText(7), (err) => err.code === "text_refused");
});

test("the policy: values past 40 levels and JSON strings of 1 MB are not clean; styles and image nodes are refused", () => {
  let deep = { type: "image", url: "http://127.0.0.1:9/deep.png" };
  for (let i = 0; i < 45; i++) deep = { children: [deep] };
  assert.equal(checkRequest({ action: "update", resource: "component[12]", values: { other: deep } })?.rule.id, "bounded_values");
  assert.equal(checkRequest({ action: "update", resource: "dataContext[d].itemByID[1]", values: { a: deep } })?.rule.id, "bounded_values");
  const big = JSON.stringify({ pad: "x".repeat(MAX_JSON_CHARS), src: "http://127.0.0.1:9/big.png" });
  assert.equal(checkRequest({ action: "update", resource: "component[12]", values: { title: big } })?.rule.id, "bounded_values");
  const bad = [{ attrs: { style: OVERLAY } }, { style: OVERLAY }, { items: [{ type: "Image", children: [] }] }, { x: JSON.stringify({ srcset: "a" }) }];
  for (const values of bad) {
    assert.equal(checkRequest({ action: "update", resource: "component[12]", values })?.rule.id, "no_urls_in_components", JSON.stringify(values));
  }
  // a text's value is rebuilt first: the overlay and the image go, the link stays
  const text = doc({ type: "paragraph", attrs: { style: OVERLAY }, children: [{ type: "link", href: "http://a.example/", children: [{ text: "a" }] }] });
  const reviewed = reviewRequest({ action: "create", resource: "component", values: { type: "text", text } });
  assert.equal(reviewed.refusal, undefined);
  assert.deepEqual(reviewed.request.values.text, doc(p({ type: "link", href: "http://a.example/", children: [{ text: "a" }] })));
  assert.deepEqual(reviewed.dropped, ["attrs (HTML attributes)"]);
  const deepText = reviewRequest({ action: "update", resource: "component[12]", values: { text: doc(deep) } });
  assert.equal(deepText.refusal.rule.id, "bounded_values");
  assert.deepEqual(rebuildTexts({ action: "get", resource: "component[12]" }).dropped, []);
});

/** A fake CODAP answering every request, recording what it was sent. */
function codap() {
  const sent = [];
  const answer = (r) => {
    if (r.resource === "interactiveFrame") return { success: true, values: { id: 77, name: "codap-relay", title: "CODAP Relay" } };
    if (r.action === "create") return { success: true, values: { id: 5 } };
    if (r.action === "get" && r.resource === "component[5]") return { success: true, values: { id: 5, type: "text", text: sent.find((s) => s.action === "create")?.values.text } };
    if (r.action === "get") return { success: true, values: { id: 12, type: "text" } };
    return { success: true, values: {} };
  };
  const call = async (request) => {
    const list = Array.isArray(request) ? request : [request];
    sent.push(...structuredClone(list));
    return Array.isArray(request) ? list.map(answer) : answer(request);
  };
  return { sent, ctx: createToolContext({ call }) };
}

test("codap_api sends the rebuilt text and says what it left out; create_codap_text sends paragraphs, never a string", async () => {
  const raw = codap();
  const tools = createRawTools(raw.ctx);
  const text = JSON.stringify(doc({ type: "paragraph", attrs: { style: OVERLAY }, children: [{ text: "hi" }] }));
  const result = await tools.codap_api({ action: "create", resource: "component", values: { type: "text", text } });
  const created = raw.sent.find((r) => r.action === "create");
  assert.deepEqual(created.values, { type: "text", text: doc(p({ text: "hi" })) });
  assert.match(result.content[0].text, /left out: attrs \(HTML attributes\)\./);
  assert.deepEqual(result.structuredContent.dropped, ["attrs (HTML attributes)"]);

  const made = codap();
  const components = createComponentTools(made.ctx);
  const json = '{"document":{"children":[{"type":"image","url":"http://127.0.0.1:9/x.png","children":[{"text":""}]}]}}';
  const answer = await components.create_codap_text({ text: `${json}\nsecond` });
  const sentText = made.sent.find((r) => r.action === "create").values.text;
  assert.deepEqual(sentText, doc(p({ text: json }), p({ text: "second" })));
  assert.equal(answer.structuredContent.text, `${json}\nsecond`);
});
