// @ts-check
// Replaying a saved trace: its calls run again, in order, against the CODAP document open now, through the same
// runner and tools as the LLM's calls. Read-only calls and calls that failed when recorded are skipped; the first
// failure stops the replay with its reason. A trace may come from someone else: before its first call runs, the
// person is asked, with the list of every call the replay would make (those of tools that can delete or overwrite
// things, by their annotations, named); raw requests the plugin's policy refuses (tools/policy.js) are marked there
// and are never sent to CODAP, and every call that runs goes through its tool's policy as a live call does. A replay runs at most MAX_REPLAY_CALLS (500) calls: a longer trace is refused whole.
//
// No call runs twice across a reload of the plugin frame. As with the runner's ledger, a call is marked
// "started" in storage just before its tool runs and "done" or "failed" after. After a reload the replay is
// stopped: a call caught running is marked "interrupted" (the plugin cannot tell whether it took effect), and
// choosing the same file again continues after the calls that ran or were interrupted. Where the browser keeps
// nothing (storage blocked), the progress lives in this page only, and the plugin says so.

import { firstLine, plural, summarizeArgs } from "./format.js";
import { MAX_REPLAY_CALLS, TraceError, readTrace, replayPlan, traceKey } from "./trace.js";

/**
 * @import {OutcomeBody, ReplayProgress} from "./types.js"
 * @import {PlannedCall, ReadCall} from "./trace.js"
 * @import {PluginStore} from "./storage.js"
 * @import {Runner} from "./runner.js"
 * @import {ToolDefinition} from "./tools/catalog.js"
 */

/**
 * What the page shows of a replay: its outcome ("running", "finished", "stopped", "refused", "confirm"), a
 * message, how far it is, and the calls listed for the person's answer.
 * @typedef {object} ReplayView
 * @property {string} outcome
 * @property {string} message
 * @property {number} [done]
 * @property {number} [total]
 * @property {boolean} [running]
 * @property {boolean} [asking]
 * @property {ListedCall[] | null} [calls]
 */

/** A call as the person's question lists it. @typedef {{n: number, tool: string, summary: string, refused: string | null | undefined}} ListedCall */

const RAN = new Set(["done", "interrupted"]); // never run again on a continued replay
const PASSED = new Set(["skipped", "refused"]); // never sent to CODAP

/**
 * The calls a replay would make, for the person: {n, tool, summary, refused (the rule) or null}.
 * @param {PlannedCall[]} plan
 * @param {(p: PlannedCall, i: number) => boolean} [pending]
 * @returns {ListedCall[]}
 */
function listed(plan, pending = () => true) {
  return plan
    .map((p, i) => ({ p, i }))
    .filter(({ p, i }) => (p.action === "run" || p.action === "refuse") && pending(p, i))
    .map(({ p, i }) => ({
      n: i + 1,
      tool: p.call.tool,
      summary: summarizeArgs(p.call.tool, p.call.args),
      refused: p.action === "refuse" ? p.rule : null,
    }));
}

export class Replayer {
  /**
   * `runner()` is the current Runner (a new session brings a new one); `tools` the manifest; `readOnly` and
   * `destructive` the names of the tools so annotated; `onProgress(view)` shows where the replay is;
   * `persistent` whether the browser lets storage outlive a reload.
   * @param {object} options
   * @param {PluginStore} options.store
   * @param {() => Runner} options.runner
   * @param {ToolDefinition[]} options.tools
   * @param {Set<string>} options.readOnly
   * @param {Set<string>} [options.destructive]
   * @param {(view: ReplayView) => void} options.onProgress
   * @param {boolean} [options.persistent]
   * @param {() => Date} [options.now]
   */
  constructor({
    store,
    runner,
    tools,
    readOnly,
    destructive = new Set(),
    onProgress,
    persistent = true,
    now = () => new Date(),
  }) {
    this.store = store;
    this.runner = runner;
    this.tools = tools;
    this.readOnly = readOnly;
    this.destructive = destructive;
    this.onProgress = onProgress;
    this.persistent = persistent;
    this.now = now;
    /** @type {ReplayProgress | null} */
    this.state = null;
    this.running = false;
    this.stopAsked = false;
    /** @type {((yes: boolean) => void) | null} */
    this._answer = null; // resolves the question asked before the first call runs
    this.asking = false; // from the question to its answer
  }

  /**
   * The person's answer to "replay it?": true runs the replay, false leaves CODAP as it is.
   * @param {boolean} yes
   */
  answer(yes) {
    const resolve = this._answer;
    this._answer = null;
    resolve?.(yes);
  }

  /** At start-up: a replay the last page left running was cut short by the reload; say where it stopped. */
  recover() {
    const state = this.store.loadReplay();
    if (!state) return;
    this.state = state;
    if (state.outcome === "running") {
      const caught = Object.entries(state.states).find(([, s]) => s === "started");
      if (caught) {
        const [index] = caught;
        state.states[index] = "interrupted";
        state.reason =
          `The plugin was reloaded while call ${Number(index) + 1} (${state.tools[Number(index)]}) was running in CODAP, so ` +
          "it cannot tell whether that call took effect, and will not run it again. Check CODAP, then choose the " +
          "same file again to continue after it.";
      } else {
        state.reason = "The plugin was reloaded during the replay. Choose the same file again to continue.";
      }
      state.outcome = "stopped";
      this._save();
    }
    this._show();
  }

  /**
   * Replay the trace in `text` (the file `name`); resolves when it finished, stopped or was refused.
   * @param {string} name
   * @param {string} text
   */
  async start(name, text) {
    if (this.running || this.asking) {
      this.onProgress({ outcome: "refused", message: "A replay is running; stop it before starting another." });
      return;
    }
    let plan;
    try {
      plan = replayPlan(readTrace(text, this.tools), this.readOnly);
    } catch (err) {
      if (!(err instanceof TraceError)) throw err;
      this.onProgress({ outcome: "refused", message: `${name} was not replayed: ${err.message} Nothing was changed.` });
      return;
    }
    const toRun = plan.filter((p) => p.action === "run").length;
    if (toRun > MAX_REPLAY_CALLS) {
      this.onProgress({
        outcome: "refused",
        message: `${name} was not replayed: it holds ${toRun} calls to run, and a replay runs at most ` +
          `${MAX_REPLAY_CALLS}. Split it into shorter traces. Nothing was changed.`,
      });
      return;
    }
    if (!plan.some((p) => p.action === "run")) {
      const refused = plan.filter((p) => p.action === "refuse").length;
      if (refused) {
        this.onProgress({
          outcome: "refused",
          message: `${name} has nothing to replay: ${plural(refused, "call")} the plugin's policy refuses (never sent ` +
            "to CODAP), the rest read-only or failed when recorded. Nothing was changed.",
          calls: listed(plan),
        });
        return;
      }
      this.onProgress({
        outcome: "refused",
        message: `${name} has nothing to replay: its ${plan.length} calls are read-only or failed when recorded. ` +
          "Nothing was changed.",
      });
      return;
    }
    const key = traceKey(plan.map((p) => p.call));
    const earlier = this.state?.key === key ? this.state : this.store.loadReplay(key);
    const continuing = earlier && earlier.outcome !== "finished";
    /** @type {(p: PlannedCall, i: number) => boolean} */
    const pending = (p, i) => !(continuing && (RAN.has(earlier.states[i]) || PASSED.has(earlier.states[i])));
    const ahead = plan.filter((p, i) => p.action === "run" && pending(p, i));
    const refused = plan.filter((p, i) => p.action === "refuse" && pending(p, i));
    const risky = ahead.filter((p) => this.destructive.has(p.call.tool)).map((p) => p.call.tool);
    // Always asked: a trace may come from anyone, and every call it would make is listed before the first runs.
    this.asking = true; // until the answer: a second file is refused as while running
    let yes;
    try {
      yes = await this._ask(name, plan, pending, risky, refused.length);
    } finally {
      this.asking = false;
    }
    if (!yes) {
      this.onProgress({ outcome: "refused", message: `${name} was not replayed: you cancelled it. Nothing was changed.` });
      return;
    }
    this.state = continuing
      ? { ...earlier, name, outcome: "running", reason: null }
      : { key, name, tools: plan.map((p) => p.call.tool), states: {}, outcome: "running", reason: null };
    this.running = true;
    this.stopAsked = false;
    this._save();
    try {
      await this._run(plan, continuing);
    } finally {
      this.running = false;
    }
  }

  /**
   * Asks the person, listing every call the replay would make now, refused ones marked.
   * @param {string} name
   * @param {PlannedCall[]} plan
   * @param {(p: PlannedCall, i: number) => boolean} pending
   * @param {string[]} risky the tools of the calls that can change or delete anything
   * @param {number} refused how many calls the policy refuses
   * @returns {Promise<boolean>}
   */
  _ask(name, plan, pending, risky, refused) {
    const calls = listed(plan, pending);
    const runs = calls.filter((c) => !c.refused).length;
    let message = `${name} would make ${plural(runs, "call")} in this CODAP document (listed below)`;
    if (risky.length) {
      message += `; ${plural(risky.length, "call")} of ${[...new Set(risky)].join(", ")} can change or delete anything in it`;
    }
    if (refused) {
      message += `; ${plural(refused, "call")} the plugin's policy refuses (marked) will be skipped and never sent to CODAP`;
    }
    message += `. A replay runs at most ${MAX_REPLAY_CALLS} calls. Replay it?`;
    return new Promise((resolve) => {
      this._answer = resolve;
      this.onProgress({ outcome: "confirm", asking: true, message, calls });
    });
  }

  /** Stop after the call that is running now. */
  stop() {
    if (this.running) this.stopAsked = true;
  }

  /**
   * @param {PlannedCall[]} plan
   * @param {boolean | null} continuing
   */
  async _run(plan, continuing) {
    const { state } = /** @type {{state: ReplayProgress}} */ (this); // start() set it
    const total = plan.length;
    let ran = 0;
    for (let i = 0; i < total; i++) {
      const { call, action } = plan[i];
      if (RAN.has(state.states[i]) || PASSED.has(state.states[i])) continue;
      if (action === "skip" || action === "refuse") {
        state.states[i] = action === "skip" ? "skipped" : "refused"; // a refused call never reaches the runner
        this._save();
        continue;
      }
      if (this.stopAsked) return this._end("stopped", `Stopped by you before call ${i + 1}. Choose the same file again to continue.`);
      this._show({ current: { n: i + 1, tool: call.tool } });
      const startedAt = this.now();
      const body = await this.runner().runLocal(
        { id: `replay-${state.key}-${i}`, tool: call.tool, args: call.args, label: `replay ${i + 1}/${total}` },
        {
          started: () => {
            state.states[i] = "started";
            this._save();
          },
        },
      );
      const completedAt = this.now();
      state.states[i] = body.error ? "failed" : "done";
      this._save();
      this._record(call, body, startedAt, completedAt);
      if (body.error) {
        return this._end(
          "stopped",
          `Call ${i + 1} of ${total} (${call.tool}) failed: ${body.error.message} Nothing after it ran. Fix the ` +
            "cause in CODAP, then choose the same file again to continue from that call.",
        );
      }
      ran += 1;
    }
    const skipped = Object.values(state.states).filter((s) => s === "skipped").length;
    const refused = Object.values(state.states).filter((s) => s === "refused").length;
    const before = continuing ? " (continued: calls that ran before were not run again)" : "";
    const policy = refused ? `, ${refused} refused by the plugin's policy (not sent to CODAP)` : "";
    return this._end(
      "finished",
      `Replayed ${state.name}: ${ran} call${ran === 1 ? "" : "s"} run${before}, ${skipped} skipped (read-only, or ` +
        `failed when recorded)${policy}.`,
    );
  }

  /**
   * A replayed call for the next saved trace (the relay never saw it).
   * @param {ReadCall} call
   * @param {OutcomeBody} body
   * @param {Date} startedAt
   * @param {Date} completedAt
   */
  _record(call, body, startedAt, completedAt) {
    this.store.addReplayed({
      tool: call.tool,
      args: call.args,
      status: body.error ? "failed" : "completed",
      summary: firstLine(body),
      error: body.error ? body.error.code ?? "plugin_error" : null,
      at: startedAt.toISOString(),
      completedAt: completedAt.toISOString(),
      latencyMs: completedAt.getTime() - startedAt.getTime(),
    });
  }

  /**
   * @param {string} outcome
   * @param {string} reason
   */
  _end(outcome, reason) {
    this.running = false;
    /** @type {ReplayProgress} */ (this.state).outcome = outcome; // only a replay that started ends
    /** @type {ReplayProgress} */ (this.state).reason = reason;
    this._save();
    this._show();
  }

  /** Keeps the replay's progress (there is one). */
  _save() {
    /** @type {ReplayProgress} */ (this.state).at = Date.now();
    this.kept = this.store.saveReplay(/** @type {ReplayProgress} */ (this.state)) && this.persistent;
  }

  /** @param {{current?: {n: number, tool: string} | null}} [options] the call running now */
  _show({ current = null } = {}) {
    const { state } = this;
    if (!state) return;
    const total = state.tools.length;
    const settled = Object.values(state.states).filter((s) => s !== "started").length;
    const note = this.kept === false
      ? " This browser does not let the plugin keep the replay's progress: if the plugin reloads now, it cannot " +
        "tell which calls already ran."
      : "";
    const message = current
      ? `Replaying ${state.name}: call ${current.n} of ${total} (${current.tool})…${note}`
      : state.reason ?? "";
    this.onProgress({ outcome: state.outcome, done: settled, total, message, running: this.running });
  }
}
