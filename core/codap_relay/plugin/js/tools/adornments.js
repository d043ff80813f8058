// @ts-check
// Statistics and lines on a graph (CODAP's adornments, its Measure menu): add one or several and read the values
// CODAP computed, or take them off. The ones CODAP 3.1.0's plugin API cannot create are made by rebuilding the
// graph's saved form (adornment_add.js); every one is read back through the API.

import { ADORNMENTS } from "./adornment_kinds.js";
import { OPTIONS_FOR, createAdornmentAdder } from "./adornment_add.js";
import { adornmentReads, adornmentsRead } from "./adornment_read.js";
import { ToolError, graphLabel, invalid, plotName, toolResult } from "./context.js";
import { num } from "./graph_settings.js";

/**
 * @import {CodapRequest, Component} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {AddArgs, Added, ListedAdornment} from "./adornment_add.js"
 */

const KINDS = Object.keys(ADORNMENTS);

/**
 * The kinds a call names: `adornment` (one) or `adornments` (several, in order), checked.
 * @param {{adornment?: string, adornments?: string[]}} args
 */
function kindsOf(args) {
  if ((args.adornment === undefined) === (args.adornments === undefined)) {
    throw invalid("Give adornment (one, e.g. \"mean\") or adornments (several, e.g. [\"mean\", \"median\"]), not both.");
  }
  const names = args.adornments ?? [/** @type {string} */ (args.adornment)];
  const unknown = names.filter((n) => !ADORNMENTS[n]);
  if (unknown.length) throw invalid(`${unknown.map((n) => JSON.stringify(n)).join(", ")}: adornment must be one of ${KINDS.join(", ")}.`);
  if (!names.length) throw invalid(`adornments needs at least one of ${KINDS.join(", ")}.`);
  if (new Set(names).size !== names.length) throw invalid("adornments names a kind twice: name each once.");
  return names;
}

/** A kind as a sentence lists it: "the mean". @param {string} name */
const the = (name) => `the ${ADORNMENTS[name].label}`;

/** Names in a sentence: "a, b and c". @param {string[]} list */
const and = (list) => (list.length > 1 ? `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}` : list[0] ?? "");

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

/**
 * A least-squares line's values in the order a class reads them, with r: slope, intercept, r, r².
 * @param {Record<string, unknown>} cell
 */
function withR(cell) {
  const { slope, intercept, rSquared, ...rest } = cell;
  if (typeof slope !== "number" || typeof rSquared !== "number") return cell;
  const r = Math.sign(slope) * Math.sqrt(Math.max(0, rSquared));
  return { ...rest.categories ? { categories: rest.categories } : {}, slope, intercept, r, rSquared, ...rest };
}

/**
 * The values CODAP computed for a kind, one entry per cell of the plot.
 * @param {string} name the tools' name of the kind
 * @param {Record<string, any>} detail CODAP's description of it (`get ….adornment[type]`)
 * @returns {Array<Record<string, unknown>>}
 */
export function adornmentValues(name, detail) {
  /** @type {Array<Record<string, unknown>>} */
  const cells = (detail.data ?? []).map((/** @type {{category?: string, [key: string]: unknown}} */ { category, ...cell }) => (category && category !== "__main__" ? { category, ...cell } : cell));
  // Count and percent share one CODAP adornment: report the part asked for.
  /** @type {string[] | null} */
  const keep = name === "count" ? ["count", "categories"] : name === "percent" ? ["percent", "categories"] : null;
  const kept = keep ? cells.map((c) => Object.fromEntries(Object.entries(c).filter(([k]) => keep.includes(k)))) : cells;
  // CODAP gives a least-squares line's r² and slope; its r (shown with "Show r") is r²'s root with the slope's sign
  return name === "least_squares_line" ? kept.map(withR) : kept;
}

/**
 * The values of the kinds a graph shows, as a sentence ("mean: g = A: mean 160.5; …"), or "".
 * @param {Array<{name: string, detail: Record<string, any>}>} shown
 */
export function shownValuesText(shown) {
  return shown.map((a) => ({ a, values: adornmentValues(a.name, a.detail) }))
    .filter(({ values }) => values.length)
    .map(({ a, values }) => `${a.name}: ${values.map(cellPhrase).join("; ")}`).join("; ");
}

/**
 * Why a percent on a graph with a categorical legend is not split by it, and how to get that in CODAP.
 * @param {Record<string, any>} detail the graph's component (`get component[id]`)
 */
export function percentByLegendNote(detail) {
  const legend = detail.legendAttributeName;
  const axes = [detail.xAttributeName, detail.yAttributeName, detail.topSplitAttributeName, detail.rightSplitAttributeName];
  if (!legend || axes.includes(legend) || detail.legendAttributeType === "numeric") return "";
  const x = detail.xAttributeName ?? "x";
  return `CODAP's percent is each cell's share of the cases on the axes, not split by the legend ${legend}: for the percent of each ` +
    `${legend} within each ${x}, put ${legend} on the y axis (update_codap_graph yAttribute ${JSON.stringify(legend)}) and ` +
    `set the percent's percentType to "column" (add_codap_adornment percent percentType "column"; "row" gives each ${x}'s percent within each ${legend}).`;
}

/**
 * @param {ToolContext} ctx
 * @param {((args: {graph: import("../types.js").CodapId, showMeasureLabels: boolean}) => Promise<any>) | null} [updateGraph]
 *   update_codap_graph, which sets the graph's measure labels
 */
export function createAdornmentTools(ctx, updateGraph = null) {
  const { send, must, listGraphs, pickGraph } = ctx;
  const { addByRebuild, addByApi } = createAdornmentAdder(ctx);

  /** @param {unknown} wanted */
  async function graphAndAdornments(wanted) {
    const graph = pickGraph(await listGraphs(), wanted);
    return { graph, listed: adornmentsRead(await send(adornmentReads(graph.id))) };
  }
  /** @param {ListedAdornment[]} listed */
  const showing = (listed) => listed.filter((a) => a.isVisible).map((a) => a.name);

  /** @param {AddArgs} args */
  async function add_codap_adornment(args) {
    const names = kindsOf(args);
    for (const [option, takers] of Object.entries(OPTIONS_FOR)) {
      if (args[/** @type {keyof AddArgs} */ (option)] !== undefined && !names.some((n) => takers.includes(n))) {
        throw invalid(`${option} applies to ${takers.join(", ")} only, not to ${names.join(", ")}.`);
      }
    }
    if (names.includes("plotted_value") && names.includes("plotted_function") && args.formula !== undefined) {
      throw invalid("formula is the plotted value's or the plotted function's: add them in two calls.");
    }
    if (names.includes("plotted_value") && !args.formula?.trim()) {
      throw invalid('plotted_value needs formula: the value to draw in each cell, e.g. "mean(height) + stdDev(height)".');
    }
    const { graph, listed } = await graphAndAdornments(args.graph);
    if (names.includes("plotted_function") && !args.formula?.trim() && !listed.some((a) => a.type === ADORNMENTS.plotted_function.type)) {
      throw invalid('plotted_function needs formula: a function of x drawn across the scatter plot, e.g. "2 * x + 1".');
    }
    const plotType = graph.detail.plotType;
    const misfits = names.filter((n) => !ADORNMENTS[n].plots.includes(plotType));
    if (misfits.length) {
      const axes = [graph.detail.xAttributeName && `x = ${graph.detail.xAttributeName}`,
        graph.detail.yAttributeName && `y = ${graph.detail.yAttributeName}`].filter(Boolean).join(", ");
      throw new ToolError(
        `${misfits.map((n) => `A ${ADORNMENTS[n].label} needs ${ADORNMENTS[n].needs}`).join("; ")}; graph ` +
          `${graphLabel(graph)} is ${plotName(plotType)}${axes ? ` (${axes})` : ""}. Nothing was added. Change its ` +
          "attributes with update_codap_graph or make another graph with create_codap_graph.",
        "adornment_not_supported_by_plot",
        { graphId: graph.id, adornment: misfits[0], adornments: misfits, plotType: plotType ?? null,
          plotsTaking: ADORNMENTS[misfits[0]].plots },
      );
    }
    // the kinds CODAP's API cannot create in one rebuild (a plotted function alone: one CODAP cannot compute is put
    // back), then the others one by one; after one is added, a later one's failure is said, not thrown
    const rebuilt = names.filter((n) => ADORNMENTS[n].v2 && n !== "plotted_function");
    /** @type {Array<() => Promise<Added[]>>} */
    const steps = [
      ...(rebuilt.length ? [() => addByRebuild(rebuilt, graph, args, listed)] : []),
      ...names.filter((n) => !rebuilt.includes(n)).map((n) =>
        ADORNMENTS[n].v2 ? () => addByRebuild([n], graph, args, listed) : async () => [await addByApi(n, graph, args, listed)]),
    ];
    /** @type {Added[]} */
    const done = [];
    /** @type {string[]} */
    const failed = [];
    for (const step of steps) {
      try {
        done.push(...(await step()));
      } catch (err) {
        if (!done.length || !(err instanceof ToolError)) throw err;
        failed.push(err.message);
      }
    }
    /** @type {boolean | null} */
    let labels = null;
    if (args.showMeasureLabels !== undefined && updateGraph) {
      try {
        const { structuredContent: s } = await updateGraph({ graph: graph.id, showMeasureLabels: args.showMeasureLabels });
        labels = s.state?.measures?.labels ?? null;
        if (labels !== args.showMeasureLabels) failed.push(`CODAP did not ${args.showMeasureLabels ? "show" : "hide"} the measure labels.`);
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        failed.push(`the measure labels: ${err.message}`);
      }
    }
    const relisted = adornmentsRead(await send(adornmentReads(graph.id)));
    const order = new Map(names.map((n, i) => [n, i]));
    done.sort((a, b) => /** @type {number} */ (order.get(a.name)) - /** @type {number} */ (order.get(b.name)));
    return adornmentAnswer(graph, done, relisted, failed, args.adornments !== undefined, labels);
  }

  /**
   * What CODAP computed for one kind: its values for each cell of the plot, its options, notes.
   * @param {Component} graph
   * @param {Added} one
   */
  function kindFacts(graph, { name, detail, added, notes: made }) {
    const which = ADORNMENTS[name];
    const values = adornmentValues(name, detail);
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
    const notes = [...made];
    if (!values.length && name !== "plotted_function") {
      notes.push(
        name === "least_squares_line" && graph.detail.legendAttributeName
          ? `CODAP draws one least-squares line per ${graph.detail.legendAttributeName} but its plugin API reports ` +
              "the values of a single line only: take the legend off (update_codap_graph) to read them."
          : `CODAP gave no values for ${the(name)}.`,
      );
    }
    const byLegend = name === "percent" ? percentByLegendNote(graph.detail) : "";
    if (byLegend) notes.push(byLegend);
    const computed = values.length ? values.map(cellPhrase).join("; ") : "";
    /** @type {Record<string, unknown>} */
    const facts = { adornment: name, codapType: which.type, added, values, ...extra };
    return { facts, computed, notes };
  }

  /**
   * The answer of add_codap_adornment: for each kind, the values CODAP computed for each cell of the plot.
   * @param {Component} graph
   * @param {Added[]} done
   * @param {ListedAdornment[]} listed
   * @param {string[]} failed
   * @param {boolean} several the kinds were given as a list
   * @param {boolean | null} labels whether the graph writes each measure's value on it, where showMeasureLabels was given
   */
  function adornmentAnswer(graph, done, listed, failed, several, labels) {
    const kinds = done.map((one) => kindFacts(graph, one));
    const added = done.filter((d) => d.added).map((d) => the(d.name));
    const already = done.filter((d) => !d.added).map((d) => the(d.name));
    const plot = `graph ${graphLabel(graph)} (${plotName(graph.detail.plotType)})`;
    const said = [
      ...(added.length ? [`Added ${and(added)} to ${plot}.`] : []),
      ...(already.length ? [`${added.length ? "It already showed" : `Graph ${graphLabel(graph)} (${plotName(graph.detail.plotType)}) already showed`} ${and(already)}.`] : []),
    ];
    const computed = kinds.filter((k) => k.computed).map((k, _i, all) => (all.length > 1 || kinds.length > 1 ? `${k.facts.adornment}: ${k.computed}` : k.computed));
    const formula = kinds.map((k) => k.facts.formula).filter(Boolean).map((f) => ` Formula as CODAP holds it: ${JSON.stringify(f)}.`).join("");
    const notes = [...kinds.flatMap((k) => k.notes), ...failed.map((f) => `Not added: ${f}`)];
    const still = showing(listed);
    if (labels !== null) said.push(labels ? "Each measure's value is written on the graph (Show Measure Labels)." : "The measures' values are not written on the graph.");
    const text = `${said.join(" ")}${computed.length ? ` CODAP computed: ${computed.join("; ")}.` : ""}${formula}` +
      (notes.length ? ` ${notes.join(" ")}` : "") + (still.length ? ` Shown on the graph now: ${still.join(", ")}.` : "");
    const common = { graphId: graph.id, plotType: graph.detail.plotType ?? null, adornments: kinds.map((k) => k.facts), shown: still, notes,
      ...(labels !== null ? { measureLabels: labels } : {}) };
    // one kind named alone: its facts at the top too, as this tool has always answered
    return toolResult(text, several ? common : { ...kinds[0].facts, ...common });
  }

  /** @param {{adornment?: string, adornments?: string[], graph?: string | number}} args */
  async function remove_codap_adornment(args) {
    const names = kindsOf(args);
    const graph = pickGraph(await listGraphs(), args.graph);
    const component = `component[${graph.id}]`;
    const reads = adornmentReads(graph.id);
    const had = adornmentsRead(await send(reads));
    const present = showing(had);
    const movables = had.find((a) => a.name === "movable_value")?.detail.data ?? [];
    const absent = names.filter((n) => !present.includes(n));
    if (absent.length) {
      throw new ToolError(
        `Graph ${graphLabel(graph)} does not show ${and(absent.map(the))}${names.length > absent.length ? "; nothing was removed" : ""}. ` +
          (present.length ? `It shows: ${present.join(", ")}.` : "It shows no statistics or lines."),
        "adornment_not_found",
        { graphId: graph.id, adornment: absent[0], missing: absent, available: present },
      );
    }
    /** @type {CodapRequest[]} */
    const removes = names.flatMap((n) => {
      /** @type {CodapRequest} */
      const remove = { action: "delete", resource: `${component}.adornment`, values: { type: ADORNMENTS[n].type } };
      // one movable value per request: as many requests as values shown
      const values = movables.flatMap((/** @type {{movableValues?: unknown[]}} */ c) => c.movableValues ?? []).length;
      return n === "movable_value" ? Array.from({ length: Math.max(1, values) }, () => remove) : [remove];
    });
    const replies = await send([...removes, ...reads]);
    const refusedAt = replies.slice(0, removes.length).findIndex((r) => r?.success !== true);
    if (refusedAt >= 0) must(removes[refusedAt], replies[refusedAt], `to remove ${the(ADORNMENT_OF(removes[refusedAt]))} from graph ${graphLabel(graph)}`);
    const now = showing(adornmentsRead(replies.slice(removes.length)));
    const kept = names.filter((n) => now.includes(n));
    if (kept.length) {
      throw new ToolError(
        `CODAP accepted removing ${and(kept.map(the))} from graph ${graphLabel(graph)} but still shows ${kept.length > 1 ? "them" : "it"}.`,
        "codap_error",
        { graphId: graph.id, adornment: kept[0], shown: now },
      );
    }
    return toolResult(
      `Removed ${and(names.map(the))} from graph ${graphLabel(graph)}. ` +
        (now.length ? `It still shows: ${now.join(", ")}.` : "It shows no other statistics or lines."),
      args.adornments !== undefined
        ? { graphId: graph.id, removed: names, codapType: names.map((n) => ADORNMENTS[n].type), shown: now }
        : { graphId: graph.id, removed: names[0], codapType: ADORNMENTS[names[0]].type, shown: now },
    );
  }

  return { add_codap_adornment, remove_codap_adornment };
}

/** The tools' name of the kind a delete request takes off. @param {CodapRequest} request */
const ADORNMENT_OF = (request) => /** @type {string} */ (Object.keys(ADORNMENTS).find((n) => ADORNMENTS[n].type === /** @type {any} */ (request.values)?.type));
