// @ts-check
// Showing statistics and lines on a graph, kind by kind: through CODAP's plugin API (adornment create) for the
// kinds it creates, and by rebuilding the graph's saved form (graph_rebuild.js) for the others, all of these in one
// rebuild. Each is read back through the API: the values CODAP computed for it.

import { ADORNMENTS } from "./adornment_kinds.js";
import { adornmentReads, adornmentsRead } from "./adornment_read.js";
import { ToolError, codapError, collection, get, graphLabel, plotName, refused } from "./context.js";
import { rebuildGraph } from "./graph_rebuild.js";
import { randomColumns, redrawNote } from "./statistics_local.js";

/**
 * @import {CodapReply, CodapRequest, Component} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {GraphRebuild} from "./graph_rebuild.js"
 */

/** An adornment CODAP lists on a graph, with the tools' name for it. @typedef {{name: string, type: string, id?: string | number, isVisible?: boolean}} ListedAdornment */

/**
 * add_codap_adornment's arguments.
 * @typedef {{adornment?: string, adornments?: string[], graph?: string | number, formula?: string, percentType?: string,
 *   showRSquared?: boolean, showConfidenceBands?: boolean, showR?: boolean, showOutliers?: boolean, numberOfStandardErrors?: number,
 *   slope?: number, intercept?: number, value?: number, showMeasureLabels?: boolean}} AddArgs
 */

/**
 * One kind added (or found shown already): CODAP's description of it read back, and notes on how it was made.
 * @typedef {{name: string, detail: Record<string, any>, added: boolean, notes: string[]}} Added
 */

/** The arguments each adornment takes besides graph and adornment. */
export const OPTIONS_FOR = {
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

// CODAP's delete takes away one movable value at a time and keeps the (empty) adornment listed as visible.
/** @type {(reply: CodapReply | undefined) => unknown[]} */
export const movableValues = (reply) =>
  reply?.success === true ? (reply.values?.data ?? []).flatMap((/** @type {{movableValues?: unknown[]}} */ c) => c.movableValues ?? []) : [];

/**
 * @param {string} name
 * @param {AddArgs} args
 */
const optionsGiven = (name, args) => Object.entries(OPTIONS_FOR).some(([k, takers]) => takers.includes(name) && args[/** @type {keyof AddArgs} */ (k)] !== undefined);

/** @param {ToolContext} ctx */
export function createAdornmentAdder(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;

  /**
   * Why CODAP cannot compute `formula` over the dataset's cases (null if it can), and what trying it did: tried on a
   * scratch attribute taken off in the same message. CODAP's API cannot take an adornment off a graph (delete only
   * hides it, keeping its formula), so a plotted value's formula is checked before the adornment is made. Adding
   * and removing the scratch attribute makes CODAP evaluate every formula again: random columns are drawn anew
   * (`redrawn`, read from the attributes' formulas).
   * @param {string} datasetName
   * @param {string} formula
   */
  async function formulaProblem(datasetName, formula) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found]);
    const redrawn = randomColumns(dataset);
    const last = dataset.collections[dataset.collections.length - 1];
    const base = collection(dataset.id, last.id);
    const scratch = `__codap_relay_check_${Date.now().toString(36)}`;
    /** @type {CodapRequest} */
    const tryIt = { action: "create", resource: `${base}.attribute`, values: [{ name: scratch, formula }] };
    /** @type {CodapRequest} */
    const drop = { action: "delete", resource: `${base}.attribute[${scratch}]` };
    const [tried, read] = await send([tryIt, get(`${base}.allCases`), drop]);
    if (tried?.success !== true) return { problem: codapError(tried), redrawn };
    /** @type {unknown[]} */
    const values = (read?.values?.cases ?? []).map((/** @type {{case?: {values?: Record<string, unknown>}}} */ c) => c.case?.values?.[scratch]);
    const error = /** @type {string | undefined} */ (values.find((v) => typeof v === "string" && v.startsWith("❌")));
    return { problem: error ? error.slice(1).trim() : null, redrawn };
  }

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
   * Shows the adornments CODAP's API cannot create, in one rebuild of the graph's saved form; each read back. A
   * plotted function comes alone (one it cannot compute is put back as it was).
   * @param {string[]} names
   * @param {Component} graph
   * @param {AddArgs} args
   * @param {ListedAdornment[]} listed
   * @returns {Promise<Added[]>}
   */
  async function addByRebuild(names, graph, args, listed) {
    const component = `component[${graph.id}]`;
    const kinds = names.map((name) => {
      const which = ADORNMENTS[name];
      const known = listed.find((a) => a.type === which.type);
      return { name, which, v2: /** @type {NonNullable<typeof which.v2>} */ (which.v2), known, wasShown: known?.isVisible === true,
        read: get(`${component}.adornment[${which.type}]`) };
    });
    // A plotted function CODAP cannot compute is put back as it was: its old formula, read now.
    const fn = kinds.find((k) => k.name === "plotted_function");
    const [previous] = fn?.known ? await send([fn.read]) : [];
    /** @type {GraphRebuild} */
    const change = {};
    for (const k of kinds) {
      if (k.wasShown && !optionsGiven(k.name, args)) continue;
      const storage = storageToShow(k.name, graph, args, Boolean(k.known));
      const level = k.v2.level === "top" ? (change.topAdornments ??= {}) : (change.adornments ??= {});
      level[k.v2.key] = storage;
    }
    const notes = change.adornments || change.topAdornments ? (await rebuildGraph(ctx, graph.id, change)).notes : [];
    const replies = await send([...kinds.map((k) => k.read), ...adornmentReads(graph.id)]);
    const shownNow = adornmentsRead(replies.slice(kinds.length));
    return Promise.all(kinds.map(async (k, i) => {
      const detail = must(k.read, replies[i], `reading the ${k.which.label} back`).values ?? {};
      if (!shownNow.some((a) => a.type === k.which.type && a.isVisible)) {
        throw new ToolError(
          `CODAP did not show the ${k.which.label} on graph ${graphLabel(graph)} after rebuilding it. Add it by hand: ` +
            `select the graph, click its ruler button (Measure), tick "${k.which.menu}".`,
          "codap_error",
          { graphId: graph.id, adornment: k.name },
        );
      }
      if (k.name === "plotted_function" && detail.error) {
        const old = previous?.success === true ? previous.values : null;
        const oldFormula = typeof old?.formula === "string" ? JSON.parse(old.formula) : "";
        if (old && oldFormula && !old.error) {
          await rebuildGraph(ctx, graph.id, { adornments: { [k.v2.key]: { expression: oldFormula, isVisible: k.wasShown } } });
        } else {
          await send([{ action: "delete", resource: `${component}.adornment`, values: { type: k.which.type } }]);
        }
        throw new ToolError(
          `CODAP cannot compute the plotted function ${JSON.stringify(args.formula)}: ${detail.error.replace(/^❌\s*/, "")}. ` +
            (old && oldFormula && !old.error ? `Its formula is ${JSON.stringify(oldFormula)} again` : "It is not shown") +
            ". Fix the formula (a function of x, e.g. \"2 * x + 1\") and call again.",
          "formula_error",
          { graphId: graph.id, formula: args.formula, codapError: detail.error },
        );
      }
      return { name: k.name, detail, added: !k.wasShown, notes: i === 0 ? notes : [] };
    }));
  }

  /**
   * Shows an adornment CODAP's API creates; read back.
   * @param {string} name
   * @param {Component} graph
   * @param {AddArgs} args
   * @param {ListedAdornment[]} listed
   * @returns {Promise<Added>}
   */
  async function addByApi(name, graph, args, listed) {
    const which = ADORNMENTS[name];
    const plotType = graph.detail.plotType;
    // Each movable value added is another one; the rest are shown once.
    const wasShown = name !== "movable_value" && listed.some((a) => a.type === which.type && a.isVisible);
    const neverMade = !listed.some((a) => a.type === which.type);
    const component = `component[${graph.id}]`;
    /** @type {string[]} */
    const notes = [];
    if (name === "plotted_value" && neverMade && graph.detail.dataContext) {
      const { problem, redrawn } = await formulaProblem(graph.detail.dataContext, /** @type {string} */ (args.formula));
      if (redrawn.length) notes.push(redrawNote(redrawn, "when the formula was tried on a scratch attribute"));
      if (problem) {
        throw new ToolError(
          `CODAP cannot compute the plotted value's formula ${JSON.stringify(args.formula)}: ${problem}. It was not ` +
            `added. Fix the formula and call again.${notes.map((n) => ` ${n}`).join("")}`,
          "formula_error",
          { graphId: graph.id, formula: args.formula, codapError: problem },
        );
      }
    }
    /** @type {Record<string, unknown>} */
    const values = { type: which.type };
    if (name === "plotted_value") values.expression = args.formula;
    if (name === "percent" && args.percentType !== undefined) values.percentType = args.percentType;
    if (name === "least_squares_line") {
      for (const key of /** @type {const} */ (["showRSquared", "showConfidenceBands", "showR"])) if (args[key] !== undefined) values[key] = args[key];
    }
    /** @type {CodapRequest} */
    const create = { action: "create", resource: `${component}.adornment`, values };
    const read = get(`${component}.adornment[${which.type}]`);
    if (name === "movable_value" && args.value !== undefined) {
      // CODAP's API places a movable value only as the first of a cell (movable-value-adornment-model.ts replaceValue)
      const [moving] = await send([read]);
      if (movableValues(moving).length) {
        throw new ToolError(
          `Graph ${graphLabel(graph)} already shows a movable value: CODAP's plugin API places only the first one. ` +
            "Add another without value (CODAP places it) and drag it, or remove the movable values and add one with value.",
          "invalid_arguments",
          { graphId: graph.id, adornment: name },
        );
      }
    }
    let [created, got] = await send([create, read]);
    if (name === "movable_value" && args.value !== undefined && created?.success === true) {
      // one [cell key, value] pair per cell of the plot: the cell's categories by attribute name ("{}" unsplit)
      /** @type {Array<{categories?: Record<string, unknown>}>} */
      const cells = created.values?.data ?? [];
      const pairs = cells.map((c) => [JSON.stringify(c.categories ?? {}), args.value]);
      [, got] = await send([{ action: "update", resource: `${component}.adornment`, values: { type: which.type, values: pairs } }, read]);
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
          `${wasShown ? "" : " It was not added."} Fix the formula and call again.${notes.map((n) => ` ${n}`).join("")}`,
        "formula_error",
        { graphId: graph.id, formula: args.formula, codapError: detail.error },
      );
    }
    return { name, detail, added: !wasShown, notes };
  }

  return { addByRebuild, addByApi };
}
