// @ts-check
// A slider's and a map's own settings, as their inspector panels set them, and CODAP's calculator.
//
// A slider: component update takes its value (0 too, which `update global` refuses), range, step and animation,
// and `get component` reads them back. A map: component update takes its centre and zoom, notify autoScale fits
// it to its points; its base map, legend and layers (points, connecting lines, grid) CODAP's plugin API does not
// set on a map it has (an update's legendAttributeName is ignored), so they are changed in CODAP's saved document
// (codap_document.js rebuildComponent), which is also where a map's centre, zoom and layers are read back from.

import { readDocument, rebuildComponent } from "./codap_document.js";
import { ToolError, get, invalid, toolResult } from "./context.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** CODAP's slider animation settings are indexes into these lists (v3 slider-types.ts). */
const DIRECTIONS = ["backAndForth", "lowToHigh", "highToLow"];
const MODES = ["nonStop", "onceOnly"];
/** The base maps of a map's Layers panel: the tool's word → CODAP's saved name. */
const BASE_MAPS = { oceans: "Oceans", topographic: "Topographic", streets: "Streets" };

/** @param {Record<string, unknown>} state */
const withoutDataset = ({ datasetIds: _d, ...rest }) => rest;

/** @param {ToolContext} ctx */
export function createSliderMapTools(ctx) {
  const { send, must } = ctx;

  /**
   * The component of `type` that `wanted` names (id, name, title, or for a slider its global value's name), or the
   * only one when `wanted` is left out; an error naming those CODAP has.
   * @param {string} type
   * @param {unknown} wanted
   * @param {string} word
   */
  async function pick(type, wanted, word) {
    const list = get("componentList");
    const [listed] = await send([list]);
    /** @type {Array<{id: CodapId, type: string, name?: string, title?: string, hidden?: boolean}>} */
    const all = (must(list, listed).values ?? []).filter((/** @type {any} */ c) => c.type === type);
    const details = all.length ? await send(all.map((c) => get(`component[${c.id}]`))) : [];
    const found = all.map((c, i) => ({ ...c, detail: details[i]?.success === true ? details[i].values ?? {} : {} }));
    const label = (/** @type {typeof found[number]} */ c) =>
      `${JSON.stringify(c.title || c.name || c.detail.globalValueName || `${word} ${c.id}`)} (id ${c.id})`;
    if (wanted === undefined) {
      if (found.length === 1) return found[0];
      throw new ToolError(
        found.length ? `Say which ${word}: CODAP has ${found.map(label).join(", ")}.` : `CODAP has no ${word}.`,
        found.length ? "invalid_arguments" : "component_not_found",
        { available: found.map(label) },
      );
    }
    const key = String(wanted).trim();
    const lower = key.toLowerCase();
    for (const test of [
      (/** @type {typeof found[number]} */ c) => String(c.id) === key,
      (/** @type {typeof found[number]} */ c) => c.name === key || c.title === key || c.detail.globalValueName === key,
      (/** @type {typeof found[number]} */ c) => [c.name, c.title, c.detail.globalValueName].some((n) => String(n ?? "").toLowerCase() === lower),
    ]) {
      const hits = found.filter(test);
      if (hits.length === 1) return hits[0];
      if (hits.length > 1) throw invalid(`${hits.length} ${word}s are called ${JSON.stringify(key)}: give the id of one (${hits.map(label).join(", ")}).`);
    }
    throw new ToolError(
      `CODAP has no ${word} called ${JSON.stringify(key)}. ${found.length ? `Its ${word}s: ${found.map(label).join(", ")}.` : `CODAP has no ${word}.`}`,
      "component_not_found",
      { component: key, available: found.map(label) },
    );
  }

  /**
   * @param {{slider?: string | number, value?: number, min?: number, max?: number, step?: number,
   *   animationDirection?: string, animationMode?: string, maxPerSecond?: number}} args
   */
  async function update_codap_slider(args) {
    const keys = /** @type {const} */ (["value", "min", "max", "step", "animationDirection", "animationMode", "maxPerSecond"]);
    if (!keys.some((k) => args[k] !== undefined)) {
      throw invalid("Say what to change: value, min, max, step, animationDirection, animationMode or maxPerSecond.");
    }
    const slider = await pick("slider", args.slider, "slider");
    const d = slider.detail;
    const min = args.min ?? d.lowerBound;
    const max = args.max ?? d.upperBound;
    if (min >= max) throw invalid(`min (${min}) must be below max (${max}).`);
    /** @type {Record<string, unknown>} */
    const values = {};
    if (args.value !== undefined) values.value = args.value;
    if (args.min !== undefined) values.lowerBound = args.min;
    if (args.max !== undefined) values.upperBound = args.max;
    if (args.step !== undefined) values.multipleOf = args.step;
    if (args.animationDirection !== undefined) values.animationDirection = DIRECTIONS.indexOf(args.animationDirection);
    if (args.animationMode !== undefined) values.animationMode = MODES.indexOf(args.animationMode);
    if (args.maxPerSecond !== undefined) values.animationRate = args.maxPerSecond;
    const resource = `component[${slider.id}]`;
    /** @type {CodapRequest} */
    const update = { action: "update", resource, values };
    const [done, read] = await send([update, get(resource)]);
    must(update, done, `changing slider ${slider.id}`);
    const now = must(get(resource), read).values ?? {};
    const facts = (/** @type {Record<string, any>} */ v) => ({
      value: v.value,
      min: v.lowerBound,
      max: v.upperBound,
      step: v.multipleOf ?? null,
      animationDirection: DIRECTIONS[v.animationDirection] ?? null,
      animationMode: MODES[v.animationMode] ?? null,
      maxPerSecond: v.animationRate ?? null,
    });
    const before = facts(d);
    const after = facts(now);
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    /** @type {string[]} */
    const notTaken = [];
    for (const k of keys) {
      if (before[k] !== after[k]) changes[k] = { before: before[k], after: after[k] };
      if (args[k] !== undefined && args[k] !== after[k] && !(k === "step" && args.step === 0 && !after.step)) notTaken.push(`${k} ${args[k]} (CODAP has ${after[k]})`);
    }
    const lines = Object.entries(changes).map(([k, c]) => `${k} ${c.before} → ${c.after}`);
    const global = String(now.globalValueName ?? d.globalValueName ?? "");
    return toolResult(
      (lines.length ? `Slider ${JSON.stringify(global)} (id ${slider.id}): ${lines.join(", ")}.` : `Slider ${JSON.stringify(global)} already had those settings.`) +
        ` Formulas that use ${global} now see ${after.value}.` +
        (notTaken.length ? ` CODAP did not take: ${notTaken.join("; ")}.` : ""),
      { componentId: slider.id, globalValue: global, ...after, changes, ...(notTaken.length ? { notTaken } : {}) },
    );
  }

  /**
   * A map's state from CODAP's document: centre, zoom, base map and, for its first points layer, the legend
   * attribute's id and what the layer shows.
   * @param {CodapId} id
   */
  async function mapState(id) {
    const doc = await readDocument(ctx);
    const storage = doc.components?.find((c) => String(c.guid) === String(id))?.componentStorage ?? {};
    return stateOf(storage);
  }

  /** @param {Record<string, any>} storage */
  function stateOf(storage) {
    const m = storage.mapModelStorage ?? {};
    /** @type {Array<Record<string, any>>} */
    const layers = m.layerModels ?? [];
    // A map shows every dataset with coordinates, a layer each: the legend is the layer's that has one.
    const layer = layers.find((l) => l._links_?.legendAttr) ?? layers[0] ?? null;
    const base = Object.entries(BASE_MAPS).find(([, v]) => v === m.baseMapLayerName)?.[0] ?? m.baseMapLayerName ?? null;
    return {
      datasetIds: layers.map((l) => l._links_?.context?.id).filter((id) => id !== undefined),
      center: m.center ? { latitude: m.center.lat, longitude: m.center.lng } : null,
      zoom: m.zoom ?? null,
      baseMap: base,
      legendAttributeId: layer?._links_?.legendAttr?.id ?? null,
      points: layer ? layer.pointsShouldBeVisible !== false : null,
      lines: layer ? layer.connectingLines?.isVisible === true : null,
      grid: layer ? layer.grid?.isVisible === true : null,
    };
  }

  /**
   * @param {{map?: string | number, center?: {latitude: number, longitude: number}, zoom?: number, fit?: boolean,
   *   baseMap?: "oceans" | "topographic" | "streets", legendAttribute?: string | null, points?: boolean,
   *   lines?: boolean, grid?: boolean}} args
   */
  async function update_codap_map(args) {
    const stored = /** @type {const} */ (["baseMap", "legendAttribute", "points", "lines", "grid"]);
    const direct = /** @type {const} */ (["center", "zoom", "fit"]);
    if (![...stored, ...direct].some((k) => args[k] !== undefined)) {
      throw invalid("Say what to change: center, zoom, fit, baseMap, legendAttribute, points, lines or grid.");
    }
    if (!ctx.listen) throw new ToolError("This plugin cannot read CODAP's document here.", "document_unavailable");
    const map = await pick("map", args.map, "map");
    const before = await mapState(map.id);
    // A map's own description names no dataset: its layers do, in the document (one for each dataset it shows).
    const datasetIds = before.datasetIds.length ? before.datasetIds : map.detail.dataContext ? [map.detail.dataContext] : [];
    /** @type {{id: CodapId, name: string, collection: CodapId, datasetId: CodapId} | null} */
    let legend = null;
    /** @type {CodapId | null} */
    let datasetName = datasetIds[0] ?? null;
    if (typeof args.legendAttribute === "string") {
      if (!datasetIds.length) throw invalid("This map shows no dataset, so it has no attribute to colour its points by.");
      const reads = datasetIds.map((d) => get(`dataContext[${d}].attribute[${args.legendAttribute}]`));
      const replies = await send(reads);
      const at = replies.findIndex((r) => r?.success === true);
      if (at < 0) {
        throw new ToolError(
          `No dataset the map shows has an attribute ${JSON.stringify(args.legendAttribute)} for its legend.`,
          "attribute_not_found",
          { attribute: args.legendAttribute },
        );
      }
      datasetName = datasetIds[at];
      const found = /** @type {import("../types.js").CodapSuccess} */ (replies[at]);
      const colls = get(`dataContext[${datasetName}].collectionList`);
      const [listed] = await send([colls]);
      const collections = must(colls, listed).values ?? [];
      /** @type {CodapId | undefined} */
      let collectionId;
      for (const c of collections) {
        const attrs = get(`dataContext[${datasetName}].collection[${c.id}].attributeList`);
        const [r] = await send([attrs]);
        if ((r?.values ?? []).some((/** @type {any} */ a) => String(a.id) === String(found.values.id))) collectionId = c.id;
      }
      legend = {
        id: found.values.id,
        name: found.values.name,
        collection: /** @type {CodapId} */ (collectionId ?? collections[0]?.id),
        datasetId: /** @type {CodapId} */ (datasetName),
      };
    }
    let others = /** @type {string[]} */ ([]);
    if (stored.some((k) => args[k] !== undefined)) {
      const frame = (await send([get("interactiveFrame")]))[0]?.values?.id ?? null;
      const rebuilt = await rebuildComponent(ctx, map.id, (storage) => {
        const m = storage.mapModelStorage ?? (storage.mapModelStorage = {});
        if (args.baseMap) m.baseMapLayerName = BASE_MAPS[args.baseMap];
        for (const layer of m.layerModels ?? []) {
          if (args.points !== undefined) layer.pointsShouldBeVisible = args.points;
          if (args.lines !== undefined) layer.connectingLines = { ...layer.connectingLines, isVisible: args.lines };
          if (args.grid !== undefined) layer.grid = { ...layer.grid, isVisible: args.grid };
          if (args.legendAttribute !== undefined) {
            const links = layer._links_ ?? (layer._links_ = {});
            if (legend && String(links.context?.id) !== String(legend.datasetId)) continue;
            if (legend) {
              links.legendColl = { type: "DG.Collection", id: legend.collection };
              links.legendAttr = { type: "DG.Attribute", id: legend.id };
            } else {
              delete links.legendColl;
              delete links.legendAttr;
            }
          }
        }
      }, frame);
      others = rebuilt.others;
    }
    /** @type {CodapRequest[]} */
    const requests = [];
    const resource = `component[${map.id}]`;
    if (args.center || args.zoom !== undefined) {
      requests.push({
        action: "update",
        resource,
        values: { ...(args.center ? { center: [args.center.latitude, args.center.longitude] } : {}), ...(args.zoom !== undefined ? { zoom: args.zoom } : {}) },
      });
    }
    if (args.fit) requests.push({ action: "notify", resource, values: { request: "autoScale" } });
    const placed = requests.length ? await mapState(map.id) : null;
    if (requests.length) {
      const replies = await send(requests);
      requests.forEach((r, i) => must(r, replies[i], `changing map ${map.id}`));
    }
    let after = await mapState(map.id);
    // CODAP moves a map to its points over a moment: read it again until it has moved (at most 3 s).
    for (let i = 0; args.fit && i < 8 && JSON.stringify(after) === JSON.stringify(placed); i++) {
      await ctx.sleep(400);
      after = await mapState(map.id);
    }
    let legendName = legend?.name ?? null;
    if (!legend && after.legendAttributeId !== null && datasetName) {
      const [named] = await send([get(`dataContext[${datasetName}].attribute[${after.legendAttributeId}]`)]);
      legendName = named?.success === true ? String(named.values?.name ?? "") || null : null;
    }
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    for (const [k, v] of Object.entries(after)) {
      if (k === "datasetIds") continue;
      const b = /** @type {Record<string, unknown>} */ (before)[k];
      if (JSON.stringify(b) !== JSON.stringify(v)) changes[k] = { before: b, after: v };
    }
    /** @type {string[]} */
    const notTaken = [];
    if (args.baseMap && after.baseMap !== args.baseMap) notTaken.push(`baseMap ${args.baseMap}`);
    if (args.legendAttribute !== undefined && String(after.legendAttributeId ?? "") !== String(legend?.id ?? "")) notTaken.push(`legendAttribute ${args.legendAttribute}`);
    for (const k of /** @type {const} */ (["points", "lines", "grid"])) if (args[k] !== undefined && after[k] !== args[k]) notTaken.push(`${k} ${args[k]}`);
    if (args.zoom !== undefined && !args.fit && after.zoom !== args.zoom) notTaken.push(`zoom ${args.zoom} (CODAP has ${after.zoom})`);
    const shown = [
      after.center && `centre ${after.center.latitude.toFixed(3)}, ${after.center.longitude.toFixed(3)}`,
      after.zoom !== null && `zoom ${typeof after.zoom === "number" ? Math.round(after.zoom * 100) / 100 : after.zoom}`,
      after.baseMap && `${after.baseMap} base map`,
      legendName ? `points coloured by ${legendName}` : "no legend",
      after.points !== null && `points ${after.points ? "shown" : "hidden"}`,
      after.lines && "connecting lines shown",
      after.grid && "grid shown",
    ].filter(Boolean);
    return toolResult(
      `Map ${JSON.stringify(map.title || map.name || `map ${map.id}`)} (id ${map.id}) now: ${shown.join(", ")}.` +
        (Object.keys(changes).length ? ` Changed: ${Object.keys(changes).join(", ")}.` : " Nothing changed.") +
        (notTaken.length ? ` CODAP did not take: ${notTaken.join(", ")}.` : "") +
        (others.length ? ` Rebuilding the document changed more than the map: ${others.join("; ")}.` : ""),
      { componentId: map.id, ...withoutDataset(after), legendAttribute: legendName, changes, ...(notTaken.length ? { notTaken } : {}) },
    );
  }

  /** @param {{title?: string}} args */
  async function create_codap_calculator(args) {
    /** @type {CodapRequest} */
    const create = { action: "create", resource: "component", values: { type: "calculator", ...(args.title ? { name: args.title, title: args.title } : {}) } };
    const [made] = await send([create]);
    const id = must(create, made, "opening the calculator").values?.id;
    const [read] = await send([get(`component[${id}]`)]);
    const now = must(get(`component[${id}]`), read).values ?? {};
    return toolResult(
      `Opened CODAP's calculator (id ${id}${now.title ? `, title ${JSON.stringify(now.title)}` : ""}): the class types sums into it. ` +
        "It keeps nothing in the document's data; for a number the class needs, evaluate_codap_formula computes it.",
      { componentId: id, type: "calculator", title: String(now.title ?? "") },
    );
  }

  return { update_codap_slider, update_codap_map, create_codap_calculator };
}
