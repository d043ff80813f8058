// @ts-check
// What get_codap_status says of each component's own settings, everything a tool can change on it, read from
// CODAP: a slider's value, range, scale and animation (`get component`), a text box's text and formatting, a case
// table's index column (`get component`) and collapsed parent cases, a map's view, legend, layers and the cases it
// hides or filters (CODAP's saved document, the only place CODAP keeps them). A graph's is graph_state.js's.

import { get } from "./context.js";
import { mapStateOf, mapText, publicMap } from "./maps.js";
import { textFacts } from "./markdown.js";
import { sliderFacts, sliderText } from "./sliders.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * A component's own settings, by type.
 * @typedef {{slider?: ReturnType<typeof sliderFacts>, text?: string, markdown?: string,
 *   table?: {indexColumn: boolean, collapsedParents: number}, map?: Record<string, unknown>}} ComponentSettings
 */

/**
 * Each component's own settings (by id), from `get component[id]`'s values and CODAP's saved document. A map's
 * legend is named by one more message.
 * @param {Pick<ToolContext, "send">} ctx
 * @param {Array<{id: CodapId, type: string}>} components
 * @param {Map<string, Record<string, any>>} details `get component[id]`'s values by id
 * @param {Record<string, any> | null} documentState CODAP's document (v2 JSON), or null when it could not be read
 * @returns {Promise<Map<string, ComponentSettings>>}
 */
export async function componentSettings({ send }, components, details, documentState) {
  /** @type {Map<string, Record<string, any>>} */
  const stored = new Map((documentState?.components ?? []).map((/** @type {any} */ c) => [String(c.guid), c.componentStorage ?? {}]));
  /** @type {Map<string, ComponentSettings>} */
  const out = new Map();
  /** @type {Array<{id: string, state: ReturnType<typeof mapStateOf>}>} */
  const maps = [];
  for (const c of components) {
    const id = String(c.id);
    const v = details.get(id) ?? {};
    if (c.type === "slider") out.set(id, { slider: sliderFacts(v) });
    else if (c.type === "text") out.set(id, textFacts(v.text));
    else if (c.type === "caseTable") {
      const nodes = stored.get(id)?._links_?.collapsedNodes;
      out.set(id, { table: { indexColumn: v.isIndexHidden !== true, collapsedParents: Array.isArray(nodes) ? nodes.length : nodes ? 1 : 0 } });
    } else if (c.type === "map" && stored.has(id)) {
      maps.push({ id, state: mapStateOf(/** @type {Record<string, any>} */ (stored.get(id))) });
    }
  }
  const named = maps.filter((m) => m.state.legendAttributeId !== null && m.state.legendDatasetId !== null);
  /** @type {CodapRequest[]} */
  const reads = named.map((m) => get(`dataContext[${m.state.legendDatasetId}].attribute[${m.state.legendAttributeId}]`));
  const replies = reads.length ? await send(reads) : [];
  for (const m of maps) {
    const at = named.indexOf(m);
    const reply = at >= 0 ? replies[at] : null;
    const legend = reply?.success === true ? String(reply.values?.name ?? "") || null : null;
    out.set(m.id, { map: { ...publicMap(m.state), legendAttribute: legend } });
  }
  return out;
}

/**
 * The settings in words, for the component's status line ("" when there are none).
 * @param {ComponentSettings} s
 */
export function settingsText(s) {
  if (s.slider) {
    const f = s.slider;
    const play = [f.animationDirection, f.animationMode, f.maxPerSecond && `at most ${f.maxPerSecond} a second`].filter(Boolean);
    return `: ${sliderText(f)}${play.length ? `; its play button: ${play.join(", ")}` : ""}`;
  }
  if (s.map) {
    const { legendAttribute, ...rest } = s.map;
    return `: ${mapText(/** @type {any} */ ({ ...rest }), /** @type {string | null} */ (legendAttribute))}`;
  }
  if (s.table) {
    const { indexColumn, collapsedParents } = s.table;
    return `: index column ${indexColumn ? "shown" : "hidden"}${collapsedParents ? `, ${collapsedParents} parent cases collapsed` : ""}`;
  }
  if (s.text !== undefined) {
    const shown = s.text.length > 120 ? `${s.text.slice(0, 117)}…` : s.text;
    return `: ${JSON.stringify(shown)}${s.markdown !== undefined ? " (formatted; markdown gives it)" : ""}`;
  }
  return "";
}
