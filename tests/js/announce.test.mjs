// The screen reader's live region: one write per gap at most, a burst of calls summed up in one sentence, errors
// named. A fake clock and timer queue stand in for time.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Announcer } from "../../core/codap_relay/plugin/js/announce.js";

function clocked() {
  let now = 0;
  const timers = [];
  const writes = [];
  const announcer = new Announcer({
    write: (text) => writes.push({ at: now, text }),
    now: () => now,
    setTimer: (fn, ms) => timers.push({ at: now + ms, fn }),
  });
  /** Advance the clock to `to`, running the timers due on the way. */
  const until = (to) => {
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      if (!timers.length || timers[0].at > to) break;
      const timer = timers.shift();
      now = timer.at;
      timer.fn();
    }
    now = to;
  };
  return { announcer, writes, until };
}

test("one call is announced by name after a short settle", () => {
  const { announcer, writes, until } = clocked();
  announcer.call("create_codap_dataset");
  until(299);
  assert.deepEqual(writes, []);
  until(300);
  assert.deepEqual(writes, [{ at: 300, text: "create_codap_dataset done." }]);
});

test("a burst of ten calls over three seconds is two announcements, every call counted, the error named", () => {
  const { announcer, writes, until } = clocked();
  for (let i = 0; i < 10; i++) {
    until(i * 300);
    announcer.call("add_codap_cases", i === 4 ? 'no dataset named "x"\nmore' : null);
  }
  until(10_000);
  assert.equal(writes.length, 3);
  assert.deepEqual(
    writes.map((w) => w.at),
    [300, 2300, 4300],
  );
  assert.equal(writes[0].text, "add_codap_cases done.");
  assert.equal(writes[1].text, '7 calls finished: 6 done, 1 failed; first error: add_codap_cases: no dataset named "x".');
  assert.equal(writes[2].text, "2 calls finished: 2 done.");
  const counted = writes.reduce((n, w) => n + Number(w.text.match(/^(\d+) calls/)?.[1] ?? 1), 0);
  assert.equal(counted, 10);
});

test("messages come before the calls' summary, each once; a repeat of the last text still changes the region", () => {
  const { announcer, writes, until } = clocked();
  announcer.say("Pairing code: A B C D, E F G H.");
  announcer.say("Connected");
  announcer.say("Connected");
  announcer.call("get_codap_status", "CODAP did not answer");
  until(5000);
  assert.deepEqual(writes.map((w) => w.text), [
    "Pairing code: A B C D, E F G H. Connected. get_codap_status failed: CODAP did not answer.",
  ]);
  announcer.say("Connected");
  until(10_000);
  announcer.say("Connected");
  until(20_000);
  assert.deepEqual(writes.slice(1).map((w) => w.text), ["Connected.", "Connected.\u00a0"]);
});
