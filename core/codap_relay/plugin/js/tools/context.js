// @ts-check
// What every tool family shares: the CODAP query layer, the result shape, the sentences and errors the tools
// have in common, and the digest that ends each answer of a tool that changes the document.
// A family module (datasets.js, graphs.js, …) exports `create…Tools(ctx)` returning its tools by name; its
// definitions (name, title, description, annotations, inputSchema) live beside it in a JSON file of the same
// name, which the relay reads too. Arguments reach a tool already checked against its inputSchema (by the relay
// for relayed calls, by trace.js for a replayed trace): code checks only what a schema cannot say.

import { ToolError } from "../errors.js";
import { plural } from "../format.js";
import { ALWAYS_DRAWN } from "../drawing.js";
import { createCodapQuery, dataContext, get } from "../codap_query.js";
import { describeGraphData } from "./graph_data.js";
import { createGraphPicture } from "./pictures.js";
import { isCodapSuccess } from "../types.js";
import { createDocumentCache, mayChange } from "./codap_document.js";
import { VERSION } from "../version.js";

/**
 * @import {CodapCall, CodapNotification, CodapRequest, DescribedDataset, ToolResult} from "../types.js"
 * @import {Raster} from "../imaging.js"
 * @import {Drawing} from "../drawing.js"
 */

export { ToolError } from "../errors.js";
export {
  codapError,
  collection,
  dataContext,
  get,
  graphLabel,
  invalid,
  refused,
} from "../codap_query.js";
export { plural } from "../format.js";

/** The longest data text put in the model-facing summary. */
export const MAX_TEXT = 60_000;

/**
 * A tool's answer: a sentence (or more) for the model and the same facts as data (MCP's structuredContent).
 * @param {string} text
 * @param {any} [structured]
 * @returns {ToolResult}
 */
export function toolResult(text, structured) {
  return { content: [{ type: "text", text }], structuredContent: structured };
}

/**
 * What CODAP's plot types are called in a sentence.
 * @type {Record<string, string>}
 */
const PLOT_NAMES = {
  scatterPlot: "scatter plot",
  dotPlot: "dot plot",
  dotChart: "dot chart",
  barChart: "bar chart",
  binnedDotPlot: "binned dot plot",
  histogram: "histogram",
  linePlot: "line plot",
  casePlot: "case plot (no attribute on an axis)",
};

/** @param {string | null | undefined} plotType */
export function plotName(plotType) {
  return plotType == null ? "graph" : PLOT_NAMES[plotType] ?? plotType;
}

/**
 * The error for an attribute a dataset does not have, naming the ones it has.
 * @param {{name: string, attributes: string[]}} dataset
 * @param {unknown} attr
 * @param {string} role what the attribute was for ("the x axis")
 */
export function unknownAttribute(dataset, attr, role) {
  const names = dataset.attributes;
  return new ToolError(
    `Dataset ${JSON.stringify(dataset.name)} has no attribute ${JSON.stringify(attr)} for ${role}. ` +
      `Its attributes: ${names.join(", ") || "(none)"}.`,
    "attribute_not_found",
    { datasetName: dataset.name, attribute: attr, available: names },
  );
}

/**
 * A dataset as the model sees it: collections and attributes without CODAP's internal ids.
 * @param {DescribedDataset} d
 */
export const publicDataset = (d) => ({
  ...d,
  collections: d.collections.map(({ attributes, ...c }) => ({
    ...c,
    attributes: attributes.map(({ id: _id, ...a }) => a),
  })),
});

/**
 * " (hidden in its table and card: a, b)" for a dataset with hidden attributes (update_codap_table hides them).
 * @param {{collections: Array<{attributes: Array<{name: string, hidden?: boolean}>}>}} d
 */
const hiddenText = (d) => {
  const hidden = d.collections.flatMap((c) => c.attributes.filter((a) => a.hidden).map((a) => a.name));
  return hidden.length ? ` (hidden in its table and card: ${hidden.join(", ")})` : "";
};

/**
 * One line per dataset: its cases, attributes and collections.
 * @param {Pick<DescribedDataset, "name" | "attributes" | "collections"> & {title?: string, caseCount?: number | null}} d
 */
export const datasetLine = (d) =>
  `• ${d.name}${d.title && d.title !== d.name ? ` (titled ${JSON.stringify(d.title)}; either word names it)` : ""}: ` +
  `${plural(d.caseCount ?? 0, "case")}; attributes ${d.attributes.join(", ") || "(none)"}` +
  hiddenText(d) +
  (d.collections.length > 1
    ? ` (collections: ${d.collections.map((c) => `${c.name} ${c.caseCount}`).join(" > ")})`
    : "");

/**
 * The tools' shared state and helpers. `call` is the transport to CODAP; `rng` draws generated data (without
 * one, each dataset's numbers come from its own arguments, so a replayed trace re-creates them); `raster`
 * decodes and encodes pictures (a canvas in the browser); `sleep` and `now` pace waits on CODAP. `listen(fn)`
 * hears CODAP's notifications to the plugin (fn(value) for each) and returns a function that stops it; null where
 * there are none (unit tests). `drawing` says whether CODAP has drawn what it holds (drawing.js: not while its
 * tab is hidden); without one, everything counts as drawn.
 * @param {object} io
 * @param {CodapCall} io.call
 * @param {(() => number) | null} [io.rng]
 * @param {string} [io.pluginVersion]
 * @param {Raster<any> | null} [io.raster]
 * @param {(ms: number) => Promise<void>} [io.sleep]
 * @param {() => number} [io.now]
 * @param {((fn: (value: CodapNotification) => void) => () => void) | null} [io.listen]
 * @param {typeof fetch} [io.fetch]
 * @param {Drawing} [io.drawing]
 */
export function createToolContext({
  call,
  rng = null,
  pluginVersion = VERSION,
  raster = null,
  sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now = () => Date.now(),
  listen = null,
  drawing = ALWAYS_DRAWN,
}) {
  // The document as last read, until anything may have changed it: a request of the tools' other than a read, or
  // any notification from CODAP but the document itself and CODAP's own reads (its ask for the plugin's state,
  // made for each document read) (codap_document.js).
  const documents = createDocumentCache();
  listen?.((value) => {
    if (value?.resource !== "document" && value?.action !== "get") documents.changed();
  });
  /** @type {{beforeChange: ((requests: CodapRequest[]) => Promise<void>) | null}} the journal's, told of each change first */
  const hooks = { beforeChange: null };
  /** @type {CodapCall} */
  const tracked = async (requests) => {
    if (mayChange(requests)) {
      await hooks.beforeChange?.(Array.isArray(requests) ? requests : [requests]);
      documents.changed();
    }
    return call(requests);
  };
  const codap = createCodapQuery({ call: tracked, sleep, now });

  // A graph's picture, or why CODAP has not drawn it (pictures.js).
  const graphPicture = createGraphPicture({ codap, raster, drawing, sleep });

  /**
   * Where the document stands after a change, in two messages whatever its size: every dataset with its row
   * count, and the components by type. `{text, data}`; the text is one line for the end of an answer.
   */
  async function documentDigest() {
    const list = get("dataContextList");
    const comps = get("componentList");
    const [listed, compReply] = await codap.send([list, comps]);
    const datasets = isCodapSuccess(listed) ? codap.datasetList(listed) : [];
    const counts = datasets.map((d) => get(`${dataContext(d.id)}.itemCount`));
    const counted = await codap.send(counts);
    const rows = datasets.map((d, i) => ({
      name: d.name,
      ...(d.title && d.title !== d.name ? { title: d.title } : {}),
      rows: isCodapSuccess(counted[i]) && typeof counted[i].values === "number" ? counted[i].values : null,
    }));
    /** @type {Array<{type: string}>} */
    const components = isCodapSuccess(compReply) ? compReply.values ?? [] : [];
    /** @type {Record<string, number>} */
    const byType = {};
    for (const c of components) byType[c.type] = (byType[c.type] ?? 0) + 1;
    const datasetText = rows.length
      ? `${plural(rows.length, "dataset")} (${rows.map((d) => `${d.name}${d.title ? ` ("${d.title}")` : ""}: ${d.rows ?? "?"} rows`).join(", ")})`
      : "no datasets";
    const compText = components.length
      ? `${plural(components.length, "component")} (${Object.entries(byType).map(([t, n]) => `${n} ${t}`).join(", ")})`
      : "no components";
    return {
      text: `Document now: ${datasetText}; ${compText}.`,
      data: { datasets: rows, components: { count: components.length, byType } },
    };
  }

  /**
   * What a graph holds, from CODAP's data (graph_data.js): {text, data}.
   * @param {import("./graph_state.js").GraphState} state the graph's state (graph_state.js)
   * @param {Parameters<typeof describeGraphData>[2]} [options]
   */
  const graphData = (state, options) => describeGraphData(codap, state, options);

  return { ...codap, codap, rng, pluginVersion, raster, sleep, now, listen, documents, hooks, graphPicture, graphData, documentDigest };
}

/**
 * What every family's tools share (createToolContext's answer); createTools adds the journal of restore points
 * (journal.js) when it has a tool catalog.
 * @typedef {ReturnType<typeof createToolContext>} ToolContext
 */

/**
 * Ends a changing tool's answer with the document digest: the last text item gains its line and the structured
 * data a `document` field. A digest that cannot be read leaves the answer as it was (the change was made).
 * @param {{documentDigest: () => Promise<{text: string, data: unknown}>}} ctx
 * @param {ToolResult} result
 * @returns {Promise<ToolResult>}
 */
export async function withDigest(ctx, result) {
  let digest;
  try {
    digest = await ctx.documentDigest();
  } catch {
    return result;
  }
  const texts = result.content.filter((c) => c.type === "text");
  const last = texts[texts.length - 1];
  if (last) last.text += `\n${digest.text}`;
  if (result.structuredContent && typeof result.structuredContent === "object" && !Array.isArray(result.structuredContent)) {
    result.structuredContent.document = digest.data;
  }
  return result;
}
