// @ts-check
// Graphs: make one and look at one as CODAP draws it; change one (graph_update.js) and show statistics on one
// (CODAP's adornments, adornments.js).

import { DEFAULT_MAX_SIZE } from "../imaging.js";
import { createAdornmentTools } from "./adornments.js";
import { createPlacer, placementText } from "./component_place.js";
import { ToolError, get, graphLabel, invalid, plotName, toolResult, unknownAttribute } from "./context.js";
import { categoryCounts } from "./graph_counts.js";
import { applyExtras, checkExtras } from "./graph_create_settings.js";
import { joinLines } from "./graph_lines.js";
import { rebuildGraph } from "./graph_rebuild.js";
import { describeGraphState, graphStateFrom, readGraphStates } from "./graph_state.js";
import { createGraphUpdate } from "./graph_update.js";
import { refuseHistogramZoom } from "./histogram_axis.js";

/**
 * @import {CodapId, CodapRequest, DescribedAttribute} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

const BINNED = new Set(["histogram", "binned_dot_plot"]);

/** @param {ToolContext} ctx */
export function createGraphTools(ctx) {
  const { send, must, findDataset, describeDatasets, listGraphs, pickGraph, graphPicture, graphData } = ctx;
  const placer = createPlacer(ctx);
  const updates = createGraphUpdate(ctx);
  const adornmentTools = createAdornmentTools(ctx, updates.update_codap_graph);

  /**
   * A picture's answer beside what the graph holds (graph_data.js), read whether or not CODAP drew it; a graph
   * whose data cannot be read still has its picture.
   * @param {import("./graph_state.js").GraphState} state the graph's state (graph_state.js)
   * @param {Parameters<typeof graphData>[1]} [options]
   */
  async function heldData(state, options) {
    try {
      return await graphData(state, options);
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      return { text: `Its data could not be read: ${err.message}`, data: null };
    }
  }

  /**
   * @param {{datasetName: string, graphType: string, xAttribute: string, yAttribute?: string,
   *   legendAttribute?: string, title?: string, includeImage?: boolean, binWidth?: number, binAlignment?: number,
   *   groupLinesByLegend?: boolean, place?: string, relativeTo?: string | number}
   *   & import("./graph_create_settings.js").CreateExtras} args
   */
  async function create_codap_graph(args) {
    placer.checkPlace(args);
    const { datasetName, graphType, xAttribute, yAttribute, legendAttribute, title } = args;
    const bins = args.binWidth !== undefined || args.binAlignment !== undefined;
    if (graphType === "histogram") refuseHistogramZoom({ ...args }, "x");
    if (bins && !BINNED.has(graphType)) throw invalid("binWidth and binAlignment apply to a histogram or a binned_dot_plot.");
    if (args.groupLinesByLegend !== undefined && graphType !== "line_graph") {
      throw invalid("groupLinesByLegend applies to a line_graph (with a legendAttribute).");
    }
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found]);
    const attrs = new Map(dataset.collections.flatMap((c) => c.attributes).map((a) => [a.name, a]));
    checkExtras(args, (name) => attrs.has(name));
    const x = attrs.get(xAttribute);
    if (!x) throw unknownAttribute(dataset, xAttribute, "the x axis");
    const needsY = graphType === "scatterplot" || graphType === "line_graph";
    if (needsY && !yAttribute) throw invalid(`A ${graphType} needs yAttribute as well as xAttribute.`);
    // A dot plot takes a category on y too: one row of dots per value (CODAP's split by a category).
    const wantsY = needsY || ((graphType === "dot_plot" || graphType === "binned_dot_plot") && Boolean(yAttribute));
    const y = wantsY ? attrs.get(/** @type {string} */ (yAttribute)) : undefined;
    if (wantsY && !y) throw unknownAttribute(dataset, yAttribute, "the y axis");
    // How the graph treats each axis' attribute: as CODAP types it unless xAttributeType or yAttributeType says.
    const numericX = args.xAttributeType ? args.xAttributeType === "numeric" : x.type === "numeric";
    const numericY = args.yAttributeType ? args.yAttributeType === "numeric" : y?.type === "numeric";
    if (graphType === "dot_plot" && y && numericY && numericX) {
      throw new ToolError(
        `A dot_plot splits its dots by a category: ${JSON.stringify(y.name)} and ${JSON.stringify(x.name)} are both ` +
          `numeric, which makes a scatterplot (graphType scatterplot). To split the dots by each value of ${JSON.stringify(y.name)}, ` +
          `give yAttributeType "categorical" (the axis menu's Treat as Categorical).`,
        "invalid_arguments",
        { instead: { yAttributeType: "categorical" } },
      );
    }
    const legend = legendAttribute ? attrs.get(legendAttribute) : undefined;
    if (legendAttribute && !legend) throw unknownAttribute(dataset, legendAttribute, "the legend");
    /** @type {string[]} */
    const notes = [];
    if (yAttribute && !wantsY) notes.push(`yAttribute ${JSON.stringify(yAttribute)} was not used for a ${graphType}.`);

    // A bar chart counts the cases at each value: a numeric x is treated as categorical for it, as CODAP's
    // own "treat as categorical" does. A histogram of a category is a bar chart of its counts.
    const bars = graphType === "bar_chart" || (graphType === "histogram" && !numericX);
    /** @type {Record<string, unknown>} */
    const values = { type: "graph", dataContext: dataset.name, xAttributeName: x.name };
    if (y) values.yAttributeName = y.name;
    if (legend) values.legendAttributeName = legend.name;
    if (bars && numericX) values.xAttributeType = "categorical";
    else if (args.xAttributeType) values.xAttributeType = args.xAttributeType;
    if (y && args.yAttributeType) values.yAttributeType = args.yAttributeType;
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
    if (BINNED.has(graphType) && !numericX) notes.push(`${x.name} is categorical, so its counts are shown as bars.`);
    if (BINNED.has(graphType) && numericX && graph.plotType === "dotPlot") {
      // CODAP's plugin API cannot group a plot into bins: its saved form can (graph_rebuild.js)
      const rebuilt = await rebuildGraph(ctx, graphId, {
        plotType: "binnedDotPlot",
        ...(args.binWidth !== undefined ? { binWidth: args.binWidth } : {}),
        ...(args.binAlignment !== undefined ? { binAlignment: args.binAlignment } : {}),
      }).catch((/** @type {unknown} */ err) => {
        if (!(err instanceof ToolError)) throw err;
        notes.push(
          `The dots could not be grouped into bins (${err.message}): choose "Group into Bins"` +
            `${graphType === "histogram" ? ' and "Fuse Dots into Bars"' : ""} in the graph's Configuration menu.`,
        );
        return null;
      });
      notes.push(...(rebuilt?.notes ?? []));
      /** @type {CodapRequest[]} */
      const fuse = graphType === "histogram" && rebuilt ? [{ action: "update", resource: component, values: { pointsAreFusedIntoBars: true } }] : [];
      const answers = await send([...fuse, read]);
      if (fuse.length && answers[0]?.success !== true) {
        notes.push(`CODAP grouped the dots into bins but did not fuse them into bars: ${answers[0]?.values?.error ?? "no reason"}.`);
      }
      graph = must(read, answers[answers.length - 1]).values ?? graph;
    }
    if (graphType === "line_graph" && graph.legendAttributeName && graph.showConnectingLines) {
      notes.push(...(await joinLines(ctx, graph, { group: args.groupLinesByLegend !== false })).notes);
    }
    if (graphType === "scatterplot" && graph.plotType !== "scatterPlot") {
      notes.push("A scatter plot needs two numeric attributes; CODAP plots a category against a number this way.");
    }
    const extras = await applyExtras({ ...updates, ...adornmentTools }, graphId, args);
    notes.push(...extras.notes);
    const state = (await readGraphStates(ctx, [graphId], { document: BINNED.has(graphType) && ctx.listen ? "read" : null })).get(String(graphId));
    const counted = state ? await categoryCounts(ctx, state, dataset.id) : null;
    const made = plotName(graph.plotType) + (graph.showConnectingLines ? " with connecting lines" : "") +
      (state?.bins ? ` (bins of ${state.bins.width} from ${state.bins.alignment})` : "");
    const axes = `x = ${graph.xAttributeName ?? "(none)"}${graph.yAttributeName ? `, y = ${graph.yAttributeName}` : ""}` +
      (graph.legendAttributeName ? `, points coloured by ${graph.legendAttributeName}` : "");
    const { placement, note: placed } = await placer.placeNew(graphId, args); // before its picture
    /** @type {import("./pictures.js").GraphPicture | null} */
    let picture = null;
    let held = null;
    if (args.includeImage) {
      try {
        picture = await graphPicture({ id: graphId, title: graph.title || dataset.name }); // CODAP shows that
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        notes.push(`No picture: ${err.message}`); // the graph was made; only its picture is missing
      }
      held = await heldData(state ?? graphStateFrom(graph, [], null, null, null), { dataset });
    }
    const pictured = picture?.drawn ? ` Its picture is attached: ${picture.sentence}` : picture ? ` ${picture.sentence}` : "";
    const result = toolResult(
      `Created a graph in CODAP from ${JSON.stringify(dataset.name)}: ${made}; ${axes}` +
        (graph.title ? `; title ${JSON.stringify(graph.title)}` : "") + "." +
        (counted ? ` ${counted.text}` : "") + (extras.said.length ? ` ${extras.said.join(" ")}` : "") + pictured +
        (held ? ` What it holds, from CODAP's data: ${held.text}` : "") + (notes.length ? ` ${notes.join(" ")}` : "") +
        (placement ? placementText(placement) : "") + placed,
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
        ...(state ? { state, described: describeGraphState(state) } : {}),
        ...(counted ? { categoryCounts: counted.counts } : {}),
        ...extras.out,
        notes,
        ...(picture?.drawn ? { image: picture.facts } : picture ? { imageNotDrawn: picture.facts } : {}),
        ...(held?.data ? { graphData: held.data } : {}),
        ...(placement ? { placement } : {}),
      },
    );
    if (picture?.drawn) result.content.push(picture.item);
    return result;
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
    const held = await heldData(graphStateFrom(d, [], null, null, null)); // what the graph list read of it
    const axes = [d.xAttributeName && `x = ${d.xAttributeName}`, d.yAttributeName && `y = ${d.yAttributeName}`]
      .filter(Boolean);
    const what = [plotName(d.plotType), d.dataContext && `of ${JSON.stringify(d.dataContext)}`].filter(Boolean).join(" ");
    const result = toolResult(
      `${picture.drawn ? "Picture of graph" : "Graph"} ${graphLabel(graph)}: ${what}` +
        `${axes.length ? `, ${axes.join(", ")}` : ""}. ${picture.sentence} What it holds, from CODAP's data: ${held.text}`,
      {
        graphId: graph.id,
        title: graph.title,
        ...(graph.name ? { name: graph.name } : {}),
        dataset: d.dataContext ?? null,
        plotType: d.plotType ?? null,
        xAttribute: d.xAttributeName ?? null,
        yAttribute: d.yAttributeName ?? null,
        drawn: picture.drawn,
        ...(picture.drawn ? picture.facts : { notDrawn: picture.facts }),
        ...(held.data ? { graphData: held.data } : {}),
      },
    );
    if (picture.drawn) result.content.push(picture.item);
    return result;
  }

  return {
    create_codap_graph,
    ...updates,
    ...adornmentTools,
    get_codap_graph_image,
  };
}
