// @ts-check
// Analysis: statistics (statistics.js) and formulas computed by CODAP's own formula engine (formula_values.js
// says how), and the selection.

import { ToolError, collection, dataContext, get, invalid, plural, toolResult } from "./context.js";
import { LISTED_ROWS, ROW_IDS, caseRowReads, leafOf, rowsText } from "./case_rows.js";
import { createFormulaValues, errorText, isError, valueOf } from "./formula_values.js";
import { drawSample, seeded } from "./sampling.js";
import { createStatisticsTool } from "./statistics.js";
import { randomColumns, redrawNote } from "./statistics_local.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DescribedCollection, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {CaseRow} from "./case_rows.js"
 */

/** @param {ToolContext} ctx */
export function createAnalysisTools(ctx) {
  const { send, must } = ctx;
  const { datasetAndCollection, temporaryPrefix, withTemporaryFormulas } = createFormulaValues(ctx);

  /**
   * CODAP's reason for a formula it cannot evaluate on its own (no dataset), or null if it can.
   * @param {CodapReply | undefined} reply
   */
  function engineError(reply) {
    if (reply?.success !== true) {
      const e = reply?.values?.error ?? reply?.error;
      return typeof e === "string" && e ? e : "CODAP reported a failure without a message";
    }
    const [v] = reply.values ?? [];
    if (typeof v === "string" && /^[A-Za-z]*Error: /.test(v)) return v;
    return null;
  }

  /**
   * @param {{formula: string, datasetName?: string, collectionName?: string, caseIds?: CodapId[], cases?: number}} args
   */
  async function evaluate_codap_formula(args) {
    const { formula, datasetName } = args;
    if (formula.trim() === "") throw invalid("formula must be a CODAP formula, e.g. `round(sqrt(2), 3)`.");
    if (datasetName === undefined) {
      if (args.collectionName !== undefined || args.caseIds !== undefined) {
        throw invalid("collectionName and caseIds need datasetName.");
      }
      /** @type {CodapRequest} */
      const request = {
        action: "notify",
        resource: "formulaEngine",
        values: { request: "evalExpression", source: formula, records: [{}] },
      };
      const [reply] = await send([request]);
      const reason = engineError(reply);
      if (reason) {
        const aggregate = /AggregateGroupId|AggregateContext|getCaseChildrenCount|is not a function/.test(reason);
        const symbol = /Undefined symbol/.test(reason);
        throw new ToolError(
          `CODAP cannot evaluate the formula ${JSON.stringify(formula)} on its own: ${reason}.` +
            (aggregate
              ? " It uses a function that works over cases (mean, count, prev, lookups…): give datasetName."
              : "") +
            (symbol ? " If it names an attribute, give datasetName." : ""),
          "formula_error",
          { formula, codapError: reason },
        );
      }
      const value = /** @type {import("../types.js").CodapSuccess} */ (reply).values[0]; // no reason: a success
      return toolResult(`CODAP evaluates ${JSON.stringify(formula)} to ${JSON.stringify(value)}.`, {
        formula,
        value: valueOf(value),
      });
    }

    const { dataset, coll } = await datasetAndCollection(datasetName, args.collectionName, { formulas: true });
    if (coll.caseCount === 0) {
      throw new ToolError(
        `Collection ${JSON.stringify(coll.name)} of ${JSON.stringify(dataset.name)} has no cases to evaluate the ` +
          "formula for. Add cases first, or leave out datasetName for a formula without attributes.",
        "no_cases",
        { datasetName: dataset.name, collectionName: coll.name },
      );
    }
    // Results are rows, named by item id (the ids every tool takes as caseIds): given ids are read with
    // itemByID (an item's values hold every attribute's value, its parents' included); without ids, the first
    // cases of the child-most collection are found by index and read as their items (itemByCaseID). The first
    // cases of a parent collection are read as cases: one row id would not stand for all of their rows.
    const leaf = coll === leafOf(dataset);
    const first = Math.min(args.cases ?? 5, coll.caseCount);
    /** @type {CodapRequest[]} */
    let reads;
    if (args.caseIds) {
      reads = args.caseIds.map((id) => get(`${dataContext(dataset.id)}.itemByID[${id}]`));
    } else {
      const byIndex = Array.from({ length: first }, (_, i) => get(`${collection(dataset.id, coll.id)}.caseByIndex[${i}]`));
      if (leaf) {
        const found = await send(byIndex);
        const caseIds = found.map((r, i) => must(byIndex[i], r, `finding the first cases of ${JSON.stringify(coll.name)}`)
          .values?.case?.id);
        reads = caseIds.map((id) => get(`${dataContext(dataset.id)}.itemByCaseID[${id}]`));
      } else {
        reads = byIndex;
      }
    }
    const byItem = args.caseIds !== undefined || leaf;
    const name = `${temporaryPrefix(dataset)}value`;
    // CODAP re-evaluates every formula of the dataset when the hidden attribute is added and removed: random
    // columns are drawn anew. The values are those of the draws held when the call began (read in the same
    // message); the rows are read again after, so the answer says what the table shows now.
    const random = randomColumns(dataset);
    const { readReplies } = await withTemporaryFormulas(dataset, coll, [{ name, formula }], reads);
    const readsAfter = random.length ? await send(reads) : [];
    /** @type {Array<{caseId?: CodapId, value: unknown, values: Record<string, unknown>, nowShown?: Record<string, unknown>}>} */
    const results = [];
    /** @type {Array<CodapId | number>} */
    const missing = [];
    readReplies.forEach((reply, i) => {
      const found = reply?.success === true ? (byItem ? reply.values : reply.values?.case) : null;
      if (!found) {
        missing.push(args.caseIds ? args.caseIds[i] : i);
        return;
      }
      const { [name]: v, ...own } = found.values ?? {};
      const later = readsAfter[i]?.success === true ? (byItem ? readsAfter[i].values : readsAfter[i].values?.case) : null;
      /** @type {Record<string, unknown>} */
      const now = Object.fromEntries(random.filter((c) => later?.values && c.attribute in later.values)
        .map((c) => [c.attribute, later?.values?.[c.attribute]]));
      results.push({ ...(byItem ? { caseId: found.id } : {}), value: v === undefined ? null : v, values: own,
        ...(random.length ? { nowShown: now } : {}) });
    });
    if (args.caseIds && results.length === 0) {
      throw new ToolError(
        `None of the caseIds (${args.caseIds.join(", ")}) is a row of ${JSON.stringify(dataset.name)}. caseIds are ` +
          `${ROW_IDS}. Leave out caseIds for the first cases, or take ids from export_codap_data or ` +
          "get_codap_selection.",
        "case_not_found",
        { datasetName: dataset.name, collectionName: coll.name, caseIds: args.caseIds },
      );
    }
    if (!args.caseIds && missing.length) {
      throw new ToolError(
        `CODAP did not give the values of the first cases of ${JSON.stringify(coll.name)} in ` +
          `${JSON.stringify(dataset.name)}. Try again, or give caseIds.`,
        "codap_error",
        { datasetName: dataset.name, collectionName: coll.name },
      );
    }
    const errors = results.filter((r) => isError(r.value));
    if (errors.length && errors.length === results.length) {
      const reason = errorText(/** @type {string} */ (errors[0].value));
      throw new ToolError(
        `CODAP cannot evaluate the formula ${JSON.stringify(formula)} in ${JSON.stringify(dataset.name)} ` +
          `(collection ${JSON.stringify(coll.name)}): ${reason}. Attributes there: ` +
          `${coll.attributes.map((a) => a.name).join(", ")}.`,
        "formula_error",
        { formula, datasetName: dataset.name, collectionName: coll.name, codapError: reason },
      );
    }
    for (const r of results) r.value = isError(r.value) ? r.value : valueOf(r.value);
    const same = results.length > 1 && results.every((r) => r.value === results[0].value);
    const lines = results.map((r) =>
      byItem ? `• case ${r.caseId}: ${JSON.stringify(r.value)}` : `• ${JSON.stringify(r.values)}: ${JSON.stringify(r.value)}`);
    let text = `CODAP evaluates ${JSON.stringify(formula)} in ${JSON.stringify(dataset.name)} (collection ` +
      `${JSON.stringify(coll.name)}, ${plural(coll.caseCount, "case")}) to:\n${lines.join("\n")}`;
    if (same) text += "\nThe same value for each case shown.";
    if (errors.length) text += `\n${plural(errors.length, "case")} gave an error (shown as CODAP shows it).`;
    if (args.caseIds && !leaf) {
      text += `\nEach row's value is that of its case in ${JSON.stringify(coll.name)} (a parent collection).`;
    } else if (!byItem) {
      text += `\nThese are cases of the parent collection ${JSON.stringify(coll.name)}, shown by their values; ` +
        "their rows' ids are not given (give caseIds, or leave out collectionName, to evaluate by row).";
    }
    if (missing.length && args.caseIds) text += `\nNot rows of this dataset, ignored: ${missing.join(", ")}.`;
    text += "\nEmpty (null) is CODAP's result when there is no value (e.g. an aggregate over no numbers).";
    if (random.length) {
      text += `\n${redrawNote(random, "when the tool's hidden formula attribute was added and removed")} The ` +
        "values above are for the draws CODAP held when the call began (each result's values); nowShown gives " +
        "each row's random values as CODAP shows them now. For counts, means or other statistics of the draws " +
        "the class sees, use compute_codap_statistics (it reads them without drawing anew).";
    }
    return toolResult(text, {
      formula,
      datasetName: dataset.name,
      collectionName: coll.name,
      caseCount: coll.caseCount,
      results,
      ...(missing.length && args.caseIds ? { notCases: missing } : {}),
      ...(random.length ? { redrawnRandomColumns: random } : {}),
    });
  }

  /**
   * Selected case ids of a collection, and its case count, in one message (with `extra` requests first).
   * @param {DescribedDataset} dataset
   * @param {DescribedCollection} coll
   */
  function selectionRequests(dataset, coll) {
    return [
      get(`${collection(dataset.id, coll.id)}.selectionList`),
      get(`${collection(dataset.id, coll.id)}.caseCount`),
    ];
  }

  /**
   * @param {{datasetName: string, collectionName?: string, mode?: "replace" | "extend" | "clear", where?: string,
   *   caseIds?: CodapId[], maxCases?: number, sample?: {n: number, seed?: number}}} args
   */
  async function select_codap_cases(args) {
    const mode = args.mode ?? "replace";
    const { sample, caseIds } = args;
    const max = args.maxCases ?? Math.max(LISTED_ROWS, Math.min(sample?.n ?? 0, 200));
    if (sample && (mode === "clear" || caseIds !== undefined)) throw invalid("sample draws from the cases where selects (or all of them): not with caseIds or mode clear.");
    // a sample without a condition is drawn from every case of the collection
    const where = args.where ?? (sample ? "true" : undefined);
    if (mode === "clear" && (where !== undefined || caseIds !== undefined)) {
      throw invalid('mode "clear" selects nothing: leave out where and caseIds (or use mode replace).');
    }
    if (mode !== "clear" && (where === undefined) === (caseIds === undefined)) {
      throw invalid(`mode "${mode}" needs exactly one of where (a CODAP condition) and caseIds.`);
    }
    if (where !== undefined && where.trim() === "") throw invalid("where must be a CODAP condition.");
    if (where !== undefined && where.includes("]")) {
      throw invalid('CODAP\'s plugin API cannot search with a condition holding "]"; write it without one.');
    }
    const { dataset, coll } = await datasetAndCollection(args.datasetName, args.collectionName);
    const sel = `${dataContext(dataset.id)}.selectionList`;
    const counts = selectionRequests(dataset, coll);
    /** @type {[Array<{caseID: CodapId}>, number]} */
    const [before, total] = await (async () => {
      const r = await send(counts);
      return [must(counts[0], r[0]).values ?? [], must(counts[1], r[1]).values];
    })();

    /** @type {CodapId[]} */
    let ids = [];
    /** @type {CodapId[]} */
    let notCases = [];
    let drawnFrom = 0;
    /** @type {CaseRow[]} the rows given by caseIds, as CODAP holds them */
    let givenRows = [];
    if (where !== undefined) {
      const search = get(`${collection(dataset.id, coll.id)}.caseFormulaSearch[${where}]`);
      const [found] = await send([search]);
      if (found?.success !== true) {
        let reason = found?.values?.error ?? found?.error ?? "CODAP reported a failure without a message";
        if (reason === "Unable to parse query.") {
          // CODAP's search gives no reason for a formula it cannot read; its formula engine does.
          /** @type {CodapRequest} */
          const check = {
            action: "notify",
            resource: "formulaEngine",
            values: { request: "evalExpression", source: where, records: [{}] },
          };
          const [checked] = await send([check]);
          const why = checked?.success === true ? null : checked?.values?.error;
          if (why) reason = `${reason} (${why})`;
        }
        throw new ToolError(
          `CODAP cannot evaluate the where condition ${JSON.stringify(where)} on ${JSON.stringify(dataset.name)}: ` +
            `${reason}. Attributes of ${JSON.stringify(coll.name)}: ${coll.attributes.map((a) => a.name).join(", ")}.` +
            " Nothing was selected.",
          "formula_error",
          { datasetName: dataset.name, where, codapError: reason },
        );
      }
      ids = (found.values ?? []).map((/** @type {{id: CodapId}} */ c) => c.id);
      drawnFrom = ids.length;
      if (sample && ids.length) ids = drawSample(ids, sample.n, sample.seed !== undefined ? seeded(sample.seed) : ctx.rng ?? Math.random);
      if (ids.length === 0) {
        throw new ToolError(
          `No case of ${JSON.stringify(dataset.name)} (collection ${JSON.stringify(coll.name)}, ` +
            `${plural(total, "case")}) matches where ${JSON.stringify(where)}. The selection was left as it was: ` +
            `${before.length} of ${total} selected.`,
          "no_matching_cases",
          { datasetName: dataset.name, where, caseCount: total, selectedCount: before.length },
        );
      }
    } else if (caseIds !== undefined) {
      // Rows, by item id: CODAP's selectionList takes item ids as well as case ids (selection-list-handler.ts
      // _toV3Id tries a case id, then an item id) and selects rows; a case counts as selected when all its rows are.
      const reads = caseIds.map((id) => get(`${dataContext(dataset.id)}.itemByID[${id}]`));
      const replies = await send(reads);
      ids = caseIds.filter((_, i) => replies[i]?.success === true);
      givenRows = replies.flatMap((r) => (r?.success === true ? [{ caseId: r.values?.id, values: r.values?.values ?? {} }] : []));
      notCases = caseIds.filter((_, i) => replies[i]?.success !== true);
      if (ids.length === 0) {
        throw new ToolError(
          `None of the caseIds (${caseIds.join(", ")}) is a row of ${JSON.stringify(dataset.name)}: caseIds are ` +
            `${ROW_IDS}. The selection was left as it was: ${before.length} of ${total} selected. Take ids from ` +
            "export_codap_data or get_codap_selection, or select with where.",
          "case_not_found",
          { datasetName: dataset.name, caseIds, selectedCount: before.length },
        );
      }
    }

    /** @type {CodapRequest} */
    const change = mode === "extend"
      ? { action: "update", resource: sel, values: ids }
      : { action: "create", resource: sel, values: ids };
    // The rows selected by a condition are read in the same message as the change (ids given were read above).
    const listedCases = where === undefined ? [] : ids.slice(0, max);
    const rowReads = caseRowReads(dataset, coll, listedCases);
    const replies = await send([change, ...counts, ...rowReads.requests]);
    must(change, replies[0], `changing the selection of ${JSON.stringify(dataset.name)}`);
    const now = must(counts[0], replies[1]).values ?? [];
    const caseCount = must(counts[1], replies[2]).values;
    /** @type {CaseRow[]} */
    const listed = where === undefined
      ? givenRows.slice(0, max)
      : rowReads.rows(replies.slice(3)).flatMap((r) => (r ? [r] : []));
    const truncated = ids.length > listed.length;
    const what = mode === "clear"
      ? "Cleared the selection"
      : `${mode === "extend" ? "Added" : "Selected"} ${sample ? `a random sample of ${plural(ids.length, "case")} (of ${drawnFrom}${
        sample.seed !== undefined ? `, seed ${sample.seed}` : ""})` : plural(ids.length, "case")}` +
        `${where === undefined || args.where === undefined ? "" : ` matching ${JSON.stringify(where)}`}` +
        `${mode === "extend" ? " to the selection" : ""}`;
    let text = `${what} in ${JSON.stringify(dataset.name)}: ${now.length} of ${plural(caseCount, "case")} of ` +
      `collection ${JSON.stringify(coll.name)} selected now (${before.length} before).`;
    if (caseIds !== undefined && coll !== leafOf(dataset)) {
      text += ` CODAP selected the ${plural(ids.length, "row")} given; a case of ${JSON.stringify(coll.name)} (a ` +
        "parent collection) counts as selected when all its rows are.";
    }
    if (notCases.length) text += ` Not rows of this dataset (ids are ${ROW_IDS}), ignored: ${notCases.join(", ")}.`;
    const leafRows = listed.length > 0 && listed[0].caseId !== undefined;
    text += rowsText(
      leafRows ? `The ${mode === "extend" ? "rows added" : "rows selected"}` : `The ${coll.name} cases selected`,
      listed,
      ids.length,
    );
    if (truncated && max > 0) text += ` maxCases (${max}) sets how many are listed; get_codap_selection lists the whole selection.`;
    // The ids: every row given (caseIds), or the listed rows matching the condition.
    const rowIds = caseIds !== undefined ? ids : leafRows ? listed.map((r) => r.caseId) : null;
    return toolResult(text, {
      datasetName: dataset.name,
      collectionName: coll.name,
      mode,
      ...(args.where === undefined ? {} : { where }),
      ...(sample ? { sample: { n: sample.n, ...(sample.seed !== undefined ? { seed: sample.seed } : {}), drawnFrom } } : {}),
      matched: ids.length,
      ...(rowIds ? { caseIds: rowIds } : {}),
      cases: listed,
      truncated,
      selectedCount: now.length,
      caseCount,
      selectedBefore: before.length,
      ...(notCases.length ? { notCases } : {}),
    });
  }

  /** @param {{datasetName: string, collectionName?: string, maxCases?: number}} args */
  async function get_codap_selection(args) {
    const max = args.maxCases ?? 50;
    const { dataset, coll } = await datasetAndCollection(args.datasetName, args.collectionName);
    const counts = selectionRequests(dataset, coll);
    const r = await send(counts);
    /** @type {Array<{caseID: CodapId}>} */
    const selected = must(counts[0], r[0]).values ?? [];
    const caseCount = must(counts[1], r[1]).values;
    const listed = selected.slice(0, max);
    // The child-most collection's cases are the rows: each is listed as its item (id and values, parents'
    // included), the id every tool takes as caseIds. A parent collection's cases are listed by their values.
    const leaf = coll === leafOf(dataset);
    const reads = caseRowReads(dataset, coll, listed.map((s) => s.caseID));
    const replies = reads.requests.length ? await send(reads.requests) : [];
    const cases = reads.rows(replies).map((row) => row ?? (leaf ? { caseId: null, values: null } : { values: null }));
    const head = `${selected.length} of ${plural(caseCount, "case")} of ${JSON.stringify(dataset.name)} ` +
      `(collection ${JSON.stringify(coll.name)}) ${selected.length === 1 ? "is" : "are"} selected in CODAP.`;
    const lines = cases.map((c) => (leaf ? `• ${c.caseId}: ${JSON.stringify(c.values)}` : `• ${JSON.stringify(c.values)}`));
    let text = head;
    if (lines.length) {
      text += leaf
        ? ` Selected rows (case id: values; ids as export_codap_data gives them, for caseIds):\n${lines.join("\n")}`
        : `\n${lines.join("\n")}\nThese are cases of the parent collection ${JSON.stringify(coll.name)}; their ` +
          "rows' ids are not given: leave out collectionName to list the selected rows with their ids.";
    }
    const truncated = selected.length > listed.length;
    if (truncated) {
      text += `\nOnly the first ${plural(listed.length, "selected case")} ${listed.length === 1 ? "is" : "are"} ` +
        `listed (maxCases ${max}); ${selected.length - listed.length} more are selected.`;
    }
    return toolResult(text, {
      datasetName: dataset.name,
      collectionName: coll.name,
      selectedCount: selected.length,
      caseCount,
      cases,
      ...(leaf ? { caseIds: cases.map((c) => c.caseId).filter((id) => id !== null) } : {}),
      truncated,
      ...(truncated ? { moreSelected: selected.length - listed.length } : {}),
    });
  }

  return { ...createStatisticsTool(ctx), evaluate_codap_formula, select_codap_cases, get_codap_selection };
}
