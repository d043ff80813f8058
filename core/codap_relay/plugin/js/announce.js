// @ts-check
// What a screen reader hears: one polite live region, written at most once per `gapMs`. Messages (a new code,
// a status, a notice, an error) and tool-call outcomes that arrive in between are gathered into one summary
// ("10 calls finished: 9 done, 1 failed…"), so a burst of calls is a sentence, not a flood.

/** How long to gather before the first write, and the least time between two writes (ms). */
export const SETTLE_MS = 300;
export const GAP_MS = 2000;

/**
 * A tool's error message cut to its first line: enough to know what failed.
 * @param {unknown} text
 * @param {number} [max]
 */
const short = (text, max = 160) => {
  const line = String(text ?? "").split("\n")[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/**
 * Each part a sentence, so that parts joined together are read with pauses between them.
 * @param {string} text
 */
const sentence = (text) => (/[.!?…:]$/.test(text) ? text : `${text}.`);

export class Announcer {
  // What is gathered until the next write (_clear empties it again).
  /** @type {string[]} */
  messages = [];
  done = 0;
  /** @type {{tool: string, message: string}[]} */
  failed = [];
  /** @type {string | null} */
  onlyTool = null;

  /**
   * @param {object} options
   * @param {(text: string) => void} options.write sets the live region's text
   * @param {number} [options.settleMs]
   * @param {number} [options.gapMs]
   * @param {() => number} [options.now]
   * @param {(fn: () => void, ms: number) => any} [options.setTimer]
   */
  constructor({ write, settleMs = SETTLE_MS, gapMs = GAP_MS, now = () => Date.now(), setTimer = (fn, ms) => setTimeout(fn, ms) }) {
    this.write = write;
    this.settleMs = settleMs;
    this.gapMs = gapMs;
    this.now = now;
    this.setTimer = setTimer;
    this.lastWrite = -Infinity;
    this.last = "";
    /** @type {unknown} the pending write's timer (setTimer's), null when none */
    this.timer = null;
  }

  _clear() {
    this.messages = [];
    this.done = 0;
    this.failed = [];
    this.onlyTool = null;
  }

  /**
   * A sentence to read out (said once even if told twice before the next write).
   * @param {string} text
   */
  say(text) {
    if (!text || this.messages.includes(text)) return;
    this.messages.push(text);
    this._schedule();
  }

  /**
   * A tool call finished: `error` is its error message, or null when it succeeded.
   * @param {string} tool
   * @param {string | null} [error]
   */
  call(tool, error = null) {
    if (error === null) this.done += 1;
    else this.failed.push({ tool, message: short(error) });
    this.onlyTool = this.done + this.failed.length === 1 ? tool : null;
    this._schedule();
  }

  _schedule() {
    if (this.timer !== null) return;
    const at = Math.max(this.now() + this.settleMs, this.lastWrite + this.gapMs);
    this.timer = this.setTimer(() => this.flush(), at - this.now());
  }

  /** Writes what was gathered, as one announcement. */
  flush() {
    this.timer = null;
    const parts = [...this.messages];
    const calls = this.done + this.failed.length;
    const [firstError] = this.failed;
    if (calls === 1) {
      parts.push(firstError ? `${firstError.tool} failed: ${firstError.message}` : `${this.onlyTool} done.`);
    } else if (calls > 1) {
      const failed = this.failed.length ? `, ${this.failed.length} failed; first error: ${firstError.tool}: ${firstError.message}` : "";
      parts.push(`${calls} calls finished: ${this.done} done${failed}.`);
    }
    this._clear();
    if (!parts.length) return;
    let text = parts.map(sentence).join(" ");
    // The same words twice in a row are not read again by some screen readers: make the text differ.
    if (text === this.last) text += "\u00a0";
    this.last = text;
    this.lastWrite = this.now();
    this.write(text);
  }
}
