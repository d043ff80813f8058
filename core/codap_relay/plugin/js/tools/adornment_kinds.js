// @ts-check
// The statistics and lines CODAP's Measure menu shows on a graph (its adornments), as the tools name them: CODAP's
// type, the plots that take each, and how the tools make one. CODAP 3.1.0's plugin API creates some
// (adornment-handler.ts: a handler with `create`); the others the tools make by rebuilding the graph's saved form
// (graph_rebuild.js) with the v2 storage CODAP reads back (v2-adornment-importer.ts): `v2` names it, at the plot's
// `adornments` ("nested") or on the plot model itself ("top", a scatter plot's movable line and point).

/**
 * @typedef {object} AdornmentKind
 * @property {string} type CODAP's
 * @property {string} label how a sentence calls it
 * @property {string[]} plots CODAP's plot types that take it
 * @property {string} needs the plots, in words
 * @property {string} menu its name in CODAP's Measure menu
 * @property {{key: string, level: "nested" | "top"} | null} v2 made by a rebuild (null: by CODAP's create)
 */

// CODAP's plot types that take each adornment, as v3.1.0 registers them (adornments/*-registration.tsx `plots`,
// widened by isCompatibleWithPlotType: "dotPlot" covers every univariate numeric plot, "dotChart" every categorical).
const UNIVARIATE = ["dotPlot", "binnedDotPlot", "histogram", "linePlot"];
const EVERY_PLOT = ["casePlot", "dotChart", "barChart", ...UNIVARIATE, "scatterPlot"];
const NEEDS_DOT_PLOT = "a dot plot: one numeric attribute alone on an axis (a categorical attribute may split it)";
const NEEDS_SCATTER = "a scatter plot: numeric attributes on both axes";

/** @type {(type: string, label: string, menu?: string, v2?: AdornmentKind["v2"]) => AdornmentKind} */
const univariate = (type, label, menu = type, v2 = null) => ({ type, label, plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu, v2 });
/** @type {(type: string, label: string, menu: string, v2?: AdornmentKind["v2"]) => AdornmentKind} */
const scatter = (type, label, menu, v2 = null) => ({ type, label, plots: ["scatterPlot"], needs: NEEDS_SCATTER, menu, v2 });

/**
 * The adornments by the tools' names.
 * @type {Record<string, AdornmentKind>}
 */
export const ADORNMENTS = {
  mean: univariate("Mean", "mean"),
  median: univariate("Median", "median"),
  standard_deviation: univariate("Standard Deviation", "standard deviation"),
  mean_absolute_deviation: univariate("Mean Absolute Deviation", "mean absolute deviation", undefined,
    { key: "plottedMad", level: "nested" }),
  standard_error: univariate("Standard Error", "standard error", undefined, { key: "plottedStErr", level: "nested" }),
  box_plot: univariate("Box Plot", "box plot", undefined, { key: "plottedBoxPlot", level: "nested" }),
  normal_curve: univariate("Normal Curve", "normal curve", undefined, { key: "plottedNormal", level: "nested" }),
  movable_value: univariate("Movable Value", "movable value"),
  plotted_value: {
    type: "Plotted Value", label: "plotted value", plots: [...UNIVARIATE, "scatterPlot"],
    needs: "a dot plot or a scatter plot", menu: "Plotted Value", v2: null,
  },
  count: { type: "Count", label: "count", plots: EVERY_PLOT, needs: "any graph", menu: "Count", v2: null },
  percent: { type: "Percent", label: "percent", plots: EVERY_PLOT, needs: "any graph", menu: "Percent", v2: null },
  least_squares_line: scatter("LSRL", "least-squares line", "Least Squares Line"),
  movable_line: scatter("Movable Line", "movable line", "Movable Line", { key: "movableLineStorage", level: "top" }),
  movable_point: scatter("Movable Point", "movable point", "Movable Point", { key: "movablePointStorage", level: "top" }),
  plotted_function: scatter("Plotted Function", "plotted function", "Plotted Function",
    { key: "plottedFunction", level: "nested" }),
};

/** The tools' name of each CODAP adornment type. */
export const ADORNMENT_NAMES = new Map(Object.entries(ADORNMENTS).map(([name, a]) => [a.type, name]));
// Count and percent share CODAP's "Count" adornment: it is listed as count.
ADORNMENT_NAMES.set("Count", "count");
