// The consent question (apps.js): Allow needs the two-digit number the consent page shows where the person is
// connecting the app; a number that is not the page's is said at once, and three of them answer Deny by itself;
// the focus goes to the question, never to Allow; what the relay can prove of the app is said.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import { ConnectedApps } from "../../core/codap_relay/plugin/js/apps.js";

/** Just enough DOM for the question: elements by id, with text, value, hidden, focus and handlers. */
function fakeDoc() {
  const els = new Map();
  const doc = {
    focused: null,
    getElementById(id) {
      if (!els.has(id)) {
        els.set(id, {
          id,
          textContent: "",
          value: "",
          hidden: id === "consent" || id === "consent-error",
          focus() {
            doc.focused = id;
          },
          select() {},
        });
      }
      return els.get(id);
    },
  };
  return doc;
}

function question(number = "47", extra = {}) {
  const salt = "0123456789abcdef";
  const check = createHash("sha256").update(`${salt}:${number}`).digest("hex");
  return { app: "Claude", verified: null, redirect: "claude.ai", loopback: false, salt, check, ...extra };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const doc = fakeDoc();
  const said = [];
  const apps = new ConnectedApps({ doc, list: null, disconnect: async () => {}, announce: (t) => said.push(t) });
  const $ = (id) => doc.getElementById(id);
  return { doc, apps, said, $ };
}

test("the question takes the focus itself, says the app is unverified, and Allow without the number does nothing", async () => {
  const { doc, apps, said, $ } = setup();
  let answer = null;
  apps.ask(question()).then((a) => (answer = a));
  await flush();
  assert.equal($("consent").hidden, false);
  assert.equal(doc.focused, "consent-title", "never Allow: a key meant for something else must answer nothing");
  assert.match($("consent-proof").textContent, /^Unverified: /);
  assert.equal($("consent-where").textContent, "It returns to claude.ai.");
  assert.match(said.at(-1), /Claude asks to use this CODAP\. To allow it, type the number/);
  await $("consent-allow").onclick();
  assert.equal(answer, null);
  assert.equal($("consent-error").hidden, false);
  assert.match($("consent-error").textContent, /two-digit number shown on the page where you are connecting Claude/);
  assert.equal(doc.focused, "consent-number");
});

test("a number that is not the page's is said in place; the right one allows, carrying it", async () => {
  const { apps, $ } = setup();
  let answer = null;
  apps.ask(question("47")).then((a) => (answer = a));
  await flush();
  $("consent-number").value = "12";
  await $("consent-allow").onclick();
  assert.equal(answer, null);
  assert.match($("consent-error").textContent, /^12 is not the number on the page .* \(2 tries left\)/);
  $("consent-number").value = " 47 ";
  await $("consent-allow").onclick();
  await flush();
  assert.deepEqual(answer, { allow: true, number: "47" });
  assert.equal($("consent").hidden, true);
});

test("three numbers that are not the page's answer Deny by themselves; Enter in the field is Allow", async () => {
  const { apps, $ } = setup();
  let answer = null;
  apps.ask(question("47")).then((a) => (answer = a));
  await flush();
  for (const guess of ["11", "22", "33"]) {
    $("consent-number").value = guess;
    let prevented = false;
    await $("consent-number").onkeydown({ key: "Enter", preventDefault: () => (prevented = true) });
    await flush();
    assert.equal(prevented, true);
  }
  assert.deepEqual(answer, { allow: false, reason: "number" });
  assert.equal($("consent").hidden, true);
});

test("Deny answers at once; a second question waits for the first; a document's host is said as verified", async () => {
  const { apps, $ } = setup();
  const answers = [];
  apps.ask(question()).then((a) => answers.push(a));
  apps.ask(question("55", { app: "Cursor", verified: "cursor.com", redirect: "127.0.0.1", loopback: true })).then((a) => answers.push(a));
  await flush();
  assert.equal($("consent-app").textContent, "Claude");
  $("consent-deny").onclick();
  await flush();
  await flush();
  assert.deepEqual(answers, [{ allow: false }]);
  assert.equal($("consent-app").textContent, "Cursor");
  assert.equal($("consent-proof").textContent, "Verified: its registration is published at cursor.com.");
  assert.match($("consent-where").textContent, /a program on this computer \(127\.0\.0\.1\): any program here could be it/);
  $("consent-number").value = "55";
  await $("consent-allow").onclick();
  await flush();
  assert.deepEqual(answers, [{ allow: false }, { allow: true, number: "55" }]);
});
