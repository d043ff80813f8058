// @ts-check
// How many cases a graph shows in each category, counted from CODAP's cases: a bar chart's bars (and, with a
// legend, each bar's parts), a dot chart's columns, a dot plot split by a category. The categories come in the
// order CODAP draws them: its category order for the attribute (the order the values first appear in the data
// unless a person or update_codap_graph's categoryOrder changed it).

import { dataContext, get } from "../codap_query.js";

/**
 * @import {CodapReply, CodapRequest, CodapSuccess} from "../types.js"
 * @import {GraphState} from "./graph_state.js"
 */

/**
 * One category (or pair of categories) and its cases.
 * @typedef {{categories: Record<string, string>, count: number, percent: number, byLegend?: Record<string, number>}} CategoryCount
 */

/** Cells named in a sentence; structuredContent has them all. */
const SHOWN = 24;

/** @param {unknown} v */
const empty = (v) => v === null || v === undefined || v === "";

/**
 * The categorical attributes the counts go by: the categorical axes (x, then y).
 * @param {GraphState} s
 */
export function countedBy(s) {
  if (!["barChart", "dotChart", "dotPlot", "binnedDotPlot"].includes(String(s.plotType))) return [];
  return [s.x, s.y].filter((a) => a.attribute && a.type !== "numeric").map((a) => /** @type {string} */ (a.attribute));
}

/** @param {unknown} v */
const isNumber = (v) => typeof v === "number" || (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)));

/**
 * The counts of a graph's categories from its dataset's items, or null where the graph has no categorical axis.
 * @param {{send: (requests: CodapRequest[]) => Promise<CodapReply[]>, must: (request: CodapRequest, reply: unknown, what?: string) => CodapSuccess}} ctx
 * @param {GraphState} s
 * @param {unknown} datasetId
 * @returns {Promise<{text: string, counts: CategoryCount[]} | null>}
 */
export async function categoryCounts(ctx, s, datasetId) {
  const candidates = countedBy(s);
  if (!candidates.length || datasetId === undefined || datasetId === null) return null;
  const read = get(`${dataContext(/** @type {any} */ (datasetId))}.itemSearch[*]`);
  // each attribute's category order (CODAP draws the categories in it): the dataset's category map's __order
  const orders = candidates.map((n) => get(`${dataContext(/** @type {any} */ (datasetId))}.attribute[${n}]`));
  const [reply, ...attributes] = await ctx.send([read, ...orders]);
  /** @type {Map<string, string[]>} */
  const orderOf = new Map(candidates.map((n, i) => [n, (attributes[i]?.values?._categoryMap?.__order ?? []).map(String)]));
  /** @type {Array<{values: Record<string, unknown>}>} */
  const all = ctx.must(read, reply, "reading the cases the graph counts").values ?? [];
  const shown = await shownCases(ctx, s, datasetId);
  const items = shown ?? all;
  // an axis of unset type is categorical when CODAP finds a value on it that is not a number
  const typed = new Map([s.x, s.y].map((a) => [a.attribute, a.type]));
  const by = candidates.filter((n) => typed.get(n) === "categorical" || items.some((i) => !empty(i.values[n]) && !isNumber(i.values[n])));
  if (!by.length) return null;
  const axes = [s.x.attribute, ...s.y.attributes].filter((n) => typeof n === "string");
  const legend = s.legend && s.legend.type !== "numeric" ? s.legend.attribute : null;
  /** @type {Map<string, CategoryCount>} */
  const cells = new Map();
  let plotted = 0;
  for (const { values } of items) {
    if (axes.some((n) => empty(values[/** @type {string} */ (n)]))) continue;
    plotted += 1;
    const categories = Object.fromEntries(by.map((n) => [n, String(values[n])]));
    const key = JSON.stringify(by.map((n) => categories[n]));
    const cell = cells.get(key) ?? { categories, count: 0, percent: 0 };
    cell.count += 1;
    if (legend) {
      const part = empty(values[legend]) ? "(no value)" : String(values[legend]);
      cell.byLegend = { ...cell.byLegend, [part]: (cell.byLegend?.[part] ?? 0) + 1 };
    }
    cells.set(key, cell);
  }
  const rank = (/** @type {string} */ n, /** @type {string} */ v) => {
    const at = orderOf.get(n)?.indexOf(v) ?? -1;
    return at < 0 ? Number.MAX_SAFE_INTEGER : at;
  };
  // in CODAP's order where it has one for the category (the data's order otherwise: a stable sort keeps it)
  const sorted = [...cells.values()].sort((a, b) => by.reduce((d, n) => d || rank(n, a.categories[n]) - rank(n, b.categories[n]), 0) || 0);
  const counts = sorted.map((c) => ({ ...c, percent: plotted ? Number(((100 * c.count) / plotted).toPrecision(4)) : 0 }));
  const phrase = (/** @type {CategoryCount} */ c) =>
    `${Object.values(c.categories).join(" / ")} ${c.count} (${c.percent}%` +
    (c.byLegend ? `; ${Object.entries(c.byLegend).map(([k, v]) => `${k} ${v}`).join(", ")}` : "") + ")";
  const caveats = shown ? [] : [
    s.shows.hiddenCases ? `${s.shows.hiddenCases} hidden in the graph` : "",
    s.shows.filterFormula ? `those its filter ${s.shows.filterFormula} leaves out` : "",
    s.shows.onlySelected ? "the unselected ones it does not show" : "",
  ].filter(Boolean);
  const text = `Cases per ${by.join(" and ")} (percent of the ${plotted} plotted${legend ? `; by ${legend}` : ""}): ` +
    counts.slice(0, SHOWN).map(phrase).join(", ") + (counts.length > SHOWN ? `, and ${counts.length - SHOWN} more` : "") +
    (caveats.length ? `; these counts include ${caveats.join(" and ")}` : "") + ".";
  return { text, counts };
}

/**
 * The cases a graph of a one-collection dataset shows when it hides some (hidden in it, a filter formula, only the
 * selected ones), by their case ids as CODAP hides, filters and selects them; null where it hides none or the
 * dataset is grouped (the counts then say what they include).
 * @param {{send: (requests: CodapRequest[]) => Promise<CodapReply[]>}} ctx
 * @param {GraphState} s
 * @param {unknown} datasetId
 * @returns {Promise<Array<{values: Record<string, unknown>}> | null>}
 */
async function shownCases(ctx, s, datasetId) {
  const { hiddenCases, filterFormula: filter, onlySelected } = s.shows;
  if (!hiddenCases && !filter && !onlySelected) return null;
  const base = dataContext(/** @type {any} */ (datasetId));
  const [listed, graph] = await ctx.send([get(`${base}.collectionList`), get(`component[${s.id}]`)]);
  const collections = listed?.success === true && Array.isArray(listed.values) ? listed.values : [];
  if (collections.length !== 1 || graph?.success !== true || filter?.includes("]")) return null;
  const c = `${base}.collection[${collections[0].id}]`;
  const [cases, kept, selected] = await ctx.send([
    get(`${c}.allCases`),
    ...(filter ? [get(`${c}.caseFormulaSearch[${filter}]`)] : []),
    ...(onlySelected ? [get(`${base}.selectionList`)] : []),
  ].filter(Boolean));
  /** @type {(reply: CodapReply | undefined) => Set<string> | null} */
  const ids = (reply) => (reply?.success === true && Array.isArray(reply.values)
    ? new Set(reply.values.map((/** @type {{id?: unknown, caseID?: unknown}} */ v) => String(v.caseID ?? v.id))) : null);
  const hidden = new Set((graph.values?.hiddenCases ?? []).map(String));
  const filtered = filter ? ids(kept) : null;
  const picked = onlySelected ? ids(filter ? selected : kept) : null;
  if (cases?.success !== true || (filter && !filtered) || (onlySelected && !picked)) return null;
  /** @type {Array<{case: {id: unknown, values: Record<string, unknown>}}>} */
  const list = cases.values?.cases ?? [];
  return list.filter(({ case: k }) => !hidden.has(String(k.id)) && (!filtered || filtered.has(String(k.id))) &&
    (!picked || picked.has(String(k.id)))).map(({ case: k }) => ({ values: k.values }));
}

/**
 * How many of the dataset's cases (of its child-most collection) a filter formula keeps, by CODAP's own search.
 * @param {{send: (requests: CodapRequest[]) => Promise<CodapReply[]>}} ctx
 * @param {unknown} datasetId
 * @param {string} formula
 * @returns {Promise<{shown: number, of: number} | null>} null where CODAP could not search with it
 */
export async function filterCount(ctx, datasetId, formula) {
  const base = dataContext(/** @type {any} */ (datasetId));
  const [listed] = await ctx.send([get(`${base}.collectionList`)]);
  /** @type {Array<{id: unknown}>} */
  const collections = listed?.success === true && Array.isArray(listed.values) ? listed.values : [];
  const leaf = collections[collections.length - 1];
  if (!leaf || formula.includes("]")) return null;
  const [found, all] = await ctx.send([
    get(`${base}.collection[${leaf.id}].caseFormulaSearch[${formula}]`),
    get(`${base}.collection[${leaf.id}].caseCount`),
  ]);
  if (found?.success !== true || !Array.isArray(found.values) || all?.success !== true) return null;
  return { shown: found.values.length, of: Number(all.values) };
}
