// The tools: each turns validated arguments into CODAP Data Interactive requests and answers with a
// readable summary for the model plus the structured data (MCP's content + structuredContent).
// `call` is the transport (CodapPhone.call); nothing here touches the DOM or the relay.

import { ToolError } from "./errors.js";
import {
  MAX_RECORDS,
  flattenItems,
  generateRecords,
  inferAttributes,
  makeRng,
  normaliseRecord,
  toDelimited,
} from "./data.js";
import { plural } from "./format.js";
import { collection as collectionRes, dataContext as dcRes, nameProblem } from "./names.js";

const CHUNK = 500; // items per create request: large enough to be quick, small enough for postMessage
const MAX_TEXT = 60_000; // longest data text put in the model-facing summary

export function toolResult(text, structured) {
  return { content: [{ type: "text", text }], structuredContent: structured };
}

function invalid(message) {
  return new ToolError(message, "invalid_arguments");
}

export function createTools({ call, rng = makeRng(), pluginVersion = "1.0.0" }) {
  /** One request; a CODAP failure becomes a ToolError carrying CODAP's own message. */
  async function ask(request, what) {
    const reply = await call(request);
    if (!reply || reply.success !== true) {
      const codapMessage = reply?.values?.error ?? "CODAP reported a failure without a message";
      throw new ToolError(
        `CODAP refused ${what ?? `"${request.action} ${request.resource}"`}: ${codapMessage}`,
        "codap_error",
        { action: request.action, resource: request.resource, codapError: codapMessage },
      );
    }
    return reply;
  }

  async function datasetNames() {
    const reply = await ask({ action: "get", resource: "dataContextList" });
    return (reply.values ?? []).map((d) => d.name);
  }

  async function loadDataset(name) {
    const problem = nameProblem("Dataset", name);
    if (problem) throw invalid(problem);
    const reply = await call({ action: "get", resource: dcRes(name) });
    if (!reply?.success) {
      const names = await datasetNames();
      throw new ToolError(
        `CODAP has no dataset named ${JSON.stringify(name)} (CODAP: ${reply?.values?.error ?? "not found"}). ` +
          (names.length ? `Datasets in CODAP: ${names.join(", ")}.` : "CODAP has no datasets yet; create one first."),
        "dataset_not_found",
        { datasetName: name, available: names },
      );
    }
    return reply.values;
  }

  const attributesOf = (dataset) => (dataset.collections ?? []).flatMap((c) => c.attrs ?? []);

  function unknownAttribute(dataset, attr, role) {
    const names = attributesOf(dataset).map((a) => a.name);
    return new ToolError(
      `Dataset ${JSON.stringify(dataset.name)} has no attribute ${JSON.stringify(attr)} for ${role}. ` +
        `Its attributes: ${names.join(", ") || "(none)"}.`,
      "attribute_not_found",
      { datasetName: dataset.name, attribute: attr, available: names },
    );
  }

  async function createItems(name, records) {
    let itemCount = 0;
    for (let i = 0; i < records.length; i += CHUNK) {
      const reply = await ask(
        { action: "create", resource: `${dcRes(name)}.item`, values: records.slice(i, i + CHUNK) },
        `adding rows to ${JSON.stringify(name)}`,
      );
      itemCount += (reply.itemIDs ?? []).length;
    }
    return itemCount;
  }

  async function caseCounts(dataset) {
    const colls = dataset.collections ?? [];
    if (colls.length === 0) return [];
    const replies = await call(
      colls.map((c) => ({ action: "get", resource: `${collectionRes(dataset.name, c.name)}.caseCount` })),
    );
    return colls.map((_, i) => (Array.isArray(replies) && replies[i]?.success ? replies[i].values : null));
  }

  async function describeDataset(name) {
    const dataset = await loadDataset(name);
    const counts = await caseCounts(dataset);
    const collections = (dataset.collections ?? []).map((c, i) => ({
      name: c.name,
      title: c.title ?? c.name,
      caseCount: counts[i],
      attributes: (c.attrs ?? []).map((a) => ({
        name: a.name,
        type: a.type || "",
        ...(a.unit ? { unit: a.unit } : {}),
        ...(a.title && a.title !== a.name ? { title: a.title } : {}),
        ...(a.formula ? { formula: a.formula } : {}),
      })),
    }));
    return {
      name: dataset.name,
      title: dataset.title || dataset.name,
      id: dataset.id,
      caseCount: collections.length ? collections[collections.length - 1].caseCount : 0,
      collections,
      attributes: collections.flatMap((c) => c.attributes.map((a) => a.name)),
    };
  }

  async function describeAll() {
    const names = await datasetNames();
    const out = [];
    for (const name of names) out.push(await describeDataset(name));
    return out;
  }

  const datasetLine = (d) =>
    `• ${d.name}: ${plural(d.caseCount ?? 0, "case")}; attributes ${d.attributes.join(", ") || "(none)"}` +
    (d.collections.length > 1 ? ` (collections: ${d.collections.map((c) => c.name).join(" > ")})` : "");

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
      rows = customData.map(normaliseRecord);
      attrs = inferAttributes(rows);
      if (attrs.length === 0) throw invalid("customData records have no fields; give each record at least one.");
      for (const a of attrs) {
        const bad = nameProblem("Attribute", a.name);
        if (bad) throw invalid(bad);
      }
      if (recordCount !== customData.length) note = ` (all ${customData.length} customData records were used)`;
    } else {
      ({ rows, attrs } = generateRecords(dataType, recordCount, rng));
    }
    const existing = await datasetNames();
    if (existing.includes(datasetName)) {
      throw new ToolError(
        `CODAP already has a dataset named ${JSON.stringify(datasetName)}. Use add_codap_cases to add rows to it, ` +
          "or choose another name.",
        "dataset_exists",
        { datasetName },
      );
    }
    const created = await ask(
      {
        action: "create",
        resource: "dataContext",
        values: { name: datasetName, title: datasetName, collections: [{ name: datasetName, attrs }] },
      },
      `creating dataset ${JSON.stringify(datasetName)}`,
    );
    const itemCount = await createItems(datasetName, rows);
    const table = await ask(
      { action: "create", resource: "component", values: { type: "caseTable", dataContext: datasetName } },
      `opening a case table for ${JSON.stringify(datasetName)}`,
    );
    const attrList = attrs.map((a) => `${a.name} (${a.type})`).join(", ");
    return toolResult(
      `Created dataset ${JSON.stringify(datasetName)} in CODAP with ${plural(itemCount, "record")}${note} ` +
        `and ${plural(attrs.length, "attribute")}: ${attrList}. A case table shows it.`,
      {
        datasetName,
        datasetId: created.values?.id,
        dataType,
        recordCount: itemCount,
        attributes: attrs.map((a) => ({ name: a.name, type: a.type })),
        caseTableId: table.values?.id,
        sample: rows.slice(0, 3),
      },
    );
  }

  async function add_codap_cases(args) {
    const { datasetName, cases } = args;
    if (!Array.isArray(cases) || cases.length === 0) {
      throw invalid("cases must be a non-empty array of objects, one per case, keyed by attribute name.");
    }
    const dataset = await loadDataset(datasetName);
    const known = new Set(attributesOf(dataset).map((a) => a.name));
    const fields = [...new Set(cases.flatMap((c) => Object.keys(c ?? {})))];
    const ignored = fields.filter((k) => !known.has(k));
    if (fields.length > 0 && ignored.length === fields.length) {
      throw unknownAttribute(dataset, ignored[0], "the new cases (none of their fields match)");
    }
    const rows = cases.map((c) => normaliseRecord(c ?? {}));
    const added = await createItems(dataset.name, rows);
    const counts = await caseCounts(dataset);
    const total = counts.length ? counts[counts.length - 1] : null;
    const warn = ignored.length
      ? ` Fields not in the dataset were ignored: ${ignored.join(", ")} (add attributes with codap_api first).`
      : "";
    return toolResult(
      `Added ${plural(added, "case")} to ${JSON.stringify(dataset.name)}` +
        (total !== null ? `; it now has ${plural(total, "case")}.` : ".") + warn,
      { datasetName: dataset.name, added, totalCases: total, ignoredFields: ignored },
    );
  }

  async function create_codap_graph(args) {
    const { datasetName, graphType, xAttribute, yAttribute, title } = args;
    const dataset = await loadDataset(datasetName);
    const attrs = new Map(attributesOf(dataset).map((a) => [a.name, a]));
    if (!attrs.has(xAttribute)) throw unknownAttribute(dataset, xAttribute, "the x axis");
    const wantsY = graphType === "scatterplot" || graphType === "line_graph";
    if (wantsY && !yAttribute) {
      throw invalid(`A ${graphType} needs yAttribute as well as xAttribute.`);
    }
    if (yAttribute && wantsY && !attrs.has(yAttribute)) throw unknownAttribute(dataset, yAttribute, "the y axis");
    const xNumeric = attrs.get(xAttribute).type === "numeric";
    const yNumeric = wantsY && attrs.get(yAttribute).type === "numeric";
    const values = { type: "graph", dataContext: dataset.name, xAttributeName: xAttribute };
    if (wantsY) values.yAttributeName = yAttribute;
    if (title) Object.assign(values, { name: title, title });
    const reply = await ask({ action: "create", resource: "component", values }, "creating the graph");
    const graphId = reply.values?.id;
    const notes = [];
    if (yAttribute && !wantsY) notes.push(`yAttribute ${JSON.stringify(yAttribute)} was not used for a ${graphType}.`);
    let made;
    if (graphType === "scatterplot") {
      made = xNumeric && yNumeric
        ? "scatter plot"
        : `dot plot of ${xAttribute} against ${yAttribute} (at least one is not numeric, so CODAP groups by category)`;
    } else if (graphType === "line_graph") {
      const lines = await call({ action: "update", resource: `component[${graphId}]`, values: { showConnectingLines: true } });
      made = lines?.success
        ? "scatter plot with connecting lines (CODAP's line graph)"
        : `scatter plot without connecting lines (CODAP: ${lines?.values?.error ?? "no reply"})`;
    } else if (graphType === "bar_chart" && !xNumeric) {
      const fuse = await call({ action: "update", resource: `component[${graphId}]`, values: { pointsFusedIntoBars: true } });
      made = fuse?.success
        ? `bar chart of ${xAttribute} (dots fused into bars)`
        : `dot chart of ${xAttribute}, one column of dots per category (CODAP: ${fuse?.values?.error ?? "no reply"})`;
    } else if (xNumeric) {
      made = `dot plot of ${xAttribute}; for a histogram choose "Group into Bins" and "Fuse Dots into Bars" ` +
        "in the graph's configuration menu";
      if (graphType === "bar_chart") notes.push(`${xAttribute} is numeric; a bar chart needs a categorical attribute.`);
    } else {
      made = `dot chart of ${xAttribute}, one column of dots per category`;
      if (graphType === "histogram") notes.push(`${xAttribute} is categorical; a histogram needs a numeric attribute.`);
    }
    const axes = `x = ${xAttribute}${wantsY ? `, y = ${yAttribute}` : ""}`;
    return toolResult(
      `Created a graph in CODAP from ${JSON.stringify(dataset.name)}: ${made}; ${axes}` +
        (title ? `; title ${JSON.stringify(title)}` : "") + "." + (notes.length ? ` ${notes.join(" ")}` : ""),
      {
        graphId,
        datasetName: dataset.name,
        requested: graphType,
        made,
        xAttribute,
        ...(wantsY ? { yAttribute } : {}),
        ...(title ? { title } : {}),
        notes,
      },
    );
  }

  async function get_codap_datasets() {
    const datasets = await describeAll();
    const text = datasets.length
      ? `CODAP has ${plural(datasets.length, "dataset")}:\n${datasets.map(datasetLine).join("\n")}`
      : "CODAP has no datasets yet. Create one with create_codap_dataset.";
    return toolResult(text, { datasets });
  }

  async function get_codap_status(args) {
    const includeDatasets = args.includeDatasets !== false;
    const includeComponents = args.includeComponents !== false;
    const frame = await call({ action: "get", resource: "interactiveFrame" });
    const codapVersion = frame?.values?.codapVersion ?? "unknown";
    const structured = { codapVersion, plugin: { name: "codap-relay", version: pluginVersion } };
    const lines = [`CODAP is connected (version ${codapVersion}).`];
    if (includeDatasets) {
      structured.datasets = await describeAll();
      lines.push(
        structured.datasets.length
          ? `${plural(structured.datasets.length, "dataset")}:\n${structured.datasets.map(datasetLine).join("\n")}`
          : "No datasets yet.",
      );
    }
    if (includeComponents) {
      const reply = await ask({ action: "get", resource: "componentList" });
      structured.components = (reply.values ?? []).map((c) => ({
        id: c.id,
        type: c.type,
        title: c.title ?? "",
        ...(c.name ? { name: c.name } : {}),
      }));
      lines.push(
        structured.components.length
          ? `${plural(structured.components.length, "component")}: ` +
              structured.components.map((c) => `${c.type}${c.title ? ` "${c.title}"` : ""}`).join(", ")
          : "No components.",
      );
    }
    return toolResult(lines.join("\n"), structured);
  }

  async function export_codap_data(args) {
    const format = args.format ?? "json";
    const dataset = await loadDataset(args.datasetName);
    const reply = await ask(
      { action: "get", resource: `${dcRes(dataset.name)}.itemSearch[*]` },
      `reading the rows of ${JSON.stringify(dataset.name)}`,
    );
    const { columns, rows } = flattenItems(dataset.collections ?? [], reply.values ?? []);
    const names = columns.map((c) => c.name);
    const metadata = {
      name: dataset.name,
      title: dataset.title || dataset.name,
      ...(dataset.description ? { description: dataset.description } : {}),
      collections: (dataset.collections ?? []).map((c) => ({ name: c.name, attributes: (c.attrs ?? []).map((a) => a.name) })),
      attributes: columns,
      rowCount: rows.length,
    };
    const structured = { datasetName: dataset.name, format, rowCount: rows.length, columns: names };
    if (args.includeMetadata) structured.metadata = metadata;
    let body;
    if (format === "json") {
      structured.rows = rows;
      body = JSON.stringify(args.includeMetadata ? { metadata, rows } : rows, null, 1);
    } else {
      body = toDelimited(names, rows, format === "tsv" ? "\t" : ",");
      structured.data = body;
    }
    const hierarchy = metadata.collections.length > 1
      ? ` The dataset is hierarchical (${metadata.collections.map((c) => c.name).join(" > ")}); each row is one ` +
        "leaf case carrying its parents' values."
      : "";
    const shown = body.length > MAX_TEXT ? `${body.slice(0, MAX_TEXT)}\n… (truncated here; structuredContent has all)` : body;
    const meta = args.includeMetadata
      ? `\nAttributes: ${columns.map((c) => `${c.name} (${c.type || "?"}${c.unit ? `, ${c.unit}` : ""}; ${c.collection})`).join(", ")}`
      : "";
    return toolResult(
      `Exported ${plural(rows.length, "row")} of ${JSON.stringify(dataset.name)} as ${format.toUpperCase()}.${hierarchy}${meta}\n\n${shown}`,
      structured,
    );
  }

  async function codap_api(args) {
    const { action, resource, values } = args;
    const request = { action, resource, ...(values !== undefined ? { values } : {}) };
    const reply = await call(request);
    if (!reply || reply.success !== true) {
      const codapMessage = reply?.values?.error ?? "CODAP reported a failure without a message";
      throw new ToolError(`CODAP refused "${action} ${resource}": ${codapMessage}`, "codap_error", {
        action,
        resource,
        codapError: codapMessage,
      });
    }
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
    codap_api,
  };
}
