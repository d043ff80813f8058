// @ts-check
// CODAP's whole document in the form CODAP saves it (v2 JSON): read through the `document` notification CODAP
// sends a plugin subscribed to documents (`get document`), and replaced with `update document`, as CODAP's own
// Story Builder does. Some settings CODAP's plugin API cannot reach (a graph's bins, its box plot) are in that form:
// a tool changes them by rebuilding the document with them changed (rebuildComponent).
//
// CODAP rebuilds every component and dataset from the JSON. It keeps every id the JSON holds (components,
// datasets, collections, attributes, cases) but gives items (the rows, whose ids the tools call caseIds) new ids
// unless each child-most case names its item (`itemID`): keepItemIds adds them, one `itemByCaseID` read per row in
// one message. Whatever else CODAP rebuilds differently is found by reading the document back and comparing.

import { ToolError } from "../errors.js";
import { componentSizes, redrawWords, restoreSizes, withoutFormulaValues } from "./rebuild_keep.js";

/**
 * @import {CodapId, CodapNotification, CodapReply, CodapRequest} from "../types.js"
 */

/**
 * The parts of the document these tools read (the rest is kept as it is).
 * @typedef {{guid: CodapId, type?: string, componentStorage?: Record<string, any>, layout?: Record<string, any>}} V2Component
 * @typedef {{guid: CodapId, name?: string, attrs?: Array<Record<string, any>>, cases?: Array<Record<string, any>>}} V2Collection
 * @typedef {{guid: CodapId, name?: string, collections?: V2Collection[], setAsideItems?: unknown[]}} V2Context
 * @typedef {{components?: V2Component[], contexts?: V2Context[], [key: string]: unknown}} V2Document
 */

/**
 * What reading and replacing the document needs: the query layer's `send`, the plugin's notifications, a pause;
 * `documents`, the document as last read while nothing changed it since; `journal`, told of each rebuild (the
 * rebuild is a step of CODAP's own undo history between the call's parts, journal.js).
 * @typedef {object} DocumentIO
 * @property {(requests: CodapRequest[]) => Promise<CodapReply[]>} send
 * @property {((fn: (value: CodapNotification) => void) => () => void) | null} listen
 * @property {(ms: number) => Promise<void>} sleep
 * @property {DocumentCache} [documents]
 * @property {RebuildWatcher} [journal]
 */

/**
 * Told of each rebuild a tool makes, with the document just before and just after it.
 * @typedef {object} RebuildWatcher
 * @property {(doc: V2Document) => Promise<void>} rebuilding
 * @property {(doc: V2Document) => Promise<void>} rebuilt
 */

/**
 * CODAP's document as last read, while nothing can have changed it since: a request other than a `get` from these
 * tools, or any notification from CODAP (a person's logged action, a dataset changed by another plugin, an undo
 * step) makes it stale. CODAP makes each read wait up to 2 s for every web page in the document to give its state
 * (a plain page never does: iframe-phone's timeout), so a read saved is up to 2 s saved per web page.
 * @typedef {ReturnType<typeof createDocumentCache>} DocumentCache
 */

/** A cache of the last document read (its JSON text), valid until the next change. */
export function createDocumentCache() {
  let version = 0;
  /** @type {{text: string, version: number} | null} */
  let held = null;
  return {
    /** Something may have changed the document. */
    changed() {
      version += 1;
      held = null;
    },
    /** The version to hold a document read from now under. */
    now: () => version,
    /**
     * Keeps a document read when the version was `at` (dropped if anything changed since).
     * @param {string} text
     * @param {number} at
     */
    hold(text, at) {
      if (at === version) held = { text, version };
    },
    /** The document as last read, if nothing changed since (a copy the caller may change). @returns {V2Document | null} */
    fresh: () => (held && held.version === version ? JSON.parse(held.text) : null),
  };
}

/**
 * Whether a message may change the document: any request but a `get`.
 * @param {CodapRequest | CodapRequest[]} requests
 */
export const mayChange = (requests) => (Array.isArray(requests) ? requests : [requests]).some((r) => r?.action !== "get");

const READ_WAIT_MS = 10_000;
const REBUILD_WAIT_MS = 20_000;
/**
 * The largest document rebuilt (its JSON): CODAP takes about a second per 150 KB to give, rebuild and give it again
 * (1,000 rows of three attributes), so a larger one would outlast a tool call's time.
 */
export const MAX_REBUILD_CHARS = 1_000_000;

/**
 * The document without empty (null) fields: CODAP 3.1.0 cannot read its own nulls back (a title null fails).
 * @param {any} value
 * @returns {any}
 */
export function withoutNulls(value) {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === "object") {
    /** @type {Record<string, unknown>} */
    const out = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = withoutNulls(v);
    return out;
  }
  return value;
}

/**
 * The first notification `match` accepts, or null after `ms`; listening starts at once (before the request that
 * makes CODAP send it).
 * @param {DocumentIO} io
 * @param {(value: CodapNotification) => boolean} match
 * @param {number} ms
 * @returns {Promise<CodapNotification | null>}
 */
export function heard({ listen, sleep }, match, ms) {
  if (!listen) return Promise.resolve(null);
  let stop = () => {};
  /** @type {Promise<CodapNotification>} */
  const seen = new Promise((resolve) => {
    stop = listen((value) => {
      if (match(value)) resolve(value);
    });
  });
  return Promise.race([seen, sleep(ms).then(() => null)]).finally(() => stop());
}

/**
 * CODAP's document now (v2 JSON, without nulls): the one last read where nothing changed it since and CODAP still
 * lists the same components and datasets (a check of one quick message, for a change no notification tells of:
 * another plugin adding or closing a component), else read anew.
 * @param {DocumentIO} io
 * @returns {Promise<V2Document>}
 */
export async function readDocument(io) {
  const kept = io.documents?.fresh() ?? null;
  if (kept && await sameParts(io, kept)) return kept;
  if (!io.listen) throw new ToolError("This plugin cannot hear CODAP's notifications here.", "document_unavailable");
  const at = io.documents?.now() ?? 0;
  const state = heard(io, (v) => v?.resource === "document" && v?.values?.operation === "newDocumentState", READ_WAIT_MS);
  const [reply] = await io.send([{ action: "get", resource: "document" }]);
  if (reply?.success !== true) {
    throw new ToolError(`CODAP did not give its document: ${reply?.values?.error ?? "no reason"}.`, "document_unavailable");
  }
  const notice = await state;
  if (!notice) throw new ToolError("CODAP did not send its document within 10 s.", "document_unavailable");
  /** @type {V2Document} */
  const doc = withoutNulls(notice.values.state);
  io.documents?.hold(JSON.stringify(doc), at);
  return doc;
}

/**
 * Whether CODAP lists the components and datasets `doc` holds (by id).
 * @param {DocumentIO} io
 * @param {V2Document} doc
 */
async function sameParts(io, doc) {
  const [components, datasets] = await io.send([{ action: "get", resource: "componentList" }, { action: "get", resource: "dataContextList" }]);
  if (components?.success !== true || datasets?.success !== true) return false;
  /** @type {(list: unknown) => string} */
  const ids = (list) => (Array.isArray(list) ? list.map((x) => String(x?.id ?? x?.guid)).sort().join() : "");
  return ids(components.values) === ids(doc.components) && ids(datasets.values) === ids(doc.contexts);
}

/**
 * Names each row's item in the child-most cases of every dataset (`itemID`), so a rebuilt document keeps the ids
 * the tools hand out as caseIds.
 * @param {DocumentIO} io
 * @param {V2Document} doc
 */
export async function keepItemIds(io, doc) {
  /** @type {Array<Record<string, any>>} */
  const rows = [];
  /** @type {CodapRequest[]} */
  const reads = [];
  for (const ctx of doc.contexts ?? []) {
    const leaf = ctx.collections?.[ctx.collections.length - 1];
    for (const c of leaf?.cases ?? []) {
      rows.push(c);
      reads.push({ action: "get", resource: `dataContext[${ctx.guid}].itemByCaseID[${c.guid}]` });
    }
  }
  if (!reads.length) return;
  const replies = await io.send(reads);
  rows.forEach((c, i) => {
    const id = replies[i]?.success === true ? replies[i].values?.id : undefined;
    if (id !== undefined && id !== null) c.itemID = `ITEM${id}`; // a row CODAP no longer has keeps any it was given
  });
}

/**
 * `doc` with the type left out of each numeric attribute whose type CODAP inferred: CODAP saves such an attribute
 * as "numeric" but with no precision (an attribute typed numeric is saved with its precision, 2 unless set), and
 * reading "numeric" back would type it so and show it with 2 decimals.
 * @param {V2Document} doc
 * @returns {V2Document}
 */
function withInferredTypes(doc) {
  return {
    ...doc,
    contexts: doc.contexts?.map((ctx) => ({
      ...ctx,
      collections: ctx.collections?.map((col) => ({
        ...col,
        attrs: col.attrs?.map(({ type, ...attr }) =>
          (type === "numeric" && (attr.precision === undefined || attr.precision === "") ? attr : { ...attr, type })),
      })),
    })),
  };
}

/**
 * Replaces CODAP's document with `doc`. Resolves with CODAP's notice that it is rebuilt (`ended`, true once heard,
 * false after 20 s): CODAP sends it half a second after the rebuild (document-handler.ts asyncUpdate), which a
 * caller that sees the change already need not wait for.
 * @param {DocumentIO} io
 * @param {V2Document} doc
 * @returns {Promise<{ended: Promise<boolean>}>}
 */
export async function replaceDocument(io, doc) {
  const heardEnd = heard(
    io,
    (v) => v?.resource === "documentChangeNotice" && v?.values?.operation === "updateDocumentEnded",
    REBUILD_WAIT_MS,
  );
  /** @type {CodapRequest} */
  const update = { action: "update", resource: "document", values: withInferredTypes(doc) };
  const [reply] = await io.send([update]);
  if (reply?.success !== true) {
    throw new ToolError(`CODAP refused to rebuild its document: ${reply?.values?.error ?? "no reason"}.`, "codap_error");
  }
  return { ended: heardEnd.then((notice) => notice !== null) };
}

/**
 * The first few paths ("componentStorage.xLowerBound") where two JSON values differ.
 * @param {any} a
 * @param {any} b
 * @param {string} [at]
 * @param {string[]} [out]
 * @returns {string[]}
 */
export function differingPaths(a, b, at = "", out = []) {
  if (out.length >= 3) return out;
  if (a && b && typeof a === "object" && typeof b === "object") {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) differingPaths(a[key], b[key], at ? `${at}.${key}` : key, out);
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(at || "(all)");
  }
  return out;
}

/**
 * JSON text of a value with its objects' keys sorted: CODAP may write the same document's keys in another order.
 * @param {unknown} value
 * @returns {string}
 */
const canonical = (value) =>
  JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v);

/** @param {V2Component} c a component as compared: without its stacking order, which a click changes */
const comparable = (c) => canonical({ ...c, layout: { ...c.layout, zIndex: undefined } });

/** What a person calls each kind of component CODAP saves. */
const KINDS = /** @type {Record<string, string>} */ ({
  "DG.TableView": "case table", "DG.CaseCard": "case card", "DG.GraphView": "graph", "DG.MapView": "map",
  "DG.SliderView": "slider", "DG.TextView": "text box", "DG.Calculator": "calculator", "DG.GameView": "plugin",
  "DG.WebView": "web page", "DG.ImageComponentView": "image", "DG.GuideView": "guide",
});

/**
 * A component in words, for what a rebuild changed beside the one asked for: 'the graph "Heights" (id 12)'.
 * @param {V2Component} c
 */
const componentWords = (c) => {
  const title = c.componentStorage?.title || c.componentStorage?.name;
  return `the ${KINDS[c.type ?? ""] ?? "component"}${title ? ` ${JSON.stringify(title)}` : ""} (id ${c.guid})`;
};

/**
 * Drops the hidden case tables and cards that no dataset owns any more (CODAP keeps a closed card of a deleted
 * dataset, with no link to any): CODAP 3.1.0 cannot read a document holding one, so a rebuild with it would leave
 * the document as it was. Such a table or card shows nothing and cannot be opened again.
 * @param {V2Document} doc
 */
function dropOrphanTables(doc) {
  const datasets = new Set((doc.contexts ?? []).map((c) => String(c.guid)));
  doc.components = (doc.components ?? []).filter((c) =>
    !(/^DG\.(TableView|CaseCard)$/.test(c.type ?? "") && c.layout?.isVisible === false &&
      !datasets.has(String(c.componentStorage?._links_?.context?.id))));
}

/**
 * What changed in a dataset, in words: "changed the decimals shown for lat, long", "changed its cases".
 * @param {V2Context} was
 * @param {V2Context} now
 */
function datasetChangeWords(was, now) {
  const paths = differingPaths(JSON.parse(canonical(was)), JSON.parse(canonical(now)));
  /** @type {any} */
  const doc = now;
  /** @type {Map<string, string[]>} */
  const byKey = new Map();
  const rest = new Set();
  for (const path of paths) {
    const [top, i, part, j, key] = path.split(".");
    const attr = top === "collections" && part === "attrs" ? doc.collections?.[Number(i)]?.attrs?.[Number(j)]?.name : null;
    if (attr && key) byKey.set(key, [...(byKey.get(key) ?? []), attr]);
    else rest.add(top === "collections" && part === "cases" ? "its cases" : "its settings");
  }
  const words = /** @type {Record<string, string>} */ ({ precision: "the decimals shown", unit: "the unit", formula: "the formula", type: "the type", hidden: "whether it is hidden" });
  const parts = [...byKey].map(([key, names]) => `${words[key] ?? `the ${key}`} of ${names.join(", ")}`);
  return `changed ${[...parts, ...rest].join(" and ") || "its settings"}`;
}

/** Why a tool rebuilds the document, as its refusals say. */
export const FOR_A_SETTING = "the only way CODAP's plugin API reaches this setting";

/**
 * Throws where rebuilding would change more than asked: a document too large to rebuild in a tool call's time, or a
 * web page or plugin at an http:// address, which CODAP's reading of a saved document moves to https://
 * (web-view-utils.ts processWebViewUrl) and so away from a page served over http.
 * @param {V2Document} doc
 * @param {CodapId | null} frameId this plugin's own component, which CODAP keeps as it is
 * @param {string} [why] why the document would be rebuilt, for the message
 */
export function refuseRebuild(doc, frameId, why = FOR_A_SETTING) {
  const size = JSON.stringify(doc).length;
  if (size > MAX_REBUILD_CHARS) {
    throw new ToolError(
      `The document is too large (${Math.round(size / 1000)} KB of JSON, more than ${MAX_REBUILD_CHARS / 1000} KB) for ` +
        `the tool to rebuild it within a tool call, ${why}.`,
      "document_too_large",
      { chars: size, limit: MAX_REBUILD_CHARS },
    );
  }
  const http = (doc.components ?? []).filter((c) =>
    String(c.guid) !== String(frameId) && /^(DG\.WebView|DG\.GameView)$/.test(c.type ?? "") &&
    /^http:\/\//i.test(String(c.componentStorage?.URL ?? c.componentStorage?.currentGameUrl ?? "")));
  if (http.length) {
    const names = http.map((c) => `${JSON.stringify(c.componentStorage?.title || c.componentStorage?.name || "web page")} (id ${c.guid})`);
    throw new ToolError(
      `Rebuilding the document, ${why}, would move ${names.join(", ")} ` +
        "from its http:// address to https://, where it may not load: nothing was changed.",
      "rebuild_would_change_other_components",
      { components: http.map((c) => c.guid) },
    );
  }
}

/**
 * Puts document `doc` (as read earlier, with its rows' item ids named where known) back in CODAP, refusing as
 * refuseRebuild does; rows still in CODAP keep their item ids (keepItemIds), and rows it no longer has keep the
 * ids named in `doc` (keepItemIds run when it was read). Resolves with CODAP's notice that it is rebuilt.
 * @param {DocumentIO} io
 * @param {V2Document} doc
 * @param {CodapId | null} frameId
 * @param {string} why
 */
export async function restoreDocument(io, doc, frameId, why) {
  refuseRebuild(doc, frameId, why);
  await keepItemIds(io, doc);
  return replaceDocument(io, doc);
}

/**
 * Changes one component of the document by rebuilding the document: `change(storage, doc)` edits the component's
 * componentStorage (or the rest of the document) in place. Returns the component's storage as CODAP rebuilt it,
 * `others`: the other components and datasets CODAP rebuilt differently (nothing, as a rule), and the document read
 * back.
 * @param {DocumentIO} io
 * @param {CodapId} componentId
 * @param {(storage: Record<string, any>, doc: V2Document) => void} change
 * @param {CodapId | null} [frameId] this plugin's own component (CODAP keeps it as it is)
 * @param {V2Document | null} [current] the document as just read, if nothing changed it since (else it is read)
 */
export async function rebuildComponent(io, componentId, change, frameId = null, current = null) {
  const doc = current ?? await readDocument(io);
  const target = (doc.components ?? []).find((c) => String(c.guid) === String(componentId));
  if (!target?.componentStorage) {
    throw new ToolError(`CODAP's document has no component ${componentId}.`, "component_not_found", { componentId });
  }
  refuseRebuild(doc, frameId);
  const original = canonical(target.componentStorage);
  const untouched = io.journal ? JSON.stringify(doc) : null;
  change(target.componentStorage, doc);
  dropOrphanTables(doc);
  const sent = JSON.parse(JSON.stringify(doc));
  await keepItemIds(io, doc);
  const sizes = await componentSizes(io, doc);
  sizes.delete(String(componentId)); // its own layout is the rebuild's to change (minimize)
  if (untouched) await io.journal?.rebuilding(JSON.parse(untouched));
  const { ended } = await replaceDocument(io, doc);
  // CODAP rebuilds right after answering; its notice comes half a second later. A document read at once that
  // still holds the component as it was means the rebuild is not done: then wait for the notice and read again.
  /** @type {(d: V2Document) => V2Component | undefined} */
  const find = (d) => (d.components ?? []).find((c) => String(c.guid) === String(componentId));
  let now = await readDocument(io);
  let finished = true;
  if (canonical(find(now)?.componentStorage) === original) {
    finished = await ended;
    now = await readDocument(io);
  }
  const rebuilt = find(now);
  await restoreSizes(io, sizes, now); // CODAP gives some components their default size (rebuild_keep.js)
  await io.journal?.rebuilt(now);
  /** @type {string[]} */
  const others = [];
  const before = new Map((sent.components ?? []).map((/** @type {V2Component} */ c) => [String(c.guid), c]));
  for (const c of now.components ?? []) {
    const id = String(c.guid);
    if (id === String(componentId) || id === String(frameId)) continue;
    const was = before.get(id);
    if (!was) others.push(`${componentWords(c)} appeared`);
    else if (comparable(was) !== comparable(c)) {
      const where = differingPaths(JSON.parse(comparable(was)), JSON.parse(comparable(c)));
      const moved = where.every((p) => p.startsWith("layout"));
      others.push(`${componentWords(c)} ${moved ? "moved or changed size" : "changed its settings"}`);
    }
    before.delete(id);
  }
  for (const [id, c] of before) if (id !== String(componentId) && id !== String(frameId)) others.push(`${componentWords(c)} is gone`);
  const contexts = new Map((sent.contexts ?? []).map((/** @type {V2Context} */ c) => [String(c.guid), c]));
  for (const ctx of now.contexts ?? []) {
    const was = contexts.get(String(ctx.guid));
    if (!was || canonical(withoutFormulaValues(was)) !== canonical(withoutFormulaValues(ctx))) {
      others.push(`the dataset ${JSON.stringify(ctx.name)} ${was ? datasetChangeWords(was, ctx) : "appeared"}`);
    }
  }
  const redrawn = redrawWords(sent);
  if (redrawn) others.push(redrawn);
  return { storage: rebuilt?.componentStorage ?? null, others, finished, document: now };
}
