// @ts-check
// Statistics and lines on a graph (CODAP's adornments, its Measure menu): add one and read the values CODAP
// computed, or take one off. The ones CODAP 3.1.0's plugin API cannot create are made by rebuilding the graph's
// saved form (graph_rebuild.js); every one is read back through the API.

import { ADORNMENTS, ADORNMENT_NAMES } from "./adornment_kinds.js";
import { ToolError, codapError, collection, get, graphLabel, invalid, plotName, refused, toolResult } from "./context.js";
import { rebuildGraph } from "./graph_rebuild.js";
import { num } from "./graph_settings.js";

/**
 * @import {CodapReply, CodapRequest, Component} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {GraphRebuild} from "./graph_rebuild.js"
 */

/** An adornment CODAP lists on a graph, with the tools' name for it. @typedef {{name: string, type: string, id?: string | number, isVisible?: boolean}} ListedAdornment */

/**
 * add_codap_adornment's arguments.
 * @typedef {{adornment: string, graph?: string | number, formula?: string, percentType?: string,
 *   showRSquared?: boolean, showConfidenceBands?: boolean, showR?: boolean, showOutliers?: boolean, numberOfStandardErrors?: number,
 *   slope?: number, intercept?: number, value?: number}} AddArgs
 */

/** The arguments each adornment takes besides graph and adornment. */
const OPTIONS_FOR = {
  formula: ["plotted_value", "plotted_function"],
  percentType: ["percent"],
  showRSquared: ["least_squares_line"],
  showConfidenceBands: ["least_squares_line"],
  showR: ["least_squares_line"],
  showOutliers: ["box_plot"],
  numberOfStandardErrors: ["standard_error"],
  slope: ["movable_line"],
  intercept: ["movable_line"],
  value: ["movable_value"],
};


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
export function createAdornmentTools(ctx) {
  const { send, must, findDataset, describeDatasets, listGraphs, pickGraph } = ctx;

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
  const adornmentsOf = (reply) => (reply.values ?? []).map((/** @type {{type: string}} */ a) => ({ name: ADORNMENT_NAMES.get(a.type) ?? a.type, ...a }));
  /** @param {ListedAdornment[]} listed */
  const showing = (listed) => listed.filter((a) => a.isVisible).map((a) => a.name);

  /**
   * The v2 storage that shows adornment `name` on graph `graph` (a rebuild), from the arguments or CODAP's own
   * starting values: a movable line as CODAP first draws it (graph-utils.ts computeSlopeAndIntercept), a movable
   * point a quarter in from the top right of the axes (movable-point-adornment-model.ts getInitialPosition).
   * @param {string} name
   * @param {Component} graph
   * @param {AddArgs} args
   * @param {boolean} exists the graph's saved form has it already (hidden or shown): keep its place
   */
  function storageToShow(name, graph, args, exists) {
    const d = graph.detail;
    const [x0, x1, y0, y1] = [d.xLowerBound, d.xUpperBound, d.yLowerBound, d.yUpperBound].map((v) => (typeof v === "number" ? v : 0));
    /** @type {Record<string, unknown>} */
    const value = { isVisible: true };
    if (name === "box_plot" && args.showOutliers !== undefined) value.showOutliers = args.showOutliers;
    if (name === "standard_error") value.numberOfStdErrs = args.numberOfStandardErrors ?? (exists ? undefined : 1);
    if (name === "plotted_function") value.expression = args.formula;
    if (name === "movable_line" && (!exists || args.slope !== undefined || args.intercept !== undefined)) {
      const slope = args.slope ?? (y1 - y0) / ((x1 - x0) / 2 || 1);
      Object.assign(value, { slope, intercept: args.intercept ?? y0 - slope * x0, isVertical: false });
    }
    if (name === "movable_point" && !exists) value.coordinates = { x: x1 - (x1 - x0) / 4, y: y1 - (y1 - y0) / 4 };
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
  }

  /**
   * Shows an adornment CODAP's API cannot create, by rebuilding the graph's saved form; its values read back.
   * @param {string} name
   * @param {Component} graph
   * @param {AddArgs} args
   * @param {ListedAdornment[]} listed
   */
  async function addByRebuild(name, graph, args, listed) {
    const which = ADORNMENTS[name];
    const v2 = /** @type {NonNullable<typeof which.v2>} */ (which.v2);
    const known = listed.find((a) => a.type === which.type);
    const wasShown = known?.isVisible === true;
    const changesOptions = ["showOutliers", "numberOfStandardErrors", "slope", "intercept", "formula"].some((k) => args[/** @type {keyof AddArgs} */ (k)] !== undefined);
    const component = `component[${graph.id}]`;
    const read = get(`${component}.adornment[${which.type}]`);
    const list = get(`${component}.adornmentList`);
    /** @type {string[]} */
    let notes = [];
    // A plotted function CODAP cannot compute is put back as it was: its old formula, read now.
    const [previous] = name === "plotted_function" && known ? await send([read]) : [];
    if (!wasShown || changesOptions) {
      const storage = storageToShow(name, graph, args, Boolean(known));
      /** @type {GraphRebuild} */
      const change = v2.level === "top" ? { topAdornments: { [v2.key]: storage } } : { adornments: { [v2.key]: storage } };
      ({ notes } = await rebuildGraph(ctx, graph.id, change));
    }
    const [got, relisted] = await send([read, list]);
    const detail = must(read, got, `reading the ${which.label} back`).values ?? {};
    const shownNow = adornmentsOf(relisted?.success === true ? relisted : {});
    if (!shownNow.some((a) => a.type === which.type && a.isVisible)) {
      throw new ToolError(
        `CODAP did not show the ${which.label} on graph ${graphLabel(graph)} after rebuilding it. Add it by hand: ` +
          `select the graph, click its ruler button (Measure), tick "${which.menu}".`,
        "codap_error",
        { graphId: graph.id, adornment: name },
      );
    }
    if (name === "plotted_function" && detail.error) {
      const old = previous?.success === true ? previous.values : null;
      const oldFormula = typeof old?.formula === "string" ? JSON.parse(old.formula) : "";
      if (old && oldFormula && !old.error) {
        await rebuildGraph(ctx, graph.id, { adornments: { [v2.key]: { expression: oldFormula, isVisible: wasShown } } });
      } else {
        await send([{ action: "delete", resource: `${component}.adornment`, values: { type: which.type } }]);
      }
      throw new ToolError(
        `CODAP cannot compute the plotted function ${JSON.stringify(args.formula)}: ${detail.error.replace(/^❌\s*/, "")}. ` +
          (old && oldFormula && !old.error ? `Its formula is ${JSON.stringify(oldFormula)} again` : "It is not shown") +
          ". Fix the formula (a function of x, e.g. \"2 * x + 1\") and call again.",
        "formula_error",
        { graphId: graph.id, formula: args.formula, codapError: detail.error },
      );
    }
    const answer = adornmentAnswer(graph, name, detail, !wasShown, shownNow);
    const [first] = answer.content;
    if (notes.length && first.type === "text") {
      answer.structuredContent.notes.push(...notes);
      first.text += ` ${notes.join(" ")}`;
    }
    return answer;
  }

  /** @param {AddArgs} args */
  async function add_codap_adornment(args) {
    const which = ADORNMENTS[args.adornment];
    if (!which) throw invalid(`adornment must be one of ${Object.keys(ADORNMENTS).join(", ")}.`);
    const name = args.adornment;
    for (const [option, takers] of Object.entries(OPTIONS_FOR)) {
      if (args[/** @type {keyof AddArgs} */ (option)] !== undefined && !takers.includes(name)) {
        throw invalid(`${option} applies to ${takers.join(", ")} only, not to ${name}.`);
      }
    }
    if (name === "plotted_value" && !args.formula?.trim()) {
      throw invalid('plotted_value needs formula: the value to draw in each cell, e.g. "mean(height) + stdDev(height)".');
    }
    const { graph, listed } = await graphAndAdornments(args.graph);
    const neverMade = !listed.some((a) => a.type === which.type);
    if (name === "plotted_function" && !args.formula?.trim() && neverMade) {
      throw invalid('plotted_function needs formula: a function of x drawn across the scatter plot, e.g. "2 * x + 1".');
    }
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
    if (which.v2) return addByRebuild(name, graph, args, listed);
    // Each movable value added is another one; the rest are shown once.
    const wasShown = name !== "movable_value" && listed.some((a) => a.type === which.type && a.isVisible);
    const component = `component[${graph.id}]`;
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
    if (args.showR !== undefined) values.showR = args.showR;
    /** @type {CodapRequest} */
    const create = { action: "create", resource: `${component}.adornment`, values };
    const read = get(`${component}.adornment[${which.type}]`);
    const list = get(`${component}.adornmentList`);
    if (name === "movable_value" && args.value !== undefined) {
      // CODAP's API places a movable value only as the first of a cell (movable-value-adornment-model.ts replaceValue)
      const [moving] = await send([read]);
      const placed = moving?.success === true ? movableValues(moving).length : 0;
      if (placed) {
        throw new ToolError(
          `Graph ${graphLabel(graph)} already shows a movable value: CODAP's plugin API places only the first one. ` +
            "Add another without value (CODAP places it) and drag it, or remove the movable values and add one with value.",
          "invalid_arguments",
          { graphId: graph.id, adornment: name },
        );
      }
    }
    let [created, got, relisted] = await send([create, read, list]);
    if (name === "movable_value" && args.value !== undefined && created?.success === true) {
      // one [cell key, value] pair per cell of the plot: the cell's categories by attribute name ("{}" unsplit)
      /** @type {Array<{categories?: Record<string, unknown>}>} */
      const cells = created.values?.data ?? [];
      const pairs = cells.map((c) => [JSON.stringify(c.categories ?? {}), args.value]);
      [, got, relisted] = await send([{ action: "update", resource: `${component}.adornment`, values: { type: which.type, values: pairs } }, read, list]);
    }
    if (created?.success !== true) {
      const said = codapError(created);
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
    for (const key of ["percentType", "showRSquared", "showR", "showConfidenceBands", "showOutliers"]) {
      if (detail[key] !== undefined && (key !== "percentType" || name === "percent")) extra[key] = detail[key];
    }
    if (typeof detail._numStErrs === "number") extra.numberOfStandardErrors = detail._numStErrs;
    /** @type {string[]} */
    const notes = [];
    if (!values.length && name !== "plotted_function") {
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

  return { add_codap_adornment, remove_codap_adornment };
}
