// @ts-check
// update_codap_graph's settings: each argument, the part of a graph's state (graph_state.js) it sets, and how an
// answer names it; what changed between two states, and which asked settings CODAP did not take.


/**
 * @import {GraphState} from "./graph_state.js"
 */

/**
 * update_codap_graph's arguments: the graph, and what to change (an attribute null or "" takes it off).
 * @typedef {object} UpdateGraphArgs
 * @property {string | number} [graph]
 * @property {string | null} [xAttribute]
 * @property {string | null} [yAttribute]
 * @property {string[]} [yAttributes]
 * @property {string | null} [y2Attribute]
 * @property {string | null} [legendAttribute]
 * @property {string | null} [topSplitAttribute]
 * @property {string | null} [rightSplitAttribute]
 * @property {string} [xAttributeType]
 * @property {string} [yAttributeType]
 * @property {string} [title]
 * @property {string} [plotType]
 * @property {number} [binWidth]
 * @property {number} [binAlignment]
 * @property {boolean} [pointsAreFusedIntoBars]
 * @property {string} [barChartScale]
 * @property {string} [barChartFormula]
 * @property {boolean} [showConnectingLines]
 * @property {boolean} [groupLinesByLegend]
 * @property {boolean} [displayOnlySelectedCases]
 * @property {string} [hideCases]
 * @property {string} [hideCasesWhere]
 * @property {Array<string | number>} [hideCaseIds]
 * @property {boolean} [showAllCases]
 * @property {string} [filterFormula]
 * @property {boolean} [showParentToggles]
 * @property {boolean} [showOnlyLastCase]
 * @property {boolean} [showMeasuresForSelection]
 * @property {string} [pointColor]
 * @property {number} [pointOpacity]
 * @property {number} [pointSize]
 * @property {string} [strokeColor]
 * @property {boolean} [strokeSameAsFill]
 * @property {string} [backgroundColor]
 * @property {boolean} [transparentBackground]
 * @property {Record<string, string>} [legendColors]
 * @property {{low?: string, high?: string}} [legendColorRange]
 * @property {string} [legendAttributeType]
 * @property {string} [backgroundImage]
 * @property {boolean} [backgroundImageLockedToAxes]
 * @property {number} [xAxisMin]
 * @property {number} [xAxisMax]
 * @property {number} [yAxisMin]
 * @property {number} [yAxisMax]
 * @property {number} [y2AxisMin]
 * @property {number} [y2AxisMax]
 * @property {boolean} [rescale]
 * @property {boolean} [showMeasureLabels]
 * @property {boolean} [showSquaresOfResiduals]
 * @property {boolean} [lockIntercept]
 * @property {string[]} [categoryOrder]
 */

/** A number as a sentence shows it: CODAP's value, at most 6 significant digits. */
/** @param {unknown} v */
export const num = (v) => (typeof v === "number" && Number.isFinite(v) ? String(Number(v.toPrecision(6))) : String(v ?? "none"));

/** The tools' plot type names and CODAP's. */
export const PLOT_TYPES = {
  dot_plot: "dotPlot",
  binned_dot_plot: "binnedDotPlot",
  histogram: "histogram",
  bar_for_each_point: "linePlot",
  dot_chart: "dotChart",
  bar_chart: "barChart",
};

/**
 * Each setting: its argument, the path of its value in a graph's state, and its name in a sentence.
 * @type {Array<[keyof UpdateGraphArgs | "dataset", string, string]>}
 */
export const SETTINGS = [
  ["title", "title", "title"],
  ["plotType", "plotType", "plot"],
  ["xAttribute", "x.attribute", "x"],
  ["xAttributeType", "x.type", "x treated as"],
  ["xAxisMin", "x.min", "x axis from"],
  ["xAxisMax", "x.max", "x axis to"],
  ["yAttribute", "y.attribute", "y"],
  ["yAttributes", "y.attributes", "y attributes"],
  ["yAttributeType", "y.type", "y treated as"],
  ["yAxisMin", "y.min", "y axis from"],
  ["yAxisMax", "y.max", "y axis to"],
  ["y2Attribute", "y2.attribute", "right y"],
  ["y2AxisMin", "y2.min", "right y axis from"],
  ["y2AxisMax", "y2.max", "right y axis to"],
  ["topSplitAttribute", "topSplit", "split across by"],
  ["rightSplitAttribute", "rightSplit", "split down by"],
  ["legendAttribute", "legend.attribute", "legend"],
  ["legendAttributeType", "legend.type", "legend treated as"],
  ["legendColors", "legend.colors", "legend colours"],
  ["legendColorRange", "legend.range", "legend colour range"],
  ["binWidth", "bins.width", "bin width"],
  ["binAlignment", "bins.alignment", "bins aligned to"],
  ["pointsAreFusedIntoBars", "fusedIntoBars", "points fused into bars"],
  ["barChartScale", "barChart.scale", "bar scale"],
  ["barChartFormula", "barChart.formula", "bar formula"],
  ["showConnectingLines", "connectingLines", "connecting lines"],
  ["pointColor", "points.color", "point colour"],
  ["pointOpacity", "points.opacity", "point opacity"],
  ["pointSize", "points.size", "point size"],
  ["strokeColor", "points.strokeColor", "stroke colour"],
  ["strokeSameAsFill", "points.strokeSameAsFill", "stroke same as fill"],
  ["backgroundColor", "background.color", "background colour"],
  ["transparentBackground", "background.transparent", "transparent background"],
  ["backgroundImage", "background.image", "background image"],
  ["backgroundImageLockedToAxes", "background.imageLocked", "background image locked to the axes"],
  ["displayOnlySelectedCases", "shows.onlySelected", "only selected cases shown"],
  ["hideCases", "shows.hiddenCases", "cases hidden in the graph"],
  ["filterFormula", "shows.filterFormula", "filter formula"],
  ["showParentToggles", "shows.parentToggles", "parent toggles"],
  ["showOnlyLastCase", "shows.onlyLastCase", "only the last parent case shown"],
  ["showMeasuresForSelection", "shows.measuresForSelection", "measures of the selection"],
  ["showMeasureLabels", "measures.labels", "measure labels"],
  ["showSquaresOfResiduals", "measures.squaresOfResiduals", "squares of residuals"],
  ["lockIntercept", "measures.interceptLocked", "intercept locked"],
];

/**
 * The value at `path` ("x.min") of a state; undefined where the state has no such part.
 * @param {GraphState} state
 * @param {string} path
 * @returns {unknown}
 */
export function valueAt(state, path) {
  /** @type {any} */
  let v = state;
  for (const key of path.split(".")) v = v === null || v === undefined ? undefined : v[key];
  return v;
}

/** @type {(a: unknown, b: unknown) => boolean} */
export const sameValue = (a, b) =>
  typeof a === "number" && typeof b === "number"
    ? Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a))
    : JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** @param {unknown} v */
export const shown = (v) =>
  v === null || v === undefined || v === "" ? "(none)"
    : typeof v === "string" ? v
      : Array.isArray(v) ? (v.length ? v.join(", ") : "(none)")
        : typeof v === "object" ? Object.entries(v).map(([k, c]) => `${k} ${c}`).join(", ")
          : num(v);

/**
 * What differs between two states of a graph, setting by setting. A part that follows from another change is left
 * out: an attribute's type and its colours when the attribute changed, the list of y attributes when only one is
 * before and after.
 * @param {GraphState} before
 * @param {GraphState} after
 * @param {Set<string>} [asked] the settings asked for, reported even where they follow from another change
 * @returns {Array<{setting: string, before: unknown, after: unknown, text: string}>}
 */
export function changesBetween(before, after, asked = new Set()) {
  const out = [];
  /** @param {string} path */
  const moved = (path) => !sameValue(valueAt(before, path), valueAt(after, path));
  for (const [setting, path, name] of SETTINGS) {
    const [was, now] = [valueAt(before, path) ?? null, valueAt(after, path) ?? null];
    if (sameValue(was, now)) continue;
    const axis = path.split(".")[0];
    // a type that turns unknown (null) with the attribute kept: CODAP now goes by the attribute's own type
    if (!asked.has(setting) && path.endsWith(".type") && (moved(`${axis}.attribute`) || now === null)) continue;
    if (!asked.has(setting) && path.startsWith("legend.") && path !== "legend.attribute" && moved("legend.attribute")) continue;
    // an axis range that turns none: CODAP now draws bins (or a category) there, which bins (or the type) says
    if (!asked.has(setting) && /\.(min|max)$/.test(path) && now === null) continue;
    if (path === "y.attributes" && (Array.isArray(was) ? was.length : 0) <= 1 && (Array.isArray(now) ? now.length : 0) <= 1) continue;
    out.push({ setting, before: was, after: now, text: `${name} ${shown(was)} → ${shown(now)}` });
  }
  return out;
}
