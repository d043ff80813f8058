// @ts-check
// A graph's whole state as CODAP holds it, read back from CODAP: what it plots on each axis and the legend, its plot
// type and bins, how it draws points, bars and background, what it shows and hides, and the statistics and lines on
// it. Every setting a tool can change on a graph is here, so an answer can say what changed and a model can know a
// graph without a picture (readGraphStates, describeGraphState).
//
// Sources: `get component[id]` (attributes, bounds, colours, flags), its adornment list and each shown adornment,
// the legend attribute's category colours, and CODAP's saved document (codap_document.js) for what the component
// get leaves out: bin width and alignment, measure labels, squares of residuals, a locked intercept, and each
// dataset's set-aside cases.

import { ADORNMENT_NAMES } from "./adornment_kinds.js";
import { ADORNMENT_READS, adornmentReads, adornmentsRead } from "./adornment_read.js";
import { readDocument } from "./codap_document.js";
import { get, plotName } from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest} from "../types.js"
 * @import {DocumentIO, V2Document} from "./codap_document.js"
 */

/**
 * An axis: the attribute on it (its type as the graph treats it) and, on a numeric axis, the bounds shown.
 * @typedef {{attribute: string | null, type: string | null, min: number | null, max: number | null}} AxisState
 */

/**
 * A graph as CODAP holds it.
 * @typedef {object} GraphState
 * @property {CodapId} id
 * @property {string} title
 * @property {string | null} dataset
 * @property {string | null} plotType CODAP's name: dotPlot, binnedDotPlot, histogram, linePlot, dotChart, barChart, scatterPlot, casePlot
 * @property {string} plot the same in words
 * @property {AxisState} x
 * @property {AxisState & {attributes: string[]}} y
 * @property {AxisState} y2 the right numeric axis
 * @property {string | null} topSplit
 * @property {string | null} rightSplit
 * @property {{attribute: string, type: string | null, colors?: Record<string, string>,
 *   range?: {low: string | null, high: string | null}} | null} legend a categorical legend's colours, a numeric one's range
 * @property {{width: number | null, alignment: number | null, count: number | null} | null} bins
 * @property {boolean} fusedIntoBars
 * @property {{scale: string | null, formula: string | null} | null} barChart
 * @property {{color: string | null, opacity: number, size: number | null, strokeColor: string | null, strokeSameAsFill: boolean}} points
 * @property {{color: string | null, transparent: boolean, image: string | null, imageLocked: boolean | null}} background
 *   image: its URL (a data URI shortened), null where the document could not be read
 * @property {boolean} connectingLines
 * @property {GraphShows} shows
 * @property {{labels: boolean | null, squaresOfResiduals: boolean | null, interceptLocked: boolean | null}} measures
 *   null where the document could not be read
 * @property {Array<{name: string} & Record<string, unknown>>} adornments the statistics and lines shown
 */

/**
 * What a graph shows of its dataset's cases.
 * @typedef {object} GraphShows
 * @property {boolean} onlySelected "Display Only Selected Cases"
 * @property {number} hiddenCases cases hidden in this graph (Hide Selected or Unselected Cases)
 * @property {string | null} filterFormula only the cases for which it is true are shown
 * @property {boolean} parentToggles
 * @property {boolean} onlyLastCase
 * @property {boolean} measuresForSelection
 * @property {number | null} setAsideCases cases set aside in the dataset (not shown anywhere); null if unknown
 */

// An adornment's settings worth naming (its values are add_codap_adornment's answer).
const ADORNMENT_OPTIONS = ["percentType", "showCount", "showPercent", "showOutliers", "showICI", "showRSquared", "showR",
  "showConfidenceBands", "formula", "numberOfStdErrs"];
const BINNED = new Set(["binnedDotPlot", "histogram"]);

/**
 * A colour and its opacity: CODAP keeps an opacity below 1 as the colour's alpha ("#ff000080").
 * @param {unknown} color
 * @returns {{color: string | null, opacity: number}}
 */
export function colorAndOpacity(color) {
  if (typeof color !== "string") return { color: null, opacity: 1 };
  const m = /^#([0-9a-f]{6})([0-9a-f]{2})$/i.exec(color);
  if (!m) return { color, opacity: 1 };
  return { color: `#${m[1].toLowerCase()}`, opacity: Math.round((parseInt(m[2], 16) / 255) * 100) / 100 };
}

/** A formula as CODAP's adornment get gives it: a JSON string ("\"2*x+1\""). @param {unknown} v */
const unquoted = (v) => {
  try {
    return typeof v === "string" && v.startsWith('"') ? JSON.parse(v) : v;
  } catch {
    return v;
  }
};

/** @param {unknown} v */
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/**
 * An axis's range as CODAP gives it, or none: CODAP gives a binned axis (and an axis it has not laid out) as 0 to 0,
 * a range no numeric axis is drawn with; it draws the bins there instead (the state's bins).
 * @param {unknown} low
 * @param {unknown} high
 */
const range = (low, high) => {
  const [min, max] = [num(low), num(high)];
  return min !== null && min === max ? { min: null, max: null } : { min, max };
};

/**
 * A graph's state from what CODAP gave: its component, its adornments, its legend attribute and the document.
 * @param {Record<string, any>} c `get component[id]`'s values
 * @param {Array<Record<string, any>>} adornments the shown adornments, each as `get ….adornment[type]` gives it
 * @param {Record<string, any> | null} legendAttribute `get …attribute[legend]`'s values
 * @param {Record<string, any> | null} storage the graph's componentStorage in CODAP's document, if read
 * @param {number | null} setAside the dataset's set-aside cases, if known
 * @returns {GraphState}
 */
export function graphStateFrom(c, adornments, legendAttribute, storage, setAside) {
  const plotModel = storage?.plotModels?.[0]?.plotModelStorage ?? {};
  const point = colorAndOpacity(c.pointColor);
  const background = colorAndOpacity(c.backgroundColor);
  const colors = legendAttribute?._categoryMap
    ? Object.fromEntries(Object.entries(legendAttribute._categoryMap).filter(([k, v]) => !k.startsWith("__") && typeof v === "string" && !k.endsWith("attribute-color")))
    : undefined;
  // CODAP lists the right axis's attribute last among the y attributes
  const yAll = Array.isArray(c.yAttributeNames) ? c.yAttributeNames.filter((n) => typeof n === "string") : [];
  const numericLegend = (V2_TYPES[storage?.legendAttributeType] ?? legendAttribute?.type) === "numeric" && Boolean(legendAttribute);
  const yNames = c.y2AttributeName && yAll[yAll.length - 1] === c.y2AttributeName ? yAll.slice(0, -1) : yAll;
  return {
    id: c.id,
    title: c.title || c.name || "",
    dataset: c.dataContext ?? null,
    plotType: c.plotType ?? null,
    plot: plotName(c.plotType),
    x: { attribute: c.xAttributeName ?? null, type: c.xAttributeType ?? null, ...range(c.xLowerBound, c.xUpperBound) },
    y: {
      attribute: c.yAttributeName ?? null, attributes: yNames.length ? yNames : c.yAttributeName ? [c.yAttributeName] : [],
      type: c.yAttributeType ?? null, ...range(c.yLowerBound, c.yUpperBound),
    },
    y2: { attribute: c.y2AttributeName ?? null, type: c.y2AttributeType ?? null, ...range(c.y2LowerBound, c.y2UpperBound) },
    topSplit: c.topSplitAttributeName ?? null,
    rightSplit: c.rightSplitAttributeName ?? null,
    legend: c.legendAttributeName
      ? {
        attribute: c.legendAttributeName,
        type: V2_TYPES[storage?.legendAttributeType] ?? legendAttribute?.type ?? null,
        ...(!numericLegend && colors && Object.keys(colors).length ? { colors } : {}),
        ...(numericLegend ? { range: legendRange(/** @type {Record<string, any>} */ (legendAttribute)) } : {}),
      }
      : null,
    bins: BINNED.has(c.plotType)
      ? { width: num(plotModel.width), alignment: num(plotModel.alignment), count: num(plotModel.totalNumberOfBins) }
      : null,
    fusedIntoBars: c.pointsAreFusedIntoBars === true,
    barChart: c.plotType === "barChart" ? { scale: c.barChartScale ?? null, formula: c.barChartFormula ?? null } : null,
    points: {
      color: point.color, opacity: point.opacity, size: num(c.pointSize),
      strokeColor: typeof c.strokeColor === "string" ? c.strokeColor : null, strokeSameAsFill: c.strokeSameAsFill === true,
    },
    background: {
      color: background.color,
      transparent: c.transparent === true,
      image: shortImage(storage?.plotBackgroundImage),
      imageLocked: storage ? storage.plotBackgroundImageLockInfo?.locked === true : null,
    },
    connectingLines: c.showConnectingLines === true,
    shows: {
      onlySelected: c.displayOnlySelectedCases === true,
      hiddenCases: Array.isArray(c.hiddenCases) ? c.hiddenCases.length : 0,
      filterFormula: typeof c.filterFormula === "string" && c.filterFormula ? c.filterFormula : null,
      parentToggles: c.enableNumberToggle === true,
      onlyLastCase: c.numberToggleLastMode === true,
      measuresForSelection: c.showMeasuresForSelection === true,
      setAsideCases: setAside,
    },
    measures: {
      labels: storage ? plotModel.showMeasureLabels === true : null,
      squaresOfResiduals: storage ? plotModel.areSquaresVisible === true : null,
      interceptLocked: storage ? lockedIntercept(plotModel) : null,
    },
    adornments: adornments.map((a) => ({
      name: typeof a.name === "string" ? a.name : ADORNMENT_NAMES.get(a.type) ?? a.type,
      ...Object.fromEntries(ADORNMENT_OPTIONS.filter((k) => a[k] !== undefined && a[k] !== null).map((k) => [k, k === "formula" ? unquoted(a[k]) : a[k]])),
    })),
  };
}

// The attribute types of CODAP's saved form (v2-graph-exporter.ts v2TypesMap), as the graph treats the attribute.
/** @type {Record<string, string>} */
const V2_TYPES = { 1: "numeric", 2: "categorical", 3: "date", 4: "boundary", 5: "color" };

/** @param {unknown} image a background image as CODAP saves it: a URL or a data URI */
const shortImage = (image) =>
  typeof image !== "string" || !image ? null : image.startsWith("data:") && image.length > 80 ? `${image.slice(0, 40)}… (${Math.round(image.length / 1024)} KB)` : image;

/** @param {Record<string, any>} attribute a numeric legend attribute, as `get …attribute[name]` gives it */
function legendRange(attribute) {
  const map = attribute._categoryMap ?? {};
  return { low: map["low-attribute-color"] ?? null, high: map["high-attribute-color"] ?? null };
}

/** @param {Record<string, any>} plotModel the graph's first plot model storage */
function lockedIntercept(plotModel) {
  return plotModel.movableLineStorage?.isInterceptLocked === true || plotModel.multipleLSRLsStorage?.isInterceptLocked === true;
}

/**
 * The state of each graph in `ids`, read from CODAP in three messages (the document once more, when asked).
 * `document`: "read" to read CODAP's document, a document already read, or null to leave out what only it holds.
 * @param {DocumentIO} io
 * @param {CodapId[]} ids
 * @param {{document?: "read" | V2Document | null}} [options]
 * @returns {Promise<Map<string, GraphState>>}
 */
export async function readGraphStates(io, ids, { document = "read" } = {}) {
  /** @type {Map<string, GraphState>} */
  const states = new Map();
  if (!ids.length) return states;
  // datasets by id: CODAP finds `dataContext[x]` by title before name, and a title may be another dataset's name;
  // each kind of statistic read by its type (adornment_read.js: CODAP's adornmentList leaves some out)
  const per = 1 + ADORNMENT_READS;
  const first = [get("dataContextList"), ...ids.flatMap((id) => [get(`component[${id}]`), ...adornmentReads(id)])];
  const [datasets, ...replies] = await io.send(first);
  /** @type {Map<string, unknown>} */
  const datasetIds = new Map((Array.isArray(ok(datasets)) ? ok(datasets) : []).map((/** @type {{name: string, id: unknown}} */ d) => [d.name, d.id]));
  const comps = ids.map((_, i) => ok(replies[per * i]) ?? {});
  const shownKinds = ids.map((_, i) => adornmentsRead(replies.slice(per * i + 1, per * (i + 1)))
    .filter((a) => a.isVisible).map((a) => ({ ...a.detail, name: a.name })));
  /** @type {CodapRequest[]} */
  const second = [];
  /** @type {number[]} where each graph's legend attribute is in `second` (-1: none) */
  const at = ids.map((_, i) => {
    const c = comps[i];
    return c.legendAttributeName && datasetIds.has(c.dataContext)
      ? second.push(get(`dataContext[${datasetIds.get(c.dataContext)}].attribute[${c.legendAttributeName}]`)) - 1
      : -1;
  });
  const [more, doc] = await Promise.all([
    second.length ? io.send(second) : Promise.resolve(/** @type {CodapReply[]} */ ([])),
    document === "read" ? readDocument(io).catch(() => null) : Promise.resolve(document ?? null),
  ]);
  const storages = new Map((doc?.components ?? []).map((c) => [String(c.guid), c.componentStorage ?? null]));
  const setAside = new Map((doc?.contexts ?? []).map((d) => [d.name, Array.isArray(d.setAsideItems) ? d.setAsideItems.length : 0]));
  ids.forEach((id, i) => {
    const c = comps[i];
    if (!c.id) return;
    const legendIndex = at[i];
    const shown = shownKinds[i];
    const legend = legendIndex >= 0 ? ok(more[legendIndex]) ?? null : null;
    const storage = storages.get(String(id)) ?? null;
    states.set(String(id), graphStateFrom(c, shown, legend, storage, doc ? setAside.get(c.dataContext) ?? 0 : null));
  });
  return states;
}

/** @param {CodapReply | undefined} reply */
const ok = (reply) => (reply?.success === true ? reply.values : undefined);

/** @param {number | null} v */
const shortNumber = (v) => (v === null ? "?" : String(Number(v.toPrecision(6))));

/**
 * A graph's state in one or two lines of words, for a model that cannot see it.
 * @param {GraphState} s
 */
export function describeGraphState(s) {
  /** @param {string} role @param {AxisState} a */
  const axis = (role, a) =>
    a.attribute ? `${role} = ${a.attribute}${a.min !== null && a.max !== null ? ` (${shortNumber(a.min)} to ${shortNumber(a.max)})` : ""}` : "";
  const parts = [
    s.plot + (s.connectingLines ? " with connecting lines" : ""),
    axis("x", s.x),
    s.y.attributes.length > 1 ? `y = ${s.y.attributes.join(" and ")}` : axis("y", s.y),
    axis("right y", s.y2),
    s.topSplit ? `split across by ${s.topSplit}` : "",
    s.rightSplit ? `split down by ${s.rightSplit}` : "",
    s.legend ? `coloured by ${s.legend.attribute}` : "",
    s.bins ? `bins of width ${shortNumber(s.bins.width)} from ${shortNumber(s.bins.alignment)}` : "",
    s.barChart?.scale && s.barChart.scale !== "count" ? `bars show ${s.barChart.scale}${s.barChart.formula ? ` (${s.barChart.formula})` : ""}` : "",
  ].filter(Boolean);
  const look = [
    s.legend ? "" : `points ${s.points.color ?? "?"}${s.points.opacity < 1 ? ` at opacity ${s.points.opacity}` : ""}`,
    s.points.size !== null && s.points.size !== 1 ? `size ×${s.points.size}` : "",
    s.background.transparent ? "transparent background" : s.background.color && s.background.color !== "#ffffff" ? `background ${s.background.color}` : "",
  ].filter(Boolean);
  const shows = [
    s.shows.onlySelected ? "only the selected cases" : "",
    s.shows.hiddenCases ? `${s.shows.hiddenCases} case${s.shows.hiddenCases === 1 ? "" : "s"} hidden here` : "",
    s.shows.filterFormula ? `only cases where ${s.shows.filterFormula}` : "",
    s.shows.setAsideCases ? `${s.shows.setAsideCases} case${s.shows.setAsideCases === 1 ? "" : "s"} set aside in the dataset` : "",
    s.shows.measuresForSelection ? "measures of the selection" : "",
    s.shows.parentToggles ? "parent toggles" : "",
  ].filter(Boolean);
  const adornments = s.adornments.map((a) => a.name.replace(/_/g, " "));
  return parts.join(", ") + (look.length ? `; ${look.join(", ")}` : "") + (shows.length ? `; showing ${shows.join(", ")}` : "") +
    (adornments.length ? `; with ${adornments.join(", ")}` : "");
}
