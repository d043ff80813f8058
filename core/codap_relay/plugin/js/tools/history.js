// @ts-check
// CODAP's own undo and redo (what its Undo and Redo buttons do), and taking back the LLM's own tool calls.
//
// CODAP 3.1.0 keeps in its undo history the changes a person makes in CODAP (moving a component, editing a cell,
// changing a graph). The plugin puts each changing tool call there too (journal.js): a press of Undo reaching one
// asks the plugin to take it back, and the plugin says what it did. CODAP answers each press with only
// {canUndo, canRedo}; the plugin's own step, when the press reached a tool call, says which.
// undo_codap_tool_calls puts the whole document back as it was before a given call (restore points, journal.js).

import { ToolError, plural, toolResult } from "./context.js";

/**
 * @import {CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {Journal, StepOutcome} from "./journal.js"
 */

/** Tools that are not journaled: taking calls back is not itself a call to take back. */
// Nor is a press of CODAP's Undo or Redo: the step it takes is CODAP's, the plugin's part follows from its notice.
export const NOT_JOURNALED = new Set(["undo_codap_tool_calls", "undo_codap", "redo_codap"]);

/** @type {(operation: string) => CodapRequest} */
const press = (operation) => ({ action: "notify", resource: "undoChangeNotice", values: { operation } });

/** @param {ToolContext & {journal?: Journal}} ctx */
export function createHistoryTools(ctx) {
  const { send, must } = ctx;

  /**
   * Presses CODAP's Undo (or Redo) up to `steps` times, stopping once CODAP has nothing more to take back.
   * @param {"undo" | "redo"} kind
   * @param {number} steps
   */
  async function pressButton(kind, steps) {
    const request = press(kind === "undo" ? "undoButtonPress" : "redoButtonPress");
    const more = kind === "undo" ? "canUndo" : "canRedo";
    const other = kind === "undo" ? "canRedo" : "canUndo";
    const { journal } = ctx;
    let done = 0;
    let state = null;
    /** @type {StepOutcome[]} */
    const calls = [];
    for (let i = 0; i < steps; i++) {
      const heard = journal?.history.steps;
      const [reply] = await send([request]);
      state = must(request, reply, `CODAP's ${kind}`).values ?? {};
      // CODAP tells the plugin of a step that is the plugin's (undoAction) before it answers the press.
      // (a step heard: the last outcome is its own; a call in parts, the plugin pressed on for its other parts)
      if (journal && journal.history.steps !== heard) {
        const step = /** @type {StepOutcome} */ (await journal.history.last);
        calls.push(step);
        if (step.state) state = step.state;
      }
      // A press that changed something leaves the opposite button available; without it nothing was there.
      if (state[other] !== true) break;
      done += 1;
      if (state[more] !== true) break;
    }
    return { done, calls, canUndo: state?.canUndo === true, canRedo: state?.canRedo === true };
  }

  /**
   * @param {"undo" | "redo"} kind
   * @param {number} steps
   * @param {{done: number, calls: StepOutcome[], canUndo: boolean, canRedo: boolean}} outcome
   */
  function answer(kind, steps, outcome) {
    const { done, calls, canUndo, canRedo } = outcome;
    const button = kind === "undo" ? "Undo" : "Redo";
    const first = done === 0
      ? `CODAP had nothing to ${kind}.`
      : `${button} ${done === 1 ? "once" : `${done} times`} in CODAP` +
        (done < steps ? ` (of ${steps} asked: then there was nothing more to ${kind})` : "") + ".";
    const own = calls.length
      ? ` Of these, the LLM's tool calls: ${calls.map((c) => c.text).join(" ")}` +
        (calls.length < done ? ` The other ${plural(done - calls.length, "step")} were changes made in CODAP itself (by the person).` : "")
      : done > 0 ? " These were changes made in CODAP itself (by the person), not tool calls." : "";
    return toolResult(
      `${first}${own} CODAP can now undo: ${canUndo ? "yes" : "no"}; redo: ${canRedo ? "yes" : "no"}.`,
      {
        [kind === "undo" ? "undone" : "redone"]: done,
        requested: steps,
        canUndo,
        canRedo,
        toolCalls: calls.map((c) => ({ ...c.call, ok: c.ok, text: c.text })),
      },
    );
  }

  /** @param {{steps?: number}} args */
  async function undo_codap(args) {
    const steps = args.steps ?? 1;
    return answer("undo", steps, await pressButton("undo", steps));
  }

  /** @param {{steps?: number}} args */
  async function redo_codap(args) {
    const steps = args.steps ?? 1;
    return answer("redo", steps, await pressButton("redo", steps));
  }

  /** @param {{sinceRequestId?: string, lastCalls?: number}} args */
  async function undo_codap_tool_calls(args) {
    const { journal } = ctx;
    if (!journal) {
      throw new ToolError("This plugin keeps no restore points here (no tool catalog loaded).", "journal_unavailable");
    }
    const at = journal.startOf(args);
    const { calls, finished } = await journal.takeBack(at);
    const first = calls[0];
    const named = calls.map((e) => journal.callLabel(e));
    return toolResult(
      `Took back ${plural(calls.length, "tool call")} (${named.join(", ")}): the document is as it was before ` +
        `${journal.callLabel(first)}.` +
        (finished ? "" : " CODAP had not said it finished restoring after 20 s; check the document (get_codap_status)."),
      {
        undone: calls.map((e) => ({ requestId: e.id, tool: e.tool })),
        restoredToBefore: first.id,
        finished,
      },
    );
  }

  return { undo_codap, redo_codap, undo_codap_tool_calls };
}
