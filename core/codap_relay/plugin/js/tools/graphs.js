// @ts-check
// Graphs: make one, change one, show statistics on one (CODAP's adornments), and look at one as CODAP draws it.

import { DEFAULT_MAX_SIZE } from "../imaging.js";
import {
  ToolError,
  codapError,
  collection,
  get,
  graphLabel,
  invalid,
  plotName,
  refused,
  toolResult,
  unknownAttribute,
} from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, CodapSuccess, Component, DescribedAttribute} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * An adornment as the tools know it: CODAP's type, how a sentence calls it, the plots that take it, what it needs
 * (in words) and its name in CODAP's Measure menu.
 * @typedef {{type: string, label: string, plots: string[], needs: string, menu: string}} Adornment
 */

/**
 * update_codap_graph's arguments: the graph, and what to change (an attribute null or "" takes it off).
 * @typedef {object} UpdateGraphArgs
 * @property {string | number} [graph]
 * @property {string | null} [xAttribute]
 * @property {string | null} [yAttribute]
 * @property {string | null} [legendAttribute]
 * @property {string} [title]
 * @property {boolean} [showConnectingLines]
 * @property {boolean} [pointsAreFusedIntoBars]
 * @property {boolean} [displayOnlySelectedCases]
 * @property {boolean} [showMeasuresForSelection]
 * @property {string} [pointColor]
 * @property {number} [pointSize]
 * @property {number} [xAxisMin]
 * @property {number} [xAxisMax]
 * @property {number} [yAxisMin]
 * @property {number} [yAxisMax]
 */

/** An adornment CODAP lists on a graph, with the tools' name for it. @typedef {{name: string, type: string, id?: CodapId, isVisible?: boolean}} ListedAdornment */

// CODAP's plot types that take each adornment, as v3.1.0 registers them (adornments/*-registration.tsx `plots`,
// widened by isCompatibleWithPlotType: "dotPlot" covers every univariate numeric plot, "dotChart" every categorical).
const UNIVARIATE = ["dotPlot", "binnedDotPlot", "histogram", "linePlot"];
const EVERY_PLOT = ["casePlot", "dotChart", "barChart", ...UNIVARIATE, "scatterPlot"];
const NEEDS_DOT_PLOT = "a dot plot: one numeric attribute alone on an axis (a categorical attribute may split it)";
const NEEDS_SCATTER = "a scatter plot: numeric attributes on both axes";

/**
 * The adornments by the tools' names: CODAP's type, how a sentence calls it, the plots that take it.
 * @type {Record<string, Adornment>}
 */
export const ADORNMENTS = {
  mean: { type: "Mean", label: "mean", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Mean" },
  median: { type: "Median", label: "median", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Median" },
  standard_deviation: {
    type: "Standard Deviation", label: "standard deviation", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT,
    menu: "Standard Deviation",
  },
  mean_absolute_deviation: {
    type: "Mean Absolute Deviation", label: "mean absolute deviation", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT,
    menu: "Mean Absolute Deviation",
  },
  standard_error: {
    type: "Standard Error", label: "standard error", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Standard Error",
  },
  box_plot: { type: "Box Plot", label: "box plot", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Box Plot" },
  normal_curve: {
    type: "Normal Curve", label: "normal curve", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Normal Curve",
  },
  movable_value: {
    type: "Movable Value", label: "movable value", plots: UNIVARIATE, needs: NEEDS_DOT_PLOT, menu: "Movable Value",
  },
  plotted_value: {
    type: "Plotted Value", label: "plotted value", plots: [...UNIVARIATE, "scatterPlot"],
    needs: "a dot plot or a scatter plot", menu: "Plotted Value",
  },
  count: { type: "Count", label: "count", plots: EVERY_PLOT, needs: "any graph", menu: "Count" },
  percent: { type: "Percent", label: "percent", plots: EVERY_PLOT, needs: "any graph", menu: "Percent" },
  least_squares_line: {
    type: "LSRL", label: "least-squares line", plots: ["scatterPlot"], needs: NEEDS_SCATTER,
    menu: "Least Squares Line",
  },
  movable_line: {
    type: "Movable Line", label: "movable line", plots: ["scatterPlot"], needs: NEEDS_SCATTER, menu: "Movable Line",
  },
};
const BY_CODAP_TYPE = new Map(Object.entries(ADORNMENTS).map(([name, a]) => [a.type, name]));
/** The tools' name of an adornment CODAP lists (CODAP's own type for one the tools do not name). */
/** @param {string} codapType */
const adornmentName = (codapType) => BY_CODAP_TYPE.get(codapType) ?? codapType;

/** A number as a sentence shows it: CODAP's value, at most 6 significant digits. */
/** @param {unknown} v */
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? String(Number(v.toPrecision(6))) : String(v ?? "none"));

/** One cell of an adornment's values (`{categories, ...measures}`) as a phrase: `g = A: mean 160.5`. */
/** @param {Record<string, unknown> & {categories?: Record<string, unknown>}} cell */
function cellPhrase(cell) {
  const { categories, category: _category, ...measures } = cell;
  const where = categories && Object.keys(categories).length
    ? `${Object.entries(categories).map(([k, v]) => `${k} = ${v}`).join(", ")}: `
    : "";
  const parts = Object.entries(measures).map(([k, v]) => {
    const shown = Array.isArray(v) ? `[${v.map((x) => (k === "percent" ? `${x}%` : num(x))).join(", ")}]` :
      k === "percent" ? `${v}%` : num(v);
    return `${k} ${shown}`;
  });
  return where + parts.join(", ");
}

/** @param {ToolContext} ctx */
export function createGraphTools(ctx) {
  const { send, must, findDataset, describeDatasets, listGraphs, pickGraph, graphPicture } = ctx;

  /**
   * @param {{datasetName: string, graphType: string, xAttribute: string, yAttribute?: string,
   *   legendAttribute?: string, title?: string, includeImage?: boolean}} args
   */
  async function create_codap_graph(args) {
    const { datasetName, graphType, xAttribute, yAttribute, legendAttribute, title } = args;
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found]);
    const attrs = new Map(dataset.collections.flatMap((c) => c.attributes).map((a) => [a.name, a]));
    const x = attrs.get(xAttribute);
    if (!x) throw unknownAttribute(dataset, xAttribute, "the x axis");
    const needsY = graphType === "scatterplot" || graphType === "line_graph";
    if (needsY && !yAttribute) throw invalid(`A ${graphType} needs yAttribute as well as xAttribute.`);
    // A dot plot takes a category on y too: one row of dots per value (CODAP's split by a category).
    const wantsY = needsY || (graphType === "dot_plot" && Boolean(yAttribute));
    const y = wantsY ? attrs.get(/** @type {string} */ (yAttribute)) : undefined;
    if (wantsY && !y) throw unknownAttribute(dataset, yAttribute, "the y axis");
    if (graphType === "dot_plot" && y?.type === "numeric" && x.type === "numeric") {
      throw invalid(
        `A dot_plot splits its dots by a category: ${JSON.stringify(y.name)} and ${JSON.stringify(x.name)} are both ` +
          "numeric, which makes a scatterplot (graphType scatterplot).",
      );
    }
    const legend = legendAttribute ? attrs.get(legendAttribute) : undefined;
    if (legendAttribute && !legend) throw unknownAttribute(dataset, legendAttribute, "the legend");
    /** @type {string[]} */
    const notes = [];
    if (yAttribute && !wantsY) notes.push(`yAttribute ${JSON.stringify(yAttribute)} was not used for a ${graphType}.`);

    const numericX = x.type === "numeric";
    // A bar chart counts the cases at each value: a numeric x is treated as categorical for it, as CODAP's
    // own "treat as categorical" does. A histogram of a category is a bar chart of its counts.
    const bars = graphType === "bar_chart" || (graphType === "histogram" && !numericX);
    /** @type {Record<string, unknown>} */
    const values = { type: "graph", dataContext: dataset.name, xAttributeName: x.name };
    if (y) values.yAttributeName = y.name;
    if (legend) values.legendAttributeName = legend.name;
    if (bars && numericX) values.xAttributeType = "categorical";
    if (title) Object.assign(values, { name: title, title });
    /** @type {CodapRequest} */
    const create = { action: "create", resource: "component", values };
    const [created] = await send([create]);
    /** @type {CodapId} */
    const graphId = must(create, created, "creating the graph").values?.id;
    const component = `component[${graphId}]`;

    /** @type {{showConnectingLines?: boolean, pointsAreFusedIntoBars?: boolean}} */
    const update = {};
    if (graphType === "line_graph") update.showConnectingLines = true;
    if (bars) update.pointsAreFusedIntoBars = true;
    const read = get(component);
    /** @type {CodapRequest[]} */
    const changes = Object.keys(update).length ? [{ action: "update", resource: component, values: update }] : [];
    let replies = await send([...changes, read]);
    /** @type {Record<string, any>} CODAP's description of the graph (`get component[id]`) */
    let graph = must(read, replies[replies.length - 1]).values ?? {};
    if (changes.length && replies[0]?.success !== true) {
      notes.push(`CODAP did not apply ${JSON.stringify(update)}: ${replies[0]?.values?.error ?? "no reply"}.`);
    }
    // CODAP finds the graph's dataset by title before name; if another dataset's title is this name, the new
    // graph shows the wrong data. Point it at this dataset by id and read it again.
    /** @param {Record<string, any>} g */
    const bound = (g) =>
      g.dataContext === dataset.name && g.xAttributeName === x.name && (!y || g.yAttributeName === y.name) &&
      (!legend || g.legendAttributeName === legend.name);
    if (!bound(graph)) {
      /** @type {CodapRequest} */
      const repair = {
        action: "update",
        resource: component,
        values: {
          dataContext: String(dataset.id),
          xAttributeID: /** @type {DescribedAttribute} */ (x).id,
          ...(y ? { yAttributeID: y.id } : {}),
          ...(legend ? { legendAttributeID: legend.id } : {}),
        },
      };
      replies = await send([repair, ...changes, read]);
      graph = must(read, replies[replies.length - 1]).values ?? {};
    }
    if (!bound(graph)) {
      notes.push(
        `CODAP shows ${JSON.stringify(graph.dataContext)} with x = ${graph.xAttributeName ?? "(none)"}` +
          `${y ? `, y = ${graph.yAttributeName ?? "(none)"}` : ""}` +
          `${legend ? `, legend = ${graph.legendAttributeName ?? "(none)"}` : ""} on this graph, not what was asked.`,
      );
    }
    if (bars && numericX) notes.push(`${x.name} is numeric; it is shown as categories, one bar per distinct value.`);
    if (graphType === "histogram" && !numericX) notes.push(`${x.name} is categorical, so its counts are shown as bars.`);
    if (graphType === "histogram" && numericX && graph.plotType === "dotPlot") {
      notes.push(
        'CODAP\'s plugin API cannot bin a plot: choose "Group into Bins" and "Fuse Dots into Bars" in the ' +
          "graph's configuration menu to make it a histogram.",
      );
    }
    if (graphType === "scatterplot" && graph.plotType !== "scatterPlot") {
      notes.push("A scatter plot needs two numeric attributes; CODAP plots a category against a number this way.");
    }
    const made = plotName(graph.plotType) + (graph.showConnectingLines ? " with connecting lines" : "");
    const axes = `x = ${graph.xAttributeName ?? "(none)"}${graph.yAttributeName ? `, y = ${graph.yAttributeName}` : ""}` +
      (graph.legendAttributeName ? `, points coloured by ${graph.legendAttributeName}` : "");
    let picture = null;
    if (args.includeImage) {
      try {
        picture = await graphPicture({ id: graphId, title: graph.title ?? "" });
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        notes.push(`No picture: ${err.message}`); // the graph was made; only its picture is missing
      }
    }
    const result = toolResult(
      `Created a graph in CODAP from ${JSON.stringify(dataset.name)}: ${made}; ${axes}` +
        (graph.title ? `; title ${JSON.stringify(graph.title)}` : "") + "." +
        (picture ? ` Its picture is attached: ${picture.sentence}` : "") + (notes.length ? ` ${notes.join(" ")}` : ""),
      {
        graphId,
        datasetName: dataset.name,
        requested: graphType,
        made,
        plotType: graph.plotType ?? null,
        xAttribute: graph.xAttributeName ?? null,
        yAttribute: graph.yAttributeName ?? null,
        legendAttribute: graph.legendAttributeName ?? null,
        ...(graph.title ? { title: graph.title } : {}),
        notes,
        ...(picture ? { image: picture.facts } : {}),
      },
    );
    if (picture) result.content.push(picture.item);
    return result;
  }

  // --- update_codap_graph -----------------------------------------------------------------------------------

  // What update_codap_graph reports, as CODAP's component get names it: [argument or fact, field, sentence name].
  /** @type {Array<[keyof UpdateGraphArgs | "plotType", string, string]>} */
  const GRAPH_FIELDS = [
    ["xAttribute", "xAttributeName", "x"],
    ["yAttribute", "yAttributeName", "y"],
    ["legendAttribute", "legendAttributeName", "legend"],
    ["title", "title", "title"],
    ["plotType", "plotType", "plot"],
    ["showConnectingLines", "showConnectingLines", "connecting lines"],
    ["pointsAreFusedIntoBars", "pointsAreFusedIntoBars", "points fused into bars"],
    ["displayOnlySelectedCases", "displayOnlySelectedCases", "only selected cases shown"],
    ["showMeasuresForSelection", "showMeasuresForSelection", "measures of the selection"],
    ["pointColor", "pointColor", "point colour"],
    ["pointSize", "pointSize", "point size"],
    ["xAxisMin", "xLowerBound", "x axis from"],
    ["xAxisMax", "xUpperBound", "x axis to"],
    ["yAxisMin", "yLowerBound", "y axis from"],
    ["yAxisMax", "yUpperBound", "y axis to"],
  ];
  const BOOLEAN_FIELDS = new Set([
    "showConnectingLines", "pointsAreFusedIntoBars", "displayOnlySelectedCases", "showMeasuresForSelection",
  ]);
  // CODAP answers null for a flag never set: the graph behaves as false.
  /** @type {(detail: Record<string, any>, field: string) => unknown} */
  const readField = (detail, field) => (BOOLEAN_FIELDS.has(field) ? detail[field] === true : detail[field] ?? null);
  /** @type {(a: unknown, b: unknown) => boolean} */
  const sameValue = (a, b) => (typeof a === "number" && typeof b === "number" ? Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a)) : a === b);
  /** @param {unknown} v */
  const shown = (v) => (v === null || v === undefined || v === "" ? "(none)" : typeof v === "string" ? v : num(v));

  /** @param {UpdateGraphArgs} args */
  async function update_codap_graph(args) {
    const asked = /** @type {Array<keyof UpdateGraphArgs>} */ (Object.keys(args)).filter((k) => k !== "graph" && args[k] !== undefined);
    if (!asked.length) {
      throw invalid(
        "Nothing to change: give at least one of xAttribute, yAttribute, legendAttribute, title, showConnectingLines, " +
          "pointsAreFusedIntoBars, displayOnlySelectedCases, showMeasuresForSelection, pointColor, pointSize, " +
          "xAxisMin, xAxisMax, yAxisMin, yAxisMax.",
      );
    }
    for (const [low, high] of /** @type {const} */ ([["xAxisMin", "xAxisMax"], ["yAxisMin", "yAxisMax"]])) {
      if (args[low] !== undefined && args[high] !== undefined && !(/** @type {number} */ (args[low]) < /** @type {number} */ (args[high]))) {
        throw invalid(`${low} (${args[low]}) must be less than ${high} (${args[high]}).`);
      }
    }
    const graph = pickGraph(await listGraphs(), args.graph);
    const before = graph.detail;
    const component = `component[${graph.id}]`;
    /** @type {Record<string, unknown>} */
    const values = {};
    const roles = /** @type {const} */ ([["xAttribute", "xAttributeID", "the x axis"], ["yAttribute", "yAttributeID", "the y axis"],
      ["legendAttribute", "legendAttributeID", "the legend"]]);
    /** @type {Record<string, unknown>} */
    const wanted = {}; // what each asked field should read back as
    if (roles.some(([arg]) => args[arg] !== undefined)) {
      if (!before.dataContext) {
        throw new ToolError(
          `Graph ${graphLabel(graph)} shows no dataset, so it has no attributes to plot. Make a graph of a dataset ` +
            "with create_codap_graph.",
          "graph_has_no_dataset",
          { graphId: graph.id },
        );
      }
      const found = await findDataset(before.dataContext);
      const { datasets: [dataset] } = await describeDatasets([found], { types: false });
      const attrs = new Map(dataset.collections.flatMap((c) => c.attributes).map((a) => [a.name, a]));
      for (const [arg, idField, role] of roles) {
        if (args[arg] === undefined) continue;
        if (args[arg] === null || args[arg] === "") {
          values[idField] = null; // CODAP takes the attribute off for a null id
          wanted[arg] = null;
          continue;
        }
        const attr = attrs.get(args[arg]);
        if (!attr) throw unknownAttribute(dataset, args[arg], role);
        values[idField] = attr.id;
        wanted[arg] = attr.name;
      }
    }
    if (args.title !== undefined) Object.assign(values, { title: args.title, name: args.title });
    for (const key of /** @type {const} */ (["showConnectingLines", "displayOnlySelectedCases", "showMeasuresForSelection", "pointColor", "pointSize"])) {
      if (args[key] !== undefined) values[key] = args[key];
    }
    for (const [arg, field] of /** @type {const} */ ([["xAxisMin", "xLowerBound"], ["xAxisMax", "xUpperBound"], ["yAxisMin", "yLowerBound"], ["yAxisMax", "yUpperBound"]])) {
      if (args[arg] !== undefined) values[field] = args[arg];
    }
    for (const key of asked) if (!(key in wanted)) wanted[key] = args[key];

    // Axis bounds go after the attributes: CODAP rescales the axes once an attribute changes, which would undo them.
    const boundKeys = ["xLowerBound", "xUpperBound", "yLowerBound", "yUpperBound"];
    const bounds = Object.fromEntries(boundKeys.filter((k) => k in values).map((k) => [k, values[k]]));
    for (const k of boundKeys) delete values[k];
    // Fusing goes on its own: CODAP refuses it for some plots after applying everything else in the same request.
    /** @type {CodapRequest | null} */
    const change = Object.keys(values).length ? { action: "update", resource: component, values } : null;
    /** @type {CodapRequest | null} */
    const rebound = Object.keys(bounds).length ? { action: "update", resource: component, values: bounds } : null;
    /** @type {CodapRequest | null} */
    const fuse = args.pointsAreFusedIntoBars !== undefined
      ? { action: "update", resource: component, values: { pointsAreFusedIntoBars: args.pointsAreFusedIntoBars } }
      : null;
    const read = get(component);
    const requests = /** @type {CodapRequest[]} */ ([change, rebound, fuse, read].filter(Boolean));
    const replies = await send(requests);
    /** @param {CodapRequest} r */
    const reply = (r) => replies[requests.indexOf(r)];
    const main = change ?? rebound;
    if (main && reply(main)?.success !== true) {
      const names = roles.filter(([arg]) => typeof args[arg] === "string" && args[arg]).map(([arg, , role]) => `${args[arg]} on ${role}`);
      throw new ToolError(
        `CODAP refused to change graph ${graphLabel(graph)}` + (names.length ? ` (${names.join(", ")})` : "") +
          `: ${codapError(reply(main))}. It is ${plotName(before.plotType)}; nothing was changed.`,
        "codap_error",
        { graphId: graph.id, codapError: codapError(reply(main)) },
      );
    }
    const after = must(read, reply(read), `reading graph ${graphLabel(graph)} back`).values ?? {};
    /** @type {string[]} */
    const notes = [];
    const fused = after.pointsAreFusedIntoBars === true;
    if (fuse && (reply(fuse)?.success !== true || fused !== args.pointsAreFusedIntoBars)) {
      // CODAP fuses only a dot chart (into a bar chart) and a binned dot plot (into a histogram), and refuses a
      // scatter plot; an unbinned numeric dot plot it leaves as it is without a word (graph-content-model.ts).
      const said = reply(fuse)?.success !== true ? `: ${codapError(reply(fuse))}` : "";
      const why = `CODAP did not ${args.pointsAreFusedIntoBars ? "fuse the points into bars" : "separate the bars into points"}` +
        `${said}. Graph ${graphLabel(graph)} is ${plotName(after.plotType)}; CODAP fuses only a dot chart (one ` +
        "categorical attribute) into a bar chart, or a dot plot grouped into bins into a histogram (binning is done in " +
        "CODAP's graph menu, not through its plugin API).";
      if (!main) throw new ToolError(why, "codap_error", { graphId: graph.id, plotType: after.plotType ?? null });
      notes.push(why);
    }
    /** @type {Array<{setting: string, before: unknown, after: unknown, text: string}>} */
    const changes = [];
    /** @type {Record<string, unknown>} */
    const facts = {};
    for (const [arg, field, name] of GRAPH_FIELDS) {
      const was = readField(before, field);
      const now = readField(after, field);
      facts[arg] = now;
      if (!sameValue(was, now)) changes.push({ setting: arg, before: was, after: now, text: `${name} ${shown(was)} → ${shown(now)}` });
      // CODAP may spell a colour its own way ("red" as "#ff0000"): only a colour left as it was is a refusal.
      const refusedHere = arg === "pointColor" ? sameValue(was, now) && !sameValue(wanted[arg], now) : !sameValue(wanted[arg], now);
      if (arg in wanted && arg !== "pointsAreFusedIntoBars" && refusedHere) {
        notes.push(`CODAP shows ${name} = ${shown(now)}, not ${shown(wanted[arg])} as asked` +
          (arg.endsWith("Min") || arg.endsWith("Max") ? " (only a numeric axis takes bounds)." : "."));
      }
    }
    if (args.showConnectingLines === true && readField(before, "showConnectingLines") === false && after.plotType === "scatterPlot") {
      notes.push(
        "When CODAP first draws connecting lines on a scatter plot it halves the points' size (as drawn, just after " +
          "this answer); set pointSize again afterwards to choose it.",
      );
    }
    const text = changes.length
      ? `Changed graph ${graphLabel(graph)}: ${changes.map((c) => c.text).join("; ")}.`
      : `Graph ${graphLabel(graph)} is unchanged: it already showed what was asked.`;
    return toolResult(text + (notes.length ? ` ${notes.join(" ")}` : ""), {
      graphId: graph.id,
      changes: changes.map(({ text: _t, ...c }) => c),
      graph: { dataset: after.dataContext ?? null, ...facts },
      notes,
    });
  }

  // --- adornments -------------------------------------------------------------------------------------------

  /** The graph and what CODAP lists on it: `{graph, listed}`, listed as [{name, type, id, isVisible}]. */
  /**
   * Why CODAP cannot compute `formula` over the dataset's cases, or null: tried on a scratch attribute taken off in
   * the same message. CODAP's API cannot take an adornment off a graph (delete only hides it, keeping its formula),
   * so a plotted value's formula is checked before the adornment is made.
   * @param {string} datasetName
   * @param {string} formula
   */
  async function formulaProblem(datasetName, formula) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    const last = dataset.collections[dataset.collections.length - 1];
    const base = collection(dataset.id, last.id);
    const scratch = `__codap_relay_check_${Date.now().toString(36)}`;
    /** @type {CodapRequest} */
    const tryIt = { action: "create", resource: `${base}.attribute`, values: [{ name: scratch, formula }] };
    /** @type {CodapRequest} */
    const drop = { action: "delete", resource: `${base}.attribute[${scratch}]` };
    const [tried, read] = await send([tryIt, get(`${base}.allCases`), drop]);
    if (tried?.success !== true) return codapError(tried);
    /** @type {unknown[]} */
    const values = (read?.values?.cases ?? []).map((/** @type {{case?: {values?: Record<string, unknown>}}} */ c) => c.case?.values?.[scratch]);
    const error = /** @type {string | undefined} */ (values.find((v) => typeof v === "string" && v.startsWith("❌")));
    return error ? error.slice(1).trim() : null;
  }

  /** @param {unknown} wanted */
  async function graphAndAdornments(wanted) {
    const graph = pickGraph(await listGraphs(), wanted);
    const list = get(`component[${graph.id}].adornmentList`);
    const [listed] = await send([list]);
    return { graph, listed: adornmentsOf(must(list, listed, `listing what graph ${graphLabel(graph)} shows`)) };
  }
  /** @type {(reply: {values?: any}) => ListedAdornment[]} */
  const adornmentsOf = (reply) => (reply.values ?? []).map((/** @type {{type: string}} */ a) => ({ name: adornmentName(a.type), ...a }));
  /** @param {ListedAdornment[]} listed */
  const showing = (listed) => listed.filter((a) => a.isVisible).map((a) => a.name);

  /**
   * @param {{adornment: string, graph?: string | number, formula?: string, percentType?: string,
   *   showRSquared?: boolean, showConfidenceBands?: boolean}} args
   */
  async function add_codap_adornment(args) {
    const which = ADORNMENTS[args.adornment];
    if (!which) throw invalid(`adornment must be one of ${Object.keys(ADORNMENTS).join(", ")}.`);
    const name = args.adornment;
    const optionsFor = {
      formula: ["plotted_value"], percentType: ["percent"], showRSquared: ["least_squares_line"],
      showConfidenceBands: ["least_squares_line"],
    };
    for (const [option, takers] of /** @type {Array<["formula" | "percentType" | "showRSquared" | "showConfidenceBands", string[]]>} */ (Object.entries(optionsFor))) {
      if (args[option] !== undefined && !takers.includes(name)) {
        throw invalid(`${option} applies to ${takers.join(", ")} only, not to ${name}.`);
      }
    }
    if (name === "plotted_value" && !args.formula?.trim()) {
      throw invalid('plotted_value needs formula: the value to draw in each cell, e.g. "mean(height) + stdDev(height)".');
    }
    const { graph, listed } = await graphAndAdornments(args.graph);
    const plotType = graph.detail.plotType;
    if (!which.plots.includes(plotType)) {
      const axes = [graph.detail.xAttributeName && `x = ${graph.detail.xAttributeName}`,
        graph.detail.yAttributeName && `y = ${graph.detail.yAttributeName}`].filter(Boolean).join(", ");
      throw new ToolError(
        `A ${which.label} needs ${which.needs}; graph ${graphLabel(graph)} is ${plotName(plotType)}` +
          `${axes ? ` (${axes})` : ""}. Change its attributes with update_codap_graph or make another graph with ` +
          "create_codap_graph.",
        "adornment_not_supported_by_plot",
        { graphId: graph.id, adornment: name, plotType: plotType ?? null, plotsTaking: which.plots },
      );
    }
    // Each movable value added is another one; the rest are shown once.
    const wasShown = name !== "movable_value" && listed.some((a) => a.type === which.type && a.isVisible);
    const component = `component[${graph.id}]`;
    const neverMade = !listed.some((a) => a.type === which.type);
    if (name === "plotted_value" && neverMade && graph.detail.dataContext) {
      const problem = await formulaProblem(graph.detail.dataContext, /** @type {string} */ (args.formula));
      if (problem) {
        throw new ToolError(
          `CODAP cannot compute the plotted value's formula ${JSON.stringify(args.formula)}: ${problem}. It was not ` +
            "added. Fix the formula and call again.",
          "formula_error",
          { graphId: graph.id, formula: args.formula, codapError: problem },
        );
      }
    }
    /** @type {Record<string, unknown>} */
    const values = { type: which.type };
    if (name === "plotted_value") values.expression = args.formula;
    if (args.percentType !== undefined) values.percentType = args.percentType;
    if (args.showRSquared !== undefined) values.showRSquared = args.showRSquared;
    if (args.showConfidenceBands !== undefined) values.showConfidenceBands = args.showConfidenceBands;
    /** @type {CodapRequest} */
    const create = { action: "create", resource: `${component}.adornment`, values };
    const read = get(`${component}.adornment[${which.type}]`);
    const list = get(`${component}.adornmentList`);
    const [created, got, relisted] = await send([create, read, list]);
    if (created?.success !== true) {
      const said = codapError(created);
      if (/does not currently support create/i.test(said)) {
        // A box plot and the rest can be shown in CODAP's own menu; once shown, their values can be read.
        if (wasShown && got?.success === true) return adornmentAnswer(graph, name, got.values, false, adornmentsOf(relisted ?? {}));
        throw new ToolError(
          `CODAP's plugin API cannot add a ${which.label} (CODAP: "${said}"). Add it by hand: select graph ` +
            `${graphLabel(graph)}, click its ruler button (Measure), tick "${which.menu}"; then call ` +
            "add_codap_adornment again to read its values.",
          "adornment_not_creatable",
          { graphId: graph.id, adornment: name, codapError: said },
        );
      }
      if (/percent/i.test(said) && name === "percent") {
        throw new ToolError(
          `CODAP cannot show percents on graph ${graphLabel(graph)} (${plotName(plotType)}): ${said} A percent needs a ` +
            "categorical attribute on the graph (an axis or the legend, see update_codap_graph) or a movable value " +
            "dividing it; count works on any graph.",
          "adornment_not_supported_by_plot",
          { graphId: graph.id, adornment: name, plotType: plotType ?? null, codapError: said },
        );
      }
      throw refused(create, created, `to add a ${which.label} to graph ${graphLabel(graph)}`);
    }
    const detail = must(read, got, `reading the ${which.label} back`).values ?? {};
    if (name === "plotted_value" && detail.error) {
      // CODAP keeps a formula it cannot compute and draws nothing: take it off again unless it was there before.
      if (!wasShown) await send([{ action: "delete", resource: `${component}.adornment`, values: { type: which.type } }]);
      throw new ToolError(
        `CODAP cannot compute the plotted value's formula ${JSON.stringify(args.formula)}: ${detail.error}` +
          `${wasShown ? "" : " It was not added."} Fix the formula and call again.`,
        "formula_error",
        { graphId: graph.id, formula: args.formula, codapError: detail.error },
      );
    }
    return adornmentAnswer(graph, name, detail, !wasShown, adornmentsOf(relisted?.success === true ? relisted : {}));
  }

  /**
   * The answer of add_codap_adornment: the values CODAP computed for each cell of the plot.
   * @param {Component} graph
   * @param {string} name
   * @param {Record<string, any>} detail CODAP's description of the adornment
   * @param {boolean} added
   * @param {ListedAdornment[]} listed
   */
  function adornmentAnswer(graph, name, detail, added, listed) {
    const which = ADORNMENTS[name];
    /** @type {Array<Record<string, unknown>>} */
    const cells = (detail.data ?? []).map((/** @type {{category?: string, [key: string]: unknown}} */ { category, ...cell }) => (category && category !== "__main__" ? { category, ...cell } : cell));
    // Count and percent share one CODAP adornment: report the part asked for.
    /** @type {string[] | null} */
    const keep = name === "count" ? ["count", "categories"] : name === "percent" ? ["percent", "categories"] : null;
    const values = keep ? cells.map((c) => Object.fromEntries(Object.entries(c).filter(([k]) => keep.includes(k)))) : cells;
    /** @type {Record<string, unknown>} */
    const extra = {};
    if (detail.formula !== undefined) {
      try {
        extra.formula = JSON.parse(detail.formula);
      } catch {
        extra.formula = detail.formula;
      }
    }
    for (const key of ["percentType", "showRSquared", "showConfidenceBands", "showOutliers"]) {
      if (detail[key] !== undefined && (key !== "percentType" || name === "percent")) extra[key] = detail[key];
    }
    /** @type {string[]} */
    const notes = [];
    if (!values.length) {
      notes.push(
        name === "least_squares_line" && graph.detail.legendAttributeName
          ? `CODAP draws one least-squares line per ${graph.detail.legendAttributeName} but its plugin API reports ` +
              "the values of a single line only: take the legend off (update_codap_graph) to read them."
          : "CODAP gave no values for it.",
      );
    }
    const what = values.length ? ` CODAP computed: ${values.map(cellPhrase).join("; ")}.` : "";
    const verb = added ? "Added" : "Graph already showed";
    const still = showing(listed);
    return toolResult(
      `${verb} the ${which.label} ${added ? "to" : "on"} graph ${graphLabel(graph)} (${plotName(graph.detail.plotType)}).${what}` +
        (extra.formula ? ` Formula: ${extra.formula}.` : "") + (notes.length ? ` ${notes.join(" ")}` : "") +
        (still.length ? ` Shown on the graph now: ${still.join(", ")}.` : ""),
      {
        graphId: graph.id,
        adornment: name,
        codapType: which.type,
        added,
        plotType: graph.detail.plotType ?? null,
        values,
        ...extra,
        shown: still,
        notes,
      },
    );
  }

  // CODAP's delete takes away one movable value at a time and keeps the (empty) adornment listed as visible.
  /** @type {(reply: CodapReply | undefined) => unknown[]} */
  const movableValues = (reply) =>
    reply?.success === true ? (reply.values?.data ?? []).flatMap((/** @type {{movableValues?: unknown[]}} */ c) => c.movableValues ?? []) : [];

  /** @param {{adornment: string, graph?: string | number}} args */
  async function remove_codap_adornment(args) {
    const which = ADORNMENTS[args.adornment];
    if (!which) throw invalid(`adornment must be one of ${Object.keys(ADORNMENTS).join(", ")}.`);
    const graph = pickGraph(await listGraphs(), args.graph);
    const component = `component[${graph.id}]`;
    const list = get(`${component}.adornmentList`);
    const moving = get(`${component}.adornment[${ADORNMENTS.movable_value.type}]`);
    const [listed, moved] = await send([list, moving]);
    /** @type {(listReply: CodapReply | undefined, movedReply: CodapReply | undefined) => string[]} */
    const shownNow = (listReply, movedReply) => {
      const names = showing(adornmentsOf(must(list, listReply, `listing what graph ${graphLabel(graph)} shows`)));
      return movableValues(movedReply).length ? names : names.filter((n) => n !== "movable_value");
    };
    const present = shownNow(listed, moved);
    if (!present.includes(args.adornment)) {
      throw new ToolError(
        `Graph ${graphLabel(graph)} does not show a ${which.label}. ` +
          (present.length ? `It shows: ${present.join(", ")}.` : "It shows no statistics or lines."),
        "adornment_not_found",
        { graphId: graph.id, adornment: args.adornment, available: present },
      );
    }
    /** @type {CodapRequest} */
    const remove = { action: "delete", resource: `${component}.adornment`, values: { type: which.type } };
    const requests = [remove, list, moving];
    if (args.adornment === "movable_value") {
      // one value per request: as many requests as values shown, in the same message
      const count = Math.max(0, movableValues(moved).length - 1);
      requests.splice(1, 0, ...Array.from({ length: count }, () => remove));
    }
    const replies = await send(requests);
    must(remove, replies[0], `to remove the ${which.label} from graph ${graphLabel(graph)}`);
    const now = shownNow(replies[replies.length - 2], replies[replies.length - 1]);
    if (now.includes(args.adornment)) {
      throw new ToolError(
        `CODAP accepted removing the ${which.label} from graph ${graphLabel(graph)} but still shows it.`,
        "codap_error",
        { graphId: graph.id, adornment: args.adornment, shown: now },
      );
    }
    return toolResult(
      `Removed the ${which.label} from graph ${graphLabel(graph)}. ` +
        (now.length ? `It still shows: ${now.join(", ")}.` : "It shows no other statistics or lines."),
      { graphId: graph.id, removed: args.adornment, codapType: which.type, shown: now },
    );
  }

  /** @param {{graph?: string | number, maxSize?: number}} args */
  async function get_codap_graph_image(args) {
    const maxSize = args.maxSize ?? DEFAULT_MAX_SIZE;
    if (!Number.isInteger(maxSize) || maxSize < 64 || maxSize > 1600) {
      throw invalid("maxSize must be a whole number of pixels from 64 to 1600.");
    }
    const graph = pickGraph(await listGraphs(), args.graph);
    const picture = await graphPicture(graph, maxSize);
    const d = graph.detail;
    const axes = [d.xAttributeName && `x = ${d.xAttributeName}`, d.yAttributeName && `y = ${d.yAttributeName}`]
      .filter(Boolean);
    const what = [plotName(d.plotType), d.dataContext && `of ${JSON.stringify(d.dataContext)}`].filter(Boolean).join(" ");
    const result = toolResult(
      `Picture of graph ${graphLabel(graph)}: ${what}${axes.length ? `, ${axes.join(", ")}` : ""}. ${picture.sentence}`,
      {
        graphId: graph.id,
        title: graph.title,
        ...(graph.name ? { name: graph.name } : {}),
        dataset: d.dataContext ?? null,
        plotType: d.plotType ?? null,
        xAttribute: d.xAttributeName ?? null,
        yAttribute: d.yAttributeName ?? null,
        ...picture.facts,
      },
    );
    result.content.push(picture.item);
    return result;
  }

  return {
    create_codap_graph,
    update_codap_graph,
    add_codap_adornment,
    remove_codap_adornment,
    get_codap_graph_image,
  };
}
