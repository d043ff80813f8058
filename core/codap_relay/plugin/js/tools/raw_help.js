// @ts-check
// codap_api_help's reference: CODAP's Data Interactive API by topic, written from CODAP v3.1.0's handlers
// (v3/src/data-interactive/handlers/*.ts and the component handlers under v3/src/components). Each topic stays
// short (under 3 KB) so the model asks for the one it needs instead of receiving the whole API every turn.

import { policyText } from "./policy.js";

/**
 * Each topic's text. It names only requests and values CODAP 3.1.0 takes: every request form and every value key
 * the text shows (before "->") is sent to the real CODAP by a test (tests/e2e/test_raw_policy.py) through
 * codap_api, which reads back what each request meant to change; a unit test checks that each one is among the
 * topic's EXAMPLES. A value CODAP's handler ignores is named as such ("not": ...), never offered.
 * @type {Record<string, string>}
 */
export const TEXT = {
  overview: `CODAP Data Interactive requests: {action, resource, values?}. action: get | create | update | delete | notify.
CODAP replies success true with values, or success false with values.error. codap_api also reads back what a
change asked for and names any value CODAP answered success to but did not take.
resource: clauses joined by dots, each word or word[name]; the LAST clause picks the handler, e.g.
  dataContextList · dataContext[D] · dataContext[D].collectionList · dataContext[D].collection[C].attributeList
  dataContext[D].collection[C].attribute[A] · dataContext[D].item · dataContext[D].itemByID[id]
  dataContext[D].collection[C].caseByIndex[0] · componentList · component[id|name|title] · globalList · global[g]
  formulaEngine · interactiveFrame (read only)
dataContext[D] and component[X] match a title, a name or an id; collection[C] and attribute[A] a name or an id
(not a title). Ids are safest. Names cannot contain "]". Without dataContext[...] a data resource means the
first dataset.
Topics: datasets, collections, attributes, cases_items, selection, components, component_types, graphs,
adornments, globals, formulas, undo, policy. The typed tools do most of this with checks; use codap_api for the rest.`,

  datasets: `dataContext = a dataset. It has a name (fixed) and a title (what CODAP shows; a rename sets it).
get dataContextList -> [{name, title, id}].
create dataContext values {name, title?, description?, collections?: [{name, title?, attrs: [{name, type?,
  formula?, unit?, precision?, description?}]}]} -> {name, title, id}. A name in use returns that dataset
  unchanged (success). Without collections: one empty collection.
get dataContext[D] -> {name, title, collections (attributes, no cases), setAsideItems: [{id, values}], metadata}.
update dataContext[D] values {title?, metadata?: {description}, sort?: {attr, isDescending?}, rerandomize?: true}.
  Not: name (CODAP keeps it: set title), metadata.source or importDate (only at create).
delete dataContext[D].
notify dataContext[D] values {request: "setAside", caseIDs: [case ids, or "ITEM" + an item id], operation?:
  "restore"} sets those cases aside (hidden everywhere; not deleted) or brings them back. A bare item id is read
  as a case id and matches nothing. {request: "restoreSetAsides"} brings every set-aside case back.
get dataContext[D].itemCount -> items shown (set-aside ones not counted).
Refused: dataContextFromURL (policy); use import_codap_data.`,

  collections: `collection = one level of a hierarchical dataset (parent collections group child cases).
get dataContext[D].collectionList -> [{name, title, id}] (parent first).
get dataContext[D].collection[C] -> {name, title, id, attrs, parent, labels}.
create dataContext[D].collection values {name, title?, parent?: parentName, attrs?: [{name, ...}]}.
  With parent: placed just below that collection; without parent: the new last (child-most) collection; a
  parent CODAP does not find: the new top collection.
update dataContext[D].collection[C] values {title?, labels?: {singleCase, pluralCase}}. Not: name.
delete dataContext[D].collection[C] (its attributes go with it).
Moving an attribute to another collection regroups the cases: update
  dataContext[D].collection[C].attributeLocation[A] values {collection: otherName, position?: index}.`,

  attributes: `attribute = a column.
get dataContext[D].collection[C].attributeList -> [{name, title, id}].
get dataContext[D].collection[C].attribute[A] (or dataContext[D].attribute[A]) -> {name, title, type, formula,
  unit, precision, description, hidden, editable, id, ...}.
create dataContext[D].collection[C].attribute values [{name, type?: "numeric"|"categorical"|"date"|"boundary"|
  "color"|"checkbox", formula?, unit?, precision?, description?, hidden?}] -> {attrs: [...]}.
update dataContext[D].collection[C].attribute[A] values {name?, title?, type?, formula?, unit?, precision?,
  description?, hidden?}. Renaming: {name: "new"}. A formula of "" removes it. Not: editable (CODAP 3.1.0 reads
  it the wrong way round, true protects the values; update_codap_attribute editable does it right).
delete dataContext[D].collection[C].attribute[A].
Formula errors show as cell values: read a case back to check.`,

  cases_items: `item = a row of the dataset; case = a row of one collection (a parent case groups items).
create dataContext[D].item values [{attr: value, ...}] -> top-level caseIDs and itemIDs.
get dataContext[D].itemSearch[*] -> [{id, values}]; itemSearch[score>90] (one comparison: == != < > <= >=).
get dataContext[D].itemByID[id]; get dataContext[D].item[index]; get dataContext[D].itemByCaseID[caseId].
update dataContext[D].itemByID[id] values {attr: value}; update dataContext[D].item values [{id, values}].
delete dataContext[D].itemByID[id]; delete dataContext[D].itemSearch[x<0] deletes every match.
Cases: get dataContext[D].collection[C].caseByIndex[i] -> {case: {id, parent, children, values}, caseIndex};
  likewise caseByID[id], allCases (every case), caseSearch[attr==v], caseFormulaSearch[a CODAP condition].
create dataContext[D].collection[C].case values [{values: {...}}] -> [{id}].
update dataContext[D].collection[C].caseByID[id] values {values: {...}}; update dataContext[D].collection[C].case
  values [{id, values}]. delete dataContext[D].collection[C].caseByID[id].
Set-aside cases are left out of every search and list. Ids: numbers from CODAP's replies (ITEM_ID, CASE_ID).`,

  selection: `The selection is shared by every table, graph and map of a dataset.
get dataContext[D].selectionList -> [{collectionID, collectionName, caseID}].
create dataContext[D].selectionList values [caseID, ...] -> selects exactly those cases.
update dataContext[D].selectionList values [caseID, ...] -> adds them to the selection.
create (or update) dataContext[D].selectionList values {expression: "score > 90", collection?: C} -> selects the
  cases where a CODAP formula is true.
create dataContext[D].selectionList values [] -> clears the selection.
To set the selected cases aside, see datasets (setAside with their caseIDs).`,

  components: `component = a tile: graph, caseTable, caseCard, map, slider, text, calculator (webView, game, guideView,
imageComponentView load URLs: refused by policy).
get componentList -> [{id, name, title, type, hidden}]; get component[id] -> its fields, position, dimensions.
create component values {type, name?, title?, dimensions?: {width, height}, position?: {left, top}, ...type fields}
  -> {id, title, type}. Each type's fields: see component_types; graph: see graphs.
update component[id] values {title?, name?, dimensions?, position?, isVisible?, ...type fields}; isVisible false
  hides it (componentList shows hidden: true). Not: isMinimized (only a person's title-bar button).
delete component[id] (a dataset's table or card may be hidden instead). notify component[id] {request:
  "select"} brings it to the front; {request: "autoScale"} rescales a graph or map, fits a table's columns.
Never the plugin's own component (policy). Typed tool: update_codap_component.`,

  component_types: `Each component type's own fields, for create component {type, ...} and update component[id]:
caseTable {dataContext}: one table a dataset; asking again shows it. caseCard {dataContext}: a first card
  takes the shown table's place; later, either is shown beside the other (hide one: isVisible false). update
  component[table id] {isIndexHidden: true} hides the index column. An untitled table or card is found by its
  id only (componentList; the examples write TABLE_ID).
text {text: "plain text"} (read back as rich text; create_codap_text markdown formats it).
slider {globalValueName (an existing global: see globals), value?, lowerBound?, upperBound?, multipleOf?,
  animationDirection? (0 both ways, 1 up, 2 down), animationMode? (0 non-stop, 1 once), animationRate?,
  scaleType? ("numeric", "date"), dateMultipleOfUnit? ("year" … "second")}. A date slider holds seconds since
  1970; scaleType "date" goes with lowerBound and upperBound a day or more apart (policy: shorter freezes
  CODAP). No globalValueName: a plain slider. Typed: update_codap_slider.
map {dataContext, legendAttributeName?, center?: [lat, long], zoom?} (none read back). Not:
  legendAttributeName, hiddenCases, filterFormula in a map's update (update_codap_map sets them).
calculator {} (no fields of its own).`,

  graphs: `A graph is a component of type "graph".
create component values {type: "graph", dataContext: D, xAttributeName?, yAttributeName?, y2AttributeName?,
  legendAttributeName?, topSplitAttributeName?, rightSplitAttributeName?, pointColor?, strokeColor?, pointSize?,
  transparent?, backgroundColor?, showConnectingLines?, displayOnlySelectedCases?, filterFormula?, xLowerBound?,
  xUpperBound?, yLowerBound?, yUpperBound?, name?, title?} -> {id, title, type}.
  Numeric x and y: scatter plot; one numeric attribute: dot plot; categorical: dot chart.
update component[id] with the same fields (xAttributeName: null removes an axis attribute). CODAP rescales the
  axes when the attributes or filterFormula change, and showConnectingLines true halves the point size (false
  doubles it): send bounds and pointSize in a later request.
  Not: plotType (CODAP answers success and keeps the plot; update_codap_graph bins, fuses and changes plots).
get component[id] -> the fields above with ids, bounds and plotType.
get dataDisplay[id] -> {exportDataUri: "data:image/png;base64,..."} (the graph as drawn; get_codap_graph_image
  does this with waits and sizing).
Adornments (means, lines, counts): see adornments.`,

  adornments: `Adornments are a graph's overlays (v3): types "Count", "Percent", "Mean", "Median", "Standard Deviation",
"Plotted Value", "LSRL", "Box Plot", "Normal Curve", "Movable Line", "Movable Value", "Mean Absolute Deviation",
"Standard Error", "Plotted Function" (the list depends on the plot).
get component[G].adornmentList -> [{id, type, isVisible}] for the plot shown; CODAP 3.1.0 lists [] for what it draws
  on a histogram (a box plot, a mean): read each one by its type to know.
get component[G].adornment[type or id] -> its values; for a Mean -> {type, isVisible, data: [{mean, ...}]}.
create component[G].adornment values {type: "Mean"} -> {id, type, isVisible, data}. CODAP 3.1.0 creates Count,
  Percent, Mean, Median, Standard Deviation, Movable Value, LSRL {showConfidenceBands?} and Plotted Value
  {expression: "mean(height) + 1"} (a constant per cell, not a function of x). Box Plot, Normal Curve, Movable
  Line, Mean Absolute Deviation, Standard Error and Plotted Function answer "does not currently support create
  requests": a person adds them from the graph's ruler menu (or add_codap_adornment), and they can be read then.
update component[G].adornment values {type: "Count", percentType?, ...type fields}.
delete component[G].adornment values {type: "Mean"} (hides it: CODAP keeps a hidden adornment).
Only on graphs whose plot supports the type (a Mean needs a numeric axis).`,

  globals: `global = a named number shared by formulas (a slider shows one).
get globalList -> [{name, value, id}]; get global[name] -> {name, value, id}.
create global values {name, value} -> {name, value, id} (a name in use fails).
update global[name] values {value} (not 0: CODAP refuses a value of 0 here, "missing global or value"; set a
  slider's value to 0 with update component[slider] {value: 0}). Not: name.
A slider for an existing global: create component {type: "slider", globalValueName: name, lowerBound?,
upperBound?}. Formulas use the global by name: "score * factor".`,

  formulas: `Formulas are CODAP expressions (not JavaScript): + - * / ^, comparisons, and/or, if(c, a, b),
functions such as mean(x), median(x), count(), sum(x), min, max, stdDev, round(x, n), abs, sqrt, log, random(),
randomNormal(), correlation(x, y), rSquared(x, y), linRegrSlope(x, y), linRegrIntercept(x, y), lookupByKey,
prev(x), next(x), caseIndex, concat, text functions. Names with spaces in backquotes: \`my attr\`. Aggregates in
a child collection work per parent case (compute_codap_statistics and evaluate_codap_formula use them typed).
Where: an attribute's formula (made or changed), a graph's filterFormula, a selectionList expression,
caseFormulaSearch[...], Plotted Value adornment {expression}.
CODAP 3.1.0's functions (get formulaEngine gives each one's arguments, by category, in a 150 KB reply):
  math abs ceil combinations exp floor frac ln log pow round sqrt trunc; trig sin cos tan asin acos atan atan2;
  stats count sum mean median min max percentile stdDev stdErr variance mad rollingMean uniqueValues combine;
  two-variable correlation rSquared linRegrSlope linRegrIntercept linRegrPredicted linRegrResidual linRegrSESlope;
  logic if boolean isBoolean isNumber isFinite isMissing isDate isColor isBoundary; lookup first last prev next
  lookupByIndex lookupByKey lookupBoundary; random random randomNormal randomBinomial randomPick; text concat
  split join subString stringLength findString includes beginsWith endsWith replaceString replaceChars trim
  toLower toUpper repeatString sortItems patternMatches wordListMatches charAt; dates date now today year month
  monthName dayOfMonth dayOfWeek dayOfWeekName hours minutes seconds; colour rgb hsl darken lighten; other number
  string greatCircleDistance.
No hypothesis test, p-value or distribution function (no t, z, chi-square or normal CDF). A two-sample t
statistic from per-group figures: group by the category (group_codap_cases), give the parent collection
m = mean(x), s = stdDev(x), n = count(x) (compute_codap_statistics reads them), then
t = (m1 - m2) / sqrt(s1^2/n1 + s2^2/n2); its p-value is not in CODAP (say so, or compare with a table).
notify formulaEngine values {request: "evalExpression", source: "a + b", records: [{a: 1, b: 2}]} -> [3]
  (evaluates without touching the document).
An attribute's formula error shows as its values ("❌ ..."): read a case back.`,

  undo: `CODAP's undo history holds the person's changes and each changing tool call (codap_api's too), which this
plugin puts there and takes back itself. Of the plugin API's own requests CODAP keeps a step only for those on a
graph's adornments, a graph's autoScale and the whole document's replacement; it applies the rest (a component's
settings, cases, attributes) without one. Undo cannot bring back what a request deleted (cases, attributes, a
dataset, a component): undo_codap_tool_calls can, the rows keeping their ids.
notify undoChangeNotice values {operation: "undoButtonPress"} undoes the last change, {operation:
  "redoButtonPress"} redoes it; both -> {canUndo, canRedo}.
There is no way to read the history's entries.`,
};

TEXT.policy = `What codap_api refuses, before anything reaches CODAP (error code refused_by_policy, data.rule names the rule):
${policyText()}
Every other request goes to CODAP as it is.`;

/**
 * Each topic's examples: whole requests, shown after the topic's text as "Examples:" and run as they are against
 * the real CODAP 3.1.0 in a test (tests/e2e/test_raw_policy.py, in topic order: each topic's examples may use
 * what an earlier one made), so none shows a request CODAP refuses or a value it ignores. Together they send every
 * request form and value key the topic's text shows. They act on a dataset "Pets" (one collection "Pets";
 * attributes name, species, weight, age), which the test makes first. `returns` is what the reply holds.
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
        values: {
          name: "Survey",
          title: "Survey 1",
          description: "heights",
          collections: [{ name: "People", title: "Persons", attrs: [{ name: "name", description: "first name" },
            { name: "height", type: "numeric", unit: "cm", precision: 0 }, { name: "twice", formula: "height * 2" }] }],
        },
      },
      returns: "{name, title, id}",
    },
    { request: { action: "update", resource: "dataContext[Survey]", values: { title: "Class survey", metadata: { description: "class 7" } } } },
    { request: { action: "update", resource: "dataContext[Pets]", values: { sort: { attr: "weight", isDescending: true } } } },
    { request: { action: "update", resource: "dataContext[Pets]", values: { rerandomize: true } } },
    { request: { action: "get", resource: "dataContext[Survey]" } },
    { request: { action: "notify", resource: "dataContext[Pets]", values: { request: "setAside", caseIDs: [] } } },
    { request: { action: "notify", resource: "dataContext[Pets]", values: { request: "setAside", operation: "restore", caseIDs: [] } } },
    { request: { action: "notify", resource: "dataContext[Pets]", values: { request: "restoreSetAsides" } } },
    { request: { action: "get", resource: "dataContext[Pets].itemCount" }, returns: "number" },
    { request: { action: "delete", resource: "dataContext[Survey]" } },
  ],
  collections: [
    { request: { action: "get", resource: "dataContext[Pets].collectionList" }, returns: "[{name, title, id}]" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets]" } },
    {
      request: { action: "create", resource: "dataContext[Pets].collection", values: { name: "Owners", title: "Owners", parent: "Pets", attrs: [{ name: "owner" }] } },
      returns: "[{id, name}] (the last collection now)",
    },
    {
      request: {
        action: "update",
        resource: "dataContext[Pets].collection[Owners]",
        values: { title: "Pet owners", labels: { singleCase: "owner", pluralCase: "owners" } },
      },
    },
    { request: { action: "delete", resource: "dataContext[Pets].collection[Owners]" } },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].attributeLocation[age]", values: { collection: "Pets", position: 0 } } },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].attributeLocation[age]", values: { collection: "Pets", position: 4 } } },
  ],
  attributes: [
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].attributeList" } },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].attribute[weight]" } },
    { request: { action: "get", resource: "dataContext[Pets].attribute[weight]" } },
    {
      request: {
        action: "create",
        resource: "dataContext[Pets].collection[Pets].attribute",
        values: [{ name: "growth", type: "numeric", formula: "weight/age", unit: "kg/yr", precision: 1, description: "kg a year", hidden: false }],
      },
    },
    {
      request: {
        action: "update",
        resource: "dataContext[Pets].collection[Pets].attribute[growth]",
        values: { name: "gain", title: "gain", type: "numeric", formula: "weight/age/2", unit: "kg", precision: 2, description: "half", hidden: true },
      },
    },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].attribute[gain]", values: { formula: "" } } },
    { request: { action: "delete", resource: "dataContext[Pets].collection[Pets].attribute[gain]" } },
  ],
  cases_items: [
    { request: { action: "create", resource: "dataContext[Pets].item", values: [{ name: "Rex", species: "dog", weight: 30, age: 5 }] } },
    { request: { action: "get", resource: "dataContext[Pets].itemSearch[*]" }, returns: "[{id, values}]" },
    { request: { action: "get", resource: "dataContext[Pets].item[0]" }, returns: "{id, values}" },
    { request: { action: "get", resource: "dataContext[Pets].itemByID[ITEM_ID]" }, returns: "{id, values}" },
    { request: { action: "update", resource: "dataContext[Pets].itemByID[ITEM_ID]", values: { weight: 31 } } },
    { request: { action: "update", resource: "dataContext[Pets].item", values: [{ id: "ITEM_ID", values: { weight: 32 } }] } },
    { request: { action: "delete", resource: "dataContext[Pets].itemByID[ITEM_ID]" } },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseByIndex[0]" }, returns: "{case, caseIndex}" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].allCases" }, returns: "{collection, cases}" },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseSearch[species==cat]" } },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseFormulaSearch[species = \"cat\"]" } },
    { request: { action: "create", resource: "dataContext[Pets].collection[Pets].case", values: [{ values: { name: "Felix", species: "cat", weight: 4, age: 2 } }] } },
    { request: { action: "get", resource: "dataContext[Pets].collection[Pets].caseByID[CASE_ID]" } },
    { request: { action: "get", resource: "dataContext[Pets].itemByCaseID[CASE_ID]" } },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].caseByID[CASE_ID]", values: { values: { age: 3 } } } },
    { request: { action: "update", resource: "dataContext[Pets].collection[Pets].case", values: [{ id: "CASE_ID", values: { age: 4 } }] } },
    { request: { action: "delete", resource: "dataContext[Pets].collection[Pets].caseByID[CASE_ID]" } },
    { request: { action: "create", resource: "dataContext[Pets].item", values: [{ name: "Spot", species: "dog", weight: 12, age: 1 }] } },
    { request: { action: "delete", resource: "dataContext[Pets].itemSearch[name==Spot]" } },
  ],
  selection: [
    { request: { action: "create", resource: "dataContext[Pets].selectionList", values: { expression: "weight > 10", collection: "Pets" } } },
    { request: { action: "get", resource: "dataContext[Pets].selectionList" }, returns: "[{collectionID, collectionName, caseID}]" },
    { request: { action: "update", resource: "dataContext[Pets].selectionList", values: { expression: "age > 8" } } },
    { request: { action: "update", resource: "dataContext[Pets].selectionList", values: [] } },
    { request: { action: "create", resource: "dataContext[Pets].selectionList", values: [] }, returns: "none selected" },
  ],
  components: [
    { request: { action: "create", resource: "component", values: { type: "text", name: "Note", title: "A note", text: "Cats are lighter.", dimensions: { width: 250, height: 100 }, position: { left: 400, top: 300 } } } },
    { request: { action: "get", resource: "component[Note]" } },
    { request: { action: "update", resource: "component[Note]", values: { title: "Pets note", name: "Note", dimensions: { width: 300, height: 120 }, position: { left: 420, top: 320 } } } },
    { request: { action: "update", resource: "component[Note]", values: { isVisible: false } } },
    { request: { action: "update", resource: "component[Note]", values: { isVisible: true } } },
    { request: { action: "notify", resource: "component[Note]", values: { request: "select" } } },
    { request: { action: "delete", resource: "component[Note]" } },
  ],
  component_types: [
    { request: { action: "create", resource: "component", values: { type: "caseCard", dataContext: "Pets" } } },
    { request: { action: "create", resource: "component", values: { type: "caseTable", dataContext: "Pets" } } },
    { request: { action: "update", resource: "component[TABLE_ID]", values: { isIndexHidden: true } } },
    { request: { action: "update", resource: "component[TABLE_ID]", values: { isIndexHidden: false } } },
    { request: { action: "notify", resource: "component[TABLE_ID]", values: { request: "autoScale" } } },
    { request: { action: "create", resource: "component", values: { type: "text", name: "Tip", text: "Weigh them." } } },
    { request: { action: "update", resource: "component[Tip]", values: { text: "Weigh them twice." } } },
    { request: { action: "create", resource: "global", values: { name: "speed", value: 2 } } },
    {
      request: {
        action: "create",
        resource: "component",
        values: { type: "slider", name: "Speed", globalValueName: "speed", value: 2, lowerBound: 0, upperBound: 10, multipleOf: 0.5, animationDirection: 0, animationMode: 1, animationRate: 10, scaleType: "numeric" },
      },
    },
    { request: { action: "update", resource: "component[Speed]", values: { value: 0, lowerBound: -5, upperBound: 5 } } },
    {
      request: {
        action: "update",
        resource: "component[Speed]",
        values: { scaleType: "date", lowerBound: 1704067200, upperBound: 1735689600, value: 1719792000, multipleOf: 2, dateMultipleOfUnit: "month" },
      },
    },
    { request: { action: "create", resource: "component", values: { type: "map", name: "Where", dataContext: "Pets", legendAttributeName: "species", center: [40, -70], zoom: 3 } } },
    { request: { action: "notify", resource: "component[Where]", values: { request: "autoScale" } } },
    { request: { action: "create", resource: "component", values: { type: "calculator", name: "Calc" } } },
    { request: { action: "delete", resource: "component[Calc]" } },
    { request: { action: "delete", resource: "component[Where]" } },
    { request: { action: "delete", resource: "component[Speed]" } },
    { request: { action: "delete", resource: "component[Tip]" } },
  ],
  graphs: [
    {
      request: {
        action: "create",
        resource: "component",
        values: { type: "graph", name: "Growth", title: "Growth", dataContext: "Pets", xAttributeName: "age", yAttributeName: "weight" },
      },
      returns: "{id, title, type}",
    },
    {
      request: {
        action: "update",
        resource: "component[Growth]",
        values: {
          legendAttributeName: "species", pointColor: "#3366cc", strokeColor: "#222222", transparent: false,
          backgroundColor: "#ffffee", showConnectingLines: true, displayOnlySelectedCases: false, filterFormula: "age > 0",
        },
      },
    },
    { request: { action: "update", resource: "component[Growth]", values: { pointSize: 1.5, xLowerBound: 0, xUpperBound: 20, yLowerBound: 0, yUpperBound: 50 } } },
    { request: { action: "update", resource: "component[Growth]", values: { topSplitAttributeName: "species", rightSplitAttributeName: "species" } } },
    { request: { action: "update", resource: "component[Growth]", values: { topSplitAttributeName: null, rightSplitAttributeName: null, y2AttributeName: "age" } } },
    { request: { action: "update", resource: "component[Growth]", values: { y2AttributeName: null, filterFormula: "", showConnectingLines: false } } },
    { request: { action: "get", resource: "component[Growth]" } },
    { request: { action: "get", resource: "dataDisplay[Growth]" }, returns: "{exportDataUri}" },
  ],
  adornments: [
    { request: { action: "create", resource: "component[Growth].adornment", values: { type: "LSRL", showConfidenceBands: true } } },
    { request: { action: "get", resource: "component[Growth].adornmentList" }, returns: "[{id, type, isVisible}]" },
    { request: { action: "get", resource: "component[Growth].adornment[LSRL]" } },
    { request: { action: "create", resource: "component[Growth].adornment", values: { type: "Plotted Value", expression: "mean(weight)" } } },
    { request: { action: "create", resource: "component[Growth].adornment", values: { type: "Count" } } },
    { request: { action: "update", resource: "component[Growth].adornment", values: { type: "Count", percentType: "cell" } } },
    { request: { action: "delete", resource: "component[Growth].adornment", values: { type: "LSRL" } } },
  ],
  globals: [
    { request: { action: "create", resource: "global", values: { name: "factor", value: 2 } } },
    { request: { action: "get", resource: "globalList" } },
    { request: { action: "update", resource: "global[factor]", values: { value: 3 } } },
    { request: { action: "get", resource: "global[factor]" } },
    {
      request: { action: "create", resource: "component", values: { type: "slider", globalValueName: "factor", lowerBound: 0, upperBound: 10 } },
    },
  ],
  formulas: [
    { request: { action: "get", resource: "formulaEngine" } },
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
