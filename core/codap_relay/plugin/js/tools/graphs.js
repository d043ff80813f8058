// Graphs: make one, and look at one as CODAP draws it.

import { DEFAULT_MAX_SIZE } from "../imaging.js";
import {
  ToolError,
  get,
  graphLabel,
  invalid,
  plotName,
  toolResult,
  unknownAttribute,
} from "./context.js";

export function createGraphTools(ctx) {
  const { send, must, findDataset, describeDatasets, listGraphs, pickGraph, graphPicture } = ctx;

  async function create_codap_graph(args) {
    const { datasetName, graphType, xAttribute, yAttribute, title } = args;
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found]);
    const attrs = new Map(dataset.collections.flatMap((c) => c.attributes).map((a) => [a.name, a]));
    const x = attrs.get(xAttribute);
    if (!x) throw unknownAttribute(dataset, xAttribute, "the x axis");
    const wantsY = graphType === "scatterplot" || graphType === "line_graph";
    if (wantsY && !yAttribute) throw invalid(`A ${graphType} needs yAttribute as well as xAttribute.`);
    const y = wantsY ? attrs.get(yAttribute) : undefined;
    if (wantsY && !y) throw unknownAttribute(dataset, yAttribute, "the y axis");
    const notes = [];
    if (yAttribute && !wantsY) notes.push(`yAttribute ${JSON.stringify(yAttribute)} was not used for a ${graphType}.`);

    const numericX = x.type === "numeric";
    // A bar chart counts the cases at each value: a numeric x is treated as categorical for it, as CODAP's
    // own "treat as categorical" does. A histogram of a category is a bar chart of its counts.
    const bars = graphType === "bar_chart" || (graphType === "histogram" && !numericX);
    const values = { type: "graph", dataContext: dataset.name, xAttributeName: x.name };
    if (y) values.yAttributeName = y.name;
    if (bars && numericX) values.xAttributeType = "categorical";
    if (title) Object.assign(values, { name: title, title });
    const create = { action: "create", resource: "component", values };
    const [created] = await send([create]);
    const graphId = must(create, created, "creating the graph").values?.id;
    const component = `component[${graphId}]`;

    const update = {};
    if (graphType === "line_graph") update.showConnectingLines = true;
    if (bars) update.pointsAreFusedIntoBars = true;
    const read = get(component);
    const changes = Object.keys(update).length ? [{ action: "update", resource: component, values: update }] : [];
    let replies = await send([...changes, read]);
    let graph = must(read, replies[replies.length - 1]).values ?? {};
    if (changes.length && replies[0]?.success !== true) {
      notes.push(`CODAP did not apply ${JSON.stringify(update)}: ${replies[0]?.values?.error ?? "no reply"}.`);
    }
    // CODAP finds the graph's dataset by title before name; if another dataset's title is this name, the new
    // graph shows the wrong data. Point it at this dataset by id and read it again.
    const bound = (g) => g.dataContext === dataset.name && g.xAttributeName === x.name && (!y || g.yAttributeName === y.name);
    if (!bound(graph)) {
      const repair = {
        action: "update",
        resource: component,
        values: { dataContext: String(dataset.id), xAttributeID: x.id, ...(y ? { yAttributeID: y.id } : {}) },
      };
      replies = await send([repair, ...changes, read]);
      graph = must(read, replies[replies.length - 1]).values ?? {};
    }
    if (!bound(graph)) {
      notes.push(
        `CODAP shows ${JSON.stringify(graph.dataContext)} with x = ${graph.xAttributeName ?? "(none)"}` +
          `${y ? `, y = ${graph.yAttributeName ?? "(none)"}` : ""} on this graph, not what was asked.`,
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
    const axes = `x = ${graph.xAttributeName ?? "(none)"}${graph.yAttributeName ? `, y = ${graph.yAttributeName}` : ""}`;
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
        ...(graph.title ? { title: graph.title } : {}),
        notes,
        ...(picture ? { image: picture.facts } : {}),
      },
    );
    if (picture) result.content.push(picture.item);
    return result;
  }

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

  return { create_codap_graph, get_codap_graph_image };
}
