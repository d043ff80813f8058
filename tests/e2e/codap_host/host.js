// A stand-in for CODAP's side of the Data Interactive API, for the browser tests.
// It embeds the plugin given by ?di=<url> (as CODAP does), speaks iframe-phone's parent endpoint, keeps
// datasets, items and components in memory, answers with CODAP v3's reply shapes and error strings
// (v3/src/data-interactive/handlers, en-US-v3.json5), and rejects what CODAP rejects.

const ERR = {
  dataContextNotFound: "DataContext not found",
  collectionNotFound: "Collection not found",
  attributeNotFound: "Attribute not found",
  componentNotFound: "Component not found",
  itemNotFound: "Item not found",
  valuesRequired: "A values object is required for this request.",
  couldNotParseQuery: "Unable to parse query.",
  cannotFuse: "Current plot type does not support fusing points into bars",
};
const unsupportedAction = (a, t) => `Unsupported action: ${a}/${t}`;

const state = {
  datasets: [],
  components: [],
  log: [], // every processed request: {action, resource, values}
  frame: { title: "", name: "", version: "", dimensions: { width: 480, height: 400 } },
  connected: false,
  pluginReplies: [],
};
let nextId = 100_000;
const newId = () => nextId++;
const caseIds = new Map(); // stable case ids: dataset id + collection + parent-value path

const ok = (values) => (values === undefined ? { success: true } : { success: true, values });
const fail = (error) => ({ success: false, values: { error } });

// --- resources ---------------------------------------------------------------------------------------

function parseResource(resource) {
  // CODAP's own selector grammar: word or word[anything but "]"], joined by dots
  const selectorRE = /(([\w]+)(?:\[\s*([^\]]+)\s*])?)/g;
  const clauseRE = /^([\w]+)(?:\[\s*([^\]]+)\s*])?$/;
  const result = {};
  for (const selector of String(resource ?? "").match(selectorRE) ?? []) {
    const m = clauseRE.exec(selector);
    if (m) {
      result[m[1]] = m[2];
      result.type = m[1];
    }
  }
  return result;
}

function findDataset(selector) {
  if (selector === undefined) return undefined;
  if (selector === "#default") return state.datasets[0];
  return state.datasets.find((d) => d.name === selector || d.title === selector || String(d.id) === selector);
}

const attrsOf = (ds) => ds.collections.flatMap((c) => c.attrs);
const findAttr = (ds, name) => attrsOf(ds).find((a) => a.name === name || String(a.id) === name);
const findCollection = (ds, name) => ds?.collections.find((c) => c.name === name || String(c.id) === name);

function attrType(ds, attr) {
  if (attr.type) return attr.type;
  const values = ds.items.map((i) => i.values[attr.name]).filter((v) => v !== "" && v !== undefined && v !== null);
  if (values.length && values.every((v) => typeof v === "number" || (typeof v === "string" && v.trim() !== "" && !isNaN(Number(v))))) {
    return "numeric";
  }
  return "categorical";
}

// Cases of collection i: items grouped by the values of the attributes of collections 0..i.
function casesOf(ds, index) {
  const groups = new Map();
  const upTo = ds.collections.slice(0, index + 1).flatMap((c) => c.attrs.map((a) => a.name));
  const parentAttrs = ds.collections.slice(0, index).flatMap((c) => c.attrs.map((a) => a.name));
  const last = index === ds.collections.length - 1;
  for (const item of ds.items) {
    const key = last ? `item:${item.id}` : JSON.stringify(upTo.map((n) => item.values[n] ?? ""));
    if (!groups.has(key)) {
      const idKey = `${ds.id}/${index}/${key}`;
      if (!caseIds.has(idKey)) caseIds.set(idKey, newId());
      const parentKey = index > 0 ? JSON.stringify(parentAttrs.map((n) => item.values[n] ?? "")) : null;
      groups.set(key, { id: caseIds.get(idKey), parentKey, items: [] });
    }
    groups.get(key).items.push(item);
  }
  return [...groups.values()];
}

function datasetV2(ds) {
  return {
    type: "DG.DataContext",
    id: ds.id,
    guid: ds.id,
    name: ds.name,
    title: ds.title,
    description: ds.description ?? "",
    collections: ds.collections.map((c, i) => ({
      id: c.id,
      guid: c.id,
      name: c.name,
      title: c.title,
      parent: i > 0 ? ds.collections[i - 1].id : undefined,
      type: "DG.Collection",
      attrs: c.attrs.map((a) => attributeV2(ds, a)),
    })),
  };
}

function attributeV2(ds, a) {
  return {
    id: a.id,
    guid: a.id,
    name: a.name,
    title: a.title ?? a.name,
    type: attrType(ds, a),
    unit: a.unit,
    precision: a.precision,
    formula: a.formula,
    hidden: false,
    editable: true,
  };
}

function makeAttr(spec) {
  return {
    id: newId(),
    name: spec.name,
    title: spec.title ?? spec.name,
    type: spec.type || undefined,
    unit: spec.unit,
    precision: spec.precision,
    formula: spec.formula,
  };
}

// --- handlers ----------------------------------------------------------------------------------------

function handle(request) {
  const { action, resource, values } = request ?? {};
  if (!action) return fail("No action to process.");
  state.log.push({ action, resource, values });
  const sel = parseResource(resource);
  const type = sel.type ?? "";
  const docLevel = ["component", "componentList", "dataContextList", "interactiveFrame", "global", "globalList"];
  let ds;
  if (!docLevel.includes(type)) {
    const selector = sel.dataContext ?? (action === "create" && type === "dataContext" ? undefined : "#default");
    ds = findDataset(selector);
  }
  const key = `${type}:${action}`;
  switch (key) {
    case "interactiveFrame:get":
      return ok({ id: 1, name: state.frame.name, title: state.frame.title, version: state.frame.version,
        dimensions: state.frame.dimensions, preventBringToFront: false, preventDataContextReorg: false,
        externalUndoAvailable: true, standaloneUndoModeAvailable: false, codapVersion: "3.0.0-test-host" });
    case "interactiveFrame:update":
      if (Array.isArray(values)) return ok();
      if (values?.title) state.frame.title = values.title;
      if (values?.name) state.frame.name = values.name;
      if (values?.version) state.frame.version = values.version;
      if (values?.dimensions) {
        state.frame.dimensions = { ...state.frame.dimensions, ...values.dimensions };
        const frame = document.getElementById("plugin");
        frame.style.width = `${state.frame.dimensions.width}px`;
        frame.style.height = `${state.frame.dimensions.height}px`;
      }
      return ok();
    case "dataContextList:get":
      return ok(state.datasets.map((d) => ({ name: d.name, guid: d.id, title: d.title, id: d.id })));
    case "dataContext:create": {
      const name = values?.name || `Data_Set_${state.datasets.length + 1}`;
      const same = state.datasets.find((d) => d.name === name);
      if (same) return ok({ name: same.name, id: same.id, title: same.title });
      const collections = (values?.collections?.length ? values.collections : [{ name: "Cases" }]).map((c) => ({
        id: newId(),
        name: c.name || `Collection${newId()}`,
        title: c.title ?? c.name,
        attrs: (c.attrs ?? []).map(makeAttr),
      }));
      const created = { id: newId(), name, title: values?.title ?? name, description: values?.description, collections, items: [] };
      state.datasets.push(created);
      return ok({ name: created.name, id: created.id, title: created.title });
    }
    case "dataContext:get":
      return ds ? ok(datasetV2(ds)) : fail(ERR.dataContextNotFound);
    case "dataContext:update":
      if (!ds) return fail(ERR.dataContextNotFound);
      if (values && "title" in values) ds.title = values.title;
      return ok();
    case "dataContext:delete":
      if (!ds) return fail(ERR.dataContextNotFound);
      state.datasets = state.datasets.filter((d) => d !== ds);
      return ok();
    case "item:create": {
      if (!ds) return fail(ERR.dataContextNotFound);
      if (!values) return fail(ERR.valuesRequired);
      const before = new Set(ds.collections.flatMap((_, i) => casesOf(ds, i).map((c) => c.id)));
      const names = new Set(attrsOf(ds).map((a) => a.name));
      const itemIDs = [];
      for (const raw of Array.isArray(values) ? values : [values]) {
        const src = typeof raw.values === "object" ? raw.values : raw;
        const kept = {};
        for (const [k, v] of Object.entries(src)) if (names.has(k)) kept[k] = v; // unknown attributes are dropped
        const item = { id: newId(), values: kept };
        ds.items.push(item);
        itemIDs.push(item.id);
      }
      const caseIDs = ds.collections.flatMap((_, i) => casesOf(ds, i).map((c) => c.id)).filter((id) => !before.has(id));
      return { success: true, caseIDs, itemIDs };
    }
    case "itemCount:get":
      return ds ? ok(ds.items.length) : fail(ERR.dataContextNotFound);
    case "itemSearch:get": {
      if (!ds) return fail(ERR.dataContextNotFound);
      if (sel.itemSearch !== "*") return fail(ERR.couldNotParseQuery);
      return ok(ds.items.map((i) => ({ id: i.id, values: { ...i.values } })));
    }
    case "itemByID:get":
    case "itemByID:update":
    case "itemByID:delete": {
      if (!ds) return fail(ERR.dataContextNotFound);
      const item = ds.items.find((i) => String(i.id) === sel.itemByID);
      if (!item) return fail(ERR.itemNotFound);
      if (action === "get") return ok({ id: item.id, values: { ...item.values } });
      if (action === "delete") {
        ds.items = ds.items.filter((i) => i !== item);
        return ok([item.id]);
      }
      if (!values) return fail(ERR.valuesRequired);
      for (const [k, v] of Object.entries(values)) if (findAttr(ds, k)) item.values[k] = v;
      return ok({ changedCases: [item.id] });
    }
    case "collectionList:get":
      if (!ds) return fail(ERR.dataContextNotFound);
      return ok(ds.collections.map((c) => ({ name: c.name, guid: c.id, title: c.title, id: c.id })));
    case "collection:get": {
      const c = findCollection(ds, sel.collection);
      if (!ds) return fail(ERR.dataContextNotFound);
      return c ? ok(datasetV2(ds).collections[ds.collections.indexOf(c)]) : fail(ERR.collectionNotFound);
    }
    case "caseCount:get": {
      const c = findCollection(ds, sel.collection);
      if (!c) return fail(ERR.collectionNotFound);
      if (!ds) return fail(ERR.dataContextNotFound);
      return ok(casesOf(ds, ds.collections.indexOf(c)).length);
    }
    case "allCases:get": {
      if (!ds) return fail(ERR.dataContextNotFound);
      const c = findCollection(ds, sel.collection);
      if (!c) return fail(ERR.collectionNotFound);
      const index = ds.collections.indexOf(c);
      const parents = index > 0 ? casesOf(ds, index - 1) : [];
      const cases = casesOf(ds, index).map((group, caseIndex) => ({
        case: {
          id: group.id,
          parent: group.parentKey === null ? undefined
            : parents.find((p) => JSON.stringify(ds.collections.slice(0, index).flatMap((cc) => cc.attrs.map((a) => p.items[0].values[a.name] ?? ""))) === group.parentKey)?.id,
          collection: { name: c.name, id: c.id },
          values: Object.fromEntries(c.attrs.map((a) => [a.name, group.items[0].values[a.name] ?? ""])),
          children: [],
        },
        caseIndex,
      }));
      return ok({ collection: { name: c.name, id: c.id }, cases });
    }
    case "attribute:create": {
      if (!ds) return fail(ERR.dataContextNotFound);
      const c = sel.collection ? findCollection(ds, sel.collection) : ds.collections[ds.collections.length - 1];
      if (!c) return fail(ERR.collectionNotFound);
      const specs = Array.isArray(values) ? values : [values];
      if (specs.some((s) => !s?.name)) return fail("Create attribute: name required");
      const attrs = specs.map(makeAttr);
      c.attrs.push(...attrs);
      return ok({ attrs: attrs.map((a) => attributeV2(ds, a)) });
    }
    case "attribute:get": {
      if (!ds) return fail(ERR.dataContextNotFound);
      const a = findAttr(ds, sel.attribute);
      return a ? ok(attributeV2(ds, a)) : fail(ERR.attributeNotFound);
    }
    case "attributeList:get": {
      if (!ds) return fail(ERR.dataContextNotFound);
      const c = findCollection(ds, sel.collection);
      if (!c) return fail(ERR.collectionNotFound);
      return ok(c.attrs.map((a) => ({ name: a.name, id: a.id, title: a.title })));
    }
    case "componentList:get":
      return ok(state.components.map((c) => ({ id: c.id, title: c.title, type: c.type })));
    case "component:create":
      return createComponent(values);
    case "component:get":
    case "component:update":
    case "component:delete": {
      const comp = state.components.find((c) => String(c.id) === sel.component || c.name === sel.component);
      if (!comp) return fail(ERR.componentNotFound);
      if (action === "get") return ok({ ...comp });
      if (action === "delete") {
        state.components = state.components.filter((c) => c !== comp);
        return ok();
      }
      if (!values) return fail(ERR.valuesRequired);
      if (values.title) comp.title = values.title;
      if (comp.type === "graph") {
        if ("showConnectingLines" in values) comp.showConnectingLines = Boolean(values.showConnectingLines);
        if ("pointsFusedIntoBars" in values) {
          const gds = findDataset(comp.dataContext);
          const x = gds && comp.xAttributeName ? findAttr(gds, comp.xAttributeName) : undefined;
          if (values.pointsFusedIntoBars && (!x || attrType(gds, x) !== "categorical")) return fail(ERR.cannotFuse);
          comp.pointsFusedIntoBars = Boolean(values.pointsFusedIntoBars);
        }
      }
      return ok();
    }
    default:
      return fail(unsupportedAction(action, type));
  }
}

function createComponent(values) {
  if (!values) return fail(ERR.valuesRequired);
  const { type, dataContext, name, title } = values;
  const base = { id: newId(), type, name, title: title ?? name ?? "" };
  if (type === "caseTable") {
    if (!dataContext) return fail("dataContext required to create caseTable");
    const ds = findDataset(dataContext);
    if (!ds) return fail(ERR.dataContextNotFound);
    const existing = state.components.find((c) => c.type === "caseTable" && c.dataContext === ds.name);
    if (existing) return ok({ id: existing.id, title: existing.title, type });
    Object.assign(base, { dataContext: ds.name, title: title ?? ds.title });
  } else if (type === "graph") {
    // CODAP builds the graph even when the dataset or an attribute is unknown: those axes stay empty
    const ds = findDataset(dataContext);
    const known = (n) => (ds && n && findAttr(ds, n) ? n : undefined);
    Object.assign(base, {
      dataContext: ds?.name,
      xAttributeName: known(values.xAttributeName),
      yAttributeName: known(values.yAttributeName),
      showConnectingLines: false,
      pointsFusedIntoBars: false,
    });
  } else if (type === "text") {
    Object.assign(base, { text: values.text ?? "" });
  } else {
    return fail(`Unsupported component type ${type}`);
  }
  state.components.push(base);
  return ok({ id: base.id, title: base.title, type });
}

// --- iframe-phone parent endpoint --------------------------------------------------------------------

let held = null; // when paused, requests wait here (tests use it to hold CODAP mid-request)

function start() {
  const params = new URL(location.href).searchParams;
  const di = new URL(params.get("di"));
  di.searchParams.set("lang", "en"); // CODAP appends these when it loads a plugin
  di.searchParams.set("locale", "en-US");
  const frame = document.getElementById("plugin");
  const origin = di.origin;
  frame.src = di.href;

  const post = (message) => frame.contentWindow.postMessage(message, origin);
  const respond = (uuid, value) => post({ type: "data-interactive", content: { messageType: "returnValue", uuid, value } });

  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== origin) return;
    const data = typeof event.data === "string" ? JSON.parse(event.data) : event.data;
    if (data?.type === "hello") {
      // a new hello means the plugin page reloaded: calls held for the old page are lost with it
      if (held) held = null;
      state.connected = true;
      post({ type: "hello", origin: location.origin });
      const uuid = `host-${newId()}`;
      post({ type: "data-interactive", content: { messageType: "call", uuid, value: { message: "codap-present" } } });
      return;
    }
    if (data?.type !== "data-interactive" || !data.content) return;
    const { messageType, uuid, value } = data.content;
    if (messageType === "returnValue") {
      state.pluginReplies.push(value);
      return;
    }
    if (messageType !== "call") return;
    const run = () => respond(uuid, Array.isArray(value) ? value.map(handle) : handle(value));
    if (held) held.push(run);
    else run();
  });
}

window.codapHost = {
  state,
  pause() {
    held = held ?? [];
  },
  resume() {
    const runs = held ?? [];
    held = null;
    runs.forEach((run) => run());
  },
  dataset(name) {
    const ds = state.datasets.find((d) => d.name === name);
    return ds ? JSON.parse(JSON.stringify(ds)) : null;
  },
  count(action, resource) {
    return state.log.filter((r) => r.action === action && r.resource === resource).length;
  },
};

start();
