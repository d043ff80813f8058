// The activity log's rows: one per request of one code, so a new code's request that reuses an id of the page's
// previous code gets its own row, with its own tool and arguments.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createUI } from "../../core/codap_relay/plugin/js/ui.js";

/** Just enough DOM for the activity log: elements with classes, children, text and a data set. */
class El {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.className = "";
    this.textContent = "";
    this.hidden = false;
    this.dataset = {};
  }
  set innerHTML(html) {
    this.children = [...html.matchAll(/class="([^"]+)"/g)].map((m) => {
      const el = new El("span");
      el.className = m[1];
      return el;
    });
  }
  prepend(el) {
    this.children.unshift(el);
  }
  append(el) {
    this.children.push(el);
  }
  addEventListener() {} // the replay dialog's keyboard guard; not exercised here
  querySelector(selector) {
    const cls = selector.slice(1);
    for (const child of this.children) {
      if (child.className === cls) return child;
      const inner = child.querySelector(selector);
      if (inner) return inner;
    }
    return null;
  }
}

function fakeDocument() {
  const byId = new Map([["log", new El("ol")], ["log-empty", new El("p")]]);
  return {
    log: byId.get("log"),
    getElementById: (id) => byId.get(id) ?? new El("div"),
    querySelectorAll: () => [],
    createElement: (tag) => new El(tag),
  };
}

function ui(doc) {
  const realInterval = globalThis.setInterval;
  globalThis.setInterval = () => 0; // the code's countdown; nothing to count here
  try {
    return createUI(/** @type {any} */ (doc));
  } finally {
    globalThis.setInterval = realInterval;
  }
}

const row = (li) => ({
  code: li.dataset.code,
  id: li.dataset.requestId,
  tool: li.querySelector(".entry-tool").textContent,
  args: li.querySelector(".entry-args").textContent,
  state: li.querySelector(".entry-state").textContent,
});

test("a request that reuses an id under a new code gets its own row, with its own tool", () => {
  const doc = fakeDocument();
  const view = ui(doc);
  view.activity({ code: "AAAA1111", id: "r1", tool: "get_codap_status", args: {}, status: "queued" });
  view.activity({ code: "AAAA1111", id: "r1", tool: "get_codap_status", args: {}, status: "done", body: { result: "ok" } });
  view.activity({ code: "BBBB2222", id: "r1", tool: "delete_codap_cases", args: { datasetName: "d" }, status: "queued" });
  const rows = doc.log.children.map(row);
  assert.equal(rows.length, 2);
  assert.deepEqual([rows[0].code, rows[0].tool], ["BBBB2222", "delete_codap_cases"]);
  assert.match(rows[0].args, /d/);
  assert.equal(rows[0].state, "queued");
  assert.deepEqual([rows[1].code, rows[1].tool, rows[1].state], ["AAAA1111", "get_codap_status", "done"]);
});

test("an update that names the tool refreshes the row's tool and arguments", () => {
  const doc = fakeDocument();
  const view = ui(doc);
  view.activity({ code: "AAAA1111", id: "r1", tool: "get_codap_status", args: {}, status: "queued" });
  view.activity({ code: "AAAA1111", id: "r1", tool: "create_codap_dataset", args: { datasetName: "x" }, status: "running" });
  const rows = doc.log.children.map(row);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].tool, "create_codap_dataset");
  assert.match(rows[0].args, /x/);
  view.activity({ code: "AAAA1111", id: "r1", status: "delivered" }); // no tool: the row keeps its own
  assert.equal(row(doc.log.children[0]).tool, "create_codap_dataset");
});
