// A stand-in for CODAP v3.1.0's side of the Data Interactive API: datasets, items and components in memory,
// answered with the reply shapes and error strings of the real app (v3/src/data-interactive/handlers and
// en-US.json5 at tag 3.1.0). tests/e2e/test_fake_host_parity.py sends the same requests to this model and to
// the real CODAP build and fails where they differ, so the model cannot drift from the app it stands for.
// Not modelled: formulas, selection, sliders, maps, undo, notifications, set-aside cases.
// No DOM here: the browser host (host.js) and Node tests (tests/js) both use it.

const ERR = {
  noAction: "No action to process.",
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
const fieldRequired = (action, resource, field) => `${action} ${resource}: ${field} required`;

const ok = (values) => (values === undefined ? { success: true } : { success: true, values });
const fail = (error) => ({ success: false, values: { error } });

// CODAP keeps every value as trimmed text and reads back a number wherever the text is one
// (models/data/attribute.ts: importValueToString, toNumeric, value).
function importValue(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value.trim();
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function extractNumeric(text) {
  // utilities/math-utils.ts extractNumeric: a numeric attribute reads the first number in its text
  const num = Number(text);
  if (!Number.isNaN(num)) return num;
  const match = text.replace(/[^.\d-]+/gm, "").match(/(^-?\.?[\d]+(?:\.?[\d]*)?)/m);
  return match ? Number(match[0]) : NaN;
}

function toNumeric(attr, text) {
  if (text === "") return NaN;
  return attr.type === "numeric" ? extractNumeric(text) : Number(text);
}

const readValue = (attr, text) => {
  const num = toNumeric(attr, text ?? "");
  return Number.isNaN(num) ? text ?? "" : num;
};

const DATE_RE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The query string of a resource: CODAP's selector grammar, `word` or `word[anything but "]"]` joined by dots. */
export function parseResource(resource) {
  const result = {};
  for (const selector of String(resource ?? "").match(/(([\w]+)(?:\[\s*([^\]]+)\s*])?)/g) ?? []) {
    const m = /^([\w]+)(?:\[\s*([^\]]+)\s*])?$/.exec(selector);
    if (m) {
      result[m[1]] = m[2];
      result.type = m[1];
    }
  }
  return result;
}

const DOCUMENT_LEVEL = ["component", "componentList", "dataContextList", "interactiveFrame", "global", "globalList"];

export function createCodapModel({ codapVersion = "3.1.0-test-host", onFrameResize = () => {} } = {}) {
  let nextId = 100_000;
  const newId = () => nextId++;
  const frameId = newId();
  const state = {
    datasets: [],
    components: [],
    log: [], // every processed request: {action, resource, values, type}
    frame: { title: "", version: "", dimensions: { width: 480, height: 400 } },
  };
  const caseIds = new Map(); // stable case ids: dataset id + collection + parent-value path

  // --- resources -------------------------------------------------------------------------------------

  // models/data/v2-model.ts matchTitleOrNameOrId: the first dataset (in document order) whose title, name or id
  // matches; a dataset's title is its name unless it was given one.
  const titleOf = (d) => d.title ?? d.name;
  const matches = (thing, sel) => titleOf(thing) === sel || thing.name === sel || String(thing.id) === sel;

  function findDataset(selector) {
    if (selector === undefined) return undefined;
    if (selector === "#default") return state.datasets[0];
    return state.datasets.find((d) => matches(d, selector));
  }

  const attrsOf = (ds) => ds.collections.flatMap((c) => c.attrs);
  const canonical = (name) => String(name).trim().replace(/\([^)]*\)$/, "").replace(/\W/g, "_") || "attr";
  function findAttr(ds, nameOrId, coll) {
    const pool = coll ? [coll.attrs, attrsOf(ds)] : [attrsOf(ds)];
    for (const attrs of pool) {
      const found = attrs.find((a) => a.name === nameOrId) ?? attrs.find((a) => a.name === canonical(nameOrId));
      if (found) return found;
    }
    return attrsOf(ds).find((a) => String(a.id) === String(nameOrId));
  }
  const findCollection = (ds, nameOrId) => ds?.collections.find((c) => c.name === nameOrId || String(c.id) === nameOrId);
  const findComponent = (sel) => allComponents().find((c) => matches(c, sel));

  function attrType(ds, attr) {
    if (attr.type) return attr.type;
    const texts = ds.items.map((i) => i.values[attr.name] ?? "").filter((t) => t !== "");
    if (texts.length === 0) return ds.items.length ? "categorical" : "";
    if (texts.every((t) => Number.isFinite(Number(t)))) return "numeric";
    if (texts.every((t) => DATE_RE.test(t))) return "date";
    return "categorical";
  }

  const itemValues = (ds, item) =>
    Object.fromEntries(attrsOf(ds).map((a) => [a.name, readValue({ type: attrType(ds, a) }, item.values[a.name])]));

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

  function attributeV2(ds, a) {
    return {
      name: a.name,
      type: attrType(ds, a) || null,
      title: a.title ?? a.name,
      description: null,
      editable: true,
      hidden: false,
      renameable: true,
      deleteable: true,
      formula: a.formula ?? null,
      guid: a.id,
      id: a.id,
      precision: a.precision ?? (a.type === "numeric" ? 2 : null), // CODAP's default for numeric attributes
      unit: a.unit ?? null,
    };
  }

  function collectionV2(ds, c, i) {
    return {
      attrs: c.attrs.map((a) => attributeV2(ds, a)),
      guid: c.id,
      id: c.id,
      name: c.name,
      parent: i > 0 ? ds.collections[i - 1].id : null,
      title: c.title ?? c.name,
      type: "DG.Collection",
    };
  }

  function datasetV2(ds) {
    return {
      type: "DG.DataContext",
      guid: ds.id,
      id: ds.id,
      name: ds.name,
      title: ds.title ?? null,
      collections: ds.collections.map((c, i) => collectionV2(ds, c, i)),
    };
  }

  const basicInfo = (d) => ({ name: d.name, id: d.id, title: d.title ?? null });

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

  // --- graphs: the plot CODAP picks for the attributes' types (graph-model-utils, graph-content-model) ----

  const graphDataset = (g) => state.datasets.find((d) => d.id === g.datasetId); // a graph holds its dataset's id

  function plotTypeOf(g) {
    const ds = graphDataset(g);
    const typeOf = (name, override) => {
      const a = ds && name ? findAttr(ds, name) : undefined;
      return a ? override ?? (attrType(ds, a) || "categorical") : undefined; // an attribute without values plots as a category
    };
    const x = typeOf(g.xAttributeName, g.xAttributeType);
    const y = typeOf(g.yAttributeName);
    let plot;
    if (!x && !y) plot = "casePlot";
    else if (x === "numeric" && y === "numeric") plot = "scatterPlot";
    else if (x === "numeric" || y === "numeric") plot = "dotPlot";
    else plot = "dotChart";
    return plot === "dotChart" && g.fused ? "barChart" : plot;
  }

  function graphValues(g) {
    const ds = graphDataset(g);
    const attr = (name) => (ds && name ? findAttr(ds, name) : undefined);
    const x = attr(g.xAttributeName);
    const y = attr(g.yAttributeName);
    const plotType = plotTypeOf(g);
    return {
      dataContext: ds?.name ?? null,
      plotType,
      showConnectingLines: g.showConnectingLines,
      xAttributeID: x?.id ?? null,
      xAttributeName: x?.name ?? null,
      xAttributeType: x ? g.xAttributeType ?? (attrType(ds, x) || null) : null,
      yAttributeID: y?.id ?? null,
      yAttributeName: y?.name ?? null,
      pointsAreFusedIntoBars: plotType === "barChart",
    };
  }

  function frameComponent() {
    return { id: frameId, type: "game", name: "plugin", title: state.frame.title || null };
  }
  const allComponents = () => [frameComponent(), ...state.components];

  function createComponent(values) {
    if (!values) return fail(ERR.valuesRequired);
    const { type, name, title } = values;
    const base = { id: newId(), type, name: name ?? null, title: title ?? name ?? null };
    if (type === "caseTable") {
      const sel = values.dataContext;
      const ds = state.datasets.find((d) => d.name === sel || String(d.id) === String(sel));
      if (!sel || !ds) return fail(fieldRequired("Create", "caseTable", "dataContext"));
      const existing = state.components.find((c) => c.type === "caseTable" && c.dataContext === ds.name);
      if (existing) return ok({ id: existing.id, title: "", type });
      Object.assign(base, { dataContext: ds.name });
    } else if (type === "graph") {
      // components/graph/graph-component-handler.ts: the only dataset, or the first matching one; the axes are
      // only set when dataContext is the dataset's exact name
      const ds = state.datasets.length === 1 ? state.datasets[0] : state.datasets.find((d) => matches(d, values.dataContext));
      const named = ds && ds.name === values.dataContext;
      const known = (n) => (named && n && findAttr(ds, n) ? findAttr(ds, n).name : undefined);
      Object.assign(base, {
        datasetId: ds?.id,
        xAttributeName: known(values.xAttributeName),
        xAttributeType: named && values.xAttributeType ? values.xAttributeType : undefined,
        yAttributeName: known(values.yAttributeName),
        showConnectingLines: false,
        fused: false,
      });
    } else if (type === "text") {
      Object.assign(base, { text: values.text ?? "" });
    } else {
      return fail(`Unsupported component type ${type}`);
    }
    state.components.push(base);
    return ok({ id: base.id, title: base.title ?? "", type });
  }

  function updateGraph(g, values) {
    if (values.dataContext !== undefined) {
      const ds = state.datasets.find((d) => d.name === values.dataContext || String(d.id) === String(values.dataContext));
      if (ds && ds.id !== g.datasetId) Object.assign(g, { datasetId: ds.id, xAttributeName: undefined, yAttributeName: undefined });
    }
    const ds = graphDataset(g);
    const pick = (id, name) => (ds ? findAttr(ds, id ?? name)?.name : undefined);
    if (values.xAttributeID != null || values.xAttributeName != null) g.xAttributeName = pick(values.xAttributeID, values.xAttributeName);
    if (values.yAttributeID != null || values.yAttributeName != null) g.yAttributeName = pick(values.yAttributeID, values.yAttributeName);
    if ("showConnectingLines" in values) g.showConnectingLines = Boolean(values.showConnectingLines);
    if ("pointsAreFusedIntoBars" in values) {
      const plot = plotTypeOf(g);
      // graph-content-model pointsCanBeFusedIntoBars: one attribute on an axis, not drawn as bars already
      const canFuse = (plot === "dotChart" || plot === "dotPlot") && !g.yAttributeName;
      if (values.pointsAreFusedIntoBars && !canFuse) return fail(ERR.cannotFuse);
      g.fused = Boolean(values.pointsAreFusedIntoBars) && plot === "dotChart";
    }
    return ok();
  }

  // --- handlers ----------------------------------------------------------------------------------------

  function handle(request) {
    if (!request) return fail(ERR.noAction);
    const { action, resource, values } = request;
    const sel = parseResource(resource);
    const type = sel.type ?? "";
    state.log.push({ action, resource, values, type });
    let ds;
    if (!DOCUMENT_LEVEL.includes(type)) {
      const selector = sel.dataContext ?? (action === "create" && type === "dataContext" ? undefined : "#default");
      ds = findDataset(selector);
    }
    switch (`${type}:${action}`) {
      case "interactiveFrame:get":
        return ok({
          codapVersion,
          dimensions: { ...state.frame.dimensions },
          externalUndoAvailable: true,
          id: frameId,
          name: state.frame.title,
          preventBringToFront: false,
          preventDataContextReorg: false,
          standaloneUndoModeAvailable: false,
          title: state.frame.title,
          version: state.frame.version,
          lang: "en",
          locale: "en-US",
        });
      case "interactiveFrame:update":
        if (Array.isArray(values)) return ok();
        if (values?.name || values?.title) state.frame.title = values.title || values.name;
        if (values?.version) state.frame.version = values.version;
        if (values?.dimensions) {
          state.frame.dimensions = { ...state.frame.dimensions, ...values.dimensions };
          onFrameResize(state.frame.dimensions);
        }
        return ok();
      case "dataContextList:get":
        return ok(state.datasets.map((d) => ({ name: d.name, guid: d.id, title: d.title ?? null, id: d.id })));
      case "dataContext:create": {
        const name = values?.name || `Data_Set_${state.datasets.length + 1}`;
        const same = state.datasets.find((d) => d.name === name);
        if (same) return ok(basicInfo(same));
        const collections = (values?.collections?.length ? values.collections : [{ name: "Cases" }]).map((c) => ({
          id: newId(),
          name: c.name || `Collection${newId()}`,
          title: c.title ?? c.name,
          attrs: (c.attrs ?? []).filter((a) => a?.name).map(makeAttr),
        }));
        const created = { id: newId(), name, title: values?.title || undefined, collections, items: [] };
        state.datasets.push(created);
        return ok(basicInfo(created));
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
          const src = raw?.values && typeof raw.values === "object" && !Array.isArray(raw.values) ? raw.values : raw ?? {};
          const kept = {};
          for (const [k, v] of Object.entries(src)) if (names.has(k)) kept[k] = importValue(v); // others are dropped
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
        return ok(ds.items.map((i) => ({ id: i.id, values: itemValues(ds, i) })));
      }
      case "itemByID:get":
      case "itemByID:update":
      case "itemByID:delete": {
        if (!ds) return fail(ERR.dataContextNotFound);
        const item = ds.items.find((i) => String(i.id) === sel.itemByID);
        if (!item) return fail(action === "update" ? "Case not found" : ERR.itemNotFound);
        if (action === "get") return ok({ id: item.id, values: itemValues(ds, item) });
        if (action === "delete") {
          ds.items = ds.items.filter((i) => i !== item);
          return ok([item.id]);
        }
        if (!values) return fail(fieldRequired("update", "item", "values"));
        for (const [k, v] of Object.entries(values)) if (findAttr(ds, k)) item.values[findAttr(ds, k).name] = importValue(v);
        return ok({ changedCases: [item.id], createdCases: [], deletedCases: [] });
      }
      case "collectionList:get":
        if (!ds) return fail(ERR.dataContextNotFound);
        return ok(ds.collections.map((c) => ({ name: c.name, guid: c.id, title: c.title ?? c.name, id: c.id })));
      case "collection:get": {
        if (!ds) return fail(ERR.dataContextNotFound);
        const c = findCollection(ds, sel.collection);
        return c ? ok(collectionV2(ds, c, ds.collections.indexOf(c))) : fail(ERR.collectionNotFound);
      }
      case "caseCount:get": {
        const c = findCollection(ds, sel.collection);
        if (!c) return fail(ERR.collectionNotFound);
        return ok(casesOf(ds, ds.collections.indexOf(c)).length);
      }
      case "allCases:get": {
        if (!ds) return fail(ERR.dataContextNotFound);
        const c = findCollection(ds, sel.collection);
        if (!c) return fail(ERR.collectionNotFound);
        const index = ds.collections.indexOf(c);
        const parents = index > 0 ? casesOf(ds, index - 1) : [];
        const key = (item, n) => JSON.stringify(ds.collections.slice(0, n).flatMap((cc) => cc.attrs.map((a) => item.values[a.name] ?? "")));
        const cases = casesOf(ds, index).map((group, caseIndex) => ({
          case: {
            id: group.id,
            parent: group.parentKey === null ? undefined : parents.find((p) => key(p.items[0], index) === group.parentKey)?.id,
            values: Object.fromEntries(c.attrs.map((a) => [a.name, readValue({ type: attrType(ds, a) }, group.items[0].values[a.name])])),
          },
          caseIndex,
        }));
        return ok({ collection: { name: c.name, id: c.id }, cases });
      }
      case "attribute:create": {
        if (!ds) return fail(ERR.dataContextNotFound);
        const c = findCollection(ds, sel.collection);
        if (!c) return fail(ERR.collectionNotFound);
        const specs = Array.isArray(values) ? values : [values];
        if (specs.some((s) => !s?.name)) return fail(fieldRequired("Create", "attribute", "name"));
        const attrs = specs.map(makeAttr);
        c.attrs.push(...attrs);
        return ok({ attrs: attrs.map((a) => attributeV2(ds, a)) });
      }
      case "attribute:get": {
        if (!ds) return fail(ERR.dataContextNotFound);
        const a = findAttr(ds, sel.attribute, findCollection(ds, sel.collection));
        return a ? ok(attributeV2(ds, a)) : fail(ERR.attributeNotFound);
      }
      case "attributeList:get": {
        // CODAP answers an unknown dataset or collection with an empty list, not an error
        const c = findCollection(ds, sel.collection);
        return ok((c?.attrs ?? []).map((a) => ({ name: a.name, id: a.id, title: a.title })));
      }
      case "componentList:get":
        return ok(allComponents().map((c) => ({ hidden: false, id: c.id, name: c.name ?? null, title: c.title ?? null, type: c.type })));
      case "component:create":
        return createComponent(values);
      case "component:get":
      case "component:update":
      case "component:delete": {
        const comp = sel.component === undefined ? undefined : findComponent(sel.component);
        if (!comp) return fail(ERR.componentNotFound);
        if (action === "get") {
          const general = { id: comp.id, name: comp.name ?? null, title: comp.title ?? null, type: comp.type };
          if (comp.type === "graph") return ok({ ...general, ...graphValues(comp) });
          if (comp.type === "caseTable") return ok({ ...general, dataContext: comp.dataContext });
          return ok(general);
        }
        if (action === "delete") {
          state.components = state.components.filter((c) => c !== comp);
          return ok();
        }
        if (!values) return fail(ERR.valuesRequired);
        if (values.title) comp.title = values.title;
        return comp.type === "graph" ? updateGraph(comp, values) : ok();
      }
      default:
        return fail(unsupportedAction(action ?? "", type));
    }
  }

  return {
    state,
    handle,
    /** One request or an array of them, answered as CODAP answers a plugin message. */
    answer: (value) => (Array.isArray(value) ? value.map(handle) : handle(value)),
    dataset(name) {
      const ds = state.datasets.find((d) => d.name === name);
      return ds
        ? { ...JSON.parse(JSON.stringify(ds)), items: ds.items.map((i) => ({ id: i.id, values: itemValues(ds, i) })) }
        : null;
    },
    /** How many requests of this action reached a resource type, e.g. count("create", "item"). */
    count(action, type) {
      return state.log.filter((r) => r.action === action && r.type === type).length;
    },
  };
}
