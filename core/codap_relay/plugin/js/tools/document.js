// @ts-check
// The document as a whole: what CODAP holds and shows.

import { datasetLine, get, plotName, plural, publicDataset, toolResult } from "./context.js";
import { readDocument } from "./codap_document.js";
import { componentSettings, settingsText } from "./component_state.js";
import { describeGraphState, readGraphStates } from "./graph_state.js";
import { placeOf, placeText, withLayout } from "./layout.js";

/**
 * @import {CodapId, CodapReply, CodapSuccess} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * A component as get_codap_status describes it.
 * @typedef {object} ComponentInfo
 * @property {CodapId} id
 * @property {string} type
 * @property {string} title
 * @property {string} [name]
 * @property {string} [dataset]
 * @property {string} [plotType]
 * @property {string} [xAttribute]
 * @property {string} [yAttribute]
 * @property {boolean} [hidden]
 * @property {boolean} [thisPlugin]
 * @property {import("./graph_state.js").GraphState} [graph] a graph's whole state (graph_state.js)
 * @property {{left: number, top: number}} [position]
 * @property {{width: number, height: number}} [size]
 * @property {boolean} [minimized]
 * @property {CodapId[]} [covers] the shown components it overlaps
 * @property {ReturnType<typeof import("./sliders.js").sliderFacts>} [slider] a slider's settings
 * @property {string} [text] a text box's text
 * @property {string} [markdown] a text box's formatting, as Markdown (when it has any)
 * @property {{indexColumn: boolean, collapsedParents: number}} [table] a case table's own settings
 * @property {Record<string, unknown>} [map] a map's settings (maps.js mapStateOf)
 */

/** @param {ToolContext} ctx */
export function createDocumentTools(ctx) {
  const { send, must, describeAll, pluginVersion } = ctx;

  /**
   * @param {{id: CodapId, type: string, title?: string, name?: string, hidden?: boolean}} c componentList's entry
   * @param {CodapReply | undefined} detail CODAP's answer to get component[id]
   * @param {CodapId | undefined} frameId the plugin's own component
   * @returns {ComponentInfo}
   */
  function componentInfo(c, detail, frameId) {
    const v = detail?.success === true ? detail.values ?? {} : {};
    return {
      id: c.id,
      type: c.type,
      title: c.title ?? v.title ?? "",
      ...(c.name ? { name: c.name } : {}),
      ...(v.dataContext ? { dataset: v.dataContext } : {}),
      ...(v.plotType ? { plotType: v.plotType } : {}),
      ...(v.xAttributeName ? { xAttribute: v.xAttributeName } : {}),
      ...(v.yAttributeName ? { yAttribute: v.yAttributeName } : {}),
      ...(c.hidden ? { hidden: true } : {}),
      ...(c.id === frameId ? { thisPlugin: true } : {}),
      ...placeOf(v),
    };
  }

  /** @param {ComponentInfo} c */
  function componentLine(c) {
    const named = c.title ? ` "${c.title}"` : "";
    if (c.thisPlugin) return `• plugin${named} (this relay plugin)`;
    if (c.type === "graph" && c.graph) return `• graph${named} of ${c.graph.dataset ?? "no dataset"} (id ${c.id}): ${describeGraphState(c.graph)}`;
    if (c.type === "graph") {
      const axes = [c.xAttribute && `x = ${c.xAttribute}`, c.yAttribute && `y = ${c.yAttribute}`].filter(Boolean);
      return `• graph${named}${c.dataset ? ` of ${c.dataset}` : ""}: ${plotName(c.plotType)}` +
        (axes.length ? `, ${axes.join(", ")}` : "");
    }
    return `• ${c.type}${named}${c.dataset ? ` of ${c.dataset}` : ""}`;
  }

  /** @param {{includeDatasets?: boolean, includeComponents?: boolean}} args */
  async function get_codap_status(args) {
    const includeDatasets = args.includeDatasets !== false;
    const includeComponents = args.includeComponents !== false;
    const frame = get("interactiveFrame");
    const list = get("dataContextList");
    const comps = get("componentList");
    const first = [frame, ...(includeDatasets ? [list] : []), ...(includeComponents ? [comps] : [])];
    const replies = await send(first);
    const frameInfo = replies[0]?.success === true ? replies[0].values ?? {} : {};
    const codapVersion = frameInfo.codapVersion ?? "unknown";
    // A person panning or zooming a map tells the plugin nothing: a document kept from before would give its old view.
    const shown = includeComponents ? replies[replies.length - 1] : null;
    if (shown?.success === true && (shown.values ?? []).some((/** @type {any} */ c) => c?.type === "map")) ctx.documents?.changed();
    // The document's name and what only the whole document says of the components (minimized ones).
    const state = ctx.listen ? await readDocument(ctx).catch(() => null) : null;
    /**
     * @type {{codapVersion: string, plugin: {name: string, version: string}, document?: {name: string},
     *   datasets?: unknown[], components?: ComponentInfo[]}}
     */
    const structured = {
      codapVersion,
      plugin: { name: "codap-relay", version: pluginVersion },
      ...(typeof state?.name === "string" ? { document: { name: state.name } } : {}),
    };
    const lines = [
      `CODAP is connected (version ${codapVersion})` +
        (structured.document ? `; the document is ${JSON.stringify(structured.document.name)}.` : "."),
    ];
    const listed = includeDatasets ? must(list, replies[1]) : null;
    /** @type {Array<{id: CodapId, type: string, title?: string, name?: string, hidden?: boolean}>} */
    const components = includeComponents ? must(comps, replies[replies.length - 1]).values ?? [] : [];
    // The components' details ride in the same message as the collection lists.
    const details = components.map((c) => get(`component[${c.id}]`));
    /** @type {CodapReply[]} */
    let detailReplies = [];
    if (includeDatasets) {
      const described = await describeAll(/** @type {CodapSuccess} */ (listed), details);
      structured.datasets = described.datasets.map(publicDataset);
      detailReplies = described.extra;
      lines.push(
        structured.datasets.length
          ? `${plural(structured.datasets.length, "dataset")}:\n${described.datasets.map(datasetLine).join("\n")}`
          : "No datasets yet.",
      );
    } else {
      detailReplies = await send(details);
    }
    if (includeComponents) {
      structured.components = withLayout(components.map((c, i) => componentInfo(c, detailReplies[i], frameInfo.id)), state);
      const byId = new Map(components.map((c, i) => [String(c.id), detailReplies[i]?.success === true ? detailReplies[i].values ?? {} : {}]));
      const settings = await componentSettings(ctx, structured.components, byId, state);
      for (const c of structured.components) Object.assign(c, settings.get(String(c.id)) ?? {});
      const graphs = structured.components.filter((c) => c.type === "graph");
      const states = await readGraphStates(ctx, graphs.map((g) => g.id), { document: state });
      for (const g of graphs) {
        const graphState = states.get(String(g.id));
        if (graphState) g.graph = graphState;
      }
      lines.push(
        structured.components.length
          ? `${plural(structured.components.length, "component")} (at (left, top) on the canvas, width × height):\n` +
            structured.components.map((c) => `${componentLine(c)}${placeText(c)}${settingsText(c)}`).join("\n")
          : "No components.",
      );
    }
    return toolResult(lines.join("\n"), structured);
  }

  return { get_codap_status };
}
