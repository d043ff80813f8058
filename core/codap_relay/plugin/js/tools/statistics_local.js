// @ts-check
// Statistics computed here from the case values CODAP holds, by CODAP's own definitions, for datasets whose
// formulas draw random values. Adding or removing any attribute makes CODAP re-evaluate every formula of the
// dataset, so the hidden formula attributes of formula_values.js would draw every random() column anew: the
// class would see other values than the tool answered about. Reading the cases and CODAP's caseFormulaSearch
// (which evaluates a condition case by case without touching the dataset) leave them as they are.
// Definitions (CODAP v3.1.0, univariate-stats-functions.ts, bivariate-stats-functions.ts): sd and variance
// divide by n - 1; percentile interpolates at (n - 1) p of the sorted numbers; mad is the median of the absolute
// deviations from the median; count counts non-empty values; numeric aggregates skip values that are not numbers.

import { ToolError, collection, get } from "./context.js";
import { NO_VALUE } from "./statistics_groups.js";

/**
 * @import {CodapId, DescribedCollection, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** A case as read: its id and values. @typedef {{id: CodapId, values: Record<string, unknown>}} HeldCase */

/** @type {(v: unknown) => number | null} */
const numberOf = (v) => {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return null;
};

/** @param {number[]} sorted @param {number} p */
function quantile(sorted, p) {
  if (!sorted.length) return null;
  const i = (sorted.length - 1) * p;
  const lo = Math.floor(i);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

/** @param {number[]} xs */
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
/** @param {number[]} xs */
function variance(xs) {
  if (xs.length < 2) return null;
  const m = /** @type {number} */ (mean(xs));
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
}
/** @param {number[]} xs */
const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);

/**
 * The least-squares line of y on x over the pairs of numbers, with the correlation.
 * @param {Array<[number, number]>} pairs
 */
function line(pairs) {
  if (pairs.length < 2) return null;
  const mx = /** @type {number} */ (mean(pairs.map((p) => p[0])));
  const my = /** @type {number} */ (mean(pairs.map((p) => p[1])));
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of pairs) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  if (sxx === 0) return null;
  const slope = sxy / sxx;
  const r = syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
  return { slope, intercept: my - slope * mx, correlation: r, rSquared: r === null ? null : r * r };
}

/**
 * A statistic of an attribute's values in some cases (with the partner's: those of two attributes).
 * @param {string} statistic
 * @param {unknown[]} values
 * @param {{percentile?: number, partner?: unknown[]}} [options]
 * @returns {number | null}
 */
export function localStatistic(statistic, values, { percentile, partner } = {}) {
  if (statistic === "count") return values.filter((v) => v !== "" && v !== null && v !== undefined).length;
  if (partner && ["correlation", "rSquared", "slope", "intercept"].includes(statistic)) {
    /** @type {Array<[number, number]>} */
    const pairs = [];
    values.forEach((v, i) => {
      const x = numberOf(v);
      const y = numberOf(partner[i]);
      if (x !== null && y !== null) pairs.push([x, y]);
    });
    const fit = line(pairs);
    return fit ? /** @type {Record<string, number | null>} */ (fit)[statistic] ?? null : null;
  }
  const xs = /** @type {number[]} */ (values.map(numberOf).filter((x) => x !== null));
  if (!xs.length) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  const med = /** @type {number} */ (quantile(sorted, 0.5));
  /** @type {Record<string, () => number | null>} */
  const of = {
    mean: () => mean(xs),
    median: () => med,
    sd: () => { const v = variance(xs); return v === null ? null : Math.sqrt(v); },
    variance: () => variance(xs),
    min: () => sorted[0],
    max: () => sorted[sorted.length - 1],
    sum: () => xs.reduce((a, b) => a + b, 0),
    q1: () => quantile(sorted, 0.25),
    q3: () => quantile(sorted, 0.75),
    iqr: () => /** @type {number} */ (quantile(sorted, 0.75)) - /** @type {number} */ (quantile(sorted, 0.25)),
    range: () => sorted[sorted.length - 1] - sorted[0],
    mad: () => median(xs.map((x) => Math.abs(x - med))),
    percentile: () => quantile(sorted, /** @type {number} */ (percentile) / 100),
  };
  return of[statistic]();
}

/** The random functions of CODAP's formulas (random, randomNormal, randomBinomial, randomPick, randomInt…). */
const RANDOM = /\brandom[A-Za-z]*\s*\(/i;

/**
 * The attributes of a dataset whose formulas draw random values: [{datasetName, attribute, formula}] (its
 * attributes described with their formulas: describeDatasets with types).
 * @param {DescribedDataset} dataset
 */
export const randomColumns = (dataset) => dataset.collections.flatMap((c) => c.attributes
  .filter((a) => a.formula && RANDOM.test(a.formula))
  .map((a) => ({ datasetName: dataset.name, attribute: a.name, formula: /** @type {string} */ (a.formula) })));

/** @param {ToolContext} ctx */
export function createLocalStatistics(ctx) {
  const { send, must } = ctx;

  /**
   * Every case of a collection, and the ids of the cases each condition holds for (CODAP's caseFormulaSearch,
   * in the same message).
   * @param {DescribedDataset} dataset
   * @param {DescribedCollection} coll
   * @param {Array<{condition: string, role: string, key: string}>} conditions (key: the error data's field)
   * @returns {Promise<{cases: HeldCase[], matching: Array<Set<CodapId>>}>}
   */
  async function casesAndMatches(dataset, coll, conditions) {
    const base = collection(dataset.id, coll.id);
    const all = get(`${base}.allCases`);
    const searches = conditions.map((c) => get(`${base}.caseFormulaSearch[${c.condition}]`));
    const [allReply, ...found] = await send([all, ...searches]);
    /** @type {Array<{case: HeldCase}>} */
    const listed = must(all, allReply, `reading the cases of ${JSON.stringify(dataset.name)}`).values?.cases ?? [];
    const matching = found.map((reply, i) => {
      if (reply?.success !== true) {
        const reason = String(reply?.values?.error ?? reply?.error ?? "CODAP could not evaluate it");
        throw new ToolError(
          `CODAP cannot evaluate the ${conditions[i].role} ${JSON.stringify(conditions[i].condition)} on ` +
            `${JSON.stringify(dataset.name)}: ${reason}. Attributes of ${JSON.stringify(coll.name)}: ` +
            `${coll.attributes.map((a) => a.name).join(", ")}.`,
          "formula_error",
          { datasetName: dataset.name, [conditions[i].key]: conditions[i].condition, codapError: reason },
        );
      }
      /** @type {Array<{id: CodapId}>} */
      const hits = reply.values ?? [];
      return new Set(hits.map((h) => h.id));
    });
    return { cases: listed.map((c) => c.case), matching };
  }

  return { casesAndMatches };
}

/**
 * The cases of a row (those matching where, when given, and in the group), from the cases held and the ids each
 * condition holds for (where first, then each named group's).
 * @param {{cases: HeldCase[], matching: Array<Set<CodapId>>} | null} held
 * @param {{where: boolean, named: Record<string, string> | null, grouping: string | null}} by
 * @returns {(g: {label: string} | null) => HeldCase[]}
 */
export function rowMembers(held, { where, named, grouping }) {
  return (g) => {
    if (!held) return [];
    const inWhere = where ? held.matching[0] : null;
    const inGroup = g && named ? held.matching[Object.keys(named).indexOf(g.label) + (where ? 1 : 0)] : null;
    return held.cases.filter((c) => {
      if (inWhere && !inWhere.has(c.id)) return false;
      if (!g) return true;
      if (inGroup) return inGroup.has(c.id);
      const v = grouping === null ? undefined : c.values[grouping];
      return g.label === NO_VALUE ? v === undefined || v === null || v === "" : String(v) === g.label;
    });
  };
}

/**
 * The sentence and data an answer carries when CODAP drew random columns anew.
 * @param {Array<{datasetName: string, attribute: string}>} columns
 * @param {string} why
 */
export function redrawNote(columns, why) {
  const names = columns.map((c) => `${c.datasetName}.${c.attribute}`).join(", ");
  return `CODAP drew the random values of ${names} anew ${why} (CODAP re-evaluates every formula of a dataset ` +
    "when an attribute is added or removed): the table and graphs now show other draws.";
}
