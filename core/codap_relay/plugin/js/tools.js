// The tools: each turns validated arguments into CODAP Data Interactive requests and answers with a
// readable summary for the model plus the structured data (MCP's content + structuredContent).
// They reach CODAP through the query layer (codap_query.js); nothing here touches the DOM or the relay.

import { ToolError } from "./errors.js";
import {
  MAX_RECORDS,
  flattenItems,
  generateRecords,
  hashText,
  inferAttributes,
  makeRng,
  normaliseRecord,
  toDelimited,
} from "./data.js";
import { plural } from "./format.js";
import { DEFAULT_MAX_SIZE, fitPicture } from "./imaging.js";
import { nameProblem } from "./names.js";
import {
  PICTURE_WAIT_MS,
  collection,
  createCodapQuery,
  dataContext,
  get,
  graphLabel,
  invalid,
  refused,
} from "./codap_query.js";
import { VERSION } from "./version.js";


const MAX_TEXT = 60_000; // longest data text put in the model-facing summary

export function toolResult(text, structured) {
  return { content: [{ type: "text", text }], structuredContent: structured };
}

/** What CODAP's plot types are called in a sentence. */
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

export function plotName(plotType) {
  return PLOT_NAMES[plotType] ?? plotType ?? "graph";
}

/**
 * `rng` draws generated data; without one, each dataset's numbers come from its own arguments (name, type,
 * count), so the same call makes the same data again: a replayed trace re-creates what the session saw.
 * `raster` decodes and encodes pictures (imaging.js: a canvas in the browser); `sleep` and `now` pace the wait
 * for a new graph's picture.
 */
export function createTools({
  call,
  rng = null,
  pluginVersion = VERSION,
  raster = null,
  sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now = () => Date.now(),
}) {
  const codap = createCodapQuery({ call, sleep, now });
  const { send, must, ask, datasetList, findDataset, describeDatasets, describeAll } = codap;
  const { listGraphs, pickGraph, graphSnapshot } = codap;

  const publicDataset = (d) => ({
    ...d,
    collections: d.collections.map(({ attributes, ...c }) => ({
      ...c,
      attributes: attributes.map(({ id: _id, ...a }) => a),
    })),
  });

  const datasetLine = (d) =>
    `• ${d.name}: ${plural(d.caseCount ?? 0, "case")}; attributes ${d.attributes.join(", ") || "(none)"}` +
    (d.collections.length > 1
      ? ` (collections: ${d.collections.map((c) => `${c.name} ${c.caseCount}`).join(" > ")})`
      : "");

  function unknownAttribute(dataset, attr, role) {
    const names = dataset.attributes;
    return new ToolError(
      `Dataset ${JSON.stringify(dataset.name)} has no attribute ${JSON.stringify(attr)} for ${role}. ` +
        `Its attributes: ${names.join(", ") || "(none)"}.`,
      "attribute_not_found",
      { datasetName: dataset.name, attribute: attr, available: names },
    );
  }

  /** The picture fitted for the model: the image content item, its facts, and a sentence about it. */
  async function graphPicture(graph, maxSize = DEFAULT_MAX_SIZE) {
    if (!raster) throw new ToolError("This plugin cannot make pictures here (no canvas).", "graph_image_unavailable");
    if (graph.hidden) {
      throw new ToolError(
        `Graph ${graphLabel(graph)} is hidden in CODAP, so it is not drawn and has no picture. Show it again ` +
          '(codap_api: update the component with {"isVisible": true}), then ask again.',
        "graph_image_unavailable",
        { graphId: graph.id },
      );
    }
    const snapshot = await graphSnapshot(graph);
    const picture = await fitPicture(snapshot.uri, { maxSize, raster });
    const kind = picture.mimeType === "image/jpeg" ? "JPEG" : "PNG";
    let sentence = `${kind}, ${picture.width} × ${picture.height} px, ${Math.ceil(picture.bytes / 1024)} KB.`;
    if (!snapshot.settled) {
      sentence += ` CODAP was still changing the graph after ${PICTURE_WAIT_MS / 1000} s: this is the last picture ` +
        "it gave, and points may be caught moving.";
    }
    if (picture.scaled) {
      sentence += ` CODAP drew it at ${picture.original.width} × ${picture.original.height} px; it was scaled down ` +
        `to at most ${maxSize} px on its longer side.`;
    }
    if (picture.reencoded) sentence += ` It was re-encoded as ${kind} to stay small.`;
    return {
      item: { type: "image", data: picture.base64, mimeType: picture.mimeType },
      facts: {
        mimeType: picture.mimeType,
        width: picture.width,
        height: picture.height,
        bytes: picture.bytes,
        codapWidth: picture.original.width,
        codapHeight: picture.original.height,
        scaled: picture.scaled,
        reencoded: picture.reencoded,
        settled: snapshot.settled,
      },
      sentence,
    };
  }

  // --- the tools -------------------------------------------------------------------------------------

  async function create_codap_dataset(args) {
    const { datasetName, dataType, recordCount, customData } = args;
    const problem = nameProblem("Dataset", datasetName);
    if (problem) throw invalid(problem);
    let rows;
    let attrs;
    let note = "";
    if (dataType === "custom") {
      if (!Array.isArray(customData) || customData.length === 0) {
        throw invalid("dataType 'custom' needs customData: a non-empty array of objects, one per record.");
      }
      if (customData.length > MAX_RECORDS) {
        throw invalid(`customData holds ${customData.length} records; the limit is ${MAX_RECORDS} per call. ` +
          "Create the dataset with the first 1000 and add the rest with add_codap_cases.");
      }
      if (customData.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
        throw invalid("customData must hold objects, one per record, keyed by attribute name.");
      }
      rows = customData.map(normaliseRecord);
      attrs = inferAttributes(rows);
      if (attrs.length === 0) throw invalid("customData records have no fields; give each record at least one.");
      for (const a of attrs) {
        const bad = nameProblem("Attribute", a.name);
        if (bad) throw invalid(bad);
      }
      if (recordCount !== customData.length) note = ` (all ${customData.length} customData records were used)`;
    } else {
      const draw = rng ?? makeRng(hashText(JSON.stringify([datasetName, dataType, recordCount])));
      ({ rows, attrs } = generateRecords(dataType, recordCount, draw));
    }
    const list = get("dataContextList");
    const [listed] = await send([list]);
    if (datasetList(must(list, listed)).some((d) => d.name === datasetName)) {
      throw new ToolError(
        `CODAP already has a dataset named ${JSON.stringify(datasetName)}. Use add_codap_cases to add rows to it, ` +
          "or choose another name.",
        "dataset_exists",
        { datasetName },
      );
    }
    // CODAP answers a create for an existing name with that dataset, so the check above comes first.
    const create = {
      action: "create",
      resource: "dataContext",
      values: { name: datasetName, title: datasetName, collections: [{ name: datasetName, attrs }] },
    };
    const [createdReply] = await send([create]);
    const datasetId = must(create, createdReply, `creating dataset ${JSON.stringify(datasetName)}`).values?.id;
    // Rows, table and count in one message: one change in CODAP, one redraw, and the count CODAP holds after it.
    const addRows = { action: "create", resource: `${dataContext(datasetId)}.item`, values: rows };
    const table = { action: "create", resource: "component", values: { type: "caseTable", dataContext: String(datasetId) } };
    const count = get(`${dataContext(datasetId)}.itemCount`);
    const [added, tabled, counted] = await send([addRows, table, count]);
    if (added?.success !== true) {
      const error = refused(addRows, added, `the rows of the new dataset ${JSON.stringify(datasetName)}`);
      error.message += ` The dataset was created empty (id ${datasetId}); add rows with add_codap_cases.`;
      throw error;
    }
    const itemCount = must(count, counted).values;
    const attrList = attrs.map((a) => `${a.name} (${a.type})`).join(", ");
    const tableText = tabled?.success === true
      ? " A case table shows it."
      : ` CODAP did not open a case table: ${tabled?.values?.error ?? "no reply"}.`;
    return toolResult(
      `Created dataset ${JSON.stringify(datasetName)} in CODAP with ${plural(itemCount, "record")}${note} ` +
        `and ${plural(attrs.length, "attribute")}: ${attrList}.${tableText}`,
      {
        datasetName,
        datasetId,
        dataType,
        recordCount: itemCount,
        attributes: attrs.map((a) => ({ name: a.name, type: a.type })),
        caseTableId: tabled?.success === true ? tabled.values?.id : null,
        sample: rows.slice(0, 3),
      },
    );
  }

  async function add_codap_cases(args) {
    const { datasetName, cases } = args;
    if (!Array.isArray(cases) || cases.length === 0) {
      throw invalid("cases must be a non-empty array of objects, one per case, keyed by attribute name.");
    }
    if (cases.some((c) => c === null || typeof c !== "object" || Array.isArray(c))) {
      throw invalid("cases must hold objects, one per case, keyed by attribute name.");
    }
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    const known = new Set(dataset.attributes);
    const fields = [...new Set(cases.flatMap((c) => Object.keys(c)))];
    const ignored = fields.filter((k) => !known.has(k));
    if (fields.length > 0 && ignored.length === fields.length) {
      throw unknownAttribute(dataset, ignored[0], "the new cases (none of their fields match)");
    }
    // All cases in one request (one change, one redraw in CODAP), the counts read in the same message.
    const addRows = { action: "create", resource: `${dataContext(dataset.id)}.item`, values: cases.map(normaliseRecord) };
    const counts = dataset.collections.map((c) => get(`${collection(dataset.id, c.id)}.caseCount`));
    const [added, ...counted] = await send([addRows, ...counts]);
    const n = must(addRows, added, `adding cases to ${JSON.stringify(dataset.name)}`).itemIDs?.length ?? 0;
    const totals = dataset.collections.map((c, i) => ({
      name: c.name,
      caseCount: must(counts[i], counted[i]).values,
    }));
    const total = totals[totals.length - 1].caseCount;
    const parents = totals.length > 1
      ? ` (${totals.map((t) => `${t.name}: ${t.caseCount}`).join(" > ")})`
      : "";
    const warn = ignored.length
      ? ` Fields not in the dataset were ignored: ${ignored.join(", ")} (add attributes with codap_api first).`
      : "";
    return toolResult(
      `Added ${plural(n, "case")} to ${JSON.stringify(dataset.name)}; it now has ${plural(total, "case")}${parents}.` +
        warn,
      {
        datasetName: dataset.name,
        added: n,
        totalCases: total,
        ...(totals.length > 1 ? { collections: totals } : {}),
        ignoredFields: ignored,
      },
    );
  }

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

  async function get_codap_datasets() {
    const { datasets } = await describeAll(await ask(get("dataContextList")));
    const text = datasets.length
      ? `CODAP has ${plural(datasets.length, "dataset")}:\n${datasets.map(datasetLine).join("\n")}`
      : "CODAP has no datasets yet. Create one with create_codap_dataset.";
    return toolResult(text, { datasets: datasets.map(publicDataset) });
  }

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
    };
  }

  function componentLine(c) {
    const named = c.title ? ` "${c.title}"` : "";
    if (c.thisPlugin) return `• plugin${named} (this relay plugin)`;
    if (c.type === "graph") {
      const axes = [c.xAttribute && `x = ${c.xAttribute}`, c.yAttribute && `y = ${c.yAttribute}`].filter(Boolean);
      return `• graph${named}${c.dataset ? ` of ${c.dataset}` : ""}: ${plotName(c.plotType)}` +
        (axes.length ? `, ${axes.join(", ")}` : "");
    }
    return `• ${c.type}${named}${c.dataset ? ` of ${c.dataset}` : ""}${c.hidden ? " (hidden)" : ""}`;
  }

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
    const structured = { codapVersion, plugin: { name: "codap-relay", version: pluginVersion } };
    const lines = [`CODAP is connected (version ${codapVersion}).`];
    const listed = includeDatasets ? must(list, replies[1]) : null;
    const components = includeComponents ? must(comps, replies[replies.length - 1]).values ?? [] : [];
    // The components' details ride in the same message as the collection lists.
    const details = components.map((c) => get(`component[${c.id}]`));
    let detailReplies = [];
    if (includeDatasets) {
      const described = await describeAll(listed, details);
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
      structured.components = components.map((c, i) => componentInfo(c, detailReplies[i], frameInfo.id));
      lines.push(
        structured.components.length
          ? `${plural(structured.components.length, "component")}:\n${structured.components.map(componentLine).join("\n")}`
          : "No components.",
      );
    }
    return toolResult(lines.join("\n"), structured);
  }

  async function export_codap_data(args) {
    const format = args.format ?? "json";
    const found = await findDataset(args.datasetName);
    // The attributes and every item in one message, so the columns match the rows they describe.
    const colls = get(`${dataContext(found.id)}.collectionList`);
    const [listReply] = await send([colls]);
    const collections = must(colls, listReply).values ?? [];
    const attrRequests = collections.map((c) =>
      get(args.includeMetadata ? collection(found.id, c.id) : `${collection(found.id, c.id)}.attributeList`));
    const itemsRequest = get(`${dataContext(found.id)}.itemSearch[*]`);
    const replies = await send([...attrRequests, itemsRequest]);
    const described = collections.map((c, i) => {
      const v = must(attrRequests[i], replies[i]).values;
      return { name: c.name, attrs: (args.includeMetadata ? v?.attrs : v) ?? [] };
    });
    const items = must(itemsRequest, replies[replies.length - 1], `reading the rows of ${JSON.stringify(found.name)}`)
      .values ?? [];
    const { columns, rows } = flattenItems(described, items);
    const names = columns.map((c) => c.name);
    const metadata = {
      name: found.name,
      title: found.title || found.name,
      collections: described.map((c) => ({ name: c.name, attributes: c.attrs.map((a) => a.name) })),
      attributes: columns,
      rowCount: rows.length,
    };
    const structured = { datasetName: found.name, format, rowCount: rows.length, columns: names };
    if (args.includeMetadata) structured.metadata = metadata;
    let shown;
    if (format === "json") {
      structured.rows = rows;
      shown = jsonPreview(args.includeMetadata ? { metadata, rows } : rows);
    } else {
      structured.data = toDelimited(names, rows, format === "tsv" ? "\t" : ",");
      shown = structured.data.length > MAX_TEXT
        ? `${structured.data.slice(0, MAX_TEXT)}\n… (truncated here; structuredContent has all)`
        : structured.data;
    }
    const hierarchy = metadata.collections.length > 1
      ? ` The dataset is hierarchical (${metadata.collections.map((c) => c.name).join(" > ")}); each row is one ` +
        "leaf case carrying its parents' values."
      : "";
    const meta = args.includeMetadata
      ? `\nAttributes: ${columns.map((c) => `${c.name} (${c.type || "?"}${c.unit ? `, ${c.unit}` : ""}; ${c.collection})`).join(", ")}`
      : "";
    return toolResult(
      `Exported ${plural(rows.length, "row")} of ${JSON.stringify(found.name)} as ${format.toUpperCase()}.${hierarchy}${meta}\n\n${shown}`,
      structured,
    );
  }

  async function codap_api(args) {
    const { action, resource, values } = args;
    const reply = await ask({ action, resource, ...(values !== undefined ? { values } : {}) });
    const text = JSON.stringify(reply);
    return toolResult(
      `CODAP answered "${action} ${resource}" with success.\n${text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text}`,
      reply,
    );
  }

  return {
    create_codap_dataset,
    add_codap_cases,
    create_codap_graph,
    get_codap_datasets,
    get_codap_status,
    export_codap_data,
    get_codap_graph_image,
    codap_api,
  };
}

/**
 * The JSON text shown to the model: indented like JSON.stringify(value, null, 1), cut at MAX_TEXT. Rows are
 * written one at a time so a 10,000-row export does not build megabytes of text to show 60 kB of it.
 */
export function jsonPreview(value) {
  const rows = Array.isArray(value) ? value : value.rows;
  const head = Array.isArray(value) ? "[" : `{\n "metadata": ${JSON.stringify(value.metadata, null, 1).replaceAll("\n", "\n ")},\n "rows": [`;
  const indent = Array.isArray(value) ? " " : "  ";
  const tail = Array.isArray(value) ? "\n]" : "\n ]\n}";
  if (rows.length === 0) return Array.isArray(value) ? "[]" : `${head}]\n}`;
  let text = head;
  for (let i = 0; i < rows.length; i++) {
    text += `${i ? "," : ""}\n${indent}${JSON.stringify(rows[i], null, 1).replaceAll("\n", `\n${indent}`)}`;
    if (text.length > MAX_TEXT) {
      return `${text.slice(0, MAX_TEXT)}\n… (truncated here; structuredContent has all ${rows.length} rows)`;
    }
  }
  return text + tail;
}
