// @ts-check
// What a graph holds, read from CODAP's data rather than from its picture: the cases of its dataset it plots, and
// for each attribute it shows (x, each y, the right axis, the legend, the splits) the values there: a range for
// numbers, counts for categories. A picture's answer carries it, drawn or not (a hidden CODAP tab draws nothing,
// drawing.js). What the graph shows and how comes from its state (graph_state.js); this adds its dataset's values.

import { dataContext, get } from "../codap_query.js";
import { plural } from "../format.js";

/**
 * @import {CodapReply, CodapRequest, CodapSuccess, DatasetRef, DescribedDataset} from "../types.js"
 * @import {GraphState} from "./graph_state.js"
 */

/** Categories named one by one; the rest are counted. */
const MAX_CATEGORIES = 12;

/**
 * An attribute the graph shows, with what its values are.
 * @typedef {object} ShownAttribute
 * @property {string} role "x", "y", "y2" (the right axis), "legend", "top" or "right" (splits)
 * @property {string} attribute
 * @property {"numeric" | "categorical"} type
 * @property {number} withValue cases with a value for it
 * @property {number} missing cases without one
 * @property {number} [min]
 * @property {number} [max]
 * @property {number} [mean]
 * @property {Array<{value: string, count: number}>} [categories] the most frequent first
 * @property {number} [otherCategories] categories beyond those named
 * @property {[number, number]} [axis] the range the axis shows now (CODAP's lower and upper bound)
 */

/**
 * What a graph holds.
 * @typedef {object} GraphData
 * @property {string | null} dataset
 * @property {number} cases the cases of the collection the graph plots (a parent collection's when every
 *   attribute shown is a parent's)
 * @property {number} plotted cases with a value on every axis, less those hidden in the graph
 * @property {number} hiddenInGraph cases hidden in this graph (CODAP's "Hide Selected Cases")
 * @property {number | null} setAside cases set aside in the dataset, shown nowhere (null: not known)
 * @property {boolean} onlySelected the graph shows only selected cases
 * @property {string | null} filterFormula CODAP shows only cases for which it is true (counts are before it)
 * @property {ShownAttribute[]} attributes
 */

/** @param {number} v */
const num = (v) => String(Number(v.toPrecision(6)));

/**
 * The attributes a graph shows, by role, from its state.
 * @param {GraphState} g
 * @returns {Array<[string, string]>}
 */
export function shownAttributes(g) {
  /** @type {Array<[string, string | null]>} */
  const roles = [
    ["x", g.x.attribute],
    ...g.y.attributes.map((n) => /** @type {[string, string]} */ (["y", n])),
    ["y2", g.y2.attribute],
    ["legend", g.legend?.attribute ?? null],
    ["top", g.topSplit],
    ["right", g.rightSplit],
  ];
  return /** @type {Array<[string, string]>} */ (roles.filter(([, name]) => typeof name === "string" && name !== ""));
}

/** @param {unknown} v */
const empty = (v) => v === null || v === undefined || v === "";

/**
 * One attribute's values summed up.
 * @param {string} role
 * @param {string} attribute
 * @param {string} declared CODAP's type for it ("numeric", "categorical", "" when unset)
 * @param {unknown[]} values one per case
 * @param {[unknown, unknown]} bounds the axis's lower and upper bound (null for no numeric axis)
 * @returns {ShownAttribute}
 */
function summarise(role, attribute, declared, values, bounds) {
  const present = values.filter((v) => !empty(v));
  const numbers = present.map((v) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN));
  const numeric = declared === "numeric" || (declared === "" && present.length > 0 && numbers.every(Number.isFinite));
  const base = { role, attribute, withValue: present.length, missing: values.length - present.length };
  if (numeric) {
    const finite = numbers.filter(Number.isFinite);
    const [lo, hi] = bounds;
    return {
      ...base,
      type: "numeric",
      withValue: finite.length,
      missing: values.length - finite.length,
      ...(finite.length
        ? {
          min: finite.reduce((a, b) => Math.min(a, b)),
          max: finite.reduce((a, b) => Math.max(a, b)),
          mean: Number((finite.reduce((a, b) => a + b, 0) / finite.length).toPrecision(6)),
        }
        : {}),
      ...(typeof lo === "number" && typeof hi === "number" ? { axis: /** @type {[number, number]} */ ([lo, hi]) } : {}),
    };
  }
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const v of present) counts.set(String(v), (counts.get(String(v)) ?? 0) + 1);
  const sorted = [...counts].sort((a, b) => b[1] - a[1]).map(([value, count]) => ({ value, count }));
  return {
    ...base,
    type: "categorical",
    categories: sorted.slice(0, MAX_CATEGORIES),
    ...(sorted.length > MAX_CATEGORIES ? { otherCategories: sorted.length - MAX_CATEGORIES } : {}),
  };
}

/** @param {ShownAttribute} a */
function attributePhrase(a) {
  const name = a.role === "legend" ? `legend ${a.attribute}` : a.role === "top" || a.role === "right"
    ? `split by ${a.attribute} (${a.role === "top" ? "columns" : "rows"})`
    : `${a.role === "y2" ? "right y" : a.role} = ${a.attribute}`;
  const missing = a.missing ? ` (${a.missing} without a value)` : "";
  if (a.type === "numeric") {
    if (a.min === undefined || a.max === undefined) return `${name}: no numbers${missing}`;
    const axis = a.axis ? `; the axis shows ${num(a.axis[0])} to ${num(a.axis[1])}` : "";
    return `${name}: numbers from ${num(a.min)} to ${num(a.max)}, mean ${num(a.mean ?? 0)}${missing}${axis}`;
  }
  const named = (a.categories ?? []).map((c) => `${c.value === "" ? "(empty)" : c.value} ${c.count}`).join(", ");
  const more = a.otherCategories
    ? `, and ${a.otherCategories} other ${a.otherCategories === 1 ? "category" : "categories"}`
    : "";
  return `${name}: ${named || "no values"}${more}${missing}`;
}

/**
 * The sentence for a graph's data.
 * @param {GraphData} g
 */
export function graphDataText(g) {
  if (g.dataset === null) return "The graph shows no dataset yet.";
  const unplotted = g.cases - g.plotted - g.hiddenInGraph;
  const plotted = g.plotted === g.cases ? "all plotted" : `${g.plotted} plotted` +
    (unplotted > 0 ? `; ${unplotted} have no value on an axis` : "") +
    (g.hiddenInGraph ? `; ${g.hiddenInGraph} hidden in this graph` : "");
  const notes = [
    g.setAside ? `${plural(g.setAside, "case")} of the dataset set aside, shown nowhere` : "",
    g.onlySelected ? "it shows only the selected cases" : "",
    g.filterFormula ? `it shows only the cases for which ${g.filterFormula} is true (the counts are before that)` : "",
  ].filter(Boolean);
  return `${plural(g.cases, "case")} of ${JSON.stringify(g.dataset)} (${plotted})` +
    (g.attributes.length ? `; ${g.attributes.map(attributePhrase).join("; ")}` : "; no attribute on an axis") +
    (notes.length ? `; ${notes.join("; ")}` : "") + ".";
}

/**
 * What the graph whose state is `state` (graph_state.js) holds, from its dataset's cases: {text, data}. Each message
 * to CODAP counts (a hidden tab's CODAP answers each a second late in Firefox): the dataset's id, then its
 * collections with the cases in the same message, three messages; one where the caller has the dataset described
 * already (`dataset`).
 * @param {{findDataset: (name: unknown) => Promise<DatasetRef>,
 *   describeDatasets: (datasets: DatasetRef[], options?: {extra?: CodapRequest[]}) =>
 *     Promise<{datasets: DescribedDataset[], extra: CodapReply[]}>,
 *   send: (requests: CodapRequest[]) => Promise<CodapReply[]>,
 *   must: (request: CodapRequest, reply: unknown, what?: string) => CodapSuccess}} ctx
 * @param {GraphState} state
 * @param {{dataset?: DescribedDataset | null}} [options]
 * @returns {Promise<{text: string, data: GraphData}>}
 */
export async function describeGraphData(ctx, state, { dataset: known = null } = {}) {
  if (!state.dataset) return dataOf(state, null, []);
  const ref = known ?? (await ctx.findDataset(state.dataset));
  const itemsRequest = get(`${dataContext(ref.id)}.itemSearch[*]`);
  const { dataset, reply } = known
    ? { dataset: known, reply: (await ctx.send([itemsRequest]))[0] }
    : await ctx.describeDatasets([ref], { extra: [itemsRequest] }).then((d) => ({ dataset: d.datasets[0], reply: d.extra[0] }));
  /** @type {Array<{values: Record<string, unknown>}>} */
  const items = ctx.must(itemsRequest, reply, `reading the cases of ${JSON.stringify(ref.name)}`).values ?? [];
  return dataOf(state, dataset, items);
}

/**
 * @param {GraphState} state
 * @param {DescribedDataset | null} dataset
 * @param {Array<{values: Record<string, unknown>}>} items
 * @returns {{text: string, data: GraphData}}
 */
function dataOf(state, dataset, items) {
  const shown = shownAttributes(state);
  const hiddenInGraph = state.shows.hiddenCases;
  const settings = {
    hiddenInGraph,
    setAside: state.shows.setAsideCases,
    onlySelected: state.shows.onlySelected,
    filterFormula: state.shows.filterFormula?.trim() || null,
  };
  if (dataset === null) {
    const data = { dataset: null, cases: 0, plotted: 0, ...settings, attributes: [] };
    return { text: graphDataText(data), data };
  }
  // The graph plots the cases of the lowest collection holding one of its attributes: a parent collection's cases
  // are the distinct combinations of the values of its attributes and its parents'.
  const levels = dataset.collections.map((c) => c.attributes.map((a) => a.name));
  const deepest = Math.max(0, ...shown.map(([, name]) => levels.findIndex((names) => names.includes(name))));
  const keys = levels.slice(0, deepest + 1).flat();
  const cases = deepest >= levels.length - 1
    ? items.map((i) => i.values)
    : [...new Map(items.map((i) => [JSON.stringify(keys.map((k) => i.values[k] ?? "")), i.values])).values()];
  const types = new Map(dataset.collections.flatMap((c) => c.attributes.map((a) => [a.name, a.type])));
  /** @type {Record<string, [unknown, unknown]>} */
  const bounds = { x: [state.x.min, state.x.max], y: [state.y.min, state.y.max], y2: [state.y2.min, state.y2.max] };
  const attributes = shown.map(([role, name]) =>
    summarise(role, name, types.get(name) ?? "", cases.map((c) => c[name]), bounds[role] ?? [null, null]));
  const axes = shown.filter(([role]) => role === "x" || role === "y" || role === "y2").map(([, name]) => name);
  const onAxes = cases.filter((c) => axes.every((name) => !empty(c[name]))).length;
  const data = {
    dataset: dataset.name,
    cases: cases.length,
    plotted: Math.max(0, onAxes - hiddenInGraph),
    ...settings,
    attributes,
  };
  return { text: graphDataText(data), data };
}
