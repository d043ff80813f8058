// @ts-check
// Restore points: CODAP's document at a moment (v2 JSON, read as codap_document.js reads it, so a read another
// part of the call made is not made again), with CODAP's own description of each graph (graph_inverse.js), which
// the document does not hold in the form CODAP's plugin API sets it. And what differs between two of them.

import { keepItemIds, readDocument } from "./codap_document.js";
import { ToolError, get } from "./context.js";

/**
 * @import {CodapId} from "../types.js"
 * @import {DocumentIO} from "./codap_document.js"
 * @import {GraphHeld} from "./graph_inverse.js"
 * @import {V2Component, V2Document} from "./codap_document.js"
 */

/**
 * CODAP's document at a moment: `text` to restore it, `key` to compare (without this plugin's window and the
 * components' stacking order), `graphs` CODAP's description of each graph by id.
 * @typedef {{text: string, key: string, graphs: Record<string, GraphHeld>}} RestorePoint
 */

/**
 * A larger document is not journaled: each changing call copies it twice, and CODAP takes about 0.3 s to copy a
 * document of 1 MB, which would triple a tool's time. A class's own data (a few hundred rows) is well inside.
 */
export const MAX_STATE_CHARS = 300_000;

/** @param {V2Component | undefined} c */
export const componentName = (c) =>
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
 * Takes restore points from CODAP.
 * @param {DocumentIO} io
 */
export function createRestorePoints(io) {
  /** @type {CodapId | null} the plugin's own component's id, once read */
  let frameId = null;

  async function frame() {
    if (frameId === null) {
      const [reply] = await io.send([get("interactiveFrame")]);
      frameId = reply?.success === true ? reply.values?.id ?? null : null;
    }
    return frameId;
  }

  /**
   * CODAP's description of each graph of `doc` now, in one message.
   * @param {V2Document} doc
   * @returns {Promise<Record<string, GraphHeld>>}
   */
  async function graphsOf(doc) {
    const ids = (doc.components ?? []).filter((c) => c.type === "DG.GraphView").map((c) => String(c.guid));
    const replies = await io.send(ids.map((id) => get(`component[${id}]`)));
    return Object.fromEntries(ids.flatMap((id, i) => (replies[i]?.success === true ? [[id, { detail: replies[i].values ?? {} }]] : [])));
  }

  /**
   * The restore point of a document just read (the graphs' descriptions read now: nothing changed since).
   * @param {V2Document} doc
   * @returns {Promise<RestorePoint>}
   */
  async function pointOf(doc) {
    const text = JSON.stringify(doc);
    if (text.length > MAX_STATE_CHARS) {
      throw new ToolError(
        `The document is too large to keep restore points of (${Math.round(text.length / 1000)} KB of JSON; the limit is ${MAX_STATE_CHARS / 1000} KB).`,
        "journal_unavailable",
      );
    }
    const own = await frame();
    // A person's click brings a component to the front: its stacking order is no change to take back.
    const key = JSON.stringify({
      ...doc,
      components: (doc.components ?? [])
        .filter((c) => String(c.guid) !== String(own))
        .map((c) => ({ ...c, layout: { ...c.layout, zIndex: undefined } })),
    });
    return { text, key, graphs: await graphsOf(doc) };
  }

  /** CODAP's document now, as a restore point. */
  async function take() {
    if (!io.listen) throw new ToolError("This plugin cannot hear CODAP's notifications here.", "journal_unavailable");
    try {
      return await pointOf(/** @type {V2Document} */ (await readDocument(io)));
    } catch (err) {
      if (err instanceof ToolError && err.code === "document_unavailable") throw new ToolError(err.message, "journal_unavailable");
      throw err;
    }
  }

  /** @type {Map<string, string>} each row's item id, by its case id, as read before a call that deletes rows */
  const items = new Map();

  /**
   * Reads each row's item id (keepItemIds) before a call that deletes rows, so that they come back with it when
   * the document is put back (namedItems).
   * @param {RestorePoint} point
   */
  async function learnItemIds(point) {
    const doc = /** @type {V2Document} */ (JSON.parse(point.text));
    await keepItemIds(io, doc);
    for (const ctx of doc.contexts ?? []) {
      for (const c of ctx.collections?.[ctx.collections.length - 1]?.cases ?? []) if (c.itemID) items.set(String(c.guid), String(c.itemID));
    }
  }

  /**
   * Names the item of each row of `doc` whose id was read before (learnItemIds), in place; keepItemIds names the
   * rows CODAP still has.
   * @param {V2Document} doc
   */
  function namedItems(doc) {
    for (const ctx of doc.contexts ?? []) {
      for (const c of ctx.collections?.[ctx.collections.length - 1]?.cases ?? []) {
        const known = items.get(String(c.guid));
        if (known) c.itemID = known;
      }
    }
    return doc;
  }

  return { take, pointOf, graphsOf, learnItemIds, namedItems, frame };
}
