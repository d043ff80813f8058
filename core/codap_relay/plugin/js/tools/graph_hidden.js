// @ts-check
// Which cases to hide in a graph (its Hide/Show menu's Hide Selected or Unselected Cases), picked as the case tools
// pick them: the selection, a condition CODAP evaluates (where), or the rows' ids (caseIds). CODAP hides a graph's
// cases by the case ids of the collection it plots; the ids the tools give are item ids, mapped here.

import { ToolError, collection, dataContext, get, invalid } from "./context.js";

/**
 * @import {CodapId, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * How update_codap_graph picks the cases to hide.
 * @typedef {{selection?: "selected" | "unselected", where?: string, caseIds?: CodapId[]}} HidePick
 */

/**
 * The case ids the graph hides after hiding the picked cases: those it hid already and the picked ones of the
 * collection it plots.
 * @param {Pick<ToolContext, "send" | "must">} ctx
 * @param {HidePick} pick
 * @param {Record<string, any>} detail the graph's component
 * @param {DescribedDataset} dataset
 * @returns {Promise<CodapId[]>}
 */
export async function casesToHide({ send, must }, pick, detail, dataset) {
  const plotted = [detail.xAttributeName, detail.yAttributeName, detail.y2AttributeName, detail.legendAttributeName,
    detail.topSplitAttributeName, detail.rightSplitAttributeName].filter(Boolean);
  const index = Math.max(0, ...plotted.map((n) => dataset.collections.findIndex((c) => c.attributes.some((a) => a.name === n))));
  const coll = dataset.collections[index];
  const base = collection(dataset.id, coll.id);
  /** @type {CodapId[]} */
  let chosen;
  let what;
  if (pick.where !== undefined) {
    const where = pick.where.trim();
    if (!where || where.includes("]")) throw invalid("hideCasesWhere needs a CODAP condition without ], e.g. `height > 180`.");
    const search = get(`${base}.caseFormulaSearch[${where}]`);
    const [found] = await send([search]);
    if (found?.success !== true) {
      const reason = typeof found?.error === "string" ? found.error : found?.values?.error ?? "no reason given";
      throw new ToolError(
        `CODAP could not evaluate ${JSON.stringify(where)} on ${JSON.stringify(dataset.name)}: ${reason}. Nothing was hidden. ` +
          'Write text values in double quotes (g = "A").',
        "formula_error",
        { datasetName: dataset.name, formula: where, codapError: reason },
      );
    }
    chosen = (found.values ?? []).map((/** @type {{id: CodapId}} */ c) => c.id);
    what = `matching ${where}`;
  } else if (pick.caseIds !== undefined) {
    const all = get(`${base}.caseFormulaSearch[true]`);
    const [every] = await send([all]);
    /** @type {CodapId[]} */
    const caseIds = (must(all, every).values ?? []).map((/** @type {{id: CodapId}} */ c) => c.id);
    const lookups = caseIds.map((id) => get(`${dataContext(dataset.id)}.itemByCaseID[${id}]`));
    const items = await send(lookups);
    const wanted = new Set(pick.caseIds.map(String));
    chosen = caseIds.filter((_, i) => items[i]?.success === true && wanted.has(String(items[i].values?.id)));
    const found = new Set(caseIds.flatMap((_, i) => (items[i]?.success === true ? [String(items[i].values?.id)] : [])));
    const missing = pick.caseIds.filter((id) => !found.has(String(id)));
    if (missing.length) {
      throw new ToolError(
        `${JSON.stringify(dataset.name)} has no case with id ${missing.join(", ")} in ${JSON.stringify(coll.name)}, the ` +
          "collection this graph plots. Nothing was hidden. Get the ids with export_codap_data (includeCaseIds).",
        "case_not_found",
        { datasetName: dataset.name, missing },
      );
    }
    what = "with the given ids";
  } else {
    const selection = get(`${dataContext(dataset.id)}.selectionList`);
    const all = get(`${base}.caseFormulaSearch[true]`);
    const [sel, every] = await send([selection, all]);
    /** @type {Array<{caseID: unknown, collectionID: unknown}>} */
    const selectionList = must(selection, sel).values ?? [];
    const selected = new Set(selectionList.filter((s) => String(s.collectionID) === String(coll.id)).map((s) => s.caseID));
    /** @type {CodapId[]} */
    const ids = (must(all, every).values ?? []).map((/** @type {{id: CodapId}} */ c) => c.id);
    chosen = ids.filter((id) => selected.has(id) === (pick.selection === "selected"));
    what = pick.selection;
  }
  if (!chosen.length) {
    throw new ToolError(
      `No case of ${JSON.stringify(dataset.name)} is ${what}, so none was hidden` +
        (pick.selection === "selected" ? ": give hideCasesWhere or hideCaseIds, or select some first (select_codap_cases)."
          : pick.selection === "unselected" ? ": every case is selected." : "."),
      "nothing_to_hide",
      { datasetName: dataset.name, ...pick, caseCount: coll.caseCount ?? null },
    );
  }
  return [...new Set([...(detail.hiddenCases ?? []), ...chosen])];
}
