// @ts-check
// update_codap_graph: every setting of CODAP's graph menus in one call, each carried out the way CODAP 3.1.0 can
// (its component update, the legend attribute's colours, the Rescale notice, or a rebuild of the graph's saved
// form for plot types, bins and the Measure menu's switches), then the graph read back whole (graph_state.js): the
// answer lists what changed and every asked setting CODAP did not take.

import { toHex, withOpacity } from "./colors.js";
import { readDocument } from "./codap_document.js";
import { ToolError, codapError, get, graphLabel, invalid, plotName, toolResult, unknownAttribute } from "./context.js";
import { adornmentReads, adornmentsRead } from "./adornment_read.js";
import { adornmentValues, percentByLegendNote, shownValuesText } from "./adornments.js";
import { categoryCounts, filterCount } from "./graph_counts.js";
import { categoryOrderOf, orderedAttribute } from "./category_order.js";
import { casesToHide } from "./graph_hidden.js";
import { joinLines } from "./graph_lines.js";
import { plotPlan, rebuildGraph } from "./graph_rebuild.js";
import { PLOT_TYPES, SETTINGS, changesBetween, sameValue, shown, valueAt } from "./graph_settings.js";
import { readGraphStates } from "./graph_state.js";
import { histogramAfter, refuseHistogramZoom } from "./histogram_axis.js";

/**
 * @import {CodapRequest, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {UpdateGraphArgs} from "./graph_settings.js"
 * @import {GraphState} from "./graph_state.js"
 */

// The attribute arguments: CODAP's id field for each, and the role a message names.
const ROLES = /** @type {const} */ ([
  ["xAttribute", "xAttributeID", "the x axis"],
  ["yAttribute", "yAttributeID", "the y axis"],
  ["y2Attribute", "y2AttributeID", "the right y axis"],
  ["legendAttribute", "legendAttributeID", "the legend"],
  ["topSplitAttribute", "topSplitAttributeID", "splitting across (top)"],
  ["rightSplitAttribute", "rightSplitAttributeID", "splitting down (right)"],
]);
// Arguments CODAP's component update takes as they are: [argument, CODAP's field].
const DIRECT = /** @type {const} */ ([
  ["showConnectingLines", "showConnectingLines"],
  ["showMeasuresForSelection", "showMeasuresForSelection"],
  ["showParentToggles", "enableNumberToggle"],
  ["showOnlyLastCase", "numberToggleLastMode"],
  ["displayOnlySelectedCases", "displayOnlySelectedCases"],
  ["pointSize", "pointSize"],
  ["strokeSameAsFill", "strokeSameAsFill"],
  ["transparentBackground", "transparent"],
  ["xAttributeType", "xAttributeType"],
  ["yAttributeType", "yAttributeType"],
]);
const BOUNDS = /** @type {const} */ ([
  ["xAxisMin", "xLowerBound"], ["xAxisMax", "xUpperBound"], ["yAxisMin", "yLowerBound"], ["yAxisMax", "yUpperBound"],
  ["y2AxisMin", "y2LowerBound"], ["y2AxisMax", "y2UpperBound"],
]);
// Settings that change only how a graph looks, not the values of the statistics on it.
const LOOKS = new Set(["title", "pointColor", "pointOpacity", "pointSize", "strokeColor", "strokeSameAsFill", "backgroundColor",
  "transparentBackground", "backgroundImage", "backgroundImageLockedToAxes", "legendColors", "legendColorRange", "showMeasureLabels",
  "rescale", "xAxisMin", "xAxisMax", "yAxisMin", "yAxisMax", "y2AxisMin", "y2AxisMax"]);
const REBUILT = ["binWidth", "binAlignment", "showMeasureLabels", "showSquaresOfResiduals", "lockIntercept",
  "legendAttributeType", "legendColorRange", "backgroundImage", "backgroundImageLockedToAxes", "categoryOrder"];

/**
 * A colour argument as CODAP keeps it, or an error naming the argument.
 * @param {string} arg
 * @param {string} value
 */
function hexOf(arg, value) {
  const hex = toHex(value);
  if (!hex) throw invalid(`${arg} ${JSON.stringify(value)} is not a colour: give a CSS colour, e.g. "red" or "#1f77b4".`);
  return hex;
}

/** @param {UpdateGraphArgs} args */
function checkArguments(args) {
  const asked = Object.keys(args).filter((k) => k !== "graph" && args[/** @type {keyof UpdateGraphArgs} */ (k)] !== undefined);
  if (!asked.length) {
    throw invalid(`Nothing to change: give at least one setting (${SETTINGS.map(([a]) => a).join(", ")}, rescale).`);
  }
  for (const [low, high] of /** @type {const} */ ([["xAxisMin", "xAxisMax"], ["yAxisMin", "yAxisMax"], ["y2AxisMin", "y2AxisMax"]])) {
    const [lo, hi] = [args[low], args[high]];
    if (lo !== undefined && hi !== undefined && !(lo < hi)) throw invalid(`${low} (${lo}) must be less than ${high} (${hi}).`);
  }
  const clearsHidden = args.showAllCases === true || args.displayOnlySelectedCases === false;
  const hides = [args.hideCases, args.hideCasesWhere, args.hideCaseIds].filter((v) => v !== undefined).length;
  if (hides > 1) throw invalid("Give one of hideCases (the selection), hideCasesWhere (a condition) and hideCaseIds (ids).");
  if (hides && clearsHidden) {
    throw invalid("hideCases hides cases; showAllCases true and displayOnlySelectedCases false show every case again. Give one.");
  }
  if (args.yAttribute !== undefined && args.yAttributes !== undefined) throw invalid("Give yAttribute or yAttributes, not both.");
  if (args.plotType !== undefined && args.pointsAreFusedIntoBars !== undefined) {
    throw invalid("Give plotType (histogram and bar_chart are fused into bars) or pointsAreFusedIntoBars, not both.");
  }
  return asked;
}

/** @param {ToolContext} ctx */
export function createGraphUpdate(ctx) {
  const { send, must, findDataset, describeDatasets, listGraphs, pickGraph } = ctx;

  /**
   * The graph's dataset and its attributes by name (attribute arguments are checked against it).
   * @param {Record<string, any>} detail
   * @param {string} label
   */
  async function datasetOf(detail, label) {
    if (!detail.dataContext) {
      throw new ToolError(
        `Graph ${label} shows no dataset, so it has no attributes to plot. Make a graph of a dataset with create_codap_graph.`,
        "graph_has_no_dataset",
      );
    }
    const { datasets: [dataset] } = await describeDatasets([await findDataset(detail.dataContext)], { types: false });
    return { dataset, attrs: new Map(dataset.collections.flatMap((c) => c.attributes).map((a) => [a.name, a])) };
  }

  /**
   * The component update for the attribute, title, flag, colour and display arguments.
   * @param {UpdateGraphArgs} args
   * @param {Record<string, any>} detail
   * @param {{dataset: DescribedDataset, attrs: Map<string, {id: unknown, name: string}>} | null} data
   */
  function mainValues(args, detail, data) {
    /** @type {Record<string, unknown>} */
    const values = {};
    for (const [arg, idField, role] of ROLES) {
      const wanted = args[arg];
      if (wanted === undefined) continue;
      if (wanted === null || wanted === "") {
        values[idField] = null; // CODAP takes the attribute off for a null id
        continue;
      }
      const attr = data?.attrs.get(wanted);
      if (!data || !attr) throw unknownAttribute(/** @type {DescribedDataset} */ (data?.dataset), wanted, role);
      values[idField] = attr.id;
    }
    if (args.yAttributes) {
      values.yAttributeIDs = args.yAttributes.map((n) => {
        const attr = data?.attrs.get(n);
        if (!data || !attr) throw unknownAttribute(/** @type {DescribedDataset} */ (data?.dataset), n, "the y axis");
        return attr.id;
      });
    }
    if (args.title !== undefined) Object.assign(values, { title: args.title, name: args.title });
    for (const [arg, field] of DIRECT) if (args[arg] !== undefined) values[field] = args[arg];
    if (args.showAllCases) values.displayOnlySelectedCases = false; // CODAP's "Show All Cases" un-hides too
    if (args.filterFormula !== undefined) values.filterFormula = args.filterFormula;
    if (args.pointColor !== undefined || args.pointOpacity !== undefined) {
      const current = toHex(String(detail.pointColor ?? "#e6805b")) ?? "#e6805b";
      const base = args.pointColor !== undefined ? hexOf("pointColor", args.pointColor) : current;
      // a colour given alone keeps the points' opacity, unless it carries its own
      const alphaOf = (/** @type {string} */ hex) => (hex.length === 9 ? parseInt(hex.slice(7), 16) / 255 : null);
      const opacity = args.pointOpacity ?? alphaOf(base) ?? alphaOf(current) ?? 1;
      values.pointColor = withOpacity(base, opacity);
    }
    if (args.strokeColor !== undefined) values.strokeColor = hexOf("strokeColor", args.strokeColor);
    if (args.backgroundColor !== undefined) values.backgroundColor = hexOf("backgroundColor", args.backgroundColor);
    return values;
  }

  /** @param {UpdateGraphArgs} args */
  async function update_codap_graph(args) {
    const asked = checkArguments(args);
    const graph = pickGraph(await listGraphs(), args.graph);
    if (histogramAfter(args, graph.detail.plotType)) refuseHistogramZoom({ ...args }, graph.detail.primaryAxis === "y" ? "y" : "x");
    const label = graphLabel(graph);
    const component = `component[${graph.id}]`;
    let detail = graph.detail;
    const usesDocument = Boolean(args.plotType) || REBUILT.some((k) => args[/** @type {keyof UpdateGraphArgs} */ (k)] !== undefined) ||
      detail.plotType === "binnedDotPlot" || detail.plotType === "histogram";
    const document = usesDocument && ctx.listen ? "read" : null;
    // CODAP gives its whole document for each read (two seconds where a plain web page is in it): one read serves
    // the state before and the rebuild, and the rebuild's own read the state after, where nothing came between.
    const docBefore = document ? await readDocument(ctx).catch(() => null) : null;
    const before = /** @type {GraphState} */ ((await readGraphStates(ctx, [graph.id], { document: docBefore })).get(String(graph.id)));
    const needsData = ROLES.some(([arg]) => args[arg]) || args.yAttributes || hidesCases(args) || args.legendColors;
    const data = needsData ? await datasetOf(detail, label) : null;
    /** @type {string[]} */
    const notes = [];

    // 1. attributes, title, flags, colours and what is shown: one update, read back for the plot type it made
    const values = mainValues(args, detail, data);
    let unchangedSinceRead = !Object.keys(values).length;
    if (Object.keys(values).length) {
      /** @type {CodapRequest} */
      const change = { action: "update", resource: component, values };
      const [reply, read] = await send([change, get(component)]);
      if (reply?.success !== true) {
        throw new ToolError(
          `CODAP refused to change graph ${label}: ${codapError(reply)}. It is ${plotName(detail.plotType)}; nothing was changed.`,
          "codap_error",
          { graphId: graph.id, codapError: codapError(reply) },
        );
      }
      detail = must(get(component), read).values ?? detail;
    }

    // 2. plot type, bins and the Measure menu's switches: CODAP's fuse, and a rebuild for the rest
    const plan = plotPlan(args, detail, label);
    notes.push(...plan.notes);
    const ordering = args.categoryOrder ? orderedAttribute(args.categoryOrder, detail) : null;
    const dataId = ordering && detail.dataContext ? (await findDataset(detail.dataContext)).id : null;
    const orderBefore = ordering ? await categoryOrderOf(ctx, dataId, ordering.attribute) : null;
    const strangers = ordering?.order.filter((c) => orderBefore && !orderBefore.includes(c)) ?? [];
    if (ordering && strangers.length) {
      throw invalid(`categoryOrder: ${ordering.attribute} has no category ${strangers.join(", ")}; its categories: ${shown(orderBefore)}.`);
    }
    if (ordering) plan.rebuild = { ...plan.rebuild, categoryOrder: ordering };
    if (args.legendColorRange) {
      if (!detail.legendAttributeName) {
        throw invalid("legendColorRange colours a numeric legend: give the graph a numeric legendAttribute first (or in the same call).");
      }
      const { low, high } = args.legendColorRange;
      plan.rebuild = {
        ...plan.rebuild,
        colorRange: {
          attribute: detail.legendAttributeName,
          ...(low ? { low: hexOf("legendColorRange.low", low) } : {}),
          ...(high ? { high: hexOf("legendColorRange.high", high) } : {}),
        },
      };
    }
    /** @param {boolean} fused */
    const fuse = async (fused) => {
      const [reply] = await send([{ action: "update", resource: component, values: { pointsAreFusedIntoBars: fused } }]);
      if (reply?.success !== true) {
        notes.push(`CODAP did not ${fused ? "fuse the points into bars" : "separate the bars into points"}: ${codapError(reply)}` +
          (fused ? " (CODAP fuses a plot split by a category on the other axis into bars only without that split)." : ""));
      }
    };
    if (plan.treatAs) await send([{ action: "update", resource: component, values: { [plan.treatAs]: "categorical" } }]);
    if (plan.unfuse) await fuse(false);
    unchangedSinceRead &&= !plan.treatAs && !plan.unfuse;
    /** @type {import("./codap_document.js").V2Document | null} */
    let docAfter = null;
    if (plan.rebuild) {
      if (!ctx.listen) throw new ToolError("This plugin cannot read CODAP's document here, which this change needs.", "document_unavailable");
      const rebuilt = await rebuildGraph(ctx, graph.id, plan.rebuild, unchangedSinceRead ? docBefore : null);
      notes.push(...rebuilt.notes);
      docAfter = rebuilt.document;
    }
    if (plan.fuse !== undefined) await fuse(plan.fuse);

    // 3. what depends on the plot: the bar scale, the bounds, hidden cases, the legend's colours, a rescale
    /** @type {Record<string, unknown>} */
    const late = {};
    if (args.barChartFormula !== undefined) late.barChartFormula = args.barChartFormula;
    if (args.barChartScale !== undefined) late.barChartScale = args.barChartScale;
    for (const [arg, field] of BOUNDS) if (args[arg] !== undefined) late[field] = args[arg];
    if (hidesCases(args)) {
      const [now] = await send([get(component)]);
      /** @type {import("./graph_hidden.js").HidePick} */
      const pick = args.hideCasesWhere !== undefined ? { where: args.hideCasesWhere }
        : args.hideCaseIds !== undefined ? { caseIds: args.hideCaseIds } : { selection: /** @type {"selected" | "unselected"} */ (args.hideCases) };
      late.hiddenCases = await casesToHide(ctx, pick, must(get(component), now).values ?? detail, /** @type {NonNullable<typeof data>} */ (data).dataset);
    }
    /** @type {CodapRequest[]} */
    const lateRequests = [];
    if (Object.keys(late).length) lateRequests.push({ action: "update", resource: component, values: late });
    if (args.legendColors) lateRequests.push(legendColorRequest(args.legendColors, detail, data));
    if (args.rescale) lateRequests.push({ action: "notify", resource: component, values: { request: "autoScale" } });
    if (plan.fuse !== undefined || lateRequests.length) docAfter = null;
    const lateReplies = await send(lateRequests);
    lateReplies.forEach((r, i) => {
      if (r?.success !== true) notes.push(`CODAP refused "${lateRequests[i].action} ${lateRequests[i].resource}": ${codapError(r)}.`);
    });

    // 4. read it all back
    let after = /** @type {GraphState} */ ((await readGraphStates(ctx, [graph.id], { document: docAfter ?? document })).get(String(graph.id)));
    const linesAsked = args.showConnectingLines === true || (args.legendAttribute !== undefined && after.connectingLines) ||
      args.groupLinesByLegend !== undefined;
    if (linesAsked && after.connectingLines && after.legend) {
      const [now] = await send([get(component)]);
      const lines = await joinLines(ctx, must(get(component), now).values ?? {}, { group: args.groupLinesByLegend !== false });
      notes.push(...lines.notes);
    }
    if (args.showConnectingLines === true && !before.connectingLines && after.plotType === "scatterPlot") {
      notes.push(
        "When CODAP first draws connecting lines on a scatter plot it halves the points' size (as drawn, just after " +
          "this answer); set pointSize again afterwards to choose it.",
      );
    }
    if (args.displayOnlySelectedCases === true && after.dataset) {
      const { id: datasetId } = await findDataset(after.dataset);
      const [selection] = await send([get(`dataContext[${datasetId}].selectionList`)]);
      if (selection?.success === true && Array.isArray(selection.values) && !selection.values.length) {
        notes.push("No case is selected now, so the graph shows none until some are (select_codap_cases, or a click in CODAP).");
      }
    }
    if (args.barChartScale === "formula" && !after.barChart?.formula) {
      notes.push('barChartScale "formula" needs barChartFormula: the formula each bar\'s height is computed with, e.g. "mean(height)".');
    }
    const datasetId = after.dataset ? (await findDataset(after.dataset).catch(() => null))?.id : null;
    if (args.filterFormula?.trim() && after.shows.filterFormula && datasetId) {
      const kept = await filterCount(ctx, datasetId, after.shows.filterFormula);
      if (kept) notes.push(`The filter shows ${kept.shown} of the ${kept.of} cases.`);
    }
    const counted = datasetId ? await categoryCounts(ctx, after, datasetId) : null;
    // the statistics shown, computed again by CODAP for what the graph shows now
    const statistics = after.adornments.length && asked.some((k) => !LOOKS.has(k))
      ? adornmentsRead(await send(adornmentReads(graph.id))).filter((a) => a.isVisible)
      : [];
    const recomputed = shownValuesText(statistics);
    if (statistics.some((a) => a.name === "percent")) {
      const [now] = await send([get(component)]);
      const byLegend = percentByLegendNote(now?.success === true ? now.values ?? {} : {});
      if (byLegend) notes.push(byLegend);
    }
    const refused = refusals(args, asked, after);
    if (args.groupLinesByLegend !== undefined && !(after.connectingLines && after.legend)) {
      refused.push(`groupLinesByLegend applies to a graph with connecting lines and a categorical legend; graph ${label} ` +
        `has ${after.connectingLines ? "connecting lines but no legend" : "no connecting lines"} (showConnectingLines, legendAttribute).`);
    }
    const orderAfter = ordering ? await categoryOrderOf(ctx, dataId, ordering.attribute) : null;
    if (ordering && !sameValue(orderAfter?.slice(0, ordering.order.length), ordering.order)) {
      refused.push(`CODAP keeps ${ordering.attribute}'s categories in the order ${shown(orderAfter)}, not ${shown(ordering.order)} ` +
        "(are those its categories, written as the data has them?).");
    }
    notes.push(...refused);
    const changes = changesBetween(before, after, new Set(asked));
    if (ordering && orderAfter && !sameValue(orderBefore, orderAfter)) {
      changes.push({ setting: "categoryOrder", before: orderBefore, after: orderAfter,
        text: `order of ${ordering.attribute}'s categories ${shown(orderBefore)} → ${shown(orderAfter)}` });
    }
    if (!changes.length && refused.length) {
      throw new ToolError(`Graph ${label} is unchanged: ${notes.join(" ")}`, "not_applied", { graphId: graph.id, notes, state: after });
    }
    const text = changes.length
      ? `Changed graph ${label}: ${changes.map((c) => c.text).join("; ")}.`
      : `Graph ${label} is unchanged: it already showed what was asked.`;
    return toolResult(text + (counted ? ` ${counted.text}` : "") + (recomputed ? ` CODAP's statistics now: ${recomputed}.` : "") +
      (notes.length ? ` ${notes.join(" ")}` : ""), {
      graphId: graph.id,
      changes: changes.map(({ text: _t, ...c }) => c),
      ...(counted ? { categoryCounts: counted.counts } : {}),
      ...(statistics.length ? { statistics: statistics.map((a) => ({ adornment: a.name, values: adornmentValues(a.name, a.detail) })) } : {}),
      graph: legacyFacts(after),
      state: after,
      notes,
    });
  }

  /**
   * The request that sets the legend attribute's category colours (the dataset's own: every graph and map
   * colouring by that attribute shows them).
   * @param {Record<string, string>} colors
   * @param {Record<string, any>} detail
   * @param {{dataset: DescribedDataset} | null} data
   * @returns {CodapRequest}
   */
  function legendColorRequest(colors, detail, data) {
    if (!detail.legendAttributeName || !data) {
      throw invalid("legendColors colours the legend's categories: give the graph a categorical legendAttribute first (or in the same call).");
    }
    const colormap = Object.fromEntries(Object.entries(colors).map(([k, v]) => [k, hexOf(`legendColors.${k}`, v)]));
    return { action: "update", resource: `dataContext[${data.dataset.id}].attribute[${detail.legendAttributeName}]`, values: { colormap } };
  }

  return { update_codap_graph };
}

/** @param {UpdateGraphArgs} args */
const hidesCases = (args) => Boolean(args.hideCases) || args.hideCasesWhere !== undefined || args.hideCaseIds !== undefined;

/**
 * Notes for the asked settings CODAP shows otherwise.
 * @param {UpdateGraphArgs} args
 * @param {string[]} asked
 * @param {GraphState} after
 */
function refusals(args, asked, after) {
  /** @type {string[]} */
  const out = [];
  const paths = new Map(SETTINGS.map(([arg, path, name]) => [arg, { path, name }]));
  for (const arg of asked) {
    const setting = paths.get(/** @type {keyof UpdateGraphArgs} */ (arg));
    if (!setting || ["hideCases", "hideCasesWhere", "hideCaseIds", "legendColors", "legendColorRange"].includes(arg)) continue;
    const wanted = expected(args, /** @type {keyof UpdateGraphArgs} */ (arg));
    if (wanted === undefined) continue;
    const got = valueAt(after, setting.path) ?? null;
    if (!sameValue(wanted, got)) {
      out.push(`CODAP shows ${setting.name} = ${shown(got)}, not ${shown(wanted)} as asked` +
        (arg.endsWith("Min") || arg.endsWith("Max") ? " (only a numeric axis takes bounds)." : "."));
    }
  }
  for (const [end, color] of Object.entries(args.legendColorRange ?? {})) {
    const got = after.legend?.range?.[/** @type {"low" | "high"} */ (end)];
    if (got?.toLowerCase() !== toHex(String(color))) out.push(`CODAP shows the legend's ${end} colour as ${got ?? "its own"}, not ${color} (a numeric legend has a colour range; a categorical one, legendColors).`);
  }
  for (const [category, color] of Object.entries(args.legendColors ?? {})) {
    const got = after.legend?.colors?.[category];
    if (got?.toLowerCase() !== toHex(color)) out.push(`CODAP shows ${category} in ${got ?? "its own colour"}, not ${color} (is ${JSON.stringify(category)} one of the legend's categories?).`);
  }
  return out;
}

/**
 * What an asked setting should read back as, or undefined where it is not compared.
 * @param {UpdateGraphArgs} args
 * @param {keyof UpdateGraphArgs} arg
 * @returns {unknown}
 */
function expected(args, arg) {
  const v = args[arg];
  if (arg === "plotType") return PLOT_TYPES[/** @type {keyof typeof PLOT_TYPES} */ (v)];
  if (v === "" && arg.endsWith("Attribute")) return null;
  if (arg === "filterFormula") return v || null;
  if (arg === "pointColor") return toHex(String(v))?.slice(0, 7) ?? v;
  if (arg === "strokeColor" || arg === "backgroundColor") return toHex(String(v)) ?? v;
  if (arg === "barChartFormula" || arg === "binAlignment") return undefined; // CODAP may shift the alignment by whole bins
  if (arg === "backgroundImage") return v || null;
  return v;
}

/**
 * The graph's facts under the names update_codap_graph has always answered with.
 * @param {GraphState} s
 */
function legacyFacts(s) {
  return {
    dataset: s.dataset,
    xAttribute: s.x.attribute,
    yAttribute: s.y.attribute,
    legendAttribute: s.legend?.attribute ?? null,
    title: s.title || null,
    plotType: s.plotType,
    showConnectingLines: s.connectingLines,
    pointsAreFusedIntoBars: s.fusedIntoBars,
    displayOnlySelectedCases: s.shows.onlySelected,
    showMeasuresForSelection: s.shows.measuresForSelection,
    pointColor: s.points.color,
    pointSize: s.points.size,
    xAxisMin: s.x.min,
    xAxisMax: s.x.max,
    yAxisMin: s.y.min,
    yAxisMax: s.y.max,
  };
}
