// @ts-check
// Connecting lines and what CODAP joins with them. CODAP joins a graph's points in case order, one line per value
// of the first attribute of the parent collection above the plotted attributes (scatter-plot.tsx
// firstVisibleParentAttribute; connecting-lines.ts groups by that value): in a flat dataset every point is on one
// line, whatever the legend colours. "A line per group" is what a line graph with a legend means, so the tools
// group the dataset by the legend attribute (as dragging it left in the case table does) when that makes CODAP
// draw one line per legend value, and say so; otherwise they say what CODAP joined and how to get the rest.

import { ToolError, collection, get } from "./context.js";
import { createCaseTools } from "./cases.js";

/**
 * @import {DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * The collection index of each attribute of a dataset.
 * @param {DescribedDataset} dataset
 */
const places = (dataset) => new Map(dataset.collections.flatMap((c, i) => c.attributes.map((a) => [a.name, i])));

/**
 * The lines CODAP draws on a graph with connecting lines, made one per legend value where it can be: the
 * dataset grouped by the legend attribute if `group` allows it. `detail` is `get component[id]`'s values.
 * Returns what CODAP joins (`by`: the attribute whose values each get a line, or null for one line), whether the
 * dataset was grouped, and notes for the answer.
 * @param {ToolContext} ctx
 * @param {Record<string, any>} detail
 * @param {{group: boolean}} options
 */
export async function joinLines(ctx, detail, { group }) {
  const found = await ctx.findDataset(detail.dataContext);
  let { datasets: [dataset] } = await ctx.describeDatasets([found], { types: false });
  const legend = detail.legendAttributeName ?? null;
  const legendCategorical = legend && detail.legendAttributeType !== "numeric" && await isCategorical(ctx, dataset, legend);
  const plotted = [detail.xAttributeName, ...(detail.yAttributeNames ?? [detail.yAttributeName]), detail.y2AttributeName,
    detail.topSplitAttributeName, detail.rightSplitAttributeName, legend].filter(Boolean);
  /** @type {string[]} */
  const notes = [];
  let grouped = false;
  let at = places(dataset);
  const leaf = Math.max(...plotted.map((n) => at.get(n) ?? 0));
  const onAxes = plotted.filter((n) => n !== legend);
  if (legend && legendCategorical && group && at.get(legend) === leaf && onAxes.every((n) => at.get(n) === leaf)) {
    const { group_codap_cases } = createCaseTools(ctx);
    try {
      await group_codap_cases({ datasetName: dataset.name, attributes: [legend], collectionName: `${legend} groups` });
      grouped = true;
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      notes.push(`The dataset could not be grouped by ${legend} for one line per group: ${err.message}`);
    }
    ({ datasets: [dataset] } = await ctx.describeDatasets([found], { types: false }));
    at = places(dataset);
  }
  const leafNow = Math.max(...plotted.map((n) => at.get(n) ?? 0));
  const by = leafNow > 0 ? dataset.collections[leafNow - 1].attributes[0]?.name ?? null : null;
  if (grouped) {
    notes.push(
      `CODAP joins a graph's points within the groups of the dataset's parent collection, so the dataset ` +
        `${JSON.stringify(dataset.name)} is now grouped by ${legend} (collection "${legend} groups", as dragging it ` +
        `left in the case table does): one line per ${legend}. Undo with group_codap_cases ungroup.`,
    );
  } else if (legend && legendCategorical && by !== legend) {
    notes.push(
      (by ? `CODAP joins the points within each value of ${by} (the dataset's parent collection), not per ${legend}. `
        : `CODAP joins all the points in one line, across the ${legend} groups. `) +
        (group ? "" : `To draw one line per ${legend}, group the dataset by it (group_codap_cases) or call again with groupLinesByLegend true.`),
    );
  } else if (by && by !== legend) {
    notes.push(`CODAP joins the points within each value of ${by} (the dataset's parent collection).`);
  }
  const order = await outOfOrder(ctx, dataset, detail.xAttributeName, leafNow, by);
  if (order) notes.push(order);
  return { by, grouped, notes };
}

/**
 * Whether attribute `name` holds categories (CODAP's type, or values that are not all numbers).
 * @param {ToolContext} ctx
 * @param {DescribedDataset} dataset
 * @param {string} name
 */
async function isCategorical(ctx, dataset, name) {
  const [reply] = await ctx.send([get(`dataContext[${dataset.id}].attribute[${name}]`)]);
  const type = reply?.success === true ? reply.values?.type : "";
  return type !== "numeric" && type !== "date";
}

/**
 * A note when the points are joined out of x order (CODAP joins in case order): in how many lines.
 * @param {ToolContext} ctx
 * @param {DescribedDataset} dataset
 * @param {string | undefined} x
 * @param {number} leaf the plotted collection's index
 * @param {string | null} by the attribute whose values each get a line
 */
async function outOfOrder(ctx, dataset, x, leaf, by) {
  if (!x) return null;
  const coll = dataset.collections[leaf];
  const [reply] = await ctx.send([get(`${collection(dataset.id, coll.id)}.allCases`)]);
  /** @type {Array<{case?: {parent?: unknown, values?: Record<string, unknown>}}>} */
  const cases = reply?.success === true ? reply.values?.cases ?? [] : [];
  /** @type {Map<unknown, number[]>} */
  const lines = new Map();
  for (const c of cases) {
    const value = Number(c.case?.values?.[x]);
    if (!Number.isFinite(value) || c.case?.values?.[x] === "") continue;
    const key = by ? c.case?.parent ?? null : null;
    lines.set(key, [...(lines.get(key) ?? []), value]);
  }
  const zigzag = [...lines.values()].filter((v) => v.some((n, i) => i > 0 && n < v[i - 1])).length;
  if (!zigzag) return null;
  return `CODAP joins the points in case order, which is not the order of ${x} in ${zigzag === 1 && lines.size === 1 ? "the line" : `${zigzag} of ${lines.size} lines`}: ` +
    `sort the dataset by ${x} (sort_codap_cases) to draw ${lines.size === 1 ? "it" : "each"} left to right.`;
}
