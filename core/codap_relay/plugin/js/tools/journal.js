// @ts-check
// The journal of the LLM's changing tool calls: CODAP's own Undo and Redo walk through them, and
// undo_codap_tool_calls takes them back.
//
// CODAP 3.1.0 does not record plugin changes in its undo history (its Data Interactive handlers apply them
// without undo), so the plugin keeps its own restore points: CODAP's whole document (v2 JSON, `get document`,
// which CODAP sends to a plugin subscribed to documents as a `document` notification) before and after each
// changing call. The snapshots also show a person's change: the document at the start of a call must be the one
// the previous call left, and the document now the one the last call left.
//
// Each call that changed the document is put on CODAP's own undo history (undoChangeNotice
// undoableActionPerformed), in turn with the person's own changes. When the person (or undo_codap) presses Undo
// there, CODAP asks this plugin to take it back (undoAction): the plugin checks that the document is as the call
// left it and sends the requests that reverse it (inverse.js); Redo (redoAction) runs the call again with its
// own arguments. Whatever cannot be done so is said to the person (and to undo_codap), and nothing is changed.
// The journal lives in this page's memory: the last MAX_CALLS changing calls since the plugin was loaded.

import { withoutNulls } from "./codap_document.js";
import { ToolError, get } from "./context.js";
import { inverseOf } from "./inverse.js";

/**
 * @import {CodapNotification, CodapReply, CodapRequest, Tool, ToolArgs} from "../types.js"
 * @import {V2Component, V2Document} from "./inverse.js"
 */

/**
 * CODAP's document at a moment: `text` to restore it, `key` to compare (without this plugin's window).
 * @typedef {{text: string, key: string}} RestorePoint
 */

/**
 * A changing tool call the journal keeps: its restore points before and after (null when none could be kept:
 * `why`), and the person's actions in CODAP while it ran.
 * @typedef {object} JournalEntry
 * @property {string | null} id its request id
 * @property {string} tool
 * @property {ToolArgs} args
 * @property {Tool} fn the tool, to make the call again (Redo)
 * @property {RestorePoint | null} before
 * @property {RestorePoint | null} after
 * @property {string | null} why
 * @property {string[]} persons
 * @property {boolean} [dead] taken back by undo_codap_tool_calls
 */

/**
 * What one press of CODAP's Undo or Redo did to the plugin's calls.
 * @typedef {{kind: "undo" | "redo", ok: boolean, text: string, call: {requestId: string | null, tool: string} | null}} StepOutcome
 */

/** @typedef {ReturnType<typeof createJournal>} Journal */

export const MAX_CALLS = 10;
/** Calls kept for CODAP's Undo and Redo (CODAP's own history may hold more: older ones are said to be gone). */
export const MAX_UNDO = 20;
/** @type {CodapRequest} */
const UNDOABLE = { action: "notify", resource: "undoChangeNotice", values: { operation: "undoableActionPerformed" } };
/**
 * A larger document is not journaled: each changing call copies it twice, and CODAP takes about 0.3 s to copy a
 * document of 1 MB, which would triple a tool's time. A class's own data (a few hundred rows) is well inside.
 */
export const MAX_STATE_CHARS = 300_000;
const SNAPSHOT_WAIT_MS = 10_000;
const RESTORE_WAIT_MS = 20_000;


/** @param {V2Component | undefined} c */
const componentName = (c) =>
  JSON.stringify(c?.componentStorage?.title || c?.componentStorage?.name || c?.type?.replace(/^DG\./, "") || "component");

/**
 * The ids (guid) in document `b` that `a` has not, in the document's order.
 * @param {string} a
 * @param {string} b
 */
export function newIds(a, b) {
  /** @param {string} text */
  const ids = (text) => [...text.matchAll(/"guid":([0-9]+)/g)].map((m) => m[1]);
  const known = new Set(ids(a));
  return [...new Set(ids(b).filter((id) => !known.has(id)))];
}

/**
 * What differs between two documents, in words: components and datasets added, removed or changed.
 * @param {V2Document | null | undefined} a
 * @param {V2Document | null | undefined} b
 */
export function differences(a, b) {
  /** @type {string[]} */
  const out = [];
  /** @type {(list: Array<{guid: unknown}> | undefined) => Map<unknown, unknown>} */
  const byGuid = (list) => new Map((list ?? []).map((x) => [x.guid, x]));
  /** @type {Array<[string, "components" | "contexts", (x: any) => string]>} */
  const kinds = [
    ["component", "components", componentName],
    ["dataset", "contexts", (d) => JSON.stringify(d?.name ?? "dataset")],
  ];
  for (const [kind, key, name] of kinds) {
    const before = byGuid(a?.[key]);
    const after = byGuid(b?.[key]);
    for (const [guid, x] of after) {
      if (!before.has(guid)) out.push(`${kind} ${name(x)} added`);
      else if (JSON.stringify(before.get(guid)) !== JSON.stringify(x)) out.push(`${kind} ${name(x)} changed`);
    }
    for (const [guid, x] of before) if (!after.has(guid)) out.push(`${kind} ${name(x)} removed`);
  }
  /** @param {V2Document | null | undefined} d */
  const rest = (d) => JSON.stringify({ ...d, components: undefined, contexts: undefined });
  if (!out.length && rest(a) !== rest(b)) out.push("global values or document settings changed");
  return out;
}

/**
 * @param {object} deps
 * @param {(requests: CodapRequest[]) => Promise<CodapReply[]>} deps.send
 * @param {((listener: (value: CodapNotification) => void) => () => void) | null} deps.listen
 * @param {(ms: number) => Promise<void>} deps.sleep
 * @param {((request: CodapRequest, waitMs?: number) => Promise<unknown>) | null} [deps.notice] the plugin's own notices
 *   to CODAP (the undo entries); without it no call goes on CODAP's undo history
 * @param {(text: string) => void} [deps.tell] what the person reads in the plugin's window
 */
export function createJournal({ send, listen, sleep, notice = null, tell = () => {} }) {
  /** @type {JournalEntry[]} */
  const entries = [];
  /** @type {unknown} the plugin's own component's id, once read */
  let frameId = null;
  /** @type {string | null} */
  let off = null; // why the journal stopped recording in this page, if it did
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
  // The calls on CODAP's undo history: not undone (oldest first), and undone (the last undone last).
  /** @type {JournalEntry[]} */
  const undoable = [];
  /** @type {JournalEntry[]} */
  const redoable = [];
  /** @type {{steps: number, last: Promise<StepOutcome | null>}} CODAP's undo steps heard, and what the last did */
  const history = { steps: 0, last: Promise.resolve(/** @type {StepOutcome | null} */ (null)) };
  // A person's action in CODAP while a call runs (or before its restore point is taken) would be folded into the
  // call: CODAP logs each person's action (its Data Interactive requests are not logged), and the plugin watches
  // those log messages (logMessageMonitor) meanwhile. Such a call is never taken back: Undo and
  // undo_codap_tool_calls refuse it and name the actions.
  /** @type {string[] | null} */
  let watching = null;
  notice?.({ action: "register", resource: "logMessageMonitor", values: { message: "*" } }, 5000);
  listen?.((value) => {
    if (value?.resource === "logMessageNotice") {
      const said = String(value?.values?.message ?? "an action");
      if (watching && watching.length < 5) watching.push(said.length > 120 ? `${said.slice(0, 117)}...` : said);
      return;
    }
    if (value?.resource !== "undoChangeNotice") return;
    const operation = value?.values?.operation;
    if (operation === "undoAction" || operation === "redoAction") {
      // CODAP's Undo and Redo take its history's steps in order: the plugin's newest call not undone is this one.
      const undo = operation === "undoAction";
      const entry = (undo ? undoable : redoable).pop() ?? null;
      if (entry) (undo ? redoable : undoable).push(entry);
      history.steps += 1;
      history.last = serial(() => step(undo ? "undo" : "redo", entry));
    } else if (operation === "clearRedo") redoable.length = 0;
    else if (operation === "clearUndo") undoable.length = 0;
  });

  /**
   * Resolves with the first notification `match` accepts, or null after `ms` (only where there is `listen`).
   * @param {(value: CodapNotification) => boolean} match
   * @param {number} ms
   * @returns {{done: Promise<CodapNotification | null>}}
   */
  function waitFor(match, ms) {
    let stop = () => {};
    /** @type {Promise<CodapNotification>} */
    const seen = new Promise((resolve) => {
      stop = /** @type {NonNullable<typeof listen>} */ (listen)((value) => {
        if (match(value)) resolve(value);
      });
    });
    return {
      done: Promise.race([seen, sleep(ms).then(() => null)]).finally(() => stop()),
    };
  }

  /**
   * CODAP's document now: {text (to restore), key (to compare: the document without this plugin's window)}.
   * @returns {Promise<RestorePoint>}
   */
  async function snapshot() {
    if (!listen) throw new ToolError("This plugin cannot hear CODAP's notifications here.", "journal_unavailable");
    const wait = waitFor((v) => v?.resource === "document" && v?.values?.operation === "newDocumentState", SNAPSHOT_WAIT_MS);
    const requests = [get("document"), ...(frameId === null ? [get("interactiveFrame")] : [])];
    const replies = await send(requests);
    if (replies[0]?.success !== true) {
      throw new ToolError(`CODAP did not give its document: ${replies[0]?.values?.error ?? "no reason"}.`, "journal_unavailable");
    }
    if (frameId === null) frameId = replies[1]?.values?.id ?? null;
    const notice = await wait.done;
    if (!notice) throw new ToolError("CODAP did not send its document within 10 s.", "journal_unavailable");
    /** @type {V2Document} */
    const state = withoutNulls(notice.values.state);
    const text = JSON.stringify(state);
    if (text.length > MAX_STATE_CHARS) {
      throw new ToolError(
        `The document is too large to keep restore points of (${Math.round(text.length / 1000)} KB of JSON; the limit is ${MAX_STATE_CHARS / 1000} KB).`,
        "journal_unavailable",
      );
    }
    // A person's click brings a component to the front: its stacking order is no change to take back.
    const doc = {
      ...state,
      components: (state.components ?? [])
        .filter((c) => c.guid !== frameId)
        .map((c) => ({ ...c, layout: { ...c.layout, zIndex: undefined } })),
    };
    return { text, key: JSON.stringify(doc) };
  }

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
        const entry = { id: call?.id ?? null, tool, args, fn, before: null, after: null, why: null, persons: [] };
        watching = entry.persons;
        if (!off) {
          try {
            entry.before = await snapshot();
          } catch (err) {
            off = /** @type {Error} */ (err).message;
          }
        }
        let failed = false;
        try {
          answer({ ok: true, value: await fn(args, call) });
        } catch (err) {
          failed = true;
          answer({ ok: false, err });
        }
        entries.push(entry);
        if (entries.length > MAX_CALLS) entries.shift();
        if (entry.before) {
          try {
            entry.after = await snapshot();
          } catch (err) {
            off = /** @type {Error} */ (err).message;
          }
        }
        entry.why = off;
        await onCodapsHistory(entry, failed);
        watching = null;
      });
      const outcome = await answered;
      if (!outcome.ok) throw outcome.err;
      return outcome.value;
    };
  }

  /**
   * Puts a call that changed the document on CODAP's undo history (one without restore points too: its undo says so).
   * @param {JournalEntry} entry
   * @param {boolean} failed
   */
  async function onCodapsHistory(entry, failed) {
    const changed = entry.before && entry.after ? entry.before.key !== entry.after.key : !failed;
    if (!changed || !notice) return;
    const reply = /** @type {CodapReply | null} */ (await notice(UNDOABLE, 5000));
    if (reply?.success !== true) return;
    undoable.push(entry);
    if (undoable.length > MAX_UNDO) undoable.shift();
    redoable.length = 0; // CODAP drops its redo steps when a new step comes
  }

  /** Until the calls and undo steps so far are done. */
  function settled() {
    return serial(() => {});
  }

  /**
   * What one undo step did: said to the person, and kept for undo_codap's answer.
   * @param {"undo" | "redo"} kind
   * @param {JournalEntry | null} entry
   * @param {boolean} ok
   * @param {string} text
   * @returns {StepOutcome}
   */
  function outcome(kind, entry, ok, text) {
    tell(text);
    return { kind, ok, text, call: entry ? { requestId: entry.id, tool: entry.tool } : null };
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
    for (const e of new Set([...undoable, ...redoable, ...entries])) {
      if (e === redone) continue;
      for (const point of [e.before, e.after]) {
        if (!point) continue;
        point.key = swap(point.key);
        if (point.text) point.text = swap(point.text);
      }
    }
  }

  /**
   * Takes a call back (undo) or makes it again (redo), as CODAP's Undo or Redo asked.
   * @param {"undo" | "redo"} kind
   * @param {JournalEntry | null} entry
   */
  async function step(kind, entry) {
    const Button = kind === "undo" ? "Undo" : "Redo";
    if (!entry) {
      return outcome(kind, null, false,
        `CODAP's ${Button} reached a change this plugin made before it was last loaded (or more than ${MAX_UNDO} ` +
          `calls ago): the plugin keeps no restore point of it, so nothing was changed.`);
    }
    const label = `the LLM's ${callLabel(entry)}`;
    if (entry.persons.length) {
      return outcome(kind, entry, false,
        `CODAP's ${Button} did not ${kind === "undo" ? "take back" : "make again"} ${label}: a person changed the ` +
          `document in CODAP while it ran (${personsOf(entry)}), and that would be taken along. Nothing was changed.`);
    }
    if (entry.dead) {
      return outcome(kind, entry, false, `CODAP's ${Button} reached ${label}, which undo_codap_tool_calls already took back: nothing was changed.`);
    }
    if (!entry.before || !entry.after) {
      return outcome(kind, entry, false,
        `CODAP's ${Button} cannot ${kind === "undo" ? "take back" : "make again"} ${label}: no restore point was kept ` +
          `for it${entry.why ? ` (${entry.why})` : ""}. Nothing was changed; change the document back by hand or ask the LLM.`);
    }
    let now;
    try {
      now = await snapshot();
    } catch (err) {
      return outcome(kind, entry, false, `CODAP's ${Button} could not ${kind === "undo" ? "take back" : "make again"} ${label}: ${/** @type {Error} */ (err).message}`);
    }
    const expected = kind === "undo" ? entry.after : entry.before;
    if (now.key !== expected.key) {
      const what = differences(JSON.parse(expected.key), JSON.parse(now.key));
      return outcome(kind, entry, false,
        `CODAP's ${Button} did not ${kind === "undo" ? "take back" : "make again"} ${label}: the document was changed ` +
          `since, other than by Undo and Redo (${what.join(", ") || "details differ"}), most likely by a person ` +
          "while the call ran. Doing it would change that too, so nothing was changed.");
    }
    if (kind === "undo") {
      const { requests, cannot } = inverseOf(JSON.parse(entry.before.key), JSON.parse(entry.after.key));
      if (cannot.length) {
        return outcome(kind, entry, false,
          `CODAP's Undo cannot take back ${label}: ${cannot.join(", ")}, which no request of CODAP's puts back. ` +
            "Nothing was changed; the LLM can put the document back with undo_codap_tool_calls.");
      }
      const replies = requests.length ? await send(requests) : [];
      const refused = replies.findIndex((r) => r?.success !== true);
      entry.before = await snapshot().catch(() => null); // Redo starts from the document as it is now
      if (refused >= 0) {
        return outcome(kind, entry, false,
          `CODAP's Undo took back ${label} only in part: CODAP refused ${requests[refused].action} ` +
            `${requests[refused].resource} (${replies[refused]?.values?.error ?? "no reason"}).`);
      }
      return outcome(kind, entry, true, `Undo: took back ${label}.`);
    }
    try {
      await entry.fn(entry.args, { id: entry.id });
    } catch (err) {
      return outcome(kind, entry, false, `CODAP's Redo could not make ${label} again: ${/** @type {Error} */ (err).message}`);
    }
    const made = await snapshot().catch(() => null);
    // What the call made again has new ids: the later calls' restore points name them so from now on.
    if (made) renumber(newIds(entry.before.key, entry.after.key), newIds(entry.before.key, made.key), entry);
    entry.after = made;
    return outcome(kind, entry, true, `Redo: made ${label} again.`);
  }

  /** @param {JournalEntry} e */
  const personsOf = (e) => e.persons.map((m) => JSON.stringify(m)).join(", ");

  /** @param {JournalEntry} e */
  const callLabel = (e) => `${e.tool}${e.id ? ` (request ${e.id})` : ""}`;

  function listing() {
    return entries.length
      ? `Calls that can be taken back, oldest first: ${entries.map(callLabel).join(", ")}.`
      : "No changing tool calls are recorded in this plugin page (it keeps those since it was loaded).";
  }

  /**
   * Where to start taking back: the index of the first call to take back.
   * @param {{sinceRequestId?: string, lastCalls?: number}} args undo_codap_tool_calls's
   */
  function startOf({ sinceRequestId, lastCalls }) {
    if ((sinceRequestId === undefined) === (lastCalls === undefined)) {
      throw new ToolError(`Give either sinceRequestId or lastCalls. ${listing()}`, "invalid_arguments", {
        calls: entries.map((e) => ({ requestId: e.id, tool: e.tool })),
      });
    }
    if (lastCalls !== undefined) {
      if (lastCalls > entries.length) {
        throw new ToolError(
          `Only ${entries.length} changing tool call${entries.length === 1 ? " is" : "s are"} recorded. ${listing()}`,
          "call_not_found",
          { calls: entries.map((e) => ({ requestId: e.id, tool: e.tool })) },
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
        { calls: entries.map((e) => ({ requestId: e.id, tool: e.tool })) },
      );
    }
    return at;
  }

  /**
   * Puts the document back as it was before entries[at]; refuses when anything else changed it since.
   * @param {number} at
   */
  function takeBack(at) {
    return serial(() => takeBackNow(at));
  }

  /** @param {number} at */
  async function takeBackNow(at) {
    const calls = entries.slice(at);
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
    const now = await snapshot();
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
    const ended = waitFor(
      (v) => v?.resource === "documentChangeNotice" && v?.values?.operation === "updateDocumentEnded",
      RESTORE_WAIT_MS,
    );
    /** @type {CodapRequest} */
    const restore = { action: "update", resource: "document", values: JSON.parse(/** @type {RestorePoint} */ (calls[0].before).text) };
    const [reply] = await send([restore]);
    if (reply?.success !== true) {
      throw new ToolError(`CODAP refused to restore the document: ${reply?.values?.error ?? "no reason"}.`, "codap_error");
    }
    const finished = await ended.done;
    entries.splice(at);
    for (const call of calls) call.dead = true; // CODAP's Undo, reaching them, says they are gone
    // The document as CODAP rebuilt it is what the calls before now left: the next check starts from it.
    try {
      const restored = await snapshot();
      if (entries.length) entries[entries.length - 1].after = restored;
    } catch (err) {
      off = /** @type {Error} */ (err).message;
    }
    return { calls, finished: finished !== null };
  }

  return { around, startOf, takeBack, callLabel, entries, history, settled };
}
