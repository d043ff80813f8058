// @ts-check
// The rows an answer lists, so that a model reads the cases a call touched without a second call: a case of the
// child-most collection is shown as its row (CODAP's item: its id, the caseId every tool takes, and every
// attribute's value, its parents' included); a case of a parent collection by its own values (one id would not
// stand for all of its rows). The reads are requests the caller puts in a message it sends anyway.

import { collection, dataContext, get } from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DescribedCollection, DescribedDataset} from "../types.js"
 */

/**
 * A listed row: its caseId (item id) and values; a parent collection's case has values only.
 * @typedef {{caseId?: CodapId, values: Record<string, unknown>}} CaseRow
 */

/** What the caseIds of every tool are (the same words in each tool's description). */
export const ROW_IDS = "the ids export_codap_data gives with includeCaseIds (CODAP's item ids: one per row, stable " +
  "across sorting and grouping)";

/** How many rows an answer lists when the call does not say. */
export const LISTED_ROWS = 10;

/**
 * The child-most collection of a described dataset: its cases are the rows.
 * @param {DescribedDataset} dataset
 */
export const leafOf = (dataset) => dataset.collections[dataset.collections.length - 1];

/**
 * Requests reading CODAP's cases (ids of `coll`'s cases) as rows, and how to read their replies: `null` for a case
 * CODAP no longer has.
 * @param {DescribedDataset} dataset
 * @param {DescribedCollection} coll
 * @param {CodapId[]} caseIds CODAP's case ids in `coll`
 * @returns {{requests: CodapRequest[], rows: (replies: Array<CodapReply | undefined>) => Array<CaseRow | null>}}
 */
export function caseRowReads(dataset, coll, caseIds) {
  const leaf = coll === leafOf(dataset);
  const requests = caseIds.map((id) => get(`${dataContext(dataset.id)}.${leaf ? "itemByCaseID" : "caseByID"}[${id}]`));
  return {
    requests,
    rows: (replies) => replies.map((r) => {
      if (r?.success !== true) return null;
      return leaf
        ? { caseId: r.values?.id, values: r.values?.values ?? {} }
        : { values: r.values?.case?.values ?? {} };
    }),
  };
}

/**
 * Requests reading the first `count` cases of `coll` in CODAP's order (its case table's): their case ids, to read
 * as rows with caseRowReads in a following message.
 * @param {DescribedDataset} dataset
 * @param {DescribedCollection} coll
 * @param {number} count
 */
export function firstCaseReads(dataset, coll, count) {
  const n = Math.max(0, Math.min(count, coll.caseCount ?? 0));
  const requests = Array.from({ length: n }, (_, i) => get(`${collection(dataset.id, coll.id)}.caseByIndex[${i}]`));
  return {
    requests,
    /** @param {Array<CodapReply | undefined>} replies */
    cases: (replies) => replies.flatMap((r) => (r?.success === true && r.values?.case ? [r.values.case] : [])),
  };
}

/**
 * One line a row, as the answers list them.
 * @param {CaseRow} row
 */
export const rowLine = (row) =>
  (row.caseId === undefined ? `• ${JSON.stringify(row.values)}` : `• ${row.caseId}: ${JSON.stringify(row.values)}`);

/**
 * The listed rows as text: a heading, a line each, and how many more there are.
 * @param {string} heading e.g. "Selected rows"
 * @param {CaseRow[]} rows
 * @param {number} total how many there are in all
 */
export function rowsText(heading, rows, total) {
  if (rows.length === 0) return "";
  const ids = rows.some((r) => r.caseId !== undefined) ? " (case id: values)" : "";
  let text = `\n${heading}${ids}:\n${rows.map(rowLine).join("\n")}`;
  if (total > rows.length) text += `\n… and ${total - rows.length} more (${total} in all).`;
  return text;
}
