// @ts-check
// The Data Interactive requests that take one tool call back, read from CODAP's document (v2 JSON) before and
// after it: CODAP's Undo asks the plugin to take its change back itself (undoChangeNotice undoAction), and a
// change made through the Data Interactive API is not on CODAP's own undo history. Putting the whole document back
// (`update document`) would itself be a new step in that history and end CODAP's Redo, so each kind of change is
// reversed by its own request: a component, dataset, attribute or case added is deleted; a component moved,
// resized or retitled is put back; a graph's settings and statistics are set back from CODAP's own description of
// the graph before the call (graph_inverse.js); a case value, an attribute's name, title or category colours, a
// global value is set back; cases set aside are brought back and cases brought back are set aside again. What
// has no such request (a component or a dataset deleted, cases deleted, a map's or a slider's own settings) is
// named in `cannot`, and nothing is sent for the call.

import { graphInverse } from "./graph_inverse.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {GraphHeld} from "./graph_inverse.js"
 */

/** What restore points hold of each graph, by id (restore_points.js), before and after a change. */
/** @typedef {{before?: Record<string, GraphHeld>, after?: Record<string, GraphHeld>}} GraphsHeld */

/**
 * The parts of CODAP's document (v2 JSON, `get document`) a change is read from.
 * @typedef {object} V2Document
 * @property {V2Component[]} [components]
 * @property {V2Context[]} [contexts]
 * @property {Array<{name: string, value: unknown}>} [globalValues]
 */
/**
 * @typedef {object} V2Component
 * @property {CodapId} guid
 * @property {string} [type] "DG.GraphView"…
 * @property {{left?: number, top?: number, width?: number, height?: number, isVisible?: boolean}} [layout]
 * @property {{title?: string, name?: string, userSetTitle?: boolean, [key: string]: unknown}} [componentStorage]
 */
/**
 * @typedef {{guid: CodapId, name: string, title?: string, collections?: V2Collection[],
 *   setAsideItems?: Array<{id: CodapId}>}} V2Context
 */
/** @typedef {{guid: CodapId, name?: string, attrs: V2Attribute[], cases?: V2Case[]}} V2Collection */
/** @typedef {{guid: CodapId, name: string, [key: string]: unknown}} V2Attribute */
/** @typedef {{guid: CodapId, values?: Record<string, unknown>}} V2Case */

/** @type {<T extends {guid: CodapId}>(list: T[] | undefined) => Map<CodapId, T>} */
const byGuid = (list) => new Map((list ?? []).map((x) => [x.guid, x]));
const q = JSON.stringify;
/** @param {V2Component | undefined} c */
const componentLabel = (c) => q(c?.componentStorage?.title || c?.componentStorage?.name || c?.type?.replace(/^DG\./, "") || "component");

/**
 * @param {V2Document | null | undefined} a before
 * @param {V2Document | null | undefined} b after
 * @param {CodapRequest[]} requests
 * @param {string[]} cannot
 * @param {GraphsHeld} graphs
 */
function components(a, b, requests, cannot, graphs) {
  const before = byGuid(a?.components);
  const after = byGuid(b?.components);
  for (const [guid, c] of after) {
    const old = before.get(guid);
    if (!old) {
      requests.push({ action: "delete", resource: `component[${guid}]` });
      continue;
    }
    /** @type {{position?: {left?: number, top?: number}, dimensions?: {width?: number, height?: number}, title?: string, name?: string}} */
    const values = {};
    const [l0, l1] = [old.layout ?? {}, c.layout ?? {}];
    if (l0.left !== l1.left || l0.top !== l1.top) values.position = { left: l0.left, top: l0.top };
    if (l0.width !== l1.width || l0.height !== l1.height) values.dimensions = { width: l0.width, height: l0.height };
    const { title: t0, name: n0, userSetTitle: u0, ...rest0 } = old.componentStorage ?? {};
    const { title: t1, name: n1, userSetTitle: u1, ...rest1 } = c.componentStorage ?? {};
    if (t0 !== t1) values.title = t0 ?? "";
    if (n0 !== n1 && n0 !== undefined) values.name = n0;
    // Minimized or expanded: CODAP's plugin API has no request that puts that back (a size would not).
    const folded = /** @type {{savedHeight?: unknown}} */ (old).savedHeight !== /** @type {{savedHeight?: unknown}} */ (c).savedHeight;
    const [g0, g1] = [graphs.before?.[String(guid)], graphs.after?.[String(guid)]];
    const settings = q(rest0) !== q(rest1);
    if (settings && g0 && g1 && l0.isVisible === l1.isVisible && !folded) {
      // a graph: its settings are set back from CODAP's own description of it (a difference CODAP's API does
      // not read, such as the bounds CODAP keeps for an axis that shows none, is no change of the call's)
      const graph = graphInverse(guid, componentLabel(c), g0, g1);
      cannot.push(...graph.cannot);
      if (Object.keys(values).length) requests.push({ action: "update", resource: `component[${guid}]`, values });
      requests.push(...graph.requests);
    } else if (settings || l0.isVisible !== l1.isVisible || folded) cannot.push(`component ${componentLabel(c)} changed`);
    else if (Object.keys(values).length) requests.push({ action: "update", resource: `component[${guid}]`, values });
  }
  for (const [guid, c] of before) if (!after.has(guid)) cannot.push(`component ${componentLabel(c)} deleted (id ${guid})`);
}

/**
 * @param {V2Context} ctx
 * @param {V2Collection} col0
 * @param {V2Collection} col1
 * @param {CodapRequest[]} requests
 * @param {string[]} cannot
 * @param {boolean} setAsideChanged cases come and go with the set-aside ones (taken back by setAsides)
 */
function cases(ctx, col0, col1, requests, cannot, setAsideChanged) {
  const before = byGuid(col0.cases);
  const after = byGuid(col1.cases);
  const changed = [];
  for (const [guid, c] of after) {
    const old = before.get(guid);
    if (!old) {
      if (!setAsideChanged) requests.push({ action: "delete", resource: `dataContext[${ctx.guid}].collection[${col1.guid}].caseByID[${guid}]` });
    } else if (q(old.values) !== q(c.values)) changed.push({ id: guid, values: old.values });
  }
  if (changed.length) requests.push({ action: "update", resource: `dataContext[${ctx.guid}].case`, values: changed });
  const gone = [...before.keys()].filter((g) => !after.has(g)).length;
  if (gone && !setAsideChanged) cannot.push(`${gone} case${gone === 1 ? "" : "s"} of ${q(ctx.name)} deleted`);
}

/**
 * The requests that put a dataset's set-aside cases back as they were (v3's item ids: "ITEM" + the id), or none.
 * @param {V2Context} old
 * @param {V2Context} ctx
 * @returns {CodapRequest[]}
 */
function setAsides(old, ctx) {
  const was = new Set((old.setAsideItems ?? []).map((i) => String(i.id)));
  const now = new Set((ctx.setAsideItems ?? []).map((i) => String(i.id)));
  const resource = `dataContext[${ctx.guid}]`;
  const back = [...now].filter((id) => !was.has(id)).map((id) => `ITEM${id}`);
  const aside = [...was].filter((id) => !now.has(id)).map((id) => `ITEM${id}`);
  return [
    ...(back.length ? [{ action: /** @type {const} */ ("notify"), resource, values: { request: "setAside", operation: "restore", caseIDs: back } }] : []),
    ...(aside.length ? [{ action: /** @type {const} */ ("notify"), resource, values: { request: "setAside", caseIDs: aside } }] : []),
  ];
}

/**
 * @param {V2Document | null | undefined} a before
 * @param {V2Document | null | undefined} b after
 * @param {CodapRequest[]} requests
 * @param {string[]} cannot
 */
function datasets(a, b, requests, cannot) {
  const before = byGuid(a?.contexts);
  const after = byGuid(b?.contexts);
  for (const [guid, ctx] of after) {
    const old = before.get(guid);
    if (!old) {
      requests.push({ action: "delete", resource: `dataContext[${guid}]` });
      continue;
    }
    if (old.name !== ctx.name || old.title !== ctx.title) {
      if (old.name !== ctx.name) cannot.push(`dataset ${q(old.name)} renamed`);
      else requests.push({ action: "update", resource: `dataContext[${guid}]`, values: { title: old.title ?? "" } });
    }
    const cols0 = byGuid(old.collections);
    const cols1 = byGuid(ctx.collections);
    if (q([...cols0.keys()]) !== q([...cols1.keys()])) {
      cannot.push(`the collections of ${q(ctx.name)} changed`);
      continue;
    }
    const asides = setAsides(old, ctx);
    /** @type {CodapRequest[]} */
    const setsBack = [];
    /** @type {CodapRequest[]} */
    const valuesFirst = [];
    for (const [cg, col1] of cols1) {
      const col0 = /** @type {V2Collection} */ (cols0.get(cg)); // the same collections, checked above
      const attrs0 = byGuid(col0.attrs);
      for (const [ag, attr] of byGuid(col1.attrs)) {
        const was = attrs0.get(ag);
        const resource = `dataContext[${guid}].collection[${cg}].attribute[${ag}]`;
        if (!was) {
          requests.push({ action: "delete", resource });
          continue;
        }
        /** @type {Record<string, unknown>} */
        const values = {};
        for (const key of ["name", "title", "description", "unit", "precision", "type", "formula", "hidden"]) {
          if (q(was[key]) !== q(attr[key])) values[key] = was[key] ?? "";
        }
        // a legend's category colours (update_codap_graph legendColors) are set back; CODAP gives a colour of its
        // own to each new value as it meets it, which is no change of the call's
        const colours = /** @type {Record<string, unknown>} */ (was._categoryMap ?? {});
        const now = /** @type {Record<string, unknown>} */ (attr._categoryMap ?? {});
        const recoloured = Object.keys(colours).filter((k) => k !== "__order" && k in now && q(colours[k]) !== q(now[k]));
        if (recoloured.length) values.colormap = Object.fromEntries(recoloured.map((k) => [k, colours[k]]));
        if (Object.keys(values).length) setsBack.push({ action: "update", resource, values });
      }
      for (const [ag, attr] of attrs0) if (!col1.attrs.some((x) => x.guid === ag)) cannot.push(`attribute ${q(attr.name)} deleted`);
      // Case values are keyed by attribute name: they are set back under the names the call left.
      const renamed = new Map(col1.attrs.map((x) => [attrs0.get(x.guid)?.name, x.name]));
      const col0Now = {
        ...col0,
        cases: (col0.cases ?? []).map((c) => ({
          ...c,
          values: Object.fromEntries(Object.entries(c.values ?? {}).map(([k, v]) => [renamed.get(k) ?? k, v])),
        })),
      };
      cases(ctx, col0Now, col1, valuesFirst, cannot, asides.length > 0);
    }
    requests.push(...asides, ...valuesFirst, ...setsBack);
  }
  for (const [guid, ctx] of before) if (!after.has(guid)) cannot.push(`dataset ${q(ctx.name)} deleted (id ${guid})`);
}

/**
 * @param {V2Document | null | undefined} a before
 * @param {V2Document | null | undefined} b after
 * @param {CodapRequest[]} requests
 * @param {string[]} cannot
 */
function globals(a, b, requests, cannot) {
  const before = new Map((a?.globalValues ?? []).map((g) => [g.name, g]));
  for (const g of b?.globalValues ?? []) {
    const old = before.get(g.name);
    if (!old) continue; // a slider's value: deleting its slider component takes it along
    if (old.value !== g.value) requests.push({ action: "update", resource: `global[${g.name}]`, values: { value: old.value } });
  }
  const now = new Set((b?.globalValues ?? []).map((g) => g.name));
  for (const name of before.keys()) if (!now.has(name)) cannot.push(`global value ${q(name)} deleted`);
}

/**
 * What takes the change from document `before` to `after` back: `requests` to send in order, and `cannot`, the
 * changes no request takes back (when it is not empty, nothing should be sent).
 * @param {V2Document | null | undefined} before
 * @param {V2Document | null | undefined} after
 * @param {GraphsHeld} [graphs] what restore points hold of the graphs (without: a graph's change is in `cannot`)
 * @returns {{requests: CodapRequest[], cannot: string[]}}
 */
export function inverseOf(before, after, graphs = {}) {
  /** @type {CodapRequest[]} */
  const requests = [];
  /** @type {string[]} */
  const cannot = [];
  // Components first: a case table goes before its dataset.
  components(before, after, requests, cannot, graphs);
  globals(before, after, requests, cannot);
  datasets(before, after, requests, cannot);
  return { requests, cannot };
}
