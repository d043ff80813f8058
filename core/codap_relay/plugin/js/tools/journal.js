// @ts-check
// The journal of the LLM's changing tool calls, to take them back later (undo_codap_tool_calls).
//
// CODAP 3.1.0 does not record plugin changes in its undo history (its Data Interactive handlers apply them
// without undo), so the plugin keeps its own restore points: CODAP's whole document (v2 JSON, `get document`,
// which CODAP sends to a plugin subscribed to documents as a `document` notification) before and after each
// changing call. Taking calls back puts the document from before the first of them (`update document`; CODAP
// keeps a subscribed plugin's own window as it is). The snapshots also show a person's change: the document at
// the start of a call must be the one the previous call left, and the document now the one the last call left.
// The journal lives in this page's memory: the last MAX_CALLS changing calls since the plugin was loaded.

import { ToolError, get } from "./context.js";

export const MAX_CALLS = 10;
/**
 * A larger document is not journaled: each changing call copies it twice, and CODAP takes about 0.3 s to copy a
 * document of 1 MB, which would triple a tool's time. A class's own data (a few hundred rows) is well inside.
 */
export const MAX_STATE_CHARS = 300_000;
const SNAPSHOT_WAIT_MS = 10_000;
const RESTORE_WAIT_MS = 20_000;

/** The v2 document without empty (null) fields: CODAP 3.1.0 cannot read its own nulls back (a title null fails). */
function withoutNulls(value) {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = withoutNulls(v);
    return out;
  }
  return value;
}

const componentName = (c) =>
  JSON.stringify(c?.componentStorage?.title || c?.componentStorage?.name || c?.type?.replace(/^DG\./, "") || "component");

/** What differs between two documents, in words: components and datasets added, removed or changed. */
export function differences(a, b) {
  const out = [];
  const byGuid = (list) => new Map((list ?? []).map((x) => [x.guid, x]));
  /** @type {Array<[string, string, (x: any) => string]>} */
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
  const rest = (d) => JSON.stringify({ ...d, components: undefined, contexts: undefined });
  if (!out.length && rest(a) !== rest(b)) out.push("global values or document settings changed");
  return out;
}

export function createJournal({ send, listen, sleep }) {
  const entries = []; // {id, tool, before: {text, key} | null, after: {key} | null}
  let frameId = null;
  let off = null; // why the journal stopped recording in this page, if it did
  let afterwards = Promise.resolve(); // the restore point being taken after the last changing call

  /** Resolves with the first notification `match` accepts, or null after `ms`. */
  function waitFor(match, ms) {
    let stop = () => {};
    const seen = new Promise((resolve) => {
      stop = listen((value) => {
        if (match(value)) resolve(value);
      });
    });
    return {
      done: Promise.race([seen, sleep(ms).then(() => null)]).finally(() => stop()),
    };
  }

  /** CODAP's document now: {text (to restore), key (to compare: the document without this plugin's window)}. */
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
    const state = withoutNulls(notice.values.state);
    const text = JSON.stringify(state);
    if (text.length > MAX_STATE_CHARS) {
      throw new ToolError(
        `The document is too large to keep restore points of (${Math.round(text.length / 1000)} KB of JSON; the limit is ${MAX_STATE_CHARS / 1000} KB).`,
        "journal_unavailable",
      );
    }
    const doc = { ...state, components: (state.components ?? []).filter((c) => c.guid !== frameId) };
    return { text, key: JSON.stringify(doc) };
  }

  /**
   * Wraps a changing tool: restore points before and after it (`changes(args)` false: a call that changes
   * nothing, not journaled). A failure to record never fails the tool; it stops the journal for this page.
   */
  /**
   * @param {string} tool
   * @param {(args: any, call?: {id: string}) => Promise<any>} fn
   * @param {(args: any) => boolean} [changes]
   */
  function around(tool, fn, changes = () => true) {
    return async (args, call) => {
      if (!changes(args)) return fn(args, call);
      await settled();
      const entry = { id: call?.id ?? null, tool, before: null, after: null };
      if (!off) {
        try {
          entry.before = await snapshot();
        } catch (err) {
          off = err.message;
        }
      }
      try {
        return await fn(args, call);
      } finally {
        entries.push(entry);
        if (entries.length > MAX_CALLS) entries.shift();
        // The restore point after the call is taken once its answer is on its way: the model does not wait for
        // it, and the next changing call (or a take-back) waits for it first. CODAP answers messages in order, so
        // it still sees the document as this call left it.
        if (entry.before) {
          afterwards = snapshot().then(
            (taken) => {
              entry.after = { key: taken.key };
            },
            (err) => {
              off = err.message;
            },
          );
        }
      }
    };
  }

  /** Until the last call's restore point is taken. */
  async function settled() {
    await afterwards;
  }

  const callLabel = (e) => `${e.tool}${e.id ? ` (request ${e.id})` : ""}`;

  function listing() {
    return entries.length
      ? `Calls that can be taken back, oldest first: ${entries.map(callLabel).join(", ")}.`
      : "No changing tool calls are recorded in this plugin page (it keeps those since it was loaded).";
  }

  /** Where to start taking back: the index of the first call to take back. */
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

  /** Puts the document back as it was before entries[at]; refuses when anything else changed it since. */
  async function takeBack(at) {
    await settled();
    const calls = entries.slice(at);
    const missing = calls.find((e) => !e.before || !e.after);
    if (missing) {
      throw new ToolError(
        `No restore point was kept for ${callLabel(missing)}${off ? ` (${off})` : ""}, so the calls cannot be taken back.`,
        "journal_unavailable",
      );
    }
    const now = await snapshot();
    for (let i = 0; i < calls.length; i++) {
      const left = calls[i].after;
      const next = i + 1 < calls.length ? calls[i + 1].before : now;
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
    const restore = { action: "update", resource: "document", values: JSON.parse(calls[0].before.text) };
    const [reply] = await send([restore]);
    if (reply?.success !== true) {
      throw new ToolError(`CODAP refused to restore the document: ${reply?.values?.error ?? "no reason"}.`, "codap_error");
    }
    const finished = await ended.done;
    entries.splice(at);
    // The document as CODAP rebuilt it is what the calls before now left: the next check starts from it.
    try {
      const restored = await snapshot();
      if (entries.length) entries[entries.length - 1].after = { key: restored.key };
    } catch (err) {
      off = err.message;
    }
    return { calls, finished: finished !== null };
  }

  return { around, startOf, takeBack, callLabel, entries };
}
