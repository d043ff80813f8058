// @ts-check
// What create_codap_graph sets beyond the attributes, so "a histogram of X with its mean" is one call: the
// settings update_codap_graph takes that a class asks for at creation (the bar scale, splits, a filter, bounds,
// points) and the statistics and lines of add_codap_adornment, each carried out by those tools' own code on the new
// graph and answered as they answer (what changed, the values CODAP computed).

import { ADORNMENTS } from "./adornment_kinds.js";
import { ToolError, invalid } from "./context.js";
import { SETTINGS, shown } from "./graph_settings.js";

/**
 * @import {CodapId} from "../types.js"
 * @import {AddArgs} from "./adornment_add.js"
 * @import {UpdateGraphArgs} from "./graph_settings.js"
 */

/** update_codap_graph's settings create_codap_graph takes as they are. */
export const CREATE_SETTINGS = /** @type {const} */ ([
  "barChartScale", "barChartFormula", "categoryOrder", "topSplitAttribute", "rightSplitAttribute", "filterFormula", "pointColor",
  "pointSize", "xAxisMin", "xAxisMax", "yAxisMin", "yAxisMax", "showMeasureLabels", "xAttributeType", "yAttributeType",
  "legendAttributeType",
]);
/** create_codap_graph's adornment options: [its argument, add_codap_adornment's]. */
export const ADORNMENT_OPTIONS = /** @type {const} */ ([
  ["percentType", "percentType"], ["showR", "showR"], ["showRSquared", "showRSquared"],
  ["showConfidenceBands", "showConfidenceBands"], ["showOutliers", "showOutliers"], ["adornmentFormula", "formula"],
]);

/**
 * @typedef {Partial<Record<typeof CREATE_SETTINGS[number], unknown>> & Partial<Record<typeof ADORNMENT_OPTIONS[number][0], unknown>>
 *   & {adornments?: string[]}} CreateExtras
 */

/**
 * Checks the extra arguments before anything is made: known kinds, options only with the kinds that take them,
 * split attributes of the dataset.
 * @param {CreateExtras} args
 * @param {(name: string) => boolean} hasAttribute
 */
export function checkExtras(args, hasAttribute) {
  const kinds = args.adornments ?? [];
  const unknown = kinds.filter((n) => !ADORNMENTS[n]);
  if (unknown.length) {
    throw invalid(`adornments: ${unknown.map((n) => JSON.stringify(n)).join(", ")} unknown; each must be one of ${Object.keys(ADORNMENTS).join(", ")}.`);
  }
  if (new Set(kinds).size !== kinds.length) throw invalid("adornments names a kind twice: name each once.");
  for (const [option] of ADORNMENT_OPTIONS) {
    if (args[option] !== undefined && !kinds.length) throw invalid(`${option} goes with adornments (e.g. adornments ["percent"]).`);
  }
  for (const split of /** @type {const} */ (["topSplitAttribute", "rightSplitAttribute"])) {
    const name = args[split];
    if (typeof name === "string" && name && !hasAttribute(name)) throw invalid(`${split} ${JSON.stringify(name)} is not an attribute of the dataset.`);
  }
}

/**
 * Sets the extras on the new graph: settings first (a split changes the cells a statistic is computed in), then
 * the statistics. A setting or statistic CODAP refuses is said in the notes; the graph stays made.
 * @param {{update_codap_graph: (args: UpdateGraphArgs) => Promise<any>, add_codap_adornment: (args: AddArgs) => Promise<any>}} tools
 * @param {CodapId} graphId
 * @param {CreateExtras} args
 */
export async function applyExtras(tools, graphId, args) {
  /** @type {string[]} */
  const said = [];
  /** @type {string[]} */
  const notes = [];
  /** @type {Record<string, unknown>} */
  const out = {};
  /** @type {Record<string, unknown>} */
  const settings = {};
  for (const key of CREATE_SETTINGS) if (args[key] !== undefined) settings[key] = args[key];
  if (Object.keys(settings).length) {
    try {
      const { structuredContent: s } = await tools.update_codap_graph({ graph: graphId, ...settings });
      const names = new Map(SETTINGS.map(([arg, , name]) => [arg, name]));
      /** @type {Array<{setting: string, after: unknown}>} */
      const changes = (s.changes ?? []).filter((/** @type {{setting: string}} */ c) => c.setting in settings); // not what follows from them
      if (changes.length) said.push(`Set ${changes.map((c) => `${names.get(/** @type {any} */ (c.setting)) ?? c.setting} ${shown(c.after)}`).join("; ")}.`);
      notes.push(...(s.notes ?? []));
      out.settings = { changes, notes: s.notes ?? [] };
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      notes.push(`Not set: ${err.message}`);
    }
  }
  if (args.adornments?.length) {
    /** @type {Record<string, unknown>} */
    const options = {};
    for (const [mine, theirs] of ADORNMENT_OPTIONS) if (args[mine] !== undefined) options[theirs] = args[mine];
    try {
      const added = await tools.add_codap_adornment({ graph: graphId, adornments: args.adornments, ...options });
      said.push(String(added.content[0].text));
      out.adornments = added.structuredContent.adornments;
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      notes.push(`No statistic was added: ${err.message}`);
      out.adornments = [];
    }
  }
  return { said, notes, out };
}
