// @ts-check
// Slow CODAP, said out loud. CODAP answers the plugin on its page's one thread; where that page draws its WebGL
// graphs in software (a computer without a GPU, or with the browser's hardware acceleration off), each new graph
// blocks it for seconds, often tens, and every request waits, whatever it asks (docs/plugin.md, "When CODAP is
// slow"). The person sees a note while a message waits past SLOW_CODAP_MS; the model reads in the tool's answer
// how long CODAP took, why, and what fixes it; a timeout names the tool and the CODAP request it waited for.
// Where CODAP and the plugin come from one site (CODAP served by the relay), the browser runs both on one thread:
// CODAP's drawing then stops the plugin too, which cannot say anything until it ends. BlockWatch notices such a
// stop afterwards (a timer that fires late), so the note and the answer still say what happened.

import { SLOW_CODAP_MS } from "./codap.js";
import { ToolError } from "./errors.js";

export const SLOW_CAUSE =
  "CODAP answers on one thread, and a graph drawn with WebGL on a computer without graphics acceleration (a " +
  "virtual machine, a remote desktop, or hardware acceleration turned off in the browser) keeps it busy for " +
  "seconds.";
// CODAP 3.1.0's own words: its Settings menu's item reads "Graphics Acceleration: Turn off" while it is on.
export const SLOW_FIX =
  "Fix: in CODAP's Settings menu choose \"Graphics Acceleration: Turn off\" (CODAP's disable graphics " +
  "acceleration setting), or turn on hardware acceleration in the browser's settings.";
// While CODAP's tab is hidden, the browser slows the page's timers, and CODAP takes each plugin message in a timer
// of its own (a setTimeout(0) queue): Firefox runs such a timer a second later at the soonest in a background tab.
// That, not drawing, is then why CODAP is slow.
export const HIDDEN_CAUSE =
  "CODAP's tab is in the background, where the browser slows the page's timers, and CODAP takes each of this " +
  "plugin's messages in a timer of its own (Firefox runs it a second later at the soonest).";
export const HIDDEN_FIX = "Fix: bring CODAP's browser tab to the front (or restore its window) while the model works.";
/** Where the wait is reported in a result's `_meta` (MCP's field for data beside the tool's own). */
export const WAIT_META = "codap-relay/codap-wait";

/** @param {number} ms */
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** A stop of the page this long or more is not CODAP drawing but a computer asleep or a tab set aside: ignored. */
const MAX_BLOCK_MS = 5 * 60_000;
/** A stop that ended this shortly before a tool started held that tool's request back. */
const BLOCK_CARRY_MS = 2000;
/** How long the person's note about a stop that is over stays. */
export const BLOCK_NOTE_MS = 30_000;

/**
 * Notices when this page's thread was stopped (a timer firing late by SLOW_CODAP_MS or more) while the page was
 * visible: a hidden tab's timers are slowed down on purpose, and say nothing about CODAP.
 */
export class BlockWatch {
  constructor({
    win = /** @type {any} */ (globalThis),
    now = () => Date.now(),
    everyMs = 250,
    slowMs = SLOW_CODAP_MS,
    onBlock = /** @type {(block: {blockedMs: number}) => void} */ (() => {}),
  } = {}) {
    this.win = win;
    this.now = now;
    this.everyMs = everyMs;
    this.slowMs = slowMs;
    this.onBlock = onBlock;
    this.blockedMs = 0; // since the last take()
    this.endedAt = 0;
    this.last = 0;
    this.wasHidden = false;
  }

  start() {
    this.last = this.now();
    this.win.document?.addEventListener?.("visibilitychange", () => (this.wasHidden = true));
    this.win.setInterval(() => this._tick(), this.everyMs);
  }

  _tick() {
    const t = this.now();
    const late = t - this.last - this.everyMs;
    this.last = t;
    const hidden = this.wasHidden || this.win.document?.visibilityState === "hidden";
    this.wasHidden = false;
    if (hidden || late < this.slowMs || late > MAX_BLOCK_MS) return;
    this.blockedMs += late;
    this.endedAt = t;
    this.onBlock({ blockedMs: late });
  }

  /** The stops since the last take: their total and when the last ended (0: none). */
  take() {
    const taken = { blockedMs: this.blockedMs, endedAt: this.endedAt };
    this.blockedMs = 0;
    this.endedAt = 0;
    return taken;
  }
}

/**
 * The plugin's status while a message waits: what it waits for, how long so far, the likely cause and the fix.
 * @param {{request: string, waitedMs: number}} slow
 * @param {boolean} [hidden] CODAP's tab is hidden: that is the cause
 */
export function slowStatusText({ request, waitedMs }, hidden = false) {
  const [cause, fix] = hidden ? [HIDDEN_CAUSE, HIDDEN_FIX] : [SLOW_CAUSE, SLOW_FIX];
  return `CODAP is slow to answer (waiting ${seconds(waitedMs)} for "${request}"). ${cause} ${fix}`;
}

/**
 * The plugin's status after its page was stopped (it could show nothing meanwhile).
 * @param {{blockedMs: number}} block
 */
export function blockedStatusText({ blockedMs }) {
  return `CODAP was slow to answer: its page, and this plugin with it, was busy for ${seconds(blockedMs)} just now. ` +
    `${SLOW_CAUSE} ${SLOW_FIX}`;
}

/**
 * The person's notes: while a message is slow (the phone's onSlow), and for BLOCK_NOTE_MS after a stop of the page
 * (BlockWatch's onBlock). ``show(text | null)`` is the UI's; a stop's note goes only if no slow message is left.
 * @param {object} io
 * @param {(text: string | null) => void} io.show
 * @param {() => number} io.slowPending how many messages are past the slow mark (CodapPhone.slowPending)
 * @param {(fn: () => void, ms: number) => unknown} [io.setTimer]
 * @param {() => boolean} [io.hidden] whether CODAP's tab is hidden now
 */
export function slowNotes({ show, slowPending, setTimer = (fn, ms) => setTimeout(fn, ms), hidden = () => false }) {
  let blocks = 0;
  return {
    /** @param {{request: string, waitedMs: number} | null} slow */
    onSlow: (slow) => show(slow && slowStatusText(slow, hidden())),
    /** @param {{blockedMs: number}} block */
    onBlock: (block) => {
      const mine = ++blocks;
      show(blockedStatusText(block));
      setTimer(() => mine === blocks && slowPending() === 0 && show(null), BLOCK_NOTE_MS);
    },
  };
}

/**
 * Each tool, reporting CODAP's share of its time when CODAP was slow: a line in its text and `_meta[WAIT_META]`
 * ({codapMs, messages, slowestMs, slowestRequest, blockedMs, cause, fix}); a CODAP timeout names the tool as well.
 * `blockedMs`: how long the page was stopped while the tool ran or just before it started (which held its
 * request back). `hidden()` says whether CODAP's tab is hidden: a call that started or ended so gives that cause.
 * @param {Record<string, import("./types.js").Tool>} tools
 * @param {{takeWaits: () => {messages: number, totalMs: number, slowestMs: number, slowest: string}}} phone
 * @param {{slowMs?: number, blocks?: {take: () => {blockedMs: number, endedAt: number}}, now?: () => number,
 *   hidden?: () => boolean}} [options]
 */
export function withCodapWaits(tools, phone, { slowMs = SLOW_CODAP_MS, blocks = undefined, now = () => Date.now(), hidden = () => false } = {}) {
  /** @type {Record<string, import("./types.js").Tool>} */
  const wrapped = {};
  for (const [name, fn] of Object.entries(tools)) {
    wrapped[name] = async (args, call) => {
      phone.takeWaits(); // one tool runs at a time: what came before is not this tool's
      const before = blocks?.take();
      const carried = before && now() - before.endedAt <= BLOCK_CARRY_MS ? before.blockedMs : 0;
      const hiddenAtStart = hidden();
      const why = () => (hiddenAtStart || hidden() ? [HIDDEN_CAUSE, HIDDEN_FIX] : [SLOW_CAUSE, SLOW_FIX]);
      let result;
      try {
        result = await fn(args, call);
      } catch (err) {
        phone.takeWaits();
        blocks?.take();
        if (!(err instanceof ToolError && err.code === "codap_timeout")) throw err;
        throw new ToolError(`${name} was waiting for CODAP: ${err.message} ${why().join(" ")}`, err.code, {
          ...(err.data ?? {}),
          tool: name,
        });
      }
      const blockedMs = carried + (blocks?.take().blockedMs ?? 0);
      const [cause, fix] = why();
      return noteWaits(result, phone.takeWaits(), blockedMs, slowMs, cause, fix);
    };
  }
  return wrapped;
}

/**
 * @param {import("./types.js").ToolResult} result the tool's result
 * @param {import("./types.js").CodapWaits} waits
 * @param {number} blockedMs
 * @param {number} slowMs
 * @param {string} cause why CODAP was slow
 * @param {string} fix what fixes it
 * @returns {import("./types.js").ToolResult}
 */
function noteWaits(result, waits, blockedMs, slowMs, cause, fix) {
  const text = result?.content?.[0];
  const slow = waits.slowestMs >= slowMs;
  if ((!slow && blockedMs < slowMs) || text?.type !== "text" || typeof text.text !== "string") return result;
  // A message in flight while the page was stopped counts the stop in its own wait too, and a stop still under way
  // when the tool ends is noticed only after it: the larger of the two is said, the slowest message as a detail.
  const messages = `${waits.messages === 1 ? "message" : `${waits.messages} messages`}`;
  const slowest = `${seconds(waits.slowestMs)} for "${waits.slowest}"`;
  const line = blockedMs >= slowMs && blockedMs > waits.slowestMs
    ? `CODAP was slow: its page, which runs this plugin too, was busy for ${seconds(blockedMs)} while this call ` +
      `waited to run or ran${slow ? ` (the slowest of its ${messages}: ${slowest})` : ""}. ${cause} ${fix}`
    : `CODAP was slow: it took ${seconds(waits.totalMs)} to answer this call's ${messages}, ${slowest}. ` +
      `${cause} ${fix}`;
  const wait = {
    codapMs: Math.round(waits.totalMs),
    messages: waits.messages,
    slowestMs: Math.round(waits.slowestMs),
    slowestRequest: waits.slowest,
    blockedMs: Math.round(blockedMs),
    cause,
    fix,
  };
  return {
    ...result,
    content: [{ ...text, text: `${text.text}\n${line}` }, ...result.content.slice(1)],
    _meta: { ...(result._meta ?? {}), [WAIT_META]: wait },
  };
}
