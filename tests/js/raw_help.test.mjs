// codap_api_help shows only what is tried: every request form and every value key its text shows (before "->")
// is among the topic's examples, which a real-CODAP test sends through codap_api and reads back
// (tests/e2e/test_raw_policy.py). Keys the text names as ignored ("Not: …") need no example.
import assert from "node:assert/strict";
import test from "node:test";

import { EXAMPLES, TEXT } from "../../core/codap_relay/plugin/js/tools/raw_help.js";

/** Continuation lines (indented) joined to the line they continue; "Not: …" sentences and quoted text dropped. */
function statements(text) {
  const lines = [];
  for (const line of text.split("\n")) {
    if (/^\s/.test(line) && lines.length) lines[lines.length - 1] += ` ${line.trim()}`;
    else lines.push(line);
  }
  return lines.map((l) => l.replace(/Not: [^.]*\./g, "").replace(/"[^"]*"/g, '""').replace(/`[^`]*`/g, ""));
}

/** Removes each `-> {…}` or `-> […]` (what a request returns), braces balanced. */
function withoutReturns(line) {
  let out = "";
  for (let i = 0; i < line.length; i++) {
    const arrow = line.startsWith("->", i);
    if (!arrow) {
      out += line[i];
      continue;
    }
    let j = i + 2;
    while (line[j] === " ") j++;
    if (line[j] !== "{" && line[j] !== "[") continue;
    let depth = 0;
    for (; j < line.length; j++) {
      if ("{[".includes(line[j])) depth++;
      if ("}]".includes(line[j])) depth--;
      if (depth === 0) break;
    }
    i = j;
  }
  return out;
}

/** The value keys a statement shows inside braces: `{name, title?, parent?: x}`. */
function keysOf(line) {
  const keys = new Set();
  let depth = 0;
  let inside = "";
  for (const ch of line) {
    if (ch === "{") depth++;
    if (depth > 0) inside += ch;
    if (ch === "}") depth = Math.max(0, depth - 1);
    if (depth === 0 && inside) {
      for (const m of inside.matchAll(/(?:[{,]\s*)([A-Za-z_]\w*)\??(?=\s*[:,}?])/g)) keys.add(m[1]);
      for (const m of inside.matchAll(/([A-Za-z_]\w*)\?/g)) keys.add(m[1]);
      inside = "";
    }
  }
  return keys;
}

const REQUEST = /\b(get|create|update|delete|notify) ((?:[A-Za-z]+(?:\[[^\]]*\])?)(?:\.[A-Za-z]+(?:\[[^\]]*\])?)*)/g;
const shape = (resource) => resource.replace(/\[[^\]]*\]/g, "[]");

/** Every key at any depth of an example's values. */
function exampleKeys(value, into = new Set()) {
  if (Array.isArray(value)) value.forEach((v) => exampleKeys(v, into));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      exampleKeys(v, into);
    }
  }
  return into;
}

// Keys standing for a dataset's own attribute names, and ids CODAP gives at run time (the e2e test sends those
// requests with real ids: test_raw_policy.py).
const PLACEHOLDERS = new Set(["attr", "id", "values"]);

test("every request form and every value key a topic shows is among the examples", () => {
  const all = Object.values(EXAMPLES).flat();
  const forms = new Set(all.map((e) => `${e.request.action} ${shape(e.request.resource)}`));
  const keys = new Set(["action", "resource", "values"]); // the request itself
  for (const e of all) exampleKeys(e.request.values, keys);
  for (const [topic, text] of Object.entries(TEXT)) {
    if (topic === "policy") continue;
    for (const line of statements(text)) {
      const shown = withoutReturns(line);
      for (const [, action, resource] of shown.matchAll(REQUEST)) {
        assert.ok(forms.has(`${action} ${shape(resource)}`), `${topic}: "${action} ${resource}" has no example`);
      }
      for (const key of keysOf(shown)) {
        assert.ok(keys.has(key) || PLACEHOLDERS.has(key), `${topic}: the value "${key}" (${line.slice(0, 60)}…) has no example`);
      }
    }
  }
});

test("the shape reader finds requests and keys, not returns", () => {
  const line = withoutReturns("create dataContext values {name, title?, x?: {y}} -> {name, id}. get globalList -> [{a, b}]");
  assert.deepEqual([...keysOf(line)].sort(), ["name", "title", "x", "y"]);
  assert.deepEqual([...line.matchAll(REQUEST)].map((m) => m[1] + " " + m[2]), ["create dataContext", "get globalList"]);
});
