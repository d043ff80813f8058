// @ts-check
// Maps: to make one (its legend and base map too), and its own settings, as its inspector panels set them.
//
// Component update takes a map's centre and zoom, notify autoScale fits it to its points. Its base map, legend,
// layers (points, connecting lines, grid) and its View menu (Hide Selected or Unselected Cases, Show All Cases, a
// filter formula) CODAP's plugin API does not set on a map it has (an update's legendAttributeName, hiddenCases and
// filterFormula are ignored: v3.1.0 map-component-handler.ts), so they are changed in CODAP's saved document
// (codap_document.js rebuildComponent): each layer (one per dataset with coordinates) keeps its hidden cases in
// `_links_.hiddenCases` and its filter formula in `v3.filterFormula`. The document is also where a map's state is
// read back from.

import { readDocument, rebuildComponent } from "./codap_document.js";
import { ToolError, get, invalid, toolResult } from "./context.js";
import { createPicker } from "./component_pick.js";
import { createPlacer, placementText } from "./component_place.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** The base maps of a map's Layers panel: the tool's word → CODAP's saved name. */
const BASE_MAPS = { oceans: "Oceans", topographic: "Topographic", streets: "Streets" };
/** Names CODAP recognizes (lower case) for a map's point coordinates (v3 map-types.ts, kLatNames/kLongNames). */
export const LAT_NAMES = ["latitude", "lat", "latitud", "breitengrad", "緯度", "عرض جغرافیایی"];
export const LONG_NAMES = ["longitude", "long", "lng", "lon", "longitud", "längengrad", "経度", "طول جغرافیایی"];

/**
 * A map's state from its saved form (componentStorage): centre, zoom, base map, for the layer with a legend (or
 * the first) the legend attribute's id and what the layer shows, and over all layers the cases hidden in the map
 * and the filter formula. `datasetIds`, `hiddenCaseIds` and `legendDatasetId` are for the tools, not the answer
 * (publicMap).
 * @param {Record<string, any>} storage
 */
export function mapStateOf(storage) {
  const m = storage.mapModelStorage ?? {};
  /** @type {Array<Record<string, any>>} */
  const layers = m.layerModels ?? [];
  // A map shows every dataset with coordinates, a layer each: the legend is the layer's that has one.
  const layer = layers.find((l) => l._links_?.legendAttr) ?? layers[0] ?? null;
  const base = Object.entries(BASE_MAPS).find(([, v]) => v === m.baseMapLayerName)?.[0] ?? m.baseMapLayerName ?? null;
  const hiddenCaseIds = layers.flatMap((l) => (l._links_?.hiddenCases ?? []).map((/** @type {{id: CodapId}} */ h) => h.id));
  const filters = layers.map((l) => l.v3?.filterFormula).filter((f) => typeof f === "string" && f);
  // Until CODAP has drawn a map it saves the world view it starts from (centre 0, 0, zoom -1), which no one sees:
  // it then fits the map to its points. That placeholder is left out, not given as where the map is.
  const drawn = typeof m.zoom === "number" && m.zoom >= 0;
  return {
    datasetIds: layers.map((l) => l._links_?.context?.id).filter((id) => id !== undefined),
    hiddenCaseIds,
    center: m.center && drawn ? { latitude: m.center.lat, longitude: m.center.lng } : null,
    zoom: drawn ? m.zoom : null,
    baseMap: base,
    legendAttributeId: layer?._links_?.legendAttr?.id ?? null,
    legendDatasetId: layer?._links_?.legendAttr ? layer._links_?.context?.id ?? null : null,
    points: layer ? layer.pointsShouldBeVisible !== false : null,
    lines: layer ? layer.connectingLines?.isVisible === true : null,
    grid: layer ? layer.grid?.isVisible === true : null,
    hiddenCases: hiddenCaseIds.length,
    filterFormula: /** @type {string | null} */ (filters[0] ?? null),
  };
}

/** @param {ReturnType<typeof mapStateOf>} state the map's state without what only the tools use */
export const publicMap = ({ datasetIds: _d, hiddenCaseIds: _h, legendDatasetId: _l, ...rest }) => rest;

/**
 * The map in words, for an answer and the status.
 * @param {ReturnType<typeof mapStateOf>} s
 * @param {string | null} legendName
 */
export function mapText(s, legendName) {
  return [
    s.center && `centre ${s.center.latitude.toFixed(3)}, ${s.center.longitude.toFixed(3)}`,
    s.zoom !== null && `zoom ${typeof s.zoom === "number" ? Math.round(s.zoom * 100) / 100 : s.zoom}`,
    s.zoom === null && "not drawn yet (CODAP fits it to its points as it draws it; get_codap_status gives its centre and zoom then)",
    s.baseMap && `${s.baseMap} base map`,
    legendName ? `points coloured by ${legendName}` : "no legend",
    s.points !== null && `points ${s.points ? "shown" : "hidden"}`,
    s.lines && "connecting lines shown",
    s.grid && "grid shown",
    s.hiddenCases ? `${s.hiddenCases} case${s.hiddenCases === 1 ? "" : "s"} hidden in it` : "",
    s.filterFormula ? `only cases where ${s.filterFormula}` : "",
  ].filter(Boolean).join(", ");
}

/** @param {ToolContext} ctx */
export function createMapTools(ctx) {
  const { send, must, describeDatasets, datasetList } = ctx;
  const pick = createPicker(ctx);
  const placer = createPlacer(ctx);

  /** @param {CodapId} id */
  async function mapState(id) {
    const doc = await readDocument(ctx);
    return mapStateOf(doc.components?.find((c) => String(c.guid) === String(id))?.componentStorage ?? {});
  }

  /**
   * The map's state once CODAP has stopped moving it (it fits a new map to its points, and a fit or a new centre,
   * over a moment): read anew each time (a moving map tells the plugin nothing, so a document kept from before would
   * not show it) until two reads 300 ms apart agree, CODAP has given it a zoom and, given `from`, it has left that
   * state; at most about 4 s.
   * @param {CodapId} id
   * @param {ReturnType<typeof mapStateOf> | null} [from]
   */
  async function settledState(id, from = null) {
    /** @type {(s: ReturnType<typeof mapStateOf> | null) => string} */
    const view = (s) => JSON.stringify([s?.center, s?.zoom]);
    const read = () => {
      ctx.documents?.changed();
      return mapState(id);
    };
    let now = await read();
    for (let i = 0; i < 13; i++) {
      await ctx.sleep(300);
      const next = await read();
      const still = view(next) === view(now);
      now = next;
      const placed = typeof now.zoom === "number" && now.zoom >= 0;
      if (still && ((placed && (!from || view(now) !== view(from))) || i >= 6)) break;
    }
    return now;
  }

  /**
   * For each dataset the map shows: its name and the collections whose cases are its points or areas (the ones
   * with latitude and longitude or a boundary attribute, else the last), with every case id of them.
   * @param {CodapId[]} datasetIds
   */
  async function mapCases(datasetIds) {
    const list = get("dataContextList");
    const [listed] = await send([list]);
    const refs = datasetList(/** @type {import("../types.js").CodapSuccess} */ (must(list, listed)))
      .filter((d) => datasetIds.some((id) => String(id) === String(d.id)));
    const { datasets } = await describeDatasets(refs);
    const colls = datasets.map((d) => {
      const placed = d.collections.filter((c) => {
        const names = c.attributes.map((a) => a.name.toLowerCase());
        return (names.some((n) => LAT_NAMES.includes(n)) && names.some((n) => LONG_NAMES.includes(n))) ||
          c.attributes.some((a) => a.type === "boundary");
      });
      return placed.length ? placed : d.collections.slice(-1);
    });
    const reads = datasets.flatMap((d, i) => colls[i].map((c) => get(`dataContext[${d.id}].collection[${c.id}].allCases`)));
    const replies = await send(reads);
    let k = 0;
    return datasets.map((d, i) => ({
      id: d.id,
      name: d.name,
      title: d.title,
      collections: colls[i],
      caseIds: colls[i].flatMap(() => (must(reads[k], replies[k++]).values?.cases ?? []).map((/** @type {any} */ c) => c.case.id)),
    }));
  }

  /**
   * @param {{map?: string | number, center?: {latitude: number, longitude: number}, zoom?: number, fit?: boolean,
   *   baseMap?: "oceans" | "topographic" | "streets", legendAttribute?: string | null, points?: boolean,
   *   lines?: boolean, grid?: boolean, hideCases?: "selected" | "unselected", showAllCases?: boolean,
   *   filterFormula?: string}} args
   */
  async function update_codap_map(args) {
    const stored = /** @type {const} */ (["baseMap", "legendAttribute", "points", "lines", "grid", "hideCases", "showAllCases", "filterFormula"]);
    const direct = /** @type {const} */ (["center", "zoom", "fit"]);
    if (![...stored, ...direct].some((k) => args[k] !== undefined)) {
      throw invalid(`Say what to change: ${[...direct, ...stored].join(", ")}.`);
    }
    if (args.hideCases && args.showAllCases) throw invalid("hideCases hides cases and showAllCases shows every case again: give one.");
    if (!ctx.listen) throw new ToolError("This plugin cannot read CODAP's document here.", "document_unavailable");
    const map = await pick("map", args.map, "map");
    const label = `${JSON.stringify(map.title || map.name || `map ${map.id}`)} (id ${map.id})`;
    // A person panning or zooming the map tells the plugin nothing: a document kept from before would hold an old
    // view, to compare the new one with (a fit back to it read as "Nothing changed") and to rebuild from.
    ctx.documents?.changed();
    const before = await mapState(map.id);
    // A map's own description names no dataset: its layers do, in the document (one for each dataset it shows).
    const datasetIds = before.datasetIds.length ? before.datasetIds : map.detail.dataContext ? [map.detail.dataContext] : [];
    const viewMenu = args.hideCases !== undefined || args.showAllCases !== undefined || args.filterFormula !== undefined;
    if (viewMenu && !datasetIds.length) throw invalid(`Map ${label} shows no dataset, so it has no cases to hide or filter.`);
    const shown = viewMenu ? await mapCases(datasetIds) : [];
    /** @type {{id: CodapId, name: string, collection: CodapId, datasetId: CodapId} | null} */
    let legend = null;
    /** @type {CodapId | null} */
    let datasetName = datasetIds[0] ?? null;
    if (typeof args.legendAttribute === "string") {
      if (!datasetIds.length) throw invalid("This map shows no dataset, so it has no attribute to colour its points by.");
      // The dataset the map was made for comes first: another dataset on the map may have the same attribute.
      const own = map.detail.dataContext ? (await send([get(`dataContext[${map.detail.dataContext}]`)]))[0] : null;
      const ownId = own?.success === true ? String(own.values?.id) : null;
      datasetIds.sort((a, b) => Number(String(b) === ownId) - Number(String(a) === ownId));
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
    // View menu ▸ Hide Selected / Unselected Cases: the selected (or unselected) cases of every dataset it shows.
    /** @type {Map<string, unknown[]>} */
    const toHide = new Map();
    if (args.hideCases) {
      const reads = shown.map((d) => get(`dataContext[${d.id}].selectionList`));
      const replies = await send(reads);
      shown.forEach((d, i) => {
        const selected = new Set((must(reads[i], replies[i]).values ?? []).map((/** @type {any} */ s) => String(s.caseID)));
        toHide.set(String(d.id), d.caseIds.filter((id) => selected.has(String(id)) === (args.hideCases === "selected")));
      });
      if (![...toHide.values()].some((ids) => ids.length)) {
        throw new ToolError(
          `No cases the map shows are ${args.hideCases}, so none were hidden` +
            (args.hideCases === "selected" ? ": select some first (select_codap_cases)." : ": every case is selected."),
          "nothing_to_hide",
          { selection: args.hideCases },
        );
      }
    }
    // View menu ▸ filter formula: CODAP evaluates it first (caseFormulaSearch), so a formula it cannot read fails
    // here, naming CODAP's reason, instead of emptying the map.
    /** @type {Map<string, Set<string>>} */
    const passing = new Map();
    if (args.filterFormula) {
      if (args.filterFormula.includes("]")) throw invalid("A filter formula may not contain ] (CODAP's resource syntax ends there).");
      const pairs = shown.flatMap((d) => d.collections.map((c) => ({ d, c })));
      const reads = pairs.map(({ d, c }) => get(`dataContext[${d.id}].collection[${c.id}].caseFormulaSearch[${args.filterFormula}]`));
      const replies = await send(reads);
      /** @type {string[]} */
      const errors = [];
      pairs.forEach(({ d }, i) => {
        const r = replies[i];
        if (r?.success !== true) {
          // This handler puts its reason at the top of the reply ({success: false, error}), not under values.
          errors.push(`${d.name}: ${/** @type {any} */ (r)?.error || r?.values?.error || "no reason given"}`);
          return;
        }
        const ids = passing.get(String(d.id)) ?? new Set();
        for (const c of r.values ?? []) ids.add(String(c.id));
        passing.set(String(d.id), ids);
      });
      if (!passing.size) {
        throw new ToolError(
          `CODAP cannot use the filter formula ${JSON.stringify(args.filterFormula)} on the map's cases (${errors.join("; ")}). ` +
            "Write it with the attributes of the mapped dataset, e.g. population > 1000000 (text in double quotes).",
          "formula_error",
          { formula: args.filterFormula, errors },
        );
      }
    }
    let others = /** @type {string[]} */ ([]);
    if (stored.some((k) => args[k] !== undefined)) {
      const frame = (await send([get("interactiveFrame")]))[0]?.values?.id ?? null;
      const rebuilt = await rebuildComponent(ctx, map.id, (storage) => {
        const m = storage.mapModelStorage ?? (storage.mapModelStorage = {});
        if (args.baseMap) m.baseMapLayerName = BASE_MAPS[args.baseMap];
        for (const layer of m.layerModels ?? []) {
          const links = layer._links_ ?? (layer._links_ = {});
          const dataset = String(links.context?.id);
          if (args.points !== undefined) layer.pointsShouldBeVisible = args.points;
          if (args.lines !== undefined) layer.connectingLines = { ...layer.connectingLines, isVisible: args.lines };
          if (args.grid !== undefined) layer.grid = { ...layer.grid, isVisible: args.grid };
          if (args.showAllCases) links.hiddenCases = [];
          if (args.hideCases) {
            const ids = new Set([...(links.hiddenCases ?? []).map((/** @type {{id: unknown}} */ h) => String(h.id))]);
            const add = (toHide.get(dataset) ?? []).filter((id) => !ids.has(String(id)));
            links.hiddenCases = [...(links.hiddenCases ?? []), ...add.map((id) => ({ type: "DG.Case", id }))];
          }
          if (args.filterFormula !== undefined) {
            const { filterFormula: _old, ...v3 } = layer.v3 ?? {};
            if (args.filterFormula && passing.has(dataset)) v3.filterFormula = args.filterFormula;
            if (Object.keys(v3).length) layer.v3 = v3;
            else delete layer.v3;
          }
          if (args.legendAttribute !== undefined) {
            if (legend && dataset !== String(legend.datasetId)) continue;
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
    const after = requests.length ? await settledState(map.id, args.fit ? placed : null) : await mapState(map.id);
    let legendName = legend?.name ?? null;
    const legendDataset = after.legendDatasetId ?? datasetName;
    if (!legend && after.legendAttributeId !== null && legendDataset) {
      const [named] = await send([get(`dataContext[${legendDataset}].attribute[${after.legendAttributeId}]`)]);
      legendName = named?.success === true ? String(named.values?.name ?? "") || null : null;
    }
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    for (const [k, v] of Object.entries(publicMap(after))) {
      const b = /** @type {Record<string, unknown>} */ (before)[k];
      if (JSON.stringify(b) !== JSON.stringify(v)) changes[k] = { before: b, after: v };
    }
    /** @type {string[]} */
    const notTaken = [];
    if (args.baseMap && after.baseMap !== args.baseMap) notTaken.push(`baseMap ${args.baseMap}`);
    if (args.legendAttribute !== undefined && String(after.legendAttributeId ?? "") !== String(legend?.id ?? "")) notTaken.push(`legendAttribute ${args.legendAttribute}`);
    for (const k of /** @type {const} */ (["points", "lines", "grid"])) if (args[k] !== undefined && after[k] !== args[k]) notTaken.push(`${k} ${args[k]}`);
    if (args.zoom !== undefined && !args.fit && after.zoom !== args.zoom) notTaken.push(`zoom ${args.zoom} (CODAP has ${after.zoom})`);
    const hiddenNow = new Set(after.hiddenCaseIds.map(String));
    if (args.hideCases && [...toHide.values()].flat().some((id) => !hiddenNow.has(String(id)))) notTaken.push(`hideCases ${args.hideCases}`);
    if (args.showAllCases && after.hiddenCases) notTaken.push(`showAllCases (${after.hiddenCases} still hidden)`);
    if (args.filterFormula !== undefined && (after.filterFormula ?? "") !== args.filterFormula) notTaken.push(`filterFormula ${JSON.stringify(args.filterFormula)}`);
    // What the map shows of each dataset now: its cases, less those hidden in it and those its filter leaves out.
    const showing = shown.map((d) => {
      const pass = after.filterFormula ? passing.get(String(d.id)) : null;
      const count = d.caseIds.filter((id) => !hiddenNow.has(String(id)) && (!pass || pass.has(String(id)))).length;
      return { dataset: d.title || d.name, shown: count, cases: d.caseIds.length };
    });
    return toolResult(
      `Map ${label} now: ${mapText(after, legendName)}.` +
        (showing.length ? ` It shows ${showing.map((s) => `${s.shown} of the ${s.cases} cases of ${JSON.stringify(s.dataset)}`).join(", ")}.` : "") +
        (Object.keys(changes).length ? ` Changed: ${Object.keys(changes).join(", ")}.` : " Nothing changed.") +
        (args.hideCases ? " Tables and graphs still show the hidden cases; showAllCases brings them back here." : "") +
        (notTaken.length ? ` CODAP did not take: ${notTaken.join(", ")}.` : "") +
        (others.length
          ? ` To reach these settings the tool reloads the whole document in CODAP, and that also changed: ${others.join("; ")}.`
          : ""),
      {
        componentId: map.id,
        ...publicMap(after),
        legendAttribute: legendName,
        ...(showing.length ? { showing } : {}),
        changes,
        ...(notTaken.length ? { notTaken } : {}),
        ...(others.length ? { alsoChanged: others } : {}),
      },
    );
  }

  /**
   * @param {{datasetName: string, title?: string, legendAttribute?: string,
   *   baseMap?: "oceans" | "topographic" | "streets", place?: string, relativeTo?: string | number}} args
   */
  async function create_codap_map(args) {
    placer.checkPlace(args);
    const { datasetName, title, legendAttribute, baseMap } = args;
    const found = await ctx.findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    const names = dataset.attributes;
    const lat = names.find((n) => LAT_NAMES.includes(n.toLowerCase()));
    const long = names.find((n) => LONG_NAMES.includes(n.toLowerCase()));
    const legend = legendAttribute === undefined ? undefined : names.find((n) => n === legendAttribute) ??
      names.find((n) => n.toLowerCase() === legendAttribute.toLowerCase());
    if (legendAttribute !== undefined && !legend) {
      throw new ToolError(
        `${JSON.stringify(dataset.name)} has no attribute ${JSON.stringify(legendAttribute)} to colour the map's points by. ` +
          `Its attributes: ${names.join(", ")}.`,
        "attribute_not_found",
        { attribute: legendAttribute, available: names },
      );
    }
    // CODAP's create takes the legend (legendAttributeName), not the base map: that one is update_codap_map's.
    /** @type {CodapRequest} */
    const create = {
      action: "create",
      resource: "component",
      values: { type: "map", dataContext: String(dataset.id), ...(legend ? { legendAttributeName: legend } : {}), ...(title ? { name: title, title } : {}) },
    };
    const [made] = await send([create]);
    const id = must(create, made, "creating a map").values?.id;
    /** @type {string[]} */
    const notes = [];
    if (!lat || !long) {
      notes.push(
        `${JSON.stringify(dataset.name)} has no ${[!lat && "latitude", !long && "longitude"].filter(Boolean).join(" or ")} ` +
          "attribute, so the map shows none of its points. CODAP plots points from attributes named latitude (or lat) " +
          "and longitude (or long, lng, lon): add or rename them, then make the map again.",
      );
    }
    if (baseMap) {
      const styled = await update_codap_map({ map: id, baseMap });
      notes.push(...(styled.structuredContent?.notTaken ?? []).map((/** @type {string} */ n) => `CODAP did not take ${n}.`));
    }
    const state = ctx.listen ? await settledState(id) : null;
    let legendName = null;
    if (state?.legendAttributeId !== null && state?.legendAttributeId !== undefined) {
      const [named] = await send([get(`dataContext[${dataset.id}].attribute[${state.legendAttributeId}]`)]);
      legendName = named?.success === true ? String(named.values?.name ?? "") || null : null;
    }
    if (legend && state && legendName !== legend) notes.push(`CODAP did not colour the points by ${legend}.`);
    const [read] = await send([get(`component[${id}]`)]);
    const shownTitle = read?.success === true ? String(read.values?.title ?? "") : "";
    const { placement, note } = await placer.placeNew(id, args);
    return toolResult(
      `Created a map (id ${id}${shownTitle ? `, title ${JSON.stringify(shownTitle)}` : ""})` +
        (lat && long ? ` showing ${JSON.stringify(dataset.name)} at ${lat}, ${long}` : "") +
        (state ? ` (${mapText(state, legendName)})` : "") + "." +
        (notes.length ? ` ${notes.join(" ")}` : "") + (placement ? placementText(placement) : "") + note,
      {
        componentId: id,
        datasetName: dataset.name,
        latitude: lat ?? null,
        longitude: long ?? null,
        title: shownTitle,
        legendAttribute: legendName ?? (state ? null : legend ?? null),
        baseMap: state?.baseMap ?? null,
        center: state?.center ?? null,
        zoom: state?.zoom ?? null,
        notes,
        ...(placement ? { placement } : {}),
      },
    );
  }

  return { create_codap_map, update_codap_map };
}
