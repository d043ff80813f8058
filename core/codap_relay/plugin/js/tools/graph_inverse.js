// @ts-check
// The requests that set a graph's settings back, read from CODAP's own description of the graph (`get
// component[id]`) before and after a change made through the plugin API: the attributes on each axis, the legend
// and the splits, how they are treated, the plot's fusing, bar scale and connecting lines, what it shows and hides,
// the points' format, the background and the axis bounds (in that order: bounds last, as an attribute put back
// rescales its axis). CODAP records none of these in its undo history. A restore point holds them for every graph
// (restore_points.js). What CODAP does record itself (a statistic shown or taken off, a Rescale, the settings only a
// rebuild of the document reaches) CODAP takes back itself: journal.js keeps those apart.

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 */

/**
 * What a restore point holds of one graph: CODAP's description of it.
 * @typedef {{detail: Record<string, any>}} GraphHeld
 */

// The attribute roles: CODAP's id field in a graph's description, set back in one update.
const ROLES = ["xAttributeID", "y2AttributeID", "legendAttributeID", "topSplitAttributeID", "rightSplitAttributeID"];
// The settings CODAP's component update takes as its get gives them, in the order they are set back.
const GROUPS = [
  ["xAttributeType", "yAttributeType"],
  ["pointsAreFusedIntoBars", "showConnectingLines", "barChartScale", "barChartFormula"],
  ["displayOnlySelectedCases", "enableNumberToggle", "numberToggleLastMode", "showMeasuresForSelection", "filterFormula",
    "hiddenCases", "pointColor", "pointSize", "strokeColor", "strokeSameAsFill", "backgroundColor", "transparent"],
  ["xLowerBound", "xUpperBound", "yLowerBound", "yUpperBound", "y2LowerBound", "y2UpperBound"],
];
/** Every setting compared (the attributes by id, the y attributes as a list). */
export const GRAPH_SETTINGS = [...ROLES, "yAttributeIDs", ...GROUPS.flat()];
// CODAP gives no value (null) for a switch it never set and for an empty formula: false and "" mean the same
/** @param {unknown} v */
const plain = (v) => (v === false || v === "" || v === undefined ? null : v);
const same = (/** @type {unknown} */ a, /** @type {unknown} */ b) => JSON.stringify(plain(a)) === JSON.stringify(plain(b));

/**
 * The requests that take graph `id` from `after` back to `before`, and what no request of CODAP's API puts back.
 * @param {CodapId} id
 * @param {string} label the graph, for `cannot`
 * @param {GraphHeld} before
 * @param {GraphHeld} after
 * @returns {{requests: CodapRequest[], cannot: string[]}}
 */
export function graphInverse(id, label, before, after) {
  const resource = `component[${id}]`;
  /** @type {CodapRequest[]} */
  const requests = [];
  /** @type {string[]} */
  const cannot = [];
  const [b, a] = [before.detail, after.detail];
  if (b.dataContext !== a.dataContext) cannot.push(`graph ${label} shows another dataset`);
  /** @type {Record<string, unknown>} */
  const attributes = {};
  for (const role of ROLES) if (!same(b[role], a[role])) attributes[role] = b[role] ?? null;
  const ys = (/** @type {Record<string, any>} */ d) => (d.yAttributeIDs ?? []).filter((/** @type {unknown} */ y) => !same(y, d.y2AttributeID));
  if (!same(ys(b), ys(a)) || !same(b.yAttributeID, a.yAttributeID)) {
    if (ys(b).length > 1) attributes.yAttributeIDs = ys(b);
    else attributes.yAttributeID = b.yAttributeID ?? null;
  }
  if (Object.keys(attributes).length) requests.push({ action: "update", resource, values: attributes });
  for (const group of plotChanged(b, a) ? GROUPS.slice(0, -1) : GROUPS) {
    /** @type {Record<string, unknown>} */
    const values = {};
    for (const key of group) {
      if (same(b[key], a[key])) continue;
      // a switch CODAP never set is off, a formula empty; a bound or type CODAP has none of (a categorical axis)
      // is not set: it follows the attribute
      if (typeof a[key] === "boolean") values[key] = b[key] === true;
      else if (/Formula$/.test(key)) values[key] = b[key] ?? "";
      else if (b[key] !== undefined && b[key] !== null) values[key] = b[key];
    }
    if (Object.keys(values).length) requests.push({ action: "update", resource, values });
  }
  return { requests, cannot };
}

/**
 * Whether a graph's plot changed between two descriptions: CODAP then draws other axes, and the bounds it reports
 * for a binned plot just rebuilt (0 to 0) or a histogram (from 0) are not ones to set back; it scales the axes itself.
 * @param {Record<string, any>} b
 * @param {Record<string, any>} a
 */
const plotChanged = (b, a) => !same(b.plotType, a.plotType) || !same(b.pointsAreFusedIntoBars, a.pointsAreFusedIntoBars);

/**
 * The settings of a graph that differ between two descriptions (GRAPH_SETTINGS), as `name value` phrases of the
 * second: what a check after taking a change back names as not put back.
 * @param {GraphHeld} want
 * @param {GraphHeld} got
 * @param {GraphHeld} [changed] the graph after the change taken back (its plot, to know whether the bounds follow it)
 */
export function graphDifferences(want, got, changed) {
  // a bound, type or bar scale CODAP had none of follows the attributes set back (graphInverse does not set it), and
  // the bounds follow a plot set back (graphInverse does not set them then)
  const boundsFollow = changed !== undefined && plotChanged(want.detail, changed.detail);
  return GRAPH_SETTINGS.filter((k) => !same(want.detail[k], got.detail[k]) && !(want.detail[k] == null && /Bound$|Type$|^barChartScale$/.test(k)) &&
    !(boundsFollow && /Bound$/.test(k)))
    .map((k) => `${k} ${JSON.stringify(got.detail[k] ?? null)}`);
}
