// Start-up without storage and under the relay's limits: openStorage, Retry-After with jitter, and
// createSessionWhenAllowed (what the plugin does until it has a pairing code).
import assert from "node:assert/strict";
import { test } from "node:test";

import { limitMsFrom } from "../../core/codap_relay/plugin/js/page_url.js";
import { RelayClient, RelayHttpError, parseRetryAfter } from "../../core/codap_relay/plugin/js/relay.js";
import { createSessionWhenAllowed, retryAfterMs } from "../../core/codap_relay/plugin/js/retry.js";
import { MemoryStorage, PluginStore, openStorage } from "../../core/codap_relay/plugin/js/storage.js";

test("openStorage uses sessionStorage where it works and memory where the browser refuses it", () => {
  const real = new MemoryStorage();
  assert.deepEqual(openStorage({ sessionStorage: real }), { storage: real, persistent: true, reason: null });

  const blocked = {
    get sessionStorage() {
      throw new Error("Failed to read the 'sessionStorage' property from 'Window': Access is denied");
    },
  };
  const opened = openStorage(blocked);
  assert.equal(opened.persistent, false);
  assert.match(opened.reason, /Access is denied/);
  const store = new PluginStore(opened.storage, "http://relay");
  store.saveSession({ code: "ABCD2345", token: "t", ttl: 600 });
  assert.equal(store.loadSession().code, "ABCD2345"); // kept for the life of the page

  const full = { sessionStorage: { setItem() { throw new Error("QuotaExceededError"); }, removeItem() {} } };
  assert.equal(openStorage(full).persistent, false);
});

test("Retry-After is honoured: never earlier, with a jitter of at least 1 s and at most 15 s", () => {
  assert.equal(retryAfterMs(3, { random: () => 0 }), 3000);
  assert.equal(retryAfterMs(3, { random: () => 1 }), 4500);
  assert.equal(retryAfterMs(1, { random: () => 1 }), 2000); // a short wait still spreads over a second
  assert.equal(retryAfterMs(60, { random: () => 1 }), 75_000); // a long one by at most 15 s
  const spread = new Set(Array.from({ length: 50 }, () => retryAfterMs(10)));
  assert.ok(spread.size > 40, "pages refused together come back at different times");
  for (const ms of spread) assert.ok(ms >= 10_000 && ms <= 15_000, ms);
});

test("parseRetryAfter reads seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("7"), 7);
  assert.equal(parseRetryAfter(null), null);
  assert.equal(parseRetryAfter("soon"), null);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now), 30);
});

function reply(status, body, headers = {}) {
  return {
    ok: status >= 200 && status < 300,
    status,
    headers: { get: (name) => headers[name] ?? null },
    json: async () => body,
  };
}

test("a session over the limit waits for Retry-After, an unreachable relay with growing pauses, then pairs", async () => {
  const answers = [
    () => reply(429, { error: "rate_limited", message: "Too many" }, { "Retry-After": "4" }),
    () => {
      throw new TypeError("Failed to fetch");
    },
    () => reply(503, { error: "store_unavailable", message: "busy" }, { "Retry-After": "1" }),
    () => reply(201, { code: "ABCD2345", browserToken: "t", ttl: 600 }),
  ];
  const client = new RelayClient("http://relay", async () => answers.shift()());
  const waits = [];
  const slept = [];
  const created = await createSessionWhenAllowed(client, [], {
    onWait: ({ reason, ms }) => waits.push([reason, ms]),
    sleep: async (ms) => slept.push(ms),
    random: () => 0.5,
  });
  assert.equal(created.code, "ABCD2345");
  assert.deepEqual(waits, [
    ["busy", 5000], // 4 s + half of the 2 s spread
    ["unreachable", 2000], // the second attempt's backoff: 1 s * 2
    ["unavailable", 1500],
  ]);
  assert.deepEqual(slept, [5000, 2000, 1500]);
});

test("a refusal that waiting cannot fix is thrown at once", async () => {
  const client = new RelayClient("http://relay", async () => reply(400, { error: "invalid_manifest", message: "bad" }));
  const waits = [];
  await assert.rejects(
    createSessionWhenAllowed(client, [], { onWait: (w) => waits.push(w), sleep: async () => {} }),
    (err) => err instanceof RelayHttpError && err.status === 400,
  );
  assert.deepEqual(waits, []);
});

test("?relay= is used only for this page's own origin or a relay on this computer", async () => {
  const { relayBaseFrom } = await import("../../core/codap_relay/plugin/js/page_url.js");
  const at = (href) => relayBaseFrom(new URL(href));
  assert.equal(at("https://relay.example.org/v1/plugin/"), "https://relay.example.org/v1");
  assert.equal(at("https://relay.example.org/plugin/?relay=https://relay.example.org/v2/"), "https://relay.example.org/v2");
  assert.equal(at("https://relay.example.org/plugin/?relay=http://127.0.0.1:8080"), "http://127.0.0.1:8080");
  assert.equal(at("https://relay.example.org/plugin/?relay=http://localhost:9000/"), "http://localhost:9000");
  for (const stranger of ["https://evil.example", "https://relay.example.org.evil.example", "javascript:alert(1)", "not a url"]) {
    assert.throws(() => at(`https://relay.example.org/plugin/?relay=${encodeURIComponent(stranger)}`), /will not use it/);
  }
});

test("limitMsFrom reads a time limit in seconds from the URL, and keeps the default for anything else", () => {
  const params = new URLSearchParams("watchdog=3&calls=0.5&handshake=abc&zero=0&negative=-2&empty=");
  assert.equal(limitMsFrom(params, "watchdog", 45), 3000);
  assert.equal(limitMsFrom(params, "calls", 20), 500);
  for (const name of ["handshake", "zero", "negative", "empty", "absent"]) {
    assert.equal(limitMsFrom(params, name, 15), 15_000, name);
  }
});
