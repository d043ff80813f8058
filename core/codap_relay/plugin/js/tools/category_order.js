// @ts-check
// The order of a graph's categories (a bar chart's bars, a dot chart's columns): CODAP keeps it per attribute, in
// the dataset (the category map's __order: every graph and table of the attribute follows it). Its plugin API
// cannot set it (an attribute update takes a colormap's colours only), so update_codap_graph sets it by rebuilding
// the document (graph_rebuild.js), and reads it back here.

import { get, invalid } from "./context.js";

/**
 * @import {CodapReply, CodapRequest} from "../types.js"
 */

/**
 * The attribute categoryOrder orders: the graph's categorical x, else its y, else its legend.
 * @param {string[]} order
 * @param {Record<string, any>} detail the graph's component (`get component[id]`), after any attribute change
 * @returns {{attribute: string, order: string[]}}
 */
export function orderedAttribute(order, detail) {
  if (!order.length || new Set(order).size !== order.length) throw invalid("categoryOrder lists each category once, e.g. [\"B\", \"A\", \"C\"].");
  const attribute = detail.xAttributeName && detail.xAttributeType === "categorical" ? detail.xAttributeName
    : detail.yAttributeName && detail.yAttributeType !== "numeric" ? detail.yAttributeName
      : detail.legendAttributeName;
  if (!attribute) throw invalid("categoryOrder orders a categorical axis's categories (or the legend's): this graph has none.");
  return { attribute, order: order.map(String) };
}

/**
 * An attribute's category order as CODAP holds it, or null where it cannot be read.
 * @param {{send: (requests: CodapRequest[]) => Promise<CodapReply[]>}} ctx
 * @param {unknown} datasetId
 * @param {string} attribute
 * @returns {Promise<string[] | null>}
 */
export async function categoryOrderOf(ctx, datasetId, attribute) {
  const [reply] = await ctx.send([get(`dataContext[${datasetId}].attribute[${attribute}]`)]);
  const order = reply?.success === true ? reply.values?._categoryMap?.__order : undefined;
  return Array.isArray(order) ? order.map(String) : null;
}
