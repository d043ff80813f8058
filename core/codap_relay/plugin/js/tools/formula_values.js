// @ts-check
// Values CODAP computes with its own formula engine, read without changing the document.
//
// CODAP evaluates aggregates (mean, median, stdDev, percentile…) only inside a formula attribute: the
// formulaEngine resource of the plugin API evaluates an expression over plain records, without a dataset, and
// its aggregates fail ("a.getCaseAggregateGroupId is not a function"); caseFormulaSearch answers only which cases
// a condition holds for. So a value is computed the way a teacher would in CODAP: hidden formula attributes
// are added, their values read and the attributes removed, all in ONE message (CODAP handles a message in one
// browser task, so nothing is drawn in between). CODAP's plugin API adds and removes attributes outside the undo
// history (applyModelChange without undo strings → withoutUndo), so the undo and redo stacks are unchanged.

import { ToolError, collection, plural } from "./context.js";

/**
 * @import {CodapRequest, DescribedCollection, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * How CODAP's formula text names an attribute: always in backticks, so any name works.
 * @param {string} name
 */
export const ref = (name) => `\`${name.replace(/\\/g, "\\\\").replace(/`/g, "\\`")}\``;

/** How CODAP shows a formula's error as the attribute's value. */
export const ERROR_MARK = "❌";

/** @type {(v: unknown) => v is string} */
export const isError = (v) => typeof v === "string" && v.startsWith(ERROR_MARK);
/** @param {string} v */
export const errorText = (v) => v.slice(ERROR_MARK.length).trim();
/** CODAP's value for "no value" (an aggregate over no numbers) is the empty string. */
/** @param {unknown} v */
export const valueOf = (v) => (v === "" || v === undefined ? null : v);

/** @param {ToolContext} ctx */
export function createFormulaValues(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;

  /**
   * The dataset, described, and one of its collections (by name, or the child-most one); `formulas`: its
   * attributes described with their formulas (CODAP then builds each one's category map, which costs time).
   * @param {string} datasetName
   * @param {string | undefined} collectionName
   * @param {{formulas?: boolean}} [options]
   * @returns {Promise<{dataset: DescribedDataset, coll: DescribedCollection}>}
   */
  async function datasetAndCollection(datasetName, collectionName, { formulas = false } = {}) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: formulas });
    if (dataset.collections.length === 0) {
      throw new ToolError(`Dataset ${JSON.stringify(dataset.name)} has no collections.`, "no_cases", {
        datasetName: dataset.name,
      });
    }
    /** @type {DescribedCollection | undefined} */
    let coll = dataset.collections[dataset.collections.length - 1];
    if (collectionName !== undefined) {
      coll = dataset.collections.find((c) => c.name === collectionName) ??
        dataset.collections.find((c) => c.title === collectionName);
      if (!coll) {
        const names = dataset.collections.map((c) => c.name);
        throw new ToolError(
          `Dataset ${JSON.stringify(dataset.name)} has no collection ${JSON.stringify(collectionName)}. ` +
            `Its collections: ${names.join(", ")}.`,
          "collection_not_found",
          { datasetName: dataset.name, collectionName, available: names },
        );
      }
    }
    return { dataset, coll };
  }

  /**
   * A name for a temporary attribute that no attribute of the dataset has.
   * @param {DescribedDataset} dataset
   */
  function temporaryPrefix(dataset) {
    const taken = new Set(dataset.attributes);
    for (;;) {
      const prefix = `__codapRelayTemp${Math.random().toString(36).slice(2, 8)}_`;
      if (![...taken].some((n) => n.startsWith(prefix))) return prefix;
    }
  }

  /**
   * CODAP's values of `temporary` ([{name, formula, coll?}]) in the collection's cases: one message adds them as
   * hidden attributes (each in `coll`, or in its own collection: one that the others' aggregates read, a child
   * collection, is added first), reads the cases (`reads`: requests for cases), and removes them. Returns the
   * read replies. The removal is checked, and retried once in a message of its own; if it still fails the error
   * names what stayed.
   * @param {DescribedDataset} dataset
   * @param {DescribedCollection} coll
   * @param {Array<{name: string, formula: string, coll?: DescribedCollection}>} temporary
   * @param {CodapRequest[]} reads
   */
  async function withTemporaryFormulas(dataset, coll, temporary, reads) {
    const homes = [...new Set(temporary.map((t) => t.coll ?? coll))];
    /** @type {CodapRequest[]} */
    const creates = homes.map((home) => ({
      action: "create",
      resource: `${collection(dataset.id, home.id)}.attribute`,
      values: temporary.filter((t) => (t.coll ?? coll) === home).map(({ name, formula }) => ({ name, formula, hidden: true })),
    }));
    /** @type {(t: {name: string, coll?: DescribedCollection}) => CodapRequest} */
    const removal = (t) => ({ action: "delete", resource: `${collection(dataset.id, (t.coll ?? coll).id)}.attribute[${t.name}]` });
    const replies = await send([...creates, ...reads, ...temporary.map(removal)]);
    const readReplies = replies.slice(creates.length, creates.length + reads.length);
    const removed = replies.slice(creates.length + reads.length);
    let left = temporary.filter((_, i) => removed[i]?.success !== true);
    // Only what was created is left to remove.
    left = left.filter((t) => replies[homes.indexOf(t.coll ?? coll)]?.success === true);
    if (left.length) {
      const retry = await send(left.map(removal));
      left = left.filter((_, i) => retry[i]?.success !== true);
      if (left.length) {
        throw new ToolError(
          `CODAP computed the values but did not remove ${plural(left.length, "temporary attribute")} from ` +
            `${JSON.stringify(dataset.name)}: ${left.map((t) => t.name).join(", ")}. Delete them in CODAP (or with ` +
            "codap_api).",
          "codap_error",
          { datasetName: dataset.name, temporaryAttributes: left.map((t) => t.name) },
        );
      }
    }
    creates.forEach((create, i) => must(create, replies[i], `adding temporary formula attributes to ${JSON.stringify(dataset.name)}`));
    return { readReplies };
  }

  return { datasetAndCollection, temporaryPrefix, withTemporaryFormulas };
}
