// @ts-check
// codap_api_help's reference: CODAP's Data Interactive API by topic, written from CODAP v3.1.0's handlers
// (v3/src/data-interactive/handlers/*.ts and the component handlers under v3/src/components). Each topic stays
// short (under 3 KB) so the model asks for the one it needs instead of receiving the whole API every turn.

import { policyText } from "./policy.js";

/** @type {Record<string, string>} each topic's text (policy's is added below, from the rules) */
export const TEXT = {
  overview: `CODAP Data Interactive requests: {action, resource, values?}. action: get | create | update | delete | notify.
Reply: {success: true, values: ...} or {success: false, values: {error: "..."}}.
resource: clauses joined by dots, each word or word[name]; the LAST clause picks the handler, e.g.
  dataContextList · dataContext[D] · dataContext[D].collectionList · dataContext[D].collection[C].attributeList
  dataContext[D].collection[C].attribute[A] · dataContext[D].item · dataContext[D].itemByID[id]
  dataContext[D].collection[C].caseByIndex[0] · dataContext[D].caseByID[id] · dataContext[D].selectionList
  componentList · component[id|name|title] · globalList · global[g] · formulaEngine · interactiveFrame (read only)
[name] matches a title first, then a name, then an id; ids are safest. Names cannot contain "]".
Without dataContext[...] a data resource means the first dataset.
Topics: datasets, collections, attributes, cases_items, selection, components, graphs, adornments, globals,
formulas, undo, policy. The typed tools do most of this with checks; use codap_api for the rest.`,

  datasets: `dataContext = a dataset.
get dataContextList -> [{name, title, id}].
create dataContext values {name, title?, description?, collections?: [{name, title?, parent?, attrs: [{name,
  type?, formula?, unit?, precision?, description?}]}]} -> {name, title, id}. A name in use returns that dataset
  unchanged (success). Without collections: one empty collection.
get dataContext[D] -> the whole dataset with every case (slow on big data: prefer collectionList, attributeList).
update dataContext[D] values {title?, metadata?: {description}, sort?: {attr, isDescending?}, rerandomize?: true}.
delete dataContext[D].
notify dataContext[D] values {request: "setAside", caseIDs: [...], operation?: "replace"|"restore"} or
  {request: "restoreSetasides"} (set-aside cases are hidden everywhere until restored).
get dataContext[D].itemCount -> number of items; dataContext[D].collection[C].caseCount -> cases there.
Refused: dataContextFromURL (policy); use import_codap_data.`,

  collections: `collection = one level of a hierarchical dataset (parent collections group child cases).
get dataContext[D].collectionList -> [{name, title, id}] (parent first).
get dataContext[D].collection[C] -> {name, title, id, attrs, parent?, ...}.
create dataContext[D].collection values {name, title?, parent?: parentName, attrs?: [{name, ...}]} or an array.
  With parent: placed just below that collection; without parent: the new last (child-most) collection; a
  parent CODAP does not find: the new top collection.
update dataContext[D].collection[C] values {title?}.
delete dataContext[D].collection[C] (its attributes go with it).
Moving an attribute to another collection regroups the cases: update
  dataContext[D].collection[C].attributeLocation[A] values {collection: otherName, position?: index}
  (moving an attribute left of all others creates a parent collection).`,

  attributes: `attribute = a column.
get dataContext[D].collection[C].attributeList -> [{name, title, id}].
get dataContext[D].collection[C].attribute[A] (or dataContext[D].attribute[A]) -> {name, title, type, formula,
  unit, precision, description, hidden, editable, id, ...}.
create dataContext[D].collection[C].attribute values [{name, type?: "numeric"|"categorical"|"date"|"boundary"|
  "color"|"checkbox", formula?, unit?, precision?, description?, hidden?, editable?}] -> {attrs: [...]}.
update dataContext[D].collection[C].attribute[A] values {name?, title?, type?, formula?, unit?, precision?,
  description?, hidden?, editable?, deleteProtected?, renameProtected?}.
  Renaming: {name: "new"}. A formula of "" removes it.
delete dataContext[D].collection[C].attribute[A].
Formula errors show as cell values: read a case back to check.`,

  cases_items: `item = a row of the whole dataset; case = a row of one collection (a parent case groups items).
create dataContext[D].item values [{attr: value, ...}] -> top-level caseIDs and itemIDs.
get dataContext[D].itemSearch[*] -> [{id, values}]; itemSearch[score>90] (one comparison: == != < > <= >=).
get dataContext[D].itemByID[id] / item[index] / itemByCaseID[caseId].
update dataContext[D].itemByID[id] values {attr: value}; update dataContext[D].item values [{id, values}].
delete dataContext[D].itemByID[id]; delete dataContext[D].itemSearch[x<0] deletes every match.
Cases: get dataContext[D].collection[C].caseByIndex[i] -> {case: {id, parent, children, values}, caseIndex};
  caseByID[id]; get dataContext[D].collection[C].allCases -> {collection, cases: [{case, caseIndex}]};
  caseSearch[attr==v]; caseFormulaSearch[formula] (a CODAP boolean formula).
create dataContext[D].collection[C].case values [{parent?: caseId, values: {...}}] -> [{id}].
update dataContext[D].collection[C].caseByID[id] values {values: {...}}; update ...case values [{id, values}].
delete dataContext[D].collection[C].caseByID[id]; delete dataContext[D].collection[C].allCases (empties it).
Ids are numbers from CODAP's replies; indexes start at 0.`,

  selection: `The selection is shared by every table, graph and map of a dataset.
get dataContext[D].selectionList -> [{collectionID, collectionName, caseID}].
create dataContext[D].selectionList values [caseID, ...] -> selects exactly those cases.
update dataContext[D].selectionList values [caseID, ...] -> adds them to the selection.
create (or update) dataContext[D].selectionList values {expression: "score > 90", collection?: C} -> selects the
  cases where a CODAP formula is true.
create dataContext[D].selectionList values [] -> clears the selection.
Hide or set aside selected cases: notify dataContext[D] {request: "setAside", caseIDs: [...]}.`,

  components: `component = a tile: graph, caseTable, caseCard, map, slider, text, calculator (webView, game, guideView,
imageComponentView load URLs: refused by policy).
get componentList -> [{id, name, title, type, hidden}]; get component[id] -> its fields.
create component values {type, name?, title?, dimensions?: {width, height}, position?: {left, top}, cannotClose?,
  ...type fields} -> {id, title, type}.
  caseTable/caseCard {dataContext, isIndexHidden?}; text {text: "plain"}; slider {globalValueName?, value?,
  lowerBound?, upperBound?, animationDirection?, animationMode?}; map {dataContext?, legendAttributeName?,
  center?: [lat, long], zoom?}; calculator {}; graph: see graphs.
update component[id] values {title?, name?, dimensions?, position?, isVisible?, cannotClose?, isResizable?,
  ...type fields}; isVisible false hides it (componentList shows hidden: true).
delete component[id] (a guide is only hidden). notify component[id] {request: "select"} brings it forward;
  {request: "autoScale"} rescales a graph or map.
Never the plugin's own component (policy). Typed tool: update_codap_component.`,

  graphs: `A graph is a component of type "graph".
create component values {type: "graph", dataContext: D, xAttributeName?, yAttributeName?, y2AttributeName?,
  legendAttributeName?, topSplitAttributeName?, rightSplitAttributeName?, captionAttributeName?, plotType?,
  pointColor?, strokeColor?, pointSize?, transparent?, backgroundColor?, showConnectingLines?,
  displayOnlySelectedCases?, filterFormula?, xLowerBound?, xUpperBound?, yLowerBound?, yUpperBound?,
  name?, title?, dimensions?, position?} -> {id, title, type}.
  Numeric x and y: scatter plot; one numeric attribute: dot plot; categorical: dot chart / bar chart.
update component[id] with the same fields (xAttributeName: null removes an axis attribute);
  plotType: "dotPlot"|"binnedDotPlot"|"histogram"|"linePlot"|"barChart"|"dotChart"|"scatterPlot".
get component[id] -> the fields above with ids, bounds and plotType.
get dataDisplay[id] -> {exportDataUri: "data:image/png;base64,..."} (the graph as drawn; get_codap_graph_image
  does this with waits and sizing).
Adornments (means, lines, counts): see adornments.`,

  adornments: `Adornments are a graph's overlays (v3): types "Count", "Percent", "Mean", "Median", "Standard Deviation",
"Plotted Value", "LSRL", "Box Plot", "Normal Curve", "Movable Line", "Movable Value", "Mean Absolute Deviation",
"Standard Error", "Plotted Function" (the list depends on the plot).
get component[G].adornmentList -> [{id, type, isVisible}] for the plot shown.
get component[G].adornment[type or id] -> its values (e.g. Mean: {type, isVisible, data: [{mean, ...}]}).
create component[G].adornment values {type: "Mean"} -> {id, type, isVisible, data}. CODAP 3.1.0 creates Count,
  Percent, Mean, Median, Standard Deviation, Movable Value, LSRL {showConfidenceBands?} and Plotted Value
  {expression: "mean(height) + 1"} (a constant per cell, not a function of x). Box Plot, Normal Curve, Movable
  Line, Mean Absolute Deviation, Standard Error and Plotted Function answer "does not currently support create
  requests": a person adds them from the graph's ruler menu; then get reads them.
update component[G].adornment values {type: "Count", percentType?, ...type fields}.
delete component[G].adornment values {type: "Mean"} (hides it: CODAP keeps a hidden adornment).
Only on graphs whose plot supports the type (a Mean needs a numeric axis).`,

  globals: `global = a named number shared by formulas (a slider shows one).
get globalList -> [{name, value, id}]; get global[name] -> {name, value, id}.
create global values {name, value} -> {name, value, id} (a name in use fails).
update global[name] values {value}.
A slider: create component {type: "slider", globalValueName: name, lowerBound?, upperBound?} (creates the
global if it is missing). Formulas use the global by name: "score * factor".`,

  formulas: `Formulas are CODAP expressions (not JavaScript): + - * / ^, comparisons, and/or, if(c, a, b),
functions such as mean(x), median(x), count(), sum(x), min, max, stdDev, round(x, n), abs, sqrt, log, random(),
randomNormal(), lookupByKey, prev(x), next(x), caseIndex, concat, text functions. Names with spaces in
backquotes: \`my attr\`. Aggregates in a child collection work per parent case.
Where: attribute {formula} (create or update), graph filterFormula, selectionList {expression},
caseFormulaSearch[...], Plotted Value adornment {expression}.
get formulaEngine -> every function with its arguments, by category.
notify formulaEngine values {request: "evalExpression", source: "a + b", records: [{a: 1, b: 2}]} -> [3]
  (evaluates without touching the document).
An attribute's formula error shows as its values ("❌ ..."): read a case back.`,

  undo: `CODAP's undo history covers document changes, the plugin's included.
notify undoChangeNotice values {operation: "undoButtonPress"} -> undoes the last change;
  {operation: "redoButtonPress"} -> redoes it. Both reply {canUndo, canRedo}.
{operation: "undoableActionPerformed"} records a plugin change CODAP cannot undo itself (rarely useful here).
There is no way to read the history's entries.`,
};

TEXT.policy = `What codap_api refuses, before anything reaches CODAP (error code refused_by_policy, data.rule names the rule):
${policyText()}
Every other request goes to CODAP as it is.`;

/**
 * Each topic's examples: whole requests, shown after the topic's text as "Examples:" and run as they are against
 * the real CODAP 3.1.0 in a test (tests/e2e/test_raw_policy.py, in topic order: each topic's examples may use
 * what an earlier one made), so none shows a request CODAP refuses. They act on a dataset "Pets" (one collection
 * "Pets"; attributes name, species, weight, age), which the test makes first. `returns` is what the reply holds.
 * @type {Record<string, {request: {action: string, resource: string, values?: unknown}, returns?: string}[]>}
 */
export const EXAMPLES = {
  overview: [
    { request: { action: "get", resource: "dataContextList" }, returns: "[{name, title, id}]" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseCount" }, returns: "number" },
    { request: { action: "get", resource: "componentList" }, returns: "[{id, name, title, type, hidden}]" },
  ],
  datasets: [
    {
      request: {
        action: "create",
        resource: "dataContext",
        values: { name: "Survey", collections: [{ name: "People", attrs: [{ name: "name" }, { name: "height", type: "numeric", unit: "cm" }] }] },
      },
      returns: "{name, title, id}",
    },
    { request: { action: "update", resource: "dataContext[Survey]", values: { title: "Class survey" } } },
    { request: { action: "get", resource: "dataContext[Pets].itemCount" }, returns: "number" },
    { request: { action: "delete", resource: "dataContext[Survey]" } },
  ],
  collections: [
    { request: { action: "get", resource: "dataContext[Pets].collectionList" }, returns: "[{name, title, id}]" },
    {
      request: { action: "create", resource: "dataContext[Pets].collection", values: { name: "Owners", attrs: [{ name: "owner" }] } },
      returns: "[{id, name}] (the last collection now)",
    },
    { request: { action: "update", resource: "dataContext[Pets].collection[Owners]", values: { title: "Pet owners" } } },
    { request: { action: "delete", resource: "dataContext[Pets].collection[Owners]" } },
  ],
  attributes: [
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].attributeList" } },
    {
      request: {
        action: "create",
        resource: "dataContext[Pets].collection[Pets].attribute",
        values: [{ name: "growth", formula: "weight/age", unit: "kg/yr", precision: 1 }],
      },
    },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].attribute[growth]", values: { name: "gain" } } },
    { request: { action: "delete", resource: "dataContext[Pets].collection[Pets].attribute[gain]" } },
  ],
  cases_items: [
    { request: { action: "create", resource: "dataContext[Pets].item", values: [{ name: "Rex", species: "dog", weight: 30, age: 5 }] } },
    { request: { action: "get", resource: "dataContext[Pets].itemSearch[weight>10]" }, returns: "[{id, values}]" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseByIndex[0]" }, returns: "{case, caseIndex}" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseFormulaSearch[species = \"cat\"]" } },
    { request: { action: "delete", resource: "dataContext[Pets].itemSearch[name==Rex]" } },
  ],
  selection: [
    { request: { action: "create", resource: "dataContext[Pets].selectionList", values: { expression: "weight > 10" } } },
    { request: { action: "get", resource: "dataContext[Pets].selectionList" }, returns: "[{collectionID, collectionName, caseID}]" },
    { request: { action: "create", resource: "dataContext[Pets].selectionList", values: [] }, returns: "none selected" },
  ],
  components: [
    { request: { action: "create", resource: "component", values: { type: "text", name: "Note", text: "Cats are lighter." } } },
    { request: { action: "update", resource: "component[Note]", values: { dimensions: { width: 300, height: 120 } } } },
    { request: { action: "create", resource: "component", values: { type: "caseTable", dataContext: "Pets" } } },
    { request: { action: "delete", resource: "component[Note]" } },
  ],
  graphs: [
    {
      request: {
        action: "create",
        resource: "component",
        values: { type: "graph", name: "Growth", dataContext: "Pets", xAttributeName: "age", yAttributeName: "weight" },
      },
      returns: "{id, title, type}",
    },
    { request: { action: "update", resource: "component[Growth]", values: { legendAttributeName: "species" } } },
    { request: { action: "get", resource: "component[Growth]" } },
  ],
  adornments: [
    { request: { action: "create", resource: "component[Growth].adornment", values: { type: "LSRL" } } },
    { request: { action: "get", resource: "component[Growth].adornmentList" }, returns: "[{id, type, isVisible}]" },
    { request: { action: "delete", resource: "component[Growth].adornment", values: { type: "LSRL" } } },
  ],
  globals: [
    { request: { action: "create", resource: "global", values: { name: "factor", value: 2 } } },
    { request: { action: "update", resource: "global[factor]", values: { value: 3 } } },
    {
      request: { action: "create", resource: "component", values: { type: "slider", globalValueName: "factor", lowerBound: 0, upperBound: 10 } },
    },
  ],
  formulas: [
    {
      request: { action: "notify", resource: "formulaEngine", values: { request: "evalExpression", source: "a + b", records: [{ a: 1, b: 2 }] } },
      returns: "[3]",
    },
  ],
  undo: [
    { request: { action: "notify", resource: "undoChangeNotice", values: { operation: "undoButtonPress" } } },
    { request: { action: "notify", resource: "undoChangeNotice", values: { operation: "redoButtonPress" } } },
  ],
  policy: [],
};

const KEY = /^[A-Za-z_$][\w$]*$/;
/**
 * A value as the help writes it: JavaScript-like, keys bare where they can be, on one line.
 * @param {unknown} value
 * @returns {string}
 */
function show(value) {
  if (Array.isArray(value)) return `[${value.map(show).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${KEY.test(k) ? k : JSON.stringify(k)}:${show(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The examples of a topic as the lines the help shows.
 * @param {Array<{request: unknown, returns?: string}>} examples
 */
export function examplesText(examples) {
  if (!examples.length) return "";
  const lines = examples.map(({ request, returns }) => `  ${show(request)}${returns ? ` -> ${returns}` : ""}`);
  return `\nExamples:\n${lines.join("\n")}`;
}

/** Each topic's text with its examples. */
export const HELP = Object.fromEntries(Object.entries(TEXT).map(([topic, text]) => [topic, text + examplesText(EXAMPLES[topic] ?? [])]));

export const HELP_TOPICS = Object.keys(HELP);
