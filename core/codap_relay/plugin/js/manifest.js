// The tool manifest this plugin registers when it creates a session. The six CODAP tools keep the names,
// descriptions and input schemas of the relay's default manifest (a pytest checks that; create_codap_graph adds
// one optional property, includeImage), and each gains a title and MCP annotations; `get_codap_graph_image`
// returns a picture of a graph, and `codap_api` opens the rest of CODAP's Data Interactive API.
// The annotations are the one statement of what each tool may change: MCP clients get them through the relay,
// and the trace replay skips the tools they call read-only.

import { DEFAULT_MAX_SIZE } from "./imaging.js";

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const additive = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

export const TOOLS = [
  {
    name: "create_codap_dataset",
    title: "Create a CODAP dataset",
    description: "Create a new dataset in CODAP with specified data",
    annotations: additive,
    inputSchema: {
      type: "object",
      properties: {
        datasetName: { type: "string", description: "Name for the dataset in CODAP" },
        dataType: {
          type: "string",
          enum: ["random_numbers", "sample_students", "time_series", "custom"],
          description: "Type of data to generate",
        },
        recordCount: { type: "number", minimum: 1, maximum: 1000, description: "Number of records to generate" },
        customData: {
          type: "array",
          description: "Custom data array (only used when dataType is 'custom')",
          items: { type: "object" },
        },
      },
      required: ["datasetName", "dataType", "recordCount"],
    },
  },
  {
    name: "create_codap_graph",
    title: "Create a CODAP graph",
    description: "Create a graph/visualization in CODAP",
    annotations: additive,
    inputSchema: {
      type: "object",
      properties: {
        datasetName: { type: "string", description: "Name of the dataset to visualize" },
        graphType: {
          type: "string",
          enum: ["scatterplot", "histogram", "bar_chart", "line_graph"],
          description: "Type of graph to create",
        },
        xAttribute: { type: "string", description: "Attribute for X-axis" },
        yAttribute: { type: "string", description: "Attribute for Y-axis (optional for some graph types)" },
        title: { type: "string", description: "Title for the graph" },
        includeImage: {
          type: "boolean",
          description: "Also return a picture (PNG) of the graph as CODAP draws it, to check it",
          default: false,
        },
      },
      required: ["datasetName", "graphType", "xAttribute"],
    },
  },
  {
    name: "add_codap_cases",
    title: "Add cases to a CODAP dataset",
    description: "Add new cases (rows) to an existing CODAP dataset",
    annotations: additive,
    inputSchema: {
      type: "object",
      properties: {
        datasetName: { type: "string", description: "Name of the existing dataset" },
        cases: { type: "array", description: "Array of case objects to add", items: { type: "object" } },
      },
      required: ["datasetName", "cases"],
    },
  },
  {
    name: "get_codap_datasets",
    title: "List CODAP datasets",
    description: "Get list of all datasets currently in CODAP",
    annotations: readOnly,
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: "get_codap_status",
    title: "CODAP status",
    description: "Get current status and information from CODAP",
    annotations: readOnly,
    inputSchema: {
      type: "object",
      properties: {
        includeDatasets: { type: "boolean", description: "Whether to include dataset information", default: true },
        includeComponents: {
          type: "boolean",
          description: "Whether to include component information",
          default: true,
        },
      },
      additionalProperties: false,
    },
  },
  {
    name: "export_codap_data",
    title: "Export a CODAP dataset",
    description: "Export data from CODAP in various formats",
    annotations: readOnly,
    inputSchema: {
      type: "object",
      properties: {
        datasetName: { type: "string", description: "Name of the dataset to export" },
        format: { type: "string", enum: ["json", "csv", "tsv"], description: "Export format", default: "json" },
        includeMetadata: { type: "boolean", description: "Whether to include metadata in export", default: false },
      },
      required: ["datasetName"],
    },
  },
  {
    name: "get_codap_graph_image",
    title: "Picture of a CODAP graph",
    description:
      "Get a picture (PNG) of a graph as CODAP draws it, to check it: its axes, points, outliers, an empty or " +
      "wrong plot. Name the graph by its name, title or id (get_codap_status lists the graphs); with one graph " +
      "in CODAP, it may be left out. A large picture is scaled down to maxSize pixels on its longer side.",
    annotations: readOnly,
    inputSchema: {
      type: "object",
      properties: {
        graph: {
          type: ["string", "integer"],
          description: "The graph's name, title or id; may be left out when CODAP has one graph",
        },
        maxSize: {
          type: "integer",
          minimum: 64,
          maximum: 1600,
          default: DEFAULT_MAX_SIZE,
          description: "Longest side of the picture in pixels; a larger picture is scaled down",
        },
      },
      additionalProperties: false,
    },
  },
  {
    name: "codap_api",
    title: "Raw CODAP Data Interactive request",
    description:
      "Send one raw request to CODAP's Data Interactive (plugin) API, for anything the other tools do not cover: " +
      "update or delete items and cases, create/update/delete attributes and collections, sliders, text and other " +
      "components, selection, globals. Examples: {action: 'get', resource: 'dataContext[students].attributeList'}; " +
      "{action: 'create', resource: 'dataContext[students].collection[students].attribute', values: [{name: 'bmi', " +
      "formula: 'weight/height^2'}]}; {action: 'update', resource: 'dataContext[students].itemByID[42]', " +
      "values: {score: 90}}; {action: 'create', resource: 'dataContext[students].selectionList', values: [caseID]}. " +
      "Names go inside [...]. " +
      "Returns CODAP's reply; a CODAP failure comes back as an error carrying CODAP's message.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    inputSchema: {
      type: "object",
      properties: {
        action: {
          type: "string",
          enum: ["get", "create", "update", "delete", "notify"],
          description: "The Data Interactive action",
        },
        resource: {
          type: "string",
          minLength: 1,
          maxLength: 500,
          description: "Resource selector, e.g. dataContextList, dataContext[NAME].collection[C].caseCount, component",
        },
        values: {
          description: "The request's values (object or array), as CODAP's plugin API documents for the resource",
        },
      },
      required: ["action", "resource"],
      additionalProperties: false,
    },
  },
];

/** The tools whose annotations say they change nothing in CODAP. */
export const READ_ONLY_TOOLS = new Set(TOOLS.filter((t) => t.annotations.readOnlyHint === true).map((t) => t.name));

/** The tools whose annotations say they may delete or overwrite what is in CODAP. */
export const DESTRUCTIVE_TOOLS = new Set(TOOLS.filter((t) => t.annotations.destructiveHint === true).map((t) => t.name));
