// @ts-check
// What a raw request meant to change, read back from CODAP: CODAP 3.1.0 answers success to an update (or a
// component create) even where its handler ignores a value (a dataset's `name`, a graph's `plotType`, an item id
// where a case id belongs). For requests that change a dataset, collection, attribute, global, component, item or
// case, codap_api reads the thing before and after in the same message and names each value that did not take,
// with CODAP's own value and, where the handler never reads the key, that it ignores it.
//
// The keys each handler reads are CODAP v3.1.0's (v3/src/data-interactive/handlers/*.ts, di-handler-utils.ts and
// the component handlers under v3/src/components).

import { plainText } from "./richtext.js";

/**
 * @import {CodapReply, CodapRequest} from "../types.js"
 */

/**
 * A value CODAP did not take: the key, what was asked, what CODAP holds, and why or what to do instead.
 * @typedef {{key: string, asked: unknown, now?: unknown, why: string}} NotTaken
 */

/**
 * @typedef {object} Check
 * @property {CodapRequest[]} before reads sent before the request, in the same message
 * @property {(id: unknown) => CodapRequest[]} after reads sent after it (`id`: a created component's)
 * @property {(before: CodapReply[], after: CodapReply[]) => {notTaken: NotTaken[], unverified: string[]}} compare
 */

const COMPONENT_COMMON = ["cannotClose", "dimensions", "isResizable", "isVisible", "name", "position", "title", "currentGameName", "type"];
/** Each component type's own keys its create and update read (v3.1.0); graphs also take plot-specific keys. */
const COMPONENT_KEYS = {
  caseTable: ["dataContext", "horizontalScrollOffset", "isIndexHidden"],
  caseCard: ["dataContext"],
  text: ["text"],
  slider: ["globalValueName", "value", "lowerBound", "upperBound", "animationDirection", "animationMode", "animationRate",
    "multipleOf", "scaleType", "dateMultipleOfUnit"],
  map: ["dataContext", "legendAttributeName", "center", "zoom", "geoRaster"],
  calculator: [],
};
/** Keys CODAP takes but `get component` does not give back: unverified, not wrong. */
const UNREAD = { map: ["center", "zoom", "legendAttributeName", "geoRaster"], caseCard: [], text: [] };

const ATTRIBUTE_KEYS = ["cid", "deleteProtected", "deleteable", "renameProtected", "renameable", "description", "editable",
  "formula", "name", "precision", "title", "type", "unit", "hidden", "colormap"];
const DATASET_KEYS = ["title", "metadata", "sort", "rerandomize", "managingController"];
const COLLECTION_KEYS = ["title", "labels"];

/** What to use instead of a value CODAP ignores. @type {Record<string, string>} */
const INSTEAD = {
  "dataContext.name": "CODAP's plugin API cannot rename a dataset: give it a title (update_codap_dataset title), which every tool accepts as its name",
  "collection.name": "CODAP's plugin API cannot rename a collection: give it a title ({title}), which the tools accept as its name",
  "global.name": "CODAP's plugin API cannot rename a global value",
  "component.isMinimized": "CODAP's plugin API cannot minimize or expand a component",
  "graph.plotType": "CODAP's component update does not change a plot type: use update_codap_graph (plotType, binned plots, histograms)",
  "map.legendAttributeName": "CODAP 3.1.0 sets a map's legend only when it makes the map: use update_codap_map legendAttribute",
};

/**
 * @param {unknown} a asked
 * @param {unknown} b held
 * @returns {boolean}
 */
function same(a, b) {
  if (a === b) return true;
  if (typeof a === "number" || typeof b === "number") {
    const x = Number(a);
    const y = Number(b);
    return a !== "" && b !== "" && a !== null && b !== null && Number.isFinite(x) && Number.isFinite(y) && Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x));
  }
  // CODAP gives null for a switch it never set: false asked, null held is the same.
  if ((a === "" || a === null || a === undefined || a === false) && (b === "" || b === null || b === undefined)) return true;
  if (a && b && typeof a === "object" && typeof b === "object") {
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    return Object.entries(a).every(([k, v]) => same(v, /** @type {Record<string, unknown>} */ (b)[k]));
  }
  return false;
}

/** @param {CodapReply | undefined} reply */
const valuesOf = (reply) => (reply?.success === true && reply.values && typeof reply.values === "object" ? reply.values : null);

/**
 * Compares the asked keys with what CODAP holds after.
 * @param {Record<string, unknown>} asked
 * @param {Record<string, any>} before
 * @param {Record<string, any>} after
 * @param {{kind: string, accepted: string[] | null, unread?: string[], special?: Record<string, (asked: unknown) => {ok: boolean, now?: unknown} | null>}} rules
 */
function compareKeys(asked, before, after, { kind, accepted, unread = [], special = {} }) {
  /** @type {NotTaken[]} */
  const notTaken = [];
  /** @type {string[]} */
  const unverified = [];
  for (const [key, value] of Object.entries(asked)) {
    const instead = INSTEAD[`${kind}.${key}`];
    if (special[key]) {
      const outcome = special[key](value);
      if (outcome && !outcome.ok) notTaken.push({ key, asked: value, now: outcome.now, why: instead ?? "CODAP kept another value" });
      if (!outcome) unverified.push(key);
      continue;
    }
    if (accepted && !accepted.includes(key)) {
      notTaken.push({ key, asked: value, ...(key in after ? { now: after[key] } : {}), why: instead ?? `CODAP's ${kind} handler does not read "${key}"` });
      continue;
    }
    if (unread.includes(key) || !(key in after)) {
      unverified.push(key);
      continue;
    }
    if (!same(value, after[key])) {
      const kept = same(before[key], after[key]) && key in before;
      notTaken.push({ key, asked: value, now: after[key], why: instead ?? (kept ? "CODAP kept its value" : "CODAP holds another value") });
    }
  }
  return { notTaken, unverified };
}

/** @param {string} resource */
function lastClause(resource) {
  const clauses = resource.match(/[A-Za-z]+(\[[^\]]*\])?/g) ?? [];
  const last = clauses[clauses.length - 1] ?? "";
  return { type: last.replace(/\[.*$/, ""), clauses };
}

/**
 * The check for a raw request, or null when it changes nothing a read can show (gets, notifications, deletes,
 * creates of data).
 * @param {CodapRequest} request
 * @returns {Check | null}
 */
export function checkFor(request) {
  const { action, resource } = request;
  const values = request.values;
  const { type } = lastClause(resource);
  const plain = values && typeof values === "object" && !Array.isArray(values) ? /** @type {Record<string, unknown>} */ (values) : null;
  const get = (/** @type {string} */ r) => /** @type {CodapRequest} */ ({ action: "get", resource: r });

  if (type === "component" && plain && (action === "update" || (action === "create" && resource === "component"))) {
    const list = get("componentList");
    return {
      before: action === "update" ? [get(resource)] : [],
      after: (id) => [get(action === "update" ? resource : `component[${id}]`), list],
      compare(beforeReplies, afterReplies) {
        const before = valuesOf(beforeReplies[0]) ?? {};
        const after = valuesOf(afterReplies[0]);
        if (!after) return { notTaken: [], unverified: Object.keys(plain) };
        const kind = String(after.type ?? before.type ?? plain.type ?? "component");
        const own = /** @type {Record<string, string[]>} */ (COMPONENT_KEYS)[kind];
        /** @type {Array<{id: unknown, hidden?: boolean}>} */
        const listed = Array.isArray(valuesOf(afterReplies[1])) ? /** @type {any} */ (valuesOf(afterReplies[1])) : [];
        const entry = listed.find((c) => String(c.id) === String(after.id));
        const { type: _t, ...asked } = plain;
        if (kind === "slider" && action === "create" && !plain.globalValueName) {
          const { globalValueName: _g, ...rest } = asked;
          const notTaken = Object.entries(rest).filter(([k, v]) => k in after && !same(v, after[k])).map(([key, v]) => ({
            key,
            asked: v,
            now: after[key],
            why: "a slider made without globalValueName is CODAP's default slider: create the global first, then a slider with its globalValueName",
          }));
          return { notTaken, unverified: [] };
        }
        if (kind === "map" && action === "update" && "legendAttributeName" in asked) {
          const { legendAttributeName, ...rest } = asked;
          const out = compareKeys(rest, before, after, { kind: "component", accepted: [...COMPONENT_COMMON, ...COMPONENT_KEYS.map], unread: UNREAD.map });
          out.notTaken.push({ key: "legendAttributeName", asked: legendAttributeName, why: INSTEAD["map.legendAttributeName"] });
          return out;
        }
        return compareKeys(asked, before, after, {
          kind: kind === "graph" ? "graph" : "component",
          accepted: own ? [...COMPONENT_COMMON, ...own] : null,
          unread: [...(/** @type {Record<string, string[]>} */ (UNREAD)[kind] ?? []), "currentGameName", "cannotClose", "isResizable"],
          special: {
            isVisible: (v) => (entry ? { ok: entry.hidden === !v, now: entry.hidden ? "hidden" : "shown" } : null),
            isMinimized: () => ({ ok: false }),
            position: (v) => ({ ok: same(v, after.position), now: after.position }),
            dimensions: (v) => ({ ok: same(v, after.dimensions), now: after.dimensions }),
            dataContext: () => null,
            text: (v) => {
              const asked = plainText(v);
              const shown = plainText(after.text);
              return { ok: asked.split("\n").every((line) => shown.includes(line.trim())), now: shown };
            },
          },
        });
      },
    };
  }
  if (action !== "update" || !plain) return null;
  if (type === "dataContext") {
    const read = get(resource);
    return {
      before: [read],
      after: () => [read],
      compare([b], [a]) {
        const before = valuesOf(b) ?? {};
        const after = valuesOf(a) ?? {};
        return compareKeys(plain, before, after, {
          kind: "dataContext",
          accepted: DATASET_KEYS,
          unread: ["sort", "rerandomize", "managingController"],
          special: {
            metadata: (v) => {
              const asked = /** @type {Record<string, unknown>} */ (v ?? {});
              const extra = Object.keys(asked).filter((k) => k !== "description");
              if (extra.length) return { ok: false, now: after.metadata ?? {} };
              return "description" in asked ? { ok: same(asked.description, after.metadata?.description ?? ""), now: after.metadata } : null;
            },
          },
        });
      },
    };
  }
  if (type === "collection") {
    const read = get(resource);
    return {
      before: [read],
      after: () => [read],
      compare([b], [a]) {
        return compareKeys(plain, valuesOf(b) ?? {}, valuesOf(a) ?? {}, { kind: "collection", accepted: COLLECTION_KEYS });
      },
    };
  }
  if (type === "attribute") {
    const read = get(resource);
    return {
      before: [read],
      // A rename moves the attribute: read it back under its new name.
      after: () => [typeof plain.name === "string" ? get(resource.replace(/attribute\[[^\]]*\]$/, `attribute[${plain.name}]`)) : read],
      compare([b], [a]) {
        const after = valuesOf(a) ?? {};
        const out = compareKeys(plain, valuesOf(b) ?? {}, after, {
          kind: "attribute",
          accepted: ATTRIBUTE_KEYS,
          unread: ["cid", "deleteProtected", "deleteable", "renameProtected", "renameable", "colormap"],
        });
        for (const n of out.notTaken) {
          if (n.key === "editable" && typeof n.asked === "boolean" && after.editable === !n.asked) {
            n.why = `CODAP 3.1.0 reads editable the wrong way round (it sets "protected" to the value sent): send editable ${!n.asked} for ${n.asked}, or use update_codap_attribute editable`;
          }
        }
        return out;
      },
    };
  }
  if (type === "global") {
    const read = get(resource);
    return {
      before: [read],
      after: () => [read],
      compare([b], [a]) {
        return compareKeys(plain, valuesOf(b) ?? {}, valuesOf(a) ?? {}, { kind: "global", accepted: ["value"] });
      },
    };
  }
  if (type === "itemByID" || type === "caseByID") {
    const read = get(resource);
    const asked = /** @type {Record<string, unknown>} */ (type === "caseByID" ? plain.values ?? {} : plain);
    return {
      before: [read],
      after: () => [read],
      compare([b], [a]) {
        const pick = (/** @type {CodapReply} */ r) => {
          const v = valuesOf(r) ?? {};
          return /** @type {Record<string, unknown>} */ (type === "caseByID" ? v.case?.values ?? {} : v.values ?? {});
        };
        const before = pick(b);
        const after = pick(a);
        const out = compareKeys(asked, before, after, { kind: type === "caseByID" ? "case" : "item", accepted: null });
        // A key that is no attribute is not in the values at all: CODAP ignored it.
        const missing = out.unverified.filter((k) => !(k in after));
        return {
          notTaken: [...out.notTaken, ...missing.map((key) => ({ key, asked: asked[key], why: `the dataset has no attribute "${key}"` }))],
          unverified: out.unverified.filter((k) => k in after),
        };
      },
    };
  }
  return null;
}

/**
 * A sentence naming what CODAP did not take, or "" when all took.
 * @param {NotTaken[]} notTaken
 */
export function notTakenText(notTaken) {
  if (!notTaken.length) return "";
  const parts = notTaken.map((n) =>
    `${n.key} (asked ${JSON.stringify(n.asked)}${n.now !== undefined ? `; CODAP has ${JSON.stringify(n.now)}` : ""}: ${n.why})`);
  return `CODAP answered success but did not take ${parts.length === 1 ? "this value" : "these values"}: ${parts.join("; ")}.`;
}
