// @ts-check
// What CODAP's reading of a saved document changes beside the change a rebuild makes (codap_document.js), kept
// or told: components' sizes (CODAP 3.1.0 gives a slider drawn 98 px tall its default 73 px) are put back through
// the plugin API, and formulas drawing random values are drawn anew (CODAP evaluates every formula of the
// document it reads), which nothing can keep: the answer says which.

/**
 * @import {CodapId, CodapReply, CodapRequest} from "../types.js"
 * @import {DocumentIO, V2Context, V2Document} from "./codap_document.js"
 */

/** The random functions of CODAP's formulas (random, randomNormal, randomBinomial, randomPick…). */
export const RANDOM_FUNCTION = /\brandom[A-Za-z]*\s*\(/i;

/** @typedef {{width: number, height: number}} Size */

/** @param {CodapId} id @returns {CodapRequest} */
const read = (id) => ({ action: "get", resource: `component[${id}]` });

/** @param {CodapReply | undefined} reply @returns {Size | null} */
const sizeOf = (reply) => {
  const d = reply?.success === true ? reply.values?.dimensions : null;
  return d && typeof d.width === "number" && typeof d.height === "number" ? { width: d.width, height: d.height } : null;
};

/**
 * Each component's size as CODAP's plugin API gives it, by id (one message).
 * @param {DocumentIO} io
 * @param {V2Document} doc
 * @returns {Promise<Map<string, Size>>}
 */
export async function componentSizes(io, doc) {
  const ids = (doc.components ?? []).map((c) => c.guid);
  const replies = ids.length ? await io.send(ids.map(read)) : [];
  /** @type {Map<string, Size>} */
  const sizes = new Map();
  ids.forEach((id, i) => {
    const size = sizeOf(replies[i]);
    if (size) sizes.set(String(id), size);
  });
  return sizes;
}

/**
 * Gives each component the size it had before the rebuild where CODAP rebuilt it otherwise, and writes that size in
 * `now` (the document read back) for the ones CODAP then shows at their size again. Returns the ids put back.
 * @param {DocumentIO} io
 * @param {Map<string, Size>} before
 * @param {V2Document} now
 */
export async function restoreSizes(io, before, now) {
  const after = await componentSizes(io, now);
  const changed = [...after].filter(([id, size]) => {
    const was = before.get(id);
    return was && (was.width !== size.width || was.height !== size.height);
  }).map(([id]) => id);
  if (!changed.length) return [];
  await io.send(changed.map((id) => ({
    action: "update", resource: `component[${id}]`, values: { dimensions: before.get(id) },
  })));
  const check = await io.send(changed.map(read));
  const kept = changed.filter((id, i) => {
    const size = sizeOf(check[i]);
    const was = /** @type {Size} */ (before.get(id));
    return size && size.width === was.width && size.height === was.height;
  });
  for (const c of now.components ?? []) {
    const was = before.get(String(c.guid));
    if (was && kept.includes(String(c.guid))) c.layout = { ...c.layout, width: was.width, height: was.height };
  }
  return kept;
}

/**
 * The attributes of the document's datasets whose formulas draw random values.
 * @param {V2Document} doc
 * @returns {Array<{datasetName: string, attribute: string}>}
 */
export function randomColumns(doc) {
  return (doc.contexts ?? []).flatMap((ctx) => (ctx.collections ?? []).flatMap((col) => (col.attrs ?? [])
    .filter((a) => typeof a.formula === "string" && RANDOM_FUNCTION.test(a.formula))
    .map((a) => ({ datasetName: String(ctx.name ?? ctx.guid), attribute: String(a.name) }))));
}

/**
 * What the rebuild did to random columns, in words, or null where the document has none.
 * @param {V2Document} doc
 */
export function redrawWords(doc) {
  const columns = randomColumns(doc);
  if (!columns.length) return null;
  /** @type {Map<string, string[]>} */
  const byDataset = new Map();
  for (const c of columns) byDataset.set(c.datasetName, [...(byDataset.get(c.datasetName) ?? []), c.attribute]);
  const listed = [...byDataset].map(([d, attrs]) => `${attrs.map((a) => JSON.stringify(a)).join(", ")} of dataset ${JSON.stringify(d)}`);
  return `the random values of ${listed.join(" and ")} were drawn anew (CODAP evaluates every formula again when ` +
    "it reads a document, so the table and graphs show new draws)";
}

/**
 * A dataset without its formula attributes' values: CODAP computes them again when it reads a document (random
 * ones drawn anew, told apart by redrawWords), so only the other values tell whether the rebuild changed its cases.
 * @param {V2Context} ctx
 * @returns {V2Context}
 */
export function withoutFormulaValues(ctx) {
  return {
    ...ctx,
    collections: ctx.collections?.map((col) => {
      const computed = new Set((col.attrs ?? []).filter((a) => a.formula).flatMap((a) => [String(a.name), String(a.guid)]));
      if (!computed.size) return col;
      return {
        ...col,
        cases: col.cases?.map((c) => (c.values && typeof c.values === "object"
          ? { ...c, values: Object.fromEntries(Object.entries(c.values).filter(([k]) => !computed.has(k))) }
          : c)),
      };
    }),
  };
}
