// @ts-check
// Analysis: statistics and formulas computed by CODAP's own formula engine, and the selection.
//
// CODAP evaluates aggregates (mean, median, stdDev, percentile…) only inside a formula attribute: the
// formulaEngine resource of the plugin API evaluates an expression over plain records, without a dataset, and
// its aggregates fail ("a.getCaseAggregateGroupId is not a function"); caseFormulaSearch answers only which cases
// a condition holds for. So a number is computed the way a teacher would in CODAP: hidden formula attributes
// are added, their values read and the attributes removed, all in ONE message (CODAP handles a message in one
// browser task, so nothing is drawn in between). CODAP's plugin API adds and removes attributes outside the undo
// history (applyModelChange without undo strings → withoutUndo), so the undo and redo stacks are unchanged.

import {
  ToolError,
  collection,
  dataContext,
  get,
  invalid,
  plural,
  toolResult,
  unknownAttribute,
} from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DescribedCollection, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * A statistic: whether it needs numbers, and its CODAP formula of an attribute reference, a filter condition (or
 * null) and the percentile asked for.
 * `y`: the second attribute of the statistics of two attributes (correlation, rSquared, slope, intercept).
 * @typedef {{numeric: boolean, paired?: boolean,
 *   formula: (x: string, filter: string | null, percentile?: number, y?: string) => string}} Statistic
 */

/**
 * How CODAP's formula text names an attribute: always in backticks, so any name works.
 * @param {string} name
 */
const ref = (name) => `\`${name.replace(/\\/g, "\\\\").replace(/`/g, "\\`")}\``;

/** @type {(fn: string, x: string, filter: string | null, extra?: string | null) => string} */
const call = (fn, x, filter, extra = null) =>
  `${fn}(${[x, ...(extra === null ? [] : [extra]), ...(filter ? [filter] : [])].join(", ")})`;

/**
 * Each statistic as a CODAP formula of an attribute reference, a filter condition (or null) and the percentile.
 * @type {Record<string, Statistic>}
 */
const STATISTICS = {
  count: { numeric: false, formula: (x, f) => call("count", x, f) },
  mean: { numeric: true, formula: (x, f) => call("mean", x, f) },
  median: { numeric: true, formula: (x, f) => call("median", x, f) },
  sd: { numeric: true, formula: (x, f) => call("stdDev", x, f) },
  variance: { numeric: true, formula: (x, f) => call("variance", x, f) },
  min: { numeric: true, formula: (x, f) => call("min", x, f) },
  max: { numeric: true, formula: (x, f) => call("max", x, f) },
  sum: { numeric: true, formula: (x, f) => call("sum", x, f) },
  q1: { numeric: true, formula: (x, f) => call("percentile", x, f, "0.25") },
  q3: { numeric: true, formula: (x, f) => call("percentile", x, f, "0.75") },
  iqr: {
    numeric: true,
    formula: (x, f) => `${call("percentile", x, f, "0.75")} - ${call("percentile", x, f, "0.25")}`,
  },
  range: { numeric: true, formula: (x, f) => `${call("max", x, f)} - ${call("min", x, f)}` },
  mad: { numeric: true, formula: (x, f) => call("mad", x, f) },
  percentile: { numeric: true, formula: (x, f, p) => call("percentile", x, f, String(/** @type {number} */ (p) / 100)) },
  // Of two attributes: CODAP's bivariate functions take x, y and a filter (the least-squares line of y on x).
  correlation: { numeric: true, paired: true, formula: (x, f, _p, y) => call("correlation", x, f, y) },
  rSquared: { numeric: true, paired: true, formula: (x, f, _p, y) => call("rSquared", x, f, y) },
  slope: { numeric: true, paired: true, formula: (x, f, _p, y) => call("linRegrSlope", x, f, y) },
  intercept: { numeric: true, paired: true, formula: (x, f, _p, y) => call("linRegrIntercept", x, f, y) },
};
const DEFAULT_STATISTICS = ["count", "mean", "median", "sd", "min", "max", "q1", "q3"];
const MAX_GROUPS = 50;
/** At most this many case values read by the aggregates of one call (a few seconds of CODAP's time). */
const MAX_WORK = 1_000_000;
const NO_VALUE = "(no value)";
/** What the caseIds of every tool are (the same sentence in each tool's description). */
const ROW_IDS = "the ids export_codap_data gives with includeCaseIds (CODAP's item ids: one per row, stable " +
  "across sorting and grouping)";
/**
 * The child-most collection of a described dataset: its cases are the rows.
 * @param {DescribedDataset} dataset
 */
const leafOf = (dataset) => dataset.collections[dataset.collections.length - 1];
/** How CODAP shows a formula's error as the attribute's value. */
const ERROR_MARK = "❌";

/** @type {(v: unknown) => v is string} */
const isError = (v) => typeof v === "string" && v.startsWith(ERROR_MARK);
/** @param {string} v */
const errorText = (v) => v.slice(ERROR_MARK.length).trim();
/** CODAP's value for "no value" (an aggregate over no numbers) is the empty string. */
/** @param {unknown} v */
const valueOf = (v) => (v === "" || v === undefined ? null : v);

/**
 * A number as shown in the text table: CODAP's full value in structuredContent.
 * @param {unknown} v
 */
function shown(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(6)));
}

/** @param {ToolContext} ctx */
export function createAnalysisTools(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;

  /**
   * The dataset, described, and one of its collections (by name, or the child-most one).
   * @param {string} datasetName
   * @param {string | undefined} collectionName
   * @returns {Promise<{dataset: DescribedDataset, coll: DescribedCollection}>}
   */
  async function datasetAndCollection(datasetName, collectionName) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
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
   * CODAP's values of `temporary` ([{name, formula}]) in the collection's cases: one message adds them as hidden
   * attributes, reads the cases (`reads`: requests for cases), and removes them. Returns the read replies. The
   * removal is checked, and retried once in a message of its own; if it still fails the error names what stayed.
   * @param {DescribedDataset} dataset
   * @param {DescribedCollection} coll
   * @param {Array<{name: string, formula: string}>} temporary
   * @param {CodapRequest[]} reads
   */
  async function withTemporaryFormulas(dataset, coll, temporary, reads) {
    const names = temporary.map((t) => t.name);
    const base = collection(dataset.id, coll.id);
    /** @type {CodapRequest} */
    const create = {
      action: "create",
      resource: `${base}.attribute`,
      values: temporary.map(({ name, formula }) => ({ name, formula, hidden: true })),
    };
    /** @type {CodapRequest[]} */
    const removals = names.map((n) => ({ action: "delete", resource: `${base}.attribute[${n}]` }));
    const replies = await send([create, ...reads, ...removals]);
    const created = replies[0];
    const readReplies = replies.slice(1, 1 + reads.length);
    let left = names.filter((_, i) => replies[1 + reads.length + i]?.success !== true);
    if (created?.success === true && left.length) {
      const retry = await send(left.map((n) => /** @type {CodapRequest} */ ({ action: "delete", resource: `${base}.attribute[${n}]` })));
      left = left.filter((_, i) => retry[i]?.success !== true);
      if (left.length) {
        throw new ToolError(
          `CODAP computed the values but did not remove ${plural(left.length, "temporary attribute")} from ` +
            `${JSON.stringify(dataset.name)}: ${left.join(", ")}. Delete them in CODAP (or with codap_api).`,
          "codap_error",
          { datasetName: dataset.name, temporaryAttributes: left },
        );
      }
    }
    must(create, created, `adding temporary formula attributes to ${JSON.stringify(dataset.name)}`);
    return { readReplies };
  }

  /**
   * @param {{datasetName: string, attributes: string[], statistics?: string[], where?: string, groupBy?: string,
   *   percentile?: number, pairedWith?: string}} args
   */
  async function compute_codap_statistics(args) {
    const statistics = args.statistics ?? DEFAULT_STATISTICS;
    const { where, groupBy, percentile, pairedWith } = args;
    if (statistics.includes("percentile") && percentile === undefined) {
      throw invalid('The statistic "percentile" needs the `percentile` argument (0-100, e.g. 90).');
    }
    const paired = statistics.filter((s) => STATISTICS[s].paired);
    if (paired.length && pairedWith === undefined) {
      throw invalid(
        `${paired.join(", ")} ${paired.length === 1 ? "is a statistic" : "are statistics"} of two attributes: give the ` +
          "second as pairedWith (e.g. attributes [\"height\"], pairedWith \"weight\"; slope and intercept are of the " +
          "least-squares line of pairedWith on the attribute).",
      );
    }
    if (where !== undefined && where.trim() === "") throw invalid("where must be a CODAP condition, or left out.");
    const found = await findDataset(args.datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    /** @type {(name: string, role: string) => import("../types.js").DescribedAttribute & {coll: DescribedCollection, index: number}} */
    const attrInfo = (name, role) => {
      for (const [index, c] of dataset.collections.entries()) {
        const a = c.attributes.find((x) => x.name === name);
        if (a) return { ...a, coll: c, index };
      }
      throw unknownAttribute(dataset, name, role);
    };
    const attrs = args.attributes.map((n) => attrInfo(n, "statistics"));
    const grouping = groupBy === undefined ? null : attrInfo(groupBy, "groupBy");
    const partner = pairedWith === undefined ? null : attrInfo(pairedWith, "pairedWith");
    const used = [...attrs, ...(grouping ? [grouping] : []), ...(partner ? [partner] : [])];
    const top = dataset.collections[0];
    const outside = used.filter((a) => a.index !== 0);
    if (outside.length) {
      const a = outside[0];
      throw new ToolError(
        `Attribute ${JSON.stringify(a.name)} is in collection ${JSON.stringify(a.coll.name)}, a child of ` +
          `${JSON.stringify(top.name)}. In a hierarchical dataset CODAP's aggregate functions compute one value ` +
          "per parent case, never over all the cases of a child collection, so CODAP cannot give these statistics. " +
          `Only attributes of the top collection ${JSON.stringify(top.name)} can be summarised (${top.attributes
            .map((x) => x.name)
            .join(", ")}); to summarise ${JSON.stringify(a.name)}, move it (or its parents' attributes) so the ` +
          "dataset is flat.",
        "hierarchical_dataset",
        { datasetName: dataset.name, attribute: a.name, collection: a.coll.name, topCollection: top.name },
      );
    }
    if (top.caseCount === 0) {
      throw new ToolError(`Dataset ${JSON.stringify(dataset.name)} has no cases yet.`, "no_cases", {
        datasetName: dataset.name,
      });
    }

    // The groups: the values CODAP lists as the attribute's categories (its non-empty values, in CODAP's order).
    /** @type {Array<{label: string, condition: string} | null>} */
    let groups = [null];
    if (grouping) {
      const request = get(`${collection(dataset.id, top.id)}.attribute[${grouping.id}]`);
      const [reply] = await send([request]);
      /** @type {string[]} */
      const order = must(request, reply, `reading the values of ${JSON.stringify(grouping.name)}`)
        .values?._categoryMap?.__order ?? [];
      if (order.length > MAX_GROUPS) {
        throw new ToolError(
          `Attribute ${JSON.stringify(grouping.name)} has ${order.length} distinct values; groupBy takes an ` +
            `attribute with at most ${MAX_GROUPS}. Group by an attribute with fewer values, or narrow the cases ` +
            "with where.",
          "too_many_groups",
          { datasetName: dataset.name, groupBy: grouping.name, groups: order.length, max: MAX_GROUPS },
        );
      }
      groups = [...order.map((v) => ({ label: v, condition: `${ref(grouping.name)} = ${JSON.stringify(v)}` })),
        { label: NO_VALUE, condition: `${ref(grouping.name)} = ""` }];
    }

    // Two hidden attributes whatever the number of groups, statistics and attributes (each added attribute
    // costs CODAP a pass over every case; the aggregates inside one formula are what CODAP computes anyway):
    // - the where condition as it stands, evaluated case by case (its errors are CODAP's reasons for it, and
    //   CODAP's `and` cannot work inside an aggregate's filter, where values come as arrays: "Unexpected type of
    //   argument in function and … actual: Array"; `if` can);
    // - one concat() of every statistic of every row, each as the aggregate CODAP offers, with the row's filter:
    //   the where attribute (if() reads its "true"/"false") and/or the group's value. Numbers come back as the
    //   text JavaScript gives a number (it reads back as the same number), joined by "|".
    const prefix = temporaryPrefix(dataset);
    const whereName = `${prefix}where`;
    /** @type {string[]} */
    const fields = [];
    /** @param {string} formula */
    const add = (formula) => fields.push(formula) - 1;
    const rows = groups.map((g) => {
      const cond = g?.condition ?? null;
      const filter = where === undefined ? cond : `if(${ref(whereName)}, ${cond ?? "true"}, false)`;
      const condition = [where === undefined ? null : `(${where})`, cond].filter(Boolean).join(" and ");
      const casesSlot = filter ? add(`count(${filter})`) : null;
      return {
        group: g,
        condition,
        casesSlot,
        cells: attrs.map((a) => ({
          attribute: a.name,
          slots: statistics.map((s) => {
            const y = partner ? ref(partner.name) : undefined;
            const formula = STATISTICS[s].formula(ref(a.name), filter, percentile, y);
            // As the answer shows it: the row's condition by name.
            const shownFormula = STATISTICS[s].formula(ref(a.name), condition ? "condition" : null, percentile, y);
            return { statistic: s, formula, shownFormula, slot: add(formula) };
          }),
        })),
      };
    });
    const aggregate = /\b(count|mean|median|stdDev|variance|min|max|sum|mad|percentile|correlation|rSquared|linRegrSlope|linRegrIntercept)\(/g;
    const passes = fields.reduce((n, f) => n + (f.match(aggregate)?.length ?? 0), 0);
    if (passes * top.caseCount > MAX_WORK) {
      throw new ToolError(
        `That is ${passes} aggregate computations over ${plural(top.caseCount, "case")}, more than CODAP can do ` +
          `in a few seconds (at most ${MAX_WORK.toLocaleString("en")} case values). Ask for fewer statistics, ` +
          "attributes or groups at a time.",
        "too_much_work",
        { datasetName: dataset.name, aggregates: passes, caseCount: top.caseCount },
      );
    }
    const temporary = [
      ...(where === undefined ? [] : [{ name: whereName, formula: where }]),
      { name: `${prefix}stats`, formula: `concat(${fields.join(', "|", ')})` },
    ];
    const read = get(`${collection(dataset.id, top.id)}.caseByIndex[0]`);
    const { readReplies: [caseReply] } = await withTemporaryFormulas(dataset, top, temporary, [read]);
    /** @type {Record<string, unknown>} */
    const values = must(read, caseReply, `reading the computed statistics of ${JSON.stringify(dataset.name)}`)
      .values?.case?.values ?? {};

    const whereValue = values[whereName];
    if (where !== undefined && isError(whereValue)) {
      const reason = errorText(whereValue);
      throw new ToolError(
        `CODAP cannot evaluate the where condition ${JSON.stringify(where)} on ${JSON.stringify(dataset.name)}: ` +
          `${reason}. Attributes of ${JSON.stringify(top.name)}: ${top.attributes.map((a) => a.name).join(", ")}.`,
        "formula_error",
        { datasetName: dataset.name, where, codapError: reason },
      );
    }
    const statsValue = values[`${prefix}stats`];
    if (isError(statsValue)) {
      const reason = errorText(statsValue);
      throw new ToolError(
        `CODAP could not compute the statistics of ${attrs.map((a) => JSON.stringify(a.name)).join(", ")} ` +
          `(formulas such as ${JSON.stringify(rows[0].cells[0].slots[0].shownFormula)}): ${reason}.`,
        "formula_error",
        { datasetName: dataset.name, formula: rows[0].cells[0].slots[0].shownFormula, codapError: reason },
      );
    }
    const texts = statsValue === undefined || statsValue === null ? [] : String(statsValue).split("|");
    if (texts.length !== fields.length) {
      throw new ToolError(
        `CODAP gave ${texts.length} values for ${fields.length} statistics: ${String(statsValue).slice(0, 200)}`,
        "codap_error",
        { datasetName: dataset.name },
      );
    }
    /** @param {number} slot */
    const value = (slot) => (texts[slot] === "" ? null : Number(texts[slot]));

    /** @type {Array<{group?: string, attribute: string, cases: number | null, [statistic: string]: unknown}>} */
    const out = [];
    /** @type {string[]} */
    const empty = [];
    for (const row of rows) {
      const cases = row.casesSlot === null ? top.caseCount : value(row.casesSlot);
      if (row.group && cases === 0) {
        if (row.group.label !== NO_VALUE) empty.push(row.group.label);
        continue;
      }
      for (const cell of row.cells) {
        /** @type {(typeof out)[number]} */
        const r = {
          ...(row.group ? { group: row.group.label } : {}),
          attribute: cell.attribute,
          cases,
        };
        for (const s of cell.slots) r[s.statistic] = value(s.slot);
        out.push(r);
      }
    }
    const matched = rows.reduce((n, row) => n + (row.casesSlot === null ? top.caseCount : /** @type {number} */ (value(row.casesSlot))), 0);
    if (matched === 0) {
      throw new ToolError(
        `No case of ${JSON.stringify(dataset.name)} matches where ${JSON.stringify(where)} ` +
          `(${plural(top.caseCount, "case")} checked), so there is nothing to summarise. Loosen the condition.`,
        "no_matching_cases",
        { datasetName: dataset.name, where, caseCount: top.caseCount },
      );
    }
    const numericAsked = statistics.filter((s) => STATISTICS[s].numeric);
    if (numericAsked.length) {
      for (const a of attrs) {
        const mine = out.filter((r) => r.attribute === a.name);
        if (mine.every((r) => numericAsked.every((s) => r[s] === null))) {
          const withValues = mine.reduce((n, r) => n + (/** @type {any} */ (r).count ?? 0), 0);
          throw new ToolError(
            `Attribute ${JSON.stringify(a.name)} has no numeric values` +
              `${where === undefined ? "" : ` in the cases matching ${JSON.stringify(where)}`}, so ` +
              `${numericAsked.join(", ")} do not apply to it: the statistic that applies is count (cases with a ` +
              `value${statistics.includes("count") ? `: ${withValues}` : ""}). To count each of its values, use ` +
              `groupBy ${JSON.stringify(a.name)} with statistics ["count"].`,
            "non_numeric_attribute",
            { datasetName: dataset.name, attribute: a.name, applicable: ["count"] },
          );
        }
      }
    }

    const header = [...(grouping ? [grouping.name] : []), "attribute", "cases", ...statistics.map((s) =>
      s === "percentile" ? `p${percentile}` : s)];
    const lines = out.map((r) =>
      [...(grouping ? [r.group] : []), r.attribute, r.cases, ...statistics.map((s) => shown(r[s]))].join(" | "));
    const scope = [
      where === undefined ? null : `where ${where}`,
      grouping ? `grouped by ${grouping.name}` : null,
    ].filter(Boolean);
    if (partner) scope.push(`paired with ${partner.name}`);
    let text = `Statistics of ${JSON.stringify(dataset.name)} computed by CODAP` +
      `${scope.length ? ` (${scope.join(", ")})` : ""}, ${plural(matched, "case")}` +
      `${where === undefined ? "" : ` of ${top.caseCount}`}:\n${header.join(" | ")}\n${lines.join("\n")}`;
    if (empty.length) text += `\nGroups with no matching case: ${empty.join(", ")}.`;
    text += "\nShown to 6 significant digits; structuredContent has CODAP's full values. sd and variance divide " +
      "by n−1; q1, q3 and percentiles interpolate between sorted values (CODAP's percentile()).";
    const first = rows[0].cells[0].slots; // how CODAP computed the first row
    return toolResult(text, {
      datasetName: dataset.name,
      attributes: attrs.map((a) => a.name),
      statistics,
      ...(percentile === undefined ? {} : { percentile }),
      ...(partner ? { pairedWith: partner.name } : {}),
      ...(grouping ? { groupBy: grouping.name } : {}),
      ...(where === undefined ? {} : { where }),
      casesMatched: matched,
      caseCount: top.caseCount,
      rows: out,
      ...(empty.length ? { groupsWithoutCases: empty } : {}),
      firstRow: {
        ...(rows[0].condition ? { condition: rows[0].condition } : {}),
        formulas: Object.fromEntries(first.map((s) => [s.statistic, s.shownFormula])),
      },
    });
  }

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

    const { dataset, coll } = await datasetAndCollection(datasetName, args.collectionName);
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
    const { readReplies } = await withTemporaryFormulas(dataset, coll, [{ name, formula }], reads);
    /** @type {Array<{caseId?: CodapId, value: unknown, values: Record<string, unknown>}>} */
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
      results.push({ ...(byItem ? { caseId: found.id } : {}), value: v === undefined ? null : v, values: own });
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
    return toolResult(text, {
      formula,
      datasetName: dataset.name,
      collectionName: coll.name,
      caseCount: coll.caseCount,
      results,
      ...(missing.length && args.caseIds ? { notCases: missing } : {}),
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
   *   caseIds?: CodapId[]}} args
   */
  async function select_codap_cases(args) {
    const mode = args.mode ?? "replace";
    const { where, caseIds } = args;
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
    const replies = await send([change, ...counts]);
    must(change, replies[0], `changing the selection of ${JSON.stringify(dataset.name)}`);
    const now = must(counts[0], replies[1]).values ?? [];
    const caseCount = must(counts[1], replies[2]).values;
    const what = mode === "clear"
      ? "Cleared the selection"
      : `${mode === "extend" ? "Added" : "Selected"} ${plural(ids.length, "case")}` +
        `${where === undefined ? "" : ` matching ${JSON.stringify(where)}`}` +
        `${mode === "extend" ? " to the selection" : ""}`;
    let text = `${what} in ${JSON.stringify(dataset.name)}: ${now.length} of ${plural(caseCount, "case")} of ` +
      `collection ${JSON.stringify(coll.name)} selected now (${before.length} before).`;
    if (caseIds !== undefined && coll !== leafOf(dataset)) {
      text += ` CODAP selected the ${plural(ids.length, "row")} given; a case of ${JSON.stringify(coll.name)} (a ` +
        "parent collection) counts as selected when all its rows are.";
    }
    if (notCases.length) text += ` Not rows of this dataset (ids are ${ROW_IDS}), ignored: ${notCases.join(", ")}.`;
    return toolResult(text, {
      datasetName: dataset.name,
      collectionName: coll.name,
      mode,
      ...(where === undefined ? {} : { where }),
      matched: ids.length,
      ...(caseIds === undefined ? {} : { caseIds: ids }),
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
    const reads = listed.map((s) =>
      get(`${dataContext(dataset.id)}.${leaf ? "itemByCaseID" : "caseByID"}[${s.caseID}]`));
    const replies = reads.length ? await send(reads) : [];
    const cases = listed.map((_, i) => {
      const ok = replies[i]?.success === true;
      if (leaf) return { caseId: ok ? replies[i].values?.id ?? null : null, values: ok ? replies[i].values?.values ?? {} : null };
      return { values: ok ? replies[i].values?.case?.values ?? {} : null };
    });
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

  return { compute_codap_statistics, evaluate_codap_formula, select_codap_cases, get_codap_selection };
}
