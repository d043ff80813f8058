// @ts-check
// A dataset as the attribute tools read it: its collections, each attribute as CODAP describes it, and the lookups
// that name what exists when an attribute or collection is not found or a new name is taken.

import { ToolError, collection, dataContext, get } from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DatasetRef} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * An attribute as CODAP describes it (`get …collection[C]`'s attrs).
 * @typedef {object} CodapAttribute
 * @property {CodapId} id
 * @property {string} name
 * @property {string} [title]
 * @property {string} [type]
 * @property {string} [formula]
 * @property {string} [unit]
 * @property {string} [description]
 * @property {number | string | null} [precision]
 * @property {boolean} [hidden]
 */

/** A collection as readDataset reads it. @typedef {{id: CodapId, name: string, title: string, caseCount: number, attributes: CodapAttribute[]}} ReadCollection */

/**
 * A dataset as readDataset reads it: its collections, every attribute with its collection, and the replies to the
 * requests that rode along.
 * @typedef {DatasetRef & {collections: ReadCollection[], attributes: Array<CodapAttribute & {collection: ReadCollection}>,
 *   extra: CodapReply[]}} ReadDataset
 */

/**
 * An attribute in an answer: CODAP's own fields (null where it has none) and its collection's name.
 * @typedef {object} AttributeFacts
 * @property {string} collection
 * @property {string} name
 * @property {string | null} type
 * @property {string | null} formula
 * @property {string | null} unit
 * @property {string | null} description
 * @property {number | string | null} precision
 * @property {boolean} hidden
 */

/** @param {unknown} v */
export const q = (v) => JSON.stringify(v);

/** What an attribute looks like in an answer and in structured data (CODAP's own fields). */
export const ATTRIBUTE_FIELDS = ["name", "type", "formula", "unit", "description", "precision", "hidden"];
/**
 * @param {Partial<CodapAttribute> | null | undefined} a
 * @param {string} collectionName
 * @returns {AttributeFacts}
 */
export function attributeFacts(a, collectionName) {
  const out = /** @type {AttributeFacts} */ ({ collection: collectionName });
  for (const f of ATTRIBUTE_FIELDS) /** @type {Record<string, unknown>} */ (out)[f] = /** @type {Record<string, unknown> | null | undefined} */ (a)?.[f] ?? (f === "hidden" ? false : f === "name" ? "" : null);
  if (out.type === "") out.type = null;
  return out;
}

/**
 * A dataset's collections with their attributes as CODAP describes them (type, formula, unit, precision,
 * hidden…) and case counts: two messages. `extra` requests ride along in the first.
 * @param {Pick<ToolContext, "send" | "must">} io what reads CODAP
 * @param {DatasetRef} found
 * @param {CodapRequest[]} [extra]
 * @returns {Promise<ReadDataset>}
 */
export async function readDataset({ send, must }, found, extra = []) {
  const listRequest = get(`${dataContext(found.id)}.collectionList`);
  const [listed, ...extraReplies] = await send([listRequest, ...extra]);
  /** @type {Array<{id: CodapId, name: string, title?: string}>} */
  const colls = must(listRequest, listed).values ?? [];
  const requests = colls.flatMap((c) => [get(collection(found.id, c.id)), get(`${collection(found.id, c.id)}.caseCount`)]);
  const replies = await send(requests);
  /** @type {ReadCollection[]} */
  const collections = colls.map((c, i) => ({
    id: c.id,
    name: c.name,
    title: c.title || c.name,
    caseCount: must(requests[2 * i + 1], replies[2 * i + 1]).values,
    attributes: must(requests[2 * i], replies[2 * i]).values?.attrs ?? [],
  }));
  return {
    ...found,
    collections,
    attributes: collections.flatMap((c) => c.attributes.map((a) => ({ ...a, collection: c }))),
    extra: extraReplies,
  };
}

/**
 * @param {ReadDataset} dataset
 * @param {string} name
 */
export function findAttribute(dataset, name) {
  const exact = dataset.attributes.filter((a) => a.name === name);
  if (exact.length) return exact[0];
  const names = dataset.attributes.map((a) => a.name);
  const near = dataset.attributes.filter((a) => a.name.toLowerCase() === String(name).toLowerCase() || a.title === name);
  throw new ToolError(
    `Dataset ${q(dataset.name)} has no attribute ${q(name)}.` +
      (near.length ? ` Did you mean ${near.map((a) => q(a.name)).join(" or ")}?` : "") +
      ` Its attributes: ${names.join(", ") || "(none)"}.`,
    "attribute_not_found",
    { datasetName: dataset.name, attribute: name, available: names },
  );
}

/**
 * @param {ReadDataset} dataset
 * @param {string | undefined} wanted
 */
export function pickCollection(dataset, wanted) {
  const colls = dataset.collections;
  if (wanted === undefined || wanted === null || wanted === "") return colls[colls.length - 1];
  const lower = String(wanted).toLowerCase();
  const match =
    colls.find((c) => c.name === wanted) ??
    colls.find((c) => c.title === wanted) ??
    colls.find((c) => c.name.toLowerCase() === lower || c.title.toLowerCase() === lower);
  if (match) return match;
  const names = colls.map((c) => c.name);
  throw new ToolError(
    `Dataset ${q(dataset.name)} has no collection ${q(wanted)}. Its collections, parent first: ${names.join(" > ")}. ` +
      "Leave collection out to use the child-most one.",
    "collection_not_found",
    { datasetName: dataset.name, collection: wanted, available: names },
  );
}

/**
 * @param {ReadDataset} dataset
 * @param {string} name
 * @param {"add" | "rename"} what
 */
export function nameInUse(dataset, name, what) {
  const clash = dataset.attributes.find((a) => a.name === name);
  if (!clash) return;
  throw new ToolError(
    `Dataset ${q(dataset.name)} already has an attribute ${q(name)} (in collection ${q(clash.collection.name)}). ` +
      (what === "add"
        ? "Change it with update_codap_attribute, or choose another name."
        : "Choose another name, or delete that attribute first with delete_codap_attribute."),
    "attribute_exists",
    { datasetName: dataset.name, attribute: name, collection: clash.collection.name },
  );
}
