// @ts-check
// Runs tool requests one at a time in seq order, each id at most once, and delivers every outcome to
// the relay, retrying failed POSTs. The ledger in storage makes this hold across reloads of the frame.
// Calls that do not come from the relay (a replayed trace) run through the same queue and the same tool call,
// after the relayed requests waiting before them; their outcome goes back to the caller, not to the relay.
// Each request's time in the plugin (from its event to the first POST of its answer) is recorded as a User
// Timing measure "codap-relay <tool> <id>", which the browser's performance tools and the benchmark read.

import { ToolError, errorBody } from "./errors.js";
import { RelayHttpError } from "./relay.js";
import { retryDelayMs } from "./retry.js";

/**
 * @import {ActivityUpdate, OutcomeBody, Tool, ToolArgs, ToolErrorBody, ToolRequest} from "./types.js"
 */

/**
 * A call waiting its turn: a relayed request, or a local one (`local`: whom to tell its outcome, and what to do
 * just before it runs).
 * @typedef {ToolRequest & {label?: string, local?: {resolve: (body: OutcomeBody) => void, started: () => void}}} QueuedCall
 */

/** A relayed request's times on the page's timeline, until its answer is first posted. @typedef {{tool: string, received: number, started?: number, finished?: number}} Timing */

const MEASURE_PREFIX = "codap-relay ";
const MAX_MEASURES = 200; // the newest ones are kept; a long session must not grow the timeline forever

/** @type {ToolErrorBody} */
const STOPPED = {
  message: "The plugin started a new session before this call ran, so it did not run.",
  code: "plugin_stopped",
};

const INDETERMINATE =
  "The plugin was reloaded while this request was running in CODAP, so it cannot tell whether it took effect. " +
  "Check CODAP's state (get_codap_datasets or get_codap_status) before sending it again.";

export class Runner {
  /**
   * @param {object} options
   * @param {Record<string, Tool>} options.tools the tool functions by name; each gets the call's request id too
   * @param {import("./storage.js").PluginStore} options.store the ledger of requests run and answers posted
   * @param {(id: string, body: OutcomeBody) => Promise<unknown>} options.post posts an answer to the relay
   * @param {(update: ActivityUpdate) => void} [options.onActivity] told of every change of a request's state
   * @param {() => number} [options.now]
   * @param {(ms: number) => Promise<void>} [options.sleep]
   * @param {Performance | null} [options.timeline] where the User Timing measures go
   */
  constructor({ tools, store, post, onActivity = () => {}, now = () => Date.now(), sleep, timeline = globalThis.performance }) {
    this.tools = tools;
    this.store = store;
    this.post = post; // (id, body) => Promise; throws RelayHttpError or a network error
    this.onActivity = onActivity;
    this.now = now;
    this.sleep = sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    /** @type {QueuedCall[]} */
    this.queue = [];
    /** @type {Set<string>} */
    this.known = new Set(); // ids queued, running or delivered in this page
    /** @type {Set<string>} */
    this.delivering = new Set();
    this.busy = false;
    this.stopped = false;
    this.timeline = timeline;
    /** @type {Map<string, Timing>} */
    this.timings = new Map(); // id -> {tool, received, started, finished} until its answer is first posted
    /** @type {string[]} the names of the measures made, oldest first */
    this.measures = [];
  }

  /** Re-post outcomes that a previous page stored but could not deliver. */
  resume() {
    for (const entry of this.store.unposted()) {
      this.known.add(entry.id);
      this.onActivity({ id: entry.id, tool: entry.tool, args: entry.args, status: "replayed", body: entry.body });
      this._deliver(entry.id, /** @type {OutcomeBody} */ (entry.body)); // unposted: it has its body
    }
  }

  /** @param {ToolRequest} request */
  enqueue(request) {
    const { id } = request;
    if (!id || this.known.has(id)) return;
    this.known.add(id);
    const stored = this.store.entry(id);
    if (stored?.state === "done") {
      if (stored.posted) return; // the relay already has it
      this.onActivity({ id, tool: request.tool, args: request.args, status: "replayed", body: stored.body });
      this._deliver(id, stored.body ?? { error: { message: INDETERMINATE, code: "plugin_reloaded" } });
      return;
    }
    if (stored?.state === "started") {
      /** @type {OutcomeBody} */
      const body = { error: { message: INDETERMINATE, code: "plugin_reloaded" } };
      this.store.saveOutcome(id, body);
      this.onActivity({ id, tool: request.tool, args: request.args, status: "failed", body });
      this._deliver(id, body);
      return;
    }
    if (this.timeline) this.timings.set(id, { tool: request.tool, received: this.timeline.now() });
    this.queue.push(request);
    this.queue.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    this.onActivity({ id, tool: request.tool, args: request.args, status: "queued" });
    this._pump();
  }

  /**
   * Run a call that did not come from the relay, in turn after the relayed requests queued before it; resolves
   * with its outcome body ({result} or {error}). `started` runs just before the tool does (the caller's ledger
   * mark, as markStarted is the relay requests'). Its `label` shows in the activity panel.
   * @param {{id: string, tool: string, args: ToolArgs, label?: string}} call
   * @param {{started?: () => void}} [hooks]
   * @returns {Promise<OutcomeBody>}
   */
  runLocal({ id, tool, args, label }, { started = () => {} } = {}) {
    if (this.stopped) return Promise.resolve({ error: STOPPED });
    return new Promise((resolve) => {
      this.queue.push({ id, tool, args, label, seq: Infinity, local: { resolve, started } });
      this.onActivity({ id, tool, args, label, status: "queued" });
      this._pump();
    });
  }

  async _pump() {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length && !this.stopped) {
        const request = /** @type {QueuedCall} */ (this.queue.shift());
        if (request.local) await this._runLocal(/** @type {QueuedCall & {local: NonNullable<QueuedCall["local"]>}} */ (request));
        else await this._run(request);
      }
    } finally {
      this.busy = false;
    }
  }

  /**
   * The tool itself, for relayed and local calls alike: its outcome as the body posted ({result} or {error}).
   * The tool gets the call's request id as well (`{id}`), so what it records can be named by that id later.
   * @param {string} tool
   * @param {ToolArgs | undefined} args
   * @param {string} id
   * @returns {Promise<OutcomeBody>}
   */
  async _call(tool, args, id) {
    try {
      const fn = Object.hasOwn(this.tools, tool) ? this.tools[tool] : undefined; // never Object.prototype's
      if (!fn) throw new ToolError(`This plugin has no tool named ${JSON.stringify(tool)}.`, "unknown_tool");
      return { result: await fn(args ?? {}, { id }) };
    } catch (err) {
      return { error: errorBody(err) };
    }
  }

  /** @param {QueuedCall} request */
  async _run({ id, tool, args, seq, unreadable }) {
    this.store.markStarted(id, { tool, seq, args: smallArgs(args) });
    const timing = this.timings.get(id);
    if (timing) timing.started = /** @type {Performance} */ (this.timeline).now(); // timed only on a timeline
    const started = this.now();
    this.onActivity({ id, tool, args, status: "running", startedAt: started });
    /** @type {OutcomeBody} */
    const body = unreadable
      ? { error: { message: `${unreadable}; it did not run. Send it again with finite numbers and plain JSON.`, code: "unreadable_request" } }
      : await this._call(tool, args, id);
    if (timing) timing.finished = /** @type {Performance} */ (this.timeline).now();
    this.store.saveOutcome(id, body);
    const ms = this.now() - started;
    this.onActivity({ id, tool, args, status: body.error ? "failed" : "done", body, ms });
    this._deliver(id, body);
  }

  /** @param {QueuedCall & {local: NonNullable<QueuedCall["local"]>}} call */
  async _runLocal({ id, tool, args, label, local }) {
    local.started();
    const started = this.now();
    this.onActivity({ id, tool, args, label, status: "running", startedAt: started });
    const body = await this._call(tool, args, id);
    this.onActivity({ id, tool, args, label, status: body.error ? "failed" : "done", body, ms: this.now() - started });
    local.resolve(body);
  }

  /**
   * Posts the outcome until the relay takes it (or the request is gone), retrying with backoff.
   * @param {string} id
   * @param {OutcomeBody} body
   */
  async _deliver(id, body) {
    if (this.delivering.has(id)) return;
    this.delivering.add(id);
    try {
      for (let attempt = 0; !this.stopped; attempt++) {
        if (attempt === 0) this._measure(id, body);
        try {
          await this.post(id, body);
          break;
        } catch (err) {
          if (err instanceof RelayHttpError) {
            // 404: the request is gone (expired, session ended); 409: answered before - first answer stands
            if (err.status === 404 || err.status === 409) break;
            if (err.status === 413) {
              body = {
                error: {
                  message: "The result was too large for the relay to accept. Ask for less data (e.g. export fewer rows).",
                  code: "result_too_large",
                },
              };
              continue;
            }
            if (err.status === 400 && !body.error) {
              // the relay refused the result itself (an image it does not accept): say so instead of retrying
              body = {
                error: {
                  message: `The relay refused this tool's result: ${err.message}`,
                  code: "result_refused",
                },
              };
              continue;
            }
            if (err.status === 401 || err.status === 403) break; // a new session replaced this one
          }
          this.onActivity({ id, status: "retrying", attempt: attempt + 1 });
          await this.sleep(retryDelayMs(err, attempt)); // a 429 or 503 says how long in Retry-After
        }
      }
      if (!this.stopped) {
        this.store.markPosted(id);
        this.onActivity({ id, status: "delivered" });
      }
    } finally {
      this.delivering.delete(id);
    }
  }

  /**
   * The request's time in the plugin, from its event to now (its answer is about to be posted).
   * @param {string} id
   * @param {OutcomeBody} body
   */
  _measure(id, body) {
    const timing = this.timings.get(id);
    this.timings.delete(id);
    if (!timing || timing.started === undefined || typeof this.timeline?.measure !== "function") return;
    const name = `${MEASURE_PREFIX}${timing.tool} ${id}`; // one entry per request, so the oldest can be dropped
    try {
      this.timeline.measure(name, {
        start: timing.received,
        end: this.timeline.now(),
        detail: {
          id,
          tool: timing.tool,
          queuedMs: timing.started - timing.received, // waiting behind earlier requests
          runMs: /** @type {number} */ (timing.finished) - timing.started, // the tool itself: CODAP's work and the plugin's
          ok: !body.error,
        },
      });
    } catch {
      return; // a timeline that refuses the entry costs the tool nothing
    }
    this.measures.push(name);
    if (this.measures.length > MAX_MEASURES) this._trim();
  }

  _trim() {
    /** @type {Performance} */ (this.timeline).clearMeasures?.(this.measures.shift()); // measured: on a timeline
  }

  stop() {
    this.stopped = true;
    for (const request of this.queue) request.local?.resolve({ error: STOPPED }); // it never ran
    this.queue = [];
  }
}

/**
 * Arguments kept in the ledger only for the activity log after a reload; large payloads are trimmed.
 * @param {ToolArgs | undefined} args
 */
function smallArgs(args) {
  const text = JSON.stringify(args ?? {});
  return text.length <= 2000 ? args : { note: "large arguments not kept" };
}
