// @ts-check
// How the case tools pick cases: a condition is CODAP's own formula search on the child-most collection
// (caseFormulaSearch), then one message maps the matching cases to their items (itemByCaseID); ids are checked in
// one message (itemByID). The case ids the model sees are CODAP's item ids, the ids export_codap_data gives with
// includeCaseIds.

import { ToolError, collection, dataContext, get, invalid, plural, refused } from "./context.js";

/**
 * @import {CodapId, CodapRequest, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * How the case tools pick cases: a CODAP formula, item ids, or CODAP's selection (exactly one of them).
 * @typedef {{datasetName: string, where?: string, caseIds?: CodapId[], selection?: "selected" | "unselected"}} CaseSelection
 */

/** How many ids a sentence lists; structuredContent has them all. */
const SHOWN_IDS = 50;

/** @param {unknown[]} ids */
export const idList = (ids) =>
  ids.length > SHOWN_IDS ? `${ids.slice(0, SHOWN_IDS).join(", ")} … (${ids.length} in all)` : ids.join(", ");

/** @param {Pick<ToolContext, "send" | "must">} ctx */
export function createCaseSelection({ send, must }) {
  /**
   * The cases of the child-most collection for which CODAP's formula `where` is true (CODAP's own search, one
   * message), checked first; none matching is an error unless `allowNone`.
   * @param {DescribedDataset} dataset
   * @param {string} rawWhere
   * @param {{allowNone?: boolean, extra?: CodapRequest[]}} [options] `extra` requests go first in the message
   * @returns {Promise<Array<{id: CodapId}>>}
   */
  async function matching(dataset, rawWhere, { allowNone = false, extra = [] } = {}) {
    const leaf = dataset.collections[dataset.collections.length - 1];
    const total = leaf?.caseCount ?? 0;
    const where = /** @type {string} */ (rawWhere).trim();
    if (!where) throw invalid("where is empty: give a CODAP formula such as `height > 180`.");
    if (where.includes("]")) {
      throw invalid(
        `The condition ${JSON.stringify(where)} holds "]", which CODAP's plugin API cannot take in a search ` +
          "(it ends the resource name). Rewrite it without ], or select the cases by caseIds.",
      );
    }
    const search = get(`${collection(dataset.id, leaf.id)}.caseFormulaSearch[${where}]`);
    const replies = await send([...extra, search]);
    const searched = replies[replies.length - 1];
    if (searched?.success !== true) {
      // This handler puts its reason at the top of the reply ({success: false, error}), not under values.
      const reason = typeof searched?.error === "string" && searched.error
        ? searched.error
        : /** @type {Record<string, any>} */ (refused(search, searched).data).codapError;
      throw new ToolError(
        `CODAP could not evaluate the condition ${JSON.stringify(where)}: ${reason}. Attributes of ` +
          `${JSON.stringify(dataset.name)}: ${dataset.attributes.join(", ") || "(none)"}. Write text values in ` +
          'double quotes (species = "oak") and compare with =, !=, <, >, <=, >=.',
        "formula_error",
        { datasetName: dataset.name, formula: where, codapError: reason, available: dataset.attributes },
      );
    }
    /** @type {Array<{id: CodapId}>} */
    const cases = searched.values ?? [];
    if (cases.length === 0 && !allowNone) {
      throw new ToolError(
        `No case of ${JSON.stringify(dataset.name)} matches ${JSON.stringify(where)} (the selection is empty; ` +
          `the dataset has ${plural(total, "case")}). Check the condition: attribute names as written ` +
          `(${dataset.attributes.join(", ") || "none"}), text values in double quotes, numbers without quotes.`,
        "empty_selection",
        { datasetName: dataset.name, where, caseCount: total, available: dataset.attributes },
      );
    }
    return cases;
  }

  /**
   * The case ids (CODAP's) of the child-most collection's selected and unselected cases.
   * @param {DescribedDataset} dataset
   */
  async function bySelection(dataset) {
    const leaf = dataset.collections[dataset.collections.length - 1];
    const selection = get(`${dataContext(dataset.id)}.selectionList`);
    const all = get(`${collection(dataset.id, leaf.id)}.caseFormulaSearch[true]`);
    const [sel, every] = await send([selection, all]);
    /** @type {Set<CodapId>} */
    const selected = new Set(
      (must(selection, sel).values ?? [])
        .filter((/** @type {any} */ c) => String(c.collectionID) === String(leaf.id))
        .map((/** @type {any} */ c) => c.caseID),
    );
    /** @type {CodapId[]} */
    const ids = (must(all, every).values ?? []).map((/** @type {any} */ c) => c.id);
    return { selected: ids.filter((id) => selected.has(id)), unselected: ids.filter((id) => !selected.has(id)) };
  }

  /**
   * The items the arguments select, as CODAP gives them ({id, values}): by a formula on the child-most
   * collection (two messages whatever the number of matches) or by ids (one message). No match is an error.
   * @param {DescribedDataset} dataset
   * @param {CaseSelection} args
   * @returns {Promise<Array<{id: CodapId, values: Record<string, unknown>}>>}
   */
  async function select(dataset, args) {
    const hasWhere = typeof args.where === "string";
    const hasIds = Array.isArray(args.caseIds);
    const bySelected = args.selection !== undefined;
    if (Number(hasWhere) + Number(hasIds) + Number(bySelected) !== 1) {
      throw invalid(
        "Give exactly one of where (a CODAP formula such as `height > 180`), caseIds (ids from " +
          "export_codap_data with includeCaseIds) and selection (the cases selected in CODAP, or the unselected).",
      );
    }
    const leaf = dataset.collections[dataset.collections.length - 1];
    const total = leaf?.caseCount ?? 0;
    if (bySelected) {
      const ids = (await bySelection(dataset))[/** @type {"selected" | "unselected"} */ (args.selection)];
      if (ids.length === 0) {
        throw new ToolError(
          args.selection === "selected"
            ? `No case of ${JSON.stringify(dataset.name)} is selected in CODAP: select some first ` +
              "(select_codap_cases), or give where or caseIds. Nothing was changed."
            : `Every case of ${JSON.stringify(dataset.name)} is selected in CODAP, so none is unselected. Nothing was ` +
              "changed.",
          "empty_selection",
          { datasetName: dataset.name, selection: args.selection, caseCount: total },
        );
      }
      const lookups = ids.map((id) => get(`${dataContext(dataset.id)}.itemByCaseID[${id}]`));
      const replies = await send(lookups);
      return replies.map((r, i) => must(lookups[i], r, `finding the ${args.selection} cases`).values);
    }
    if (hasIds) {
      const ids = [...new Set(args.caseIds)];
      const lookups = ids.map((id) => get(`${dataContext(dataset.id)}.itemByID[${id}]`));
      const replies = await send(lookups);
      const missing = ids.filter((_, i) => replies[i]?.success !== true);
      if (missing.length) {
        throw new ToolError(
          `Dataset ${JSON.stringify(dataset.name)} (${plural(total, "case")}) has no case with id ` +
            `${idList(missing)}. Get the current ids with export_codap_data and includeCaseIds, or select the ` +
            "cases with where instead.",
          "case_not_found",
          { datasetName: dataset.name, missing, caseCount: total },
        );
      }
      return replies.map((r) => r.values); // each a success (checked above)
    }
    const cases = await matching(dataset, /** @type {string} */ (args.where));
    const lookups = cases.map((c) => get(`${dataContext(dataset.id)}.itemByCaseID[${c.id}]`));
    const replies = await send(lookups);
    return replies.map((r, i) => must(lookups[i], r, `finding the case matching ${JSON.stringify(args.where)}`).values);
  }

  /** @param {CaseSelection} args */
  const selectionText = (args) => (typeof args.where === "string"
    ? `matching ${args.where.trim()}`
    : args.selection ? `that were ${args.selection} in CODAP` : "with the given ids");

  return { select, matching, bySelection, selectionText };
}
