// @ts-check
// The graph settings CODAP 3.1.0's plugin API cannot reach, changed in CODAP's saved form of the graph: its plot
// type among the numeric ones (dots, dots grouped into bins, a bar for each point), the bins' width and alignment,
// the measures CODAP's API cannot create (box plot, normal curve, mean absolute deviation, standard error,
// movable line and point, plotted function) and the Measure menu's switches (measure labels, squares of
// residuals, a locked intercept). The component handler's update ignores them (graph-component-handler.ts update:
// `plotType` is not among the values it reads; binning is set only by the graph's Configuration menu), so the tool
// rebuilds the document with them changed (codap_document.js), as CODAP itself reads a saved document: v2's
// DG.BinnedPlotModel {width, alignment, dotsAreFused}, DG.LinePlotModel, plotModelStorage.adornments….

import { rebuildComponent } from "./codap_document.js";
import { ToolError, get, invalid, plotName } from "./context.js";
import { PLOT_TYPES } from "./graph_settings.js";

/**
 * @import {CodapId} from "../types.js"
 * @import {DocumentIO} from "./codap_document.js"
 * @import {UpdateGraphArgs} from "./graph_settings.js"
 */

const UNIVARIATE = new Set(["dotPlot", "binnedDotPlot", "histogram", "linePlot"]);
const CATEGORICAL = new Set(["dotChart", "barChart"]);

/** The numeric plot types the rebuild sets, by CODAP's v2 plot class. */
export const PLOT_CLASSES = { dotPlot: "DG.DotPlotModel", binnedDotPlot: "DG.BinnedPlotModel", linePlot: "DG.LinePlotModel" };

/**
 * What a rebuild changes in a graph's saved form; left out: unchanged.
 * @typedef {object} GraphRebuild
 * @property {"dotPlot" | "binnedDotPlot" | "linePlot"} [plotType] the unfused numeric plot (fusing is the API's)
 * @property {number} [binWidth]
 * @property {number} [binAlignment]
 * @property {boolean} [measureLabels]
 * @property {boolean} [squaresOfResiduals]
 * @property {boolean} [interceptLocked]
 * @property {Record<string, Record<string, unknown>>} [adornments] v2 storage to set, by key (plottedBoxPlot…)
 * @property {Record<string, Record<string, unknown>>} [topAdornments] v2 storage of a scatter plot's movable line
 *   or point, by key (movableLineStorage…)
 * @property {"numeric" | "categorical"} [legendType] how the graph treats its legend attribute (the legend menu's
 *   Treat as Numeric / Categorical; the component update reads no legend type)
 * @property {string | null} [backgroundImage] a picture's URL behind the plot; null takes it away
 * @property {boolean} [imageLocked] the picture moves and scales with the axes
 * @property {{attribute: string, low?: string, high?: string}} [colorRange] a numeric legend attribute's colours (the
 *   dataset's: its attribute's category map, "low-attribute-color" and "high-attribute-color")
 * @property {{attribute: string, order: string[]}} [categoryOrder] the order of a categorical attribute's categories
 *   (the dataset's: its category map's __order, which CODAP reads when it loads a document; its plugin API has none)
 */

/**
 * Applies `r` to a graph's componentStorage (v2), in place.
 * @param {Record<string, any>} storage
 * @param {GraphRebuild} r
 */
export function applyRebuild(storage, r) {
  const model = storage.plotModels?.[0];
  if (!model) throw new ToolError("CODAP's saved form of this graph has no plot.", "codap_error");
  const plot = (model.plotModelStorage ??= {});
  if (r.plotType) {
    model.plotClass = PLOT_CLASSES[r.plotType];
    if (r.plotType !== "binnedDotPlot") {
      for (const key of ["width", "alignment", "totalNumberOfBins", "dotsAreFused"]) delete plot[key];
    } else {
      plot.dotsAreFused = false;
    }
    // the primary axis (x unless the numeric attribute is on y) carries the bins
    const axis = storage.yRole === 1 ? "y" : "x";
    storage[`${axis}AxisClass`] = r.plotType === "binnedDotPlot" ? "DG.BinnedAxisModel" : "DG.CellLinearAxisModel";
  }
  if (r.binWidth !== undefined) plot.width = r.binWidth;
  if (r.binAlignment !== undefined) plot.alignment = r.binAlignment;
  if (r.binWidth !== undefined || r.binAlignment !== undefined) delete plot.totalNumberOfBins;
  if (r.legendType) storage.legendAttributeType = r.legendType === "categorical" ? 2 : 1;
  if (r.backgroundImage === null) {
    delete storage.plotBackgroundImage;
    delete storage.plotBackgroundImageLockInfo;
  } else if (r.backgroundImage !== undefined) {
    storage.plotBackgroundImage = r.backgroundImage;
  }
  if (r.imageLocked === false) delete storage.plotBackgroundImageLockInfo;
  if (r.imageLocked === true) {
    // CODAP keeps the axes' bounds the picture was fitted to (graph-content-model.ts setBackgroundImageLock)
    storage.plotBackgroundImageLockInfo = {
      locked: true, xAxisLowerBound: storage.xLowerBound ?? 0, xAxisUpperBound: storage.xUpperBound ?? 1,
      yAxisLowerBound: storage.yLowerBound ?? 0, yAxisUpperBound: storage.yUpperBound ?? 1,
    };
  }
  if (r.measureLabels !== undefined) plot.showMeasureLabels = r.measureLabels;
  if (r.squaresOfResiduals !== undefined) plot.areSquaresVisible = r.squaresOfResiduals;
  if (r.interceptLocked !== undefined) {
    for (const key of ["movableLineStorage", "multipleLSRLsStorage"]) if (plot[key]) plot[key].isInterceptLocked = r.interceptLocked;
  }
  plot.adornments ??= {};
  for (const [key, value] of Object.entries(r.adornments ?? {})) plot.adornments[key] = { ...plot.adornments[key], ...value };
  for (const [key, value] of Object.entries(r.topAdornments ?? {})) plot[key] = { ...plot[key], ...value };
}

/**
 * Sets a numeric attribute's colour range in the dataset the graph shows (its v2 category map).
 * @param {import("./codap_document.js").V2Document} doc
 * @param {Record<string, any>} storage the graph's
 * @param {{attribute: string, low?: string, high?: string}} range
 */
function setColorRange(doc, storage, range) {
  const attr = documentAttribute(doc, storage, range.attribute);
  attr._categoryMap = {
    ...attr._categoryMap,
    ...(range.low ? { "low-attribute-color": range.low } : {}),
    ...(range.high ? { "high-attribute-color": range.high } : {}),
  };
}

/**
 * An attribute of the graph's dataset in CODAP's saved document.
 * @param {import("./codap_document.js").V2Document} doc
 * @param {Record<string, any>} storage the graph's
 * @param {string} name
 * @returns {Record<string, any>}
 */
function documentAttribute(doc, storage, name) {
  const id = storage._links_?.context?.id;
  const context = (doc.contexts ?? []).find((c) => String(c.guid) === String(id));
  const attr = context?.collections?.flatMap((c) => c.attrs ?? []).find((a) => a.name === name);
  if (!attr) throw new ToolError(`CODAP's document has no attribute ${JSON.stringify(name)} in the graph's dataset.`, "codap_error");
  return attr;
}

/**
 * Puts a categorical attribute's categories in the order given, the ones not named after them as they were.
 * @param {import("./codap_document.js").V2Document} doc
 * @param {Record<string, any>} storage the graph's
 * @param {{attribute: string, order: string[]}} wanted
 */
function setCategoryOrder(doc, storage, wanted) {
  const attr = documentAttribute(doc, storage, wanted.attribute);
  const map = attr._categoryMap ?? {};
  /** @type {string[]} */
  const was = Array.isArray(map.__order) ? map.__order.map(String) : [];
  attr._categoryMap = { ...map, __order: [...wanted.order, ...was.filter((c) => !wanted.order.includes(c))] };
}

/**
 * Rebuilds CODAP's document with graph `graphId` changed as `r` says; the graph's saved form as CODAP rebuilt it,
 * and notes on anything else CODAP rebuilt differently.
 * @param {DocumentIO} io
 * @param {CodapId} graphId
 * @param {GraphRebuild} r
 * @param {import("./codap_document.js").V2Document | null} [current] the document as just read, if unchanged since
 */
export async function rebuildGraph(io, graphId, r, current = null) {
  const [frame] = await io.send([get("interactiveFrame")]);
  const frameId = frame?.success === true ? frame.values?.id ?? null : null;
  const { storage, others, finished, document } = await rebuildComponent(io, graphId, (s, doc) => {
    applyRebuild(s, r);
    if (r.colorRange) setColorRange(doc, s, r.colorRange);
    if (r.categoryOrder) setCategoryOrder(doc, s, r.categoryOrder);
  }, frameId, current);
  /** @type {string[]} */
  const notes = [];
  if (!finished) notes.push("CODAP did not say it had finished rebuilding the document within 20 s; what follows is read back from it now.");
  if (others.length) {
    notes.push(`Rebuilding the document (the only way CODAP's plugin API reaches this setting) also changed: ${others.join(", ")}.`);
  }
  return { storage, notes, document };
}

/**
 * The plot changes `args` ask of a graph now `plotType` (after any attribute change): CODAP's fuse (before and after
 * a rebuild), the rebuild, and an attribute to treat as categorical first.
 * @param {UpdateGraphArgs} args
 * @param {Record<string, any>} detail `get component[id]`'s values
 * @param {string} label the graph, for messages
 */
export function plotPlan(args, detail, label) {
  /** @type {string[]} */
  const plan0 = [];
  const p = detail.plotType;
  const bins = args.binWidth !== undefined || args.binAlignment !== undefined;
  /** @type {string | undefined} */
  let target = args.plotType ? PLOT_TYPES[/** @type {keyof typeof PLOT_TYPES} */ (args.plotType)] : undefined;
  // Fusing names a plot type too: a numeric plot's dots fused are a histogram (CODAP fuses only binned dots).
  const fused = args.pointsAreFusedIntoBars;
  if (fused !== undefined && UNIVARIATE.has(p)) target = fused ? "histogram" : p === "histogram" ? "binnedDotPlot" : p;
  else if (fused !== undefined && CATEGORICAL.has(p)) target = fused ? "barChart" : "dotChart";
  else if (fused === true) {
    throw new ToolError(
      `CODAP cannot fuse the points of ${plotName(p)} into bars: fusing needs one attribute alone on an axis (a ` +
        `category gives a bar chart, a number a histogram of its bins); graph ${label} shows ` +
        `${[detail.xAttributeName, detail.yAttributeName].filter(Boolean).join(" against ") || "no attribute"}.`,
      "plot_type_not_possible",
      { plotType: p ?? null },
    );
  }
  if (fused === true && p !== "histogram" && UNIVARIATE.has(p)) {
    plan0.push(`Fusing a numeric attribute's dots makes a histogram: they were grouped into bins first (CODAP fuses only binned dots).`);
  }
  if (!target && bins) target = p === "histogram" ? "histogram" : "binnedDotPlot";
  /** @type {{unfuse: boolean, rebuild: GraphRebuild | null, fuse: boolean | undefined, treatAs: string | null, notes: string[]}} */
  const plan = { unfuse: false, rebuild: null, fuse: undefined, treatAs: null, notes: plan0 };
  const what = `graph ${label} is ${plotName(p)}${detail.xAttributeName ? ` (x = ${detail.xAttributeName}${detail.yAttributeName ? `, y = ${detail.yAttributeName}` : ""})` : ""}`;
  if (target && UNIVARIATE.has(target)) {
    if (!UNIVARIATE.has(p)) {
      throw new ToolError(
        `A ${plotName(target)} needs one numeric attribute alone on an axis (a category may split it); ${what}. ` +
          (CATEGORICAL.has(p) ? "A categorical attribute is shown as a dot_chart or bar_chart; if it holds numbers, " +
            "xAttributeType (or yAttributeType) numeric treats it as numbers. " : "Change the attributes first (xAttribute, yAttribute). "),
        "plot_type_not_possible",
        { plotType: p ?? null, asked: args.plotType ?? null },
      );
    }
    const unfusedTarget = target === "histogram" ? "binnedDotPlot" : target;
    const unfusedNow = p === "histogram" ? "binnedDotPlot" : p;
    if (bins && unfusedTarget !== "binnedDotPlot") {
      throw invalid(`binWidth and binAlignment apply to a binned_dot_plot or a histogram, not to a ${args.plotType}.`);
    }
    if (p === "histogram" && target !== "histogram") plan.unfuse = true;
    if (unfusedNow !== unfusedTarget || bins) {
      plan.rebuild = {
        ...(unfusedNow !== unfusedTarget ? { plotType: /** @type {"dotPlot" | "binnedDotPlot" | "linePlot"} */ (unfusedTarget) } : {}),
        ...(args.binWidth !== undefined ? { binWidth: args.binWidth } : {}),
        ...(args.binAlignment !== undefined ? { binAlignment: args.binAlignment } : {}),
      };
    }
    if (target === "histogram" && p !== "histogram") plan.fuse = true;
    if (!args.plotType && bins && p !== "binnedDotPlot" && p !== "histogram") {
      plan.notes.push(`The ${plotName(p)} is now grouped into bins (a binned dot plot); plotType histogram fuses them into bars.`);
    }
  } else if (target && CATEGORICAL.has(target)) {
    if (UNIVARIATE.has(p)) {
      plan.treatAs = detail.primaryAxis === "y" ? "yAttributeType" : "xAttributeType";
      plan.notes.push(`${detail.primaryAxis === "y" ? detail.yAttributeName : detail.xAttributeName} is numeric; it is ` +
        "now treated as categorical (one column per distinct value), as CODAP's axis menu \"Treat as Categorical\" does.");
    } else if (!CATEGORICAL.has(p)) {
      throw new ToolError(
        `A ${plotName(target)} shows one categorical attribute; ${what}. Change the attributes first.`,
        "plot_type_not_possible",
        { plotType: p ?? null, asked: args.plotType ?? null },
      );
    }
    if ((target === "barChart") !== (p === "barChart")) plan.fuse = target === "barChart";
  }
  /** @type {GraphRebuild} */
  const switches = {
    ...(args.legendAttributeType !== undefined ? { legendType: /** @type {"numeric" | "categorical"} */ (args.legendAttributeType) } : {}),
    ...(args.backgroundImage !== undefined ? { backgroundImage: args.backgroundImage || null } : {}),
    ...(args.backgroundImageLockedToAxes !== undefined ? { imageLocked: args.backgroundImageLockedToAxes } : {}),
    ...(args.showMeasureLabels !== undefined ? { measureLabels: args.showMeasureLabels } : {}),
    ...(args.showSquaresOfResiduals !== undefined ? { squaresOfResiduals: args.showSquaresOfResiduals } : {}),
    ...(args.lockIntercept !== undefined ? { interceptLocked: args.lockIntercept } : {}),
  };
  if (Object.keys(switches).length) plan.rebuild = { ...plan.rebuild, ...switches };
  return plan;
}
