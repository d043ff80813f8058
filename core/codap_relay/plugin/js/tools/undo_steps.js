// @ts-check
// CODAP's Undo and Redo reaching the LLM's calls (journal.js): CODAP asks this plugin to take a call back
// (undoChangeNotice undoAction) or to make it again (redoAction). The plugin checks that the document is as the call
// left it (or found it) and sends the requests that reverse it (inverse.js), or runs the call again with its own
// arguments. Whatever cannot be done so is said to the person (and to undo_codap), and nothing is changed.
//
// A call that made steps CODAP records itself (journal.js: statistics on a graph, a Rescale, a rebuild of the
// document) is on CODAP's history in parts, with those steps between them: one press of Undo reaching its last
// part takes the whole call back, the plugin pressing Undo itself for each of CODAP's steps (which CODAP takes back
// exactly) and each part before them. Redo reaching its first part runs the call again, which puts its parts on
// the history anew (CODAP ends its Redo at the call's first new step).

import { graphDifferences } from "./graph_inverse.js";
import { inverseOf } from "./inverse.js";
import { differences, newIds } from "./restore_points.js";

/**
 * @import {CodapNotification, CodapReply, CodapRequest} from "../types.js"
 * @import {JournalEntry, Part, Running, StepOutcome} from "./journal.js"
 * @import {RestorePoint, createRestorePoints} from "./restore_points.js"
 */

/** Parts of calls kept for CODAP's Undo and Redo (CODAP's own history may hold more: older ones are said to be gone). */
export const MAX_UNDO = 30;
/** The most steps of CODAP's own between two parts of one call (a statistic each, at most: add_codap_adornment). */
const MAX_STEPS_BETWEEN = 20;

/**
 * @param {object} deps
 * @param {(requests: CodapRequest[]) => Promise<CodapReply[]>} deps.send
 * @param {((listener: (value: CodapNotification) => void) => () => void) | null} deps.listen
 * @param {ReturnType<typeof createRestorePoints>} deps.points
 * @param {<T>(job: () => T | Promise<T>) => Promise<T>} deps.serial
 * @param {(text: string) => void} deps.tell
 * @param {{current: Running | null}} deps.running
 * @param {(part: Part) => Promise<{canUndo: boolean, canRedo: boolean} | null>} deps.pushPart
 * @param {() => Promise<RestorePoint | null>} deps.pointNow
 * @param {JournalEntry[]} deps.entries
 */
export function createUndoSteps({ send, listen, points, serial, tell, running, pushPart, pointNow, entries }) {
  // The parts on CODAP's undo history: not undone (oldest first), and undone (the last undone last).
  /** @type {Part[]} */
  const undoable = [];
  /** @type {Part[]} */
  const redoable = [];
  /** @type {{steps: number, last: Promise<StepOutcome | null>}} CODAP's undo steps heard, and what the last did */
  const history = { steps: 0, last: Promise.resolve(/** @type {StepOutcome | null} */ (null)) };
  /** @type {{heard: Array<Part | null>} | null} the steps CODAP names while the plugin presses Undo or Redo itself */
  let pressing = null;

  listen?.((value) => {
    if (value?.resource !== "undoChangeNotice") return;
    const operation = value?.values?.operation;
    if (operation === "undoAction" || operation === "redoAction") {
      // CODAP's Undo and Redo take its history's steps in order: the plugin's newest part not undone is this one.
      const undo = operation === "undoAction";
      const part = (undo ? undoable : redoable).pop() ?? null;
      if (part) (undo ? redoable : undoable).push(part);
      if (pressing) {
        pressing.heard.push(part); // the rest of a call the plugin is taking back (or making again) itself
        return;
      }
      history.steps += 1;
      history.last = serial(() => step(undo ? "undo" : "redo", part));
    } else if (operation === "clearRedo") redoable.length = 0;
    else if (operation === "clearUndo") undoable.length = 0;
  });

  /** @param {Part} part a part CODAP put on its history */
  function pushed(part) {
    undoable.push(part);
    if (undoable.length > MAX_UNDO) undoable.shift();
    redoable.length = 0; // CODAP drops its redo steps when a new step comes
  }

  /** CODAP recorded a step of its own (a rebuild): it dropped its redo steps. */
  function redoEnded() {
    redoable.length = 0;
  }

  /**
   * Presses CODAP's Undo or Redo from the plugin: CODAP's buttons after it, and the plugin's parts CODAP named.
   * @param {"undo" | "redo"} kind
   */
  async function press(kind) {
    const operation = kind === "undo" ? "undoButtonPress" : "redoButtonPress";
    pressing = { heard: [] };
    try {
      const [reply] = await send([{ action: "notify", resource: "undoChangeNotice", values: { operation } }]);
      const values = reply?.success === true ? reply.values ?? {} : {};
      return { state: { canUndo: values.canUndo === true, canRedo: values.canRedo === true }, heard: pressing.heard };
    } finally {
      pressing = null;
    }
  }

  /** @param {JournalEntry} e */
  const callLabel = (e) => `${e.tool}${e.id ? ` (request ${e.id})` : ""}`;

  /**
   * What one undo step did: said to the person, and kept for undo_codap's answer.
   * @param {"undo" | "redo"} kind
   * @param {JournalEntry | null} entry
   * @param {boolean} ok
   * @param {string} text
   * @param {{canUndo: boolean, canRedo: boolean}} [state]
   * @returns {StepOutcome}
   */
  function outcome(kind, entry, ok, text, state) {
    tell(text);
    return { kind, ok, text, call: entry ? { requestId: entry.id, tool: entry.tool } : null, ...(state ? { state } : {}) };
  }

  /**
   * Every restore point that holds the document `was` now stands for `now`: CODAP's API put a change back, and
   * CODAP writes some of what it put back otherwise in its document (a background colour it had none of).
   * @param {RestorePoint} was
   * @param {RestorePoint} now
   */
  function rebase(was, now) {
    const parts = new Set([...undoable, ...redoable, ...entries.flatMap((e) => e.parts)]);
    for (const holder of [...entries, ...parts]) {
      if (holder.before?.key === was.key) holder.before = now;
      if (holder.after?.key === was.key) holder.after = now;
    }
  }

  /**
   * Puts the ids a redone call got (`now`) for the ones it had (`was`) in every other call's restore points.
   * @param {string[]} was
   * @param {string[]} now
   * @param {JournalEntry} redone
   */
  function renumber(was, now, redone) {
    if (was.length !== now.length || !was.length) return;
    /** @param {string} text */
    const swap = (text) => was.reduce((t, id, i) => t.replace(new RegExp(`(?<![0-9])${id}(?![0-9])`, "g"), String(now[i])), text);
    const holders = new Set([...entries, ...undoable, ...redoable, ...entries.flatMap((e) => e.parts)]);
    for (const holder of holders) {
      if (holder === redone || ("entry" in holder && holder.entry === redone)) continue;
      for (const point of [holder.before, holder.after]) {
        if (!point) continue;
        point.key = swap(point.key);
        point.text = swap(point.text);
      }
    }
  }

  /**
   * Takes a call back (undo) or makes it again (redo), as CODAP's Undo or Redo asked.
   * @param {"undo" | "redo"} kind
   * @param {Part | null} part
   */
  async function step(kind, part) {
    const Button = kind === "undo" ? "Undo" : "Redo";
    if (!part) {
      return outcome(kind, null, false,
        `CODAP's ${Button} reached a change this plugin made before it was last loaded (or more than ${MAX_UNDO} ` +
          `steps ago): the plugin keeps no restore point of it, so nothing was changed.`);
    }
    const { entry } = part;
    const label = `the LLM's ${callLabel(entry)}`;
    const verb = kind === "undo" ? "take back" : "make again";
    if (entry.persons.length) {
      return outcome(kind, entry, false,
        `CODAP's ${Button} did not ${verb} ${label}: a person changed the document in CODAP while it ran ` +
          `(${entry.persons.map((m) => JSON.stringify(m)).join(", ")}), and that would be taken along. Nothing was changed.`);
    }
    if (entry.dead) {
      return outcome(kind, entry, false, `CODAP's ${Button} reached ${label}, which undo_codap_tool_calls already took back: nothing was changed.`);
    }
    return kind === "undo" ? undoCall(part, label) : redoCall(part, label);
  }

  /**
   * Takes back a call from its part `top` down to its first part, pressing Undo for each rebuild between them.
   * @param {Part} top
   * @param {string} label
   */
  async function undoCall(top, label) {
    const { entry } = top;
    const whole = entry.parts.length > 1 ? " (with the steps CODAP keeps of it itself: statistics, a rebuild of the document)" : "";
    /** @type {{canUndo: boolean, canRedo: boolean} | undefined} */
    let state;
    let part = top;
    /**
     * @param {string} why what follows "CODAP's Undo did not take back the call: "
     * @param {boolean} [cannot] no request of CODAP's takes it back ("cannot take back")
     */
    const fail = (why, cannot = false) => outcome("undo", entry, false,
      part === top
        ? `CODAP's Undo ${cannot ? "cannot" : "did not"} take back ${label}: ${why}`
        : `CODAP's Undo took back ${label} only in part: ${why} Put the document back with undo_codap_tool_calls.`,
      state);
    for (;;) {
      if (!part.before || !part.after) {
        return fail(`no restore point was kept for it${entry.why ? ` (${entry.why})` : ""}. Nothing was changed; change the ` +
          "document back by hand or ask the LLM.", true);
      }
      let now;
      try {
        now = await points.take();
      } catch (err) {
        return fail(/** @type {Error} */ (err).message);
      }
      if (now.key !== part.after.key) {
        const what = differences(JSON.parse(part.after.key), JSON.parse(now.key));
        return fail(`the document was changed since, other than by Undo and Redo (${what.join(", ") || "details differ"}), ` +
          "most likely by a person while the call ran. Doing it would change that too, so nothing was changed.");
      }
      const { requests, cannot } = inverseOf(JSON.parse(part.before.key), JSON.parse(part.after.key),
        { before: part.before.graphs, after: part.after.graphs });
      if (cannot.length) {
        return fail(`${cannot.join(", ")}, which no request of CODAP's puts back. Nothing was changed; the LLM can ` +
          "put the document back with undo_codap_tool_calls.", true);
      }
      if (requests.length) {
        const replies = await send(requests);
        const refused = replies.findIndex((r) => r?.success !== true);
        if (refused >= 0) {
          return fail(`CODAP refused ${requests[refused].action} ${requests[refused].resource} ` +
            `(${replies[refused]?.values?.error ?? "no reason"}), after taking back what came before it in the call.`);
        }
        const back = await pointNow();
        if (back) {
          const missed = Object.entries(part.before.graphs).flatMap(([id, g]) => {
            const got = back.graphs[id];
            return got ? graphDifferences(g, got, part.after?.graphs[id]).map((d) => `graph ${id} ${d}`) : [];
          });
          if (missed.length) return fail(`CODAP shows ${missed.slice(0, 4).join(", ")} after it was set back.`);
          if (back.key !== part.before.key) rebase(part.before, back);
        }
      }
      const i = entry.parts.indexOf(part);
      if (i <= 0) break;
      const below = entry.parts[i - 1];
      // CODAP's own steps between the parts: pressed until CODAP names the part before them
      let pressed = null;
      for (let n = 0; n <= MAX_STEPS_BETWEEN && !pressed?.heard.length; n++) {
        pressed = await press("undo");
        state = pressed.state;
        if (!pressed.heard.length && !pressed.state.canUndo) break;
      }
      if (pressed?.heard[0] !== below) {
        return fail("CODAP's history did not hold the call's parts in order (the plugin pressed Undo for them itself).");
      }
      part = below;
    }
    entry.undone = true;
    return outcome("undo", entry, true, `Undo: took back ${label}${whole}.`, state);
  }

  /**
   * Makes a call again from its first part: runs it again with its own arguments (its steps of CODAP's own put new
   * parts on CODAP's history, the first part standing for the changes before the first of them).
   * @param {Part} first
   * @param {string} label
   */
  async function redoCall(first, label) {
    const { entry } = first;
    /** @param {string} why */
    const fail = (why) => outcome("redo", entry, false, `CODAP's Redo could not make ${label} again: ${why}`);
    if (first !== entry.parts[0]) return fail("CODAP's history did not hold the call's parts in order. Nothing was changed.");
    if (!first.before || !entry.after) return fail(`no restore point was kept for it${entry.why ? ` (${entry.why})` : ""}. Nothing was changed.`);
    let now;
    try {
      now = await points.take();
    } catch (err) {
      return fail(/** @type {Error} */ (err).message);
    }
    if (now.key !== first.before.key) {
      const what = differences(JSON.parse(first.before.key), JSON.parse(now.key));
      return fail(`the document was changed since, other than by Undo and Redo (${what.join(", ") || "details differ"}). ` +
        "Doing it would change that too, so nothing was changed.");
    }
    const inParts = entry.parts.length > 1;
    const madeBefore = entry.after.key;
    entry.parts = [first];
    running.current = { entry, from: first.before, pending: false, dirty: false, redo: true, steps: 0 };
    let failed = null;
    try {
      await entry.fn(entry.args, { id: entry.id });
    } catch (err) {
      failed = /** @type {Error} */ (err).message;
    }
    const ran = running.current;
    running.current = null;
    const made = await pointNow();
    /** @type {{canUndo: boolean, canRedo: boolean} | undefined} */
    let state;
    if (ran.steps || inParts) {
      // its last part; CODAP's Redo of the parts it made before would apply to another document now: the new step ends it
      /** @type {Part} */
      const last = { entry, before: ran.pending ? made : ran.from, after: made };
      entry.parts.push(last);
      state = (await pushPart(last)) ?? undefined;
    } else {
      first.after = made;
    }
    if (failed) return outcome("redo", entry, false, `CODAP's Redo could not make ${label} again: ${failed}`, state);
    // What the call made again has new ids: the later calls' restore points name them so from now on.
    if (made) renumber(newIds(first.before.key, madeBefore), newIds(first.before.key, made.key), entry);
    entry.after = made;
    entry.undone = false;
    return outcome("redo", entry, true, `Redo: made ${label} again.`, state);
  }

  return { history, pushed, redoEnded };
}
