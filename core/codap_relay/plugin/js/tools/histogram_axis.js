// @ts-check
// A histogram's numeric axis, which CODAP 3.1.0 keeps from 0: it fits a histogram's axes to the data with the options
// of its count axis (HistogramModel.axisDomainOptions: clampPosMinAtZero, for "bars"), so the numeric axis takes in
// 0 when the dots are fused into bars (by hand or by a tool) and again whenever CODAP fits the axes to the cases
// (GraphContentModel.growNumericAxesToFit): when a case changes, and each time the document is saved or a plugin
// reads it (DataSet.prepareSnapshot validates the cases). A zoom set on it lasts until then, and CODAP puts its
// undoing on the undo history as a step of the person's. So the tools refuse to zoom a histogram's numeric axis and
// say what keeps a closer look instead: a binned dot plot (whose axis CODAP fits to its bins and leaves as set), or
// hiding the cases outside the range.

import { invalid } from "./context.js";

/** Why a histogram's numeric axis cannot be zoomed, and what to do instead. */
export const HISTOGRAM_ZOOM =
  "CODAP 3.1.0 draws a histogram's numeric axis from 0 and stretches it back there whenever the cases change or the " +
  "document is saved or read (a zoom would be undone at the next call, and CODAP would record that as a step of the " +
  "person's): nothing was changed. For a closer look, show the bins as dots (plotType binned_dot_plot, whose axis " +
  "keeps the bounds given), or hide the cases outside the range (hideCasesWhere, e.g. \"height < 140\"; filterFormula " +
  "keeps those a condition is true for).";

/**
 * Refuses bounds for the numeric axis of a graph that is (or will be) a histogram. The count axis takes bounds.
 * @param {Record<string, unknown>} args the call's arguments (xAxisMin…)
 * @param {"x" | "y"} numericAxis the axis of the binned attribute
 */
export function refuseHistogramZoom(args, numericAxis) {
  const asked = [`${numericAxis}AxisMin`, `${numericAxis}AxisMax`].filter((k) => args[k] !== undefined);
  if (asked.length) throw invalid(`${asked.join(" and ")}: ${HISTOGRAM_ZOOM}`);
}

/**
 * Whether a graph is a histogram once the call's plot arguments apply.
 * @param {{plotType?: string, pointsAreFusedIntoBars?: boolean}} args
 * @param {string | undefined} now its plot type now (CODAP's name)
 */
export function histogramAfter(args, now) {
  if (args.plotType) return args.plotType === "histogram";
  if (now === "histogram") return args.pointsAreFusedIntoBars !== false;
  return args.pointsAreFusedIntoBars === true && now === "binnedDotPlot";
}
