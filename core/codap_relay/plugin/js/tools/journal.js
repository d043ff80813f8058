// @ts-check
// The journal of the LLM's changing tool calls: CODAP's own Undo and Redo walk through them, and
// undo_codap_tool_calls takes them back.
//
// CODAP 3.1.0 does not record plugin changes in its undo history (its Data Interactive handlers apply them
// without undo), so the plugin keeps its own restore points (restore_points.js): CODAP's document before and after
// each changing call, with CODAP's own description of each graph. They also show a person's change: the document
// at the start of a call must be the one the previous call left, and the document now the one the last call left.
//
// Each call that changed the document is put on CODAP's own undo history (undoChangeNotice
// undoableActionPerformed), in turn with the person's own changes; undo_steps.js takes it back or makes it again
// when CODAP's Undo or Redo reaches it. A few of the plugin API's requests CODAP records as steps of its own, as
// it records a person's: a statistic shown, changed or taken off a graph (adornment create, update, delete), a
// graph's Rescale, and a rebuild of the whole document (`update document`, for what CODAP's API cannot set:
// codap_document.js). A call making such a step goes on the history in parts: its other changes before the step,
// the step (CODAP's, which CODAP takes back and makes again exactly), and its changes after.
// The journal lives in this page's memory: the last MAX_CALLS changing calls since the plugin was loaded.

import { restoreDocument } from "./codap_document.js";
import { ToolError } from "./context.js";
import { createRestorePoints, differences } from "./restore_points.js";
import { createUndoSteps } from "./undo_steps.js";

/**
 * @import {CodapNotification, CodapReply, CodapRequest, Tool, ToolArgs} from "../types.js"
 * @import {DocumentCache, V2Document} from "./codap_document.js"
 * @import {RestorePoint} from "./restore_points.js"
 */

/**
 * A changing tool call the journal keeps: its restore points before and after (null when none could be kept:
 * `why`), the person's actions in CODAP while it ran, and its parts on CODAP's undo history.
 * @typedef {object} JournalEntry
 * @property {string | null} id its request id
 * @property {string} tool
 * @property {ToolArgs} args
 * @property {Tool} fn the tool, to make the call again (Redo)
 * @property {RestorePoint | null} before
 * @property {RestorePoint | null} after
 * @property {string | null} why
 * @property {string[]} persons
 * @property {Part[]} parts
 * @property {boolean} [dead] taken back by undo_codap_tool_calls
 * @property {boolean} [undone] taken back by CODAP's Undo (and not made again by its Redo): no longer in the document
 */

/**
 * A part of a call on CODAP's undo history: its changes between two of CODAP's own steps (or the call's start and
 * end). A call's parts after the first each follow steps of CODAP's own.
 * @typedef {{entry: JournalEntry, before: RestorePoint | null, after: RestorePoint | null}} Part
 */

/**
 * What one press of CODAP's Undo or Redo did to the plugin's calls; `state`: CODAP's buttons after the steps the
 * plugin pressed on its own (the rest of a call made in parts).
 * @typedef {{kind: "undo" | "redo", ok: boolean, text: string, call: {requestId: string | null, tool: string} | null,
 *   state?: {canUndo: boolean, canRedo: boolean}}} StepOutcome
 */

/**
 * The call running now (each of its messages that may change the document is told to the journal first), or being
 * made again by Redo: where its current part starts (`pending`: just after a step of CODAP's own, read when
 * needed), whether it changed anything since (`dirty`), and how many steps CODAP recorded for it.
 * @typedef {{entry: JournalEntry, from: RestorePoint | null, pending: boolean, dirty: boolean, redo: boolean,
 *   steps: number}} Running
 */

/** @typedef {ReturnType<typeof createJournal>} Journal */

export const MAX_CALLS = 10;
export { MAX_UNDO } from "./undo_steps.js";
/** @type {CodapRequest} */
export const UNDOABLE = { action: "notify", resource: "undoChangeNotice", values: { operation: "undoableActionPerformed" } };
/** The tools whose calls delete rows: their restore point before names each row's item, for the rows to come back with it. */
const DELETES_ROWS = new Set(["delete_codap_cases", "delete_codap_dataset"]);
const TAKE_BACK = "as taking calls back does";

/**
 * Whether CODAP records a request as a step of its own undo history (tried in CODAP 3.1.0: a component's update,
 * an attribute's colours, a case's values are not recorded; these are).
 * @param {CodapRequest} r
 */
export const recordedByCodap = (r) =>
  (/\.adornment(\[[^\]]*\])?$/.test(r.resource) && r.action !== "get") ||
  (r.action === "notify" && /^component\[/.test(r.resource) && /** @type {any} */ (r.values)?.request === "autoScale") ||
  (r.action === "update" && r.resource === "document");

/**
 * @param {object} deps
 * @param {(requests: CodapRequest[]) => Promise<CodapReply[]>} deps.send
 * @param {((listener: (value: CodapNotification) => void) => () => void) | null} deps.listen
 * @param {(ms: number) => Promise<void>} deps.sleep
 * @param {DocumentCache} [deps.documents]
 * @param {((request: CodapRequest, waitMs?: number) => Promise<unknown>) | null} [deps.notice] the plugin's own notices
 *   to CODAP (the undo entries); without it no call goes on CODAP's undo history
 * @param {(text: string) => void} [deps.tell] what the person reads in the plugin's window
 */
export function createJournal({ send, listen, sleep, documents, notice = null, tell = () => {} }) {
  const io = { send, listen, sleep, documents };
  const points = createRestorePoints(io);
  /** @type {JournalEntry[]} */
  const entries = [];
  /** @type {string | null} why the journal stopped recording in this page, if it did */
  let off = null;
  // Calls, their restore points and CODAP's undo steps run one at a time, in the order they came.
  /** @type {Promise<unknown>} */
  let tail = Promise.resolve();
  /** @type {<T>(job: () => T | Promise<T>) => Promise<T>} */
  const serial = (job) => {
    const run = tail.then(job);
    tail = run.then(
      () => {},
      () => {},
    );
    return run;
  };
  /** @type {{current: Running | null}} */
  const running = { current: null };
  // A person's action in CODAP while a call runs (or before its restore point is taken) would be folded into the
  // call: CODAP logs each person's action (its Data Interactive requests are not logged), and the plugin watches
  // those log messages (logMessageMonitor) meanwhile. Such a call is never taken back: Undo and
  // undo_codap_tool_calls refuse it and name the actions.
  /** @type {{list: string[] | null}} */
  const watching = { list: null };
  notice?.({ action: "register", resource: "logMessageMonitor", values: { message: "*" } }, 5000);
  listen?.((value) => {
    if (value?.resource !== "logMessageNotice") return;
    const said = String(value?.values?.message ?? "an action");
    if (watching.list && watching.list.length < 5) watching.list.push(said.length > 120 ? `${said.slice(0, 117)}...` : said);
  });

  /** A restore point now; a failure stops the journal for this page. */
  async function pointNow() {
    if (off) return null;
    try {
      return await points.take();
    } catch (err) {
      off = /** @type {Error} */ (err).message;
      return null;
    }
  }

  /**
   * Puts a part of a call on CODAP's undo history (one without restore points too: its undo says so); CODAP's
   * buttons after it, or null where it is not on the history.
   * @param {Part} part
   * @returns {Promise<{canUndo: boolean, canRedo: boolean} | null>}
   */
  async function pushPart(part) {
    if (!notice) return null;
    const reply = /** @type {CodapReply | null} */ (await notice(UNDOABLE, 5000));
    if (reply?.success !== true) return null;
    steps.pushed(part);
    return { canUndo: reply.values?.canUndo === true, canRedo: reply.values?.canRedo === true };
  }

  const steps = createUndoSteps({ send, listen, points, serial, tell, running, pushPart, pointNow, entries });

  /**
   * Wraps a changing tool: restore points before and after it (`changes(args)` false: a call that changes
   * nothing, not journaled), then the call on CODAP's undo history if it changed the document. A failure to record
   * never fails the tool; it stops the journal for this page. The answer does not wait for the restore point
   * after the call: the next call, undo step or take-back does.
   * @param {string} tool
   * @param {Tool} fn
   * @param {(args: ToolArgs) => boolean} [changes]
   * @returns {Tool}
   */
  function around(tool, fn, changes = () => true) {
    return async (args, call) => {
      if (!changes(args)) return fn(args, call);
      /** @typedef {{ok: true, value: import("../types.js").ToolResult, err?: undefined} | {ok: false, err: unknown, value?: undefined}} Answer */
      /** @type {(outcome: Answer) => void} */
      let answer = () => {};
      /** @type {Promise<Answer>} */
      const answered = new Promise((resolve) => (answer = resolve));
      serial(async () => {
        /** @type {JournalEntry} */
        const entry = { id: call?.id ?? null, tool, args, fn, before: null, after: null, why: null, persons: [], parts: [] };
        watching.list = entry.persons;
        entry.before = await pointNow();
        if (entry.before && (DELETES_ROWS.has(tool) || (tool === "codap_api" && args?.action === "delete"))) {
          await points.learnItemIds(entry.before).catch(() => {});
        }
        running.current = { entry, from: entry.before, pending: false, dirty: false, redo: false, steps: 0 };
        let failed = false;
        try {
          answer({ ok: true, value: await fn(args, call) });
        } catch (err) {
          failed = true;
          answer({ ok: false, err });
        }
        const ran = running.current;
        running.current = null;
        entries.push(entry);
        if (entries.length > MAX_CALLS) entries.shift();
        if (entry.before) entry.after = await pointNow();
        entry.why = off;
        /** @type {Part} */
        const last = { entry, before: ran.pending ? entry.after : ran.from, after: entry.after };
        const changed = last.before && last.after ? last.before.key !== last.after.key : !failed;
        // after a step of CODAP's the call's last part goes on the history even when empty: Undo reaching it takes
        // the rest of the call back
        if (changed || ran.steps) {
          entry.parts.push(last);
          await pushPart(last);
        }
        watching.list = null;
      });
      const outcome = await answered;
      if (!outcome.ok) throw outcome.err;
      return outcome.value;
    };
  }

  /**
   * Told of each message of the running call that may change the document, before it is sent: a request CODAP
   * records itself ends the call's part so far (its restore point read where the part changed anything), and
   * another after such a step starts the next part (read then, before it changes anything).
   * @param {CodapRequest[]} requests
   */
  async function sending(requests) {
    const now = running.current;
    if (!now || !requests.some((r) => r?.action !== "get")) return;
    if (requests.some((r) => r.action === "update" && r.resource === "document")) return; // told by rebuilding()
    if (requests.some(recordedByCodap)) {
      await codapStep(null);
      return;
    }
    if (now.pending) {
      now.from = now.from ? await pointNow() : null;
      now.pending = false;
    }
    now.dirty = true;
  }

  /**
   * A step CODAP records itself comes (`doc`: the document just before it, where known): the call's part so far
   * goes on the history (the first part even when empty, for Undo to find where the call starts).
   * @param {V2Document | null} doc
   */
  async function codapStep(doc) {
    const now = /** @type {Running} */ (running.current);
    if (!now.pending || now.dirty) {
      const point = now.from && now.dirty ? await (doc ? points.pointOf(doc) : points.take()).catch(() => null) : now.from;
      const { entry } = now;
      if (now.redo && now.steps === 0 && entry.parts.length === 1) {
        entry.parts[0].after = point; // made again from its first part, which is on the history already
      } else {
        /** @type {Part} */
        const part = { entry, before: now.from, after: point };
        entry.parts.push(part);
        await pushPart(part);
      }
    }
    now.pending = true;
    now.dirty = false;
    now.steps += 1;
    steps.redoEnded(); // CODAP ends its Redo at a new step
  }

  /**
   * Told by codap_document.js just before a rebuild, with the document as it is then.
   * @param {V2Document} doc
   */
  async function rebuilding(doc) {
    if (running.current) await codapStep(doc);
  }

  /**
   * Told just after a rebuild, with the document read back: the call's next part starts from it.
   * @param {V2Document} doc
   */
  async function rebuilt(doc) {
    const now = running.current;
    if (!now?.pending || now.dirty) return;
    now.from = now.from ? await points.pointOf(doc).catch(() => null) : null;
    now.pending = false;
  }

  /** Until the calls and undo steps so far are done. */
  function settled() {
    return serial(() => {});
  }

  /** @param {JournalEntry} e */
  const personsOf = (e) => e.persons.map((m) => JSON.stringify(m)).join(", ");

  /** @param {JournalEntry} e */
  const callLabel = (e) => `${e.tool}${e.id ? ` (request ${e.id})` : ""}`;

  /** The calls whose changes are in the document (not taken back by CODAP's Undo). */
  const live = () => entries.filter((e) => !e.undone);

  function listing() {
    const calls = live();
    return calls.length
      ? `Calls that can be taken back, oldest first: ${calls.map(callLabel).join(", ")}.`
      : "No changing tool calls are recorded in this plugin page (it keeps those since it was loaded).";
  }

  /**
   * Where to start taking back: the index of the first call to take back.
   * @param {{sinceRequestId?: string, lastCalls?: number}} args undo_codap_tool_calls's
   */
  function startOf({ sinceRequestId, lastCalls }) {
    const entries = live();
    const calls = entries.map((e) => ({ requestId: e.id, tool: e.tool }));
    if ((sinceRequestId === undefined) === (lastCalls === undefined)) {
      throw new ToolError(`Give either sinceRequestId or lastCalls. ${listing()}`, "invalid_arguments", { calls });
    }
    if (lastCalls !== undefined) {
      if (lastCalls > entries.length) {
        throw new ToolError(
          `Only ${entries.length} changing tool call${entries.length === 1 ? " is" : "s are"} recorded. ${listing()}`,
          "call_not_found",
          { calls },
        );
      }
      return entries.length - lastCalls;
    }
    const at = entries.findIndex((e) => e.id === sinceRequestId);
    if (at < 0) {
      throw new ToolError(
        `Request ${JSON.stringify(sinceRequestId)} is not among the changing tool calls this plugin page recorded ` +
          `(the last ${MAX_CALLS} since it was loaded; read-only calls change nothing to take back). ${listing()}`,
        "call_not_found",
        { calls },
      );
    }
    return at;
  }

  /**
   * Puts the document back as it was before the calls in the document from the `at`th on; refuses when anything
   * else changed it since.
   * @param {number} at
   */
  function takeBack(at) {
    return serial(() => takeBackNow(at));
  }

  /** @param {number} at */
  async function takeBackNow(at) {
    const calls = live().slice(at);
    const mixed = calls.find((e) => e.persons.length);
    if (mixed) {
      throw new ToolError(
        `A person changed the document in CODAP while ${callLabel(mixed)} ran (${personsOf(mixed)}): its restore ` +
          "points hold that change too, so taking the calls back would undo it as well. Nothing was changed.",
        "changed_outside",
        { changes: mixed.persons, after: mixed.id },
      );
    }
    const missing = calls.find((e) => !e.before || !e.after);
    if (missing) {
      throw new ToolError(
        `No restore point was kept for ${callLabel(missing)}${off ? ` (${off})` : ""}, so the calls cannot be taken back.`,
        "journal_unavailable",
      );
    }
    const now = await points.take();
    for (let i = 0; i < calls.length; i++) {
      // every call has both restore points (checked above)
      const left = /** @type {RestorePoint} */ (calls[i].after);
      const next = /** @type {RestorePoint} */ (i + 1 < calls.length ? calls[i + 1].before : now);
      if (left.key !== next.key) {
        const what = differences(JSON.parse(left.key), JSON.parse(next.key));
        const when = i + 1 < calls.length ? `between ${callLabel(calls[i])} and ${callLabel(calls[i + 1])}` : `after ${callLabel(calls[i])}`;
        throw new ToolError(
          `The document was changed outside these tools ${when} (${what.join(", ") || "details differ"}): most likely ` +
            "by the person in CODAP. Taking the calls back would undo that work too, so nothing was changed. Ask " +
            "the person, or change the document back with the tools.",
          "changed_outside",
          { changes: what, after: calls[i].id },
        );
      }
    }
    // Rebuilt from the restore point as CODAP reads a saved document: the rows keep their item ids (the caseIds
    // the tools hand out), and it refuses where the rebuild would move a web page from http:// to https://.
    const restored = points.namedItems(JSON.parse(/** @type {RestorePoint} */ (calls[0].before).text));
    const { ended } = await restoreDocument(io, restored, await points.frame(), TAKE_BACK);
    const finished = await ended;
    entries.splice(entries.indexOf(calls[0]));
    for (const call of calls) call.dead = true; // CODAP's Undo, reaching them, says they are gone
    // The document as CODAP rebuilt it is what the calls before now left: the next check starts from it.
    const after = await pointNow();
    const last = live().pop();
    if (last && after) last.after = after;
    return { calls, finished };
  }

  return {
    around, startOf, takeBack, callLabel, entries, history: steps.history, settled, sending, rebuilding, rebuilt,
    personsOf,
  };
}
