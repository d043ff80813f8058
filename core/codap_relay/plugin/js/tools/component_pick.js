// @ts-check
// Finding the one component of a type a tool means (a slider, a map): by id, name or title, or for a slider its
// global value's name; the only one when none is named. The error names those CODAP has.

import { ToolError, get, invalid } from "./context.js";

/**
 * @import {CodapId} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * A component of the type asked for, with CODAP's description of it (`get component[id]`).
 * @typedef {{id: CodapId, type: string, name?: string, title?: string, hidden?: boolean, detail: Record<string, any>}} Picked
 */

/** @param {Pick<ToolContext, "send" | "must">} ctx */
export function createPicker({ send, must }) {
  /**
   * The component of `type` that `wanted` names (id, name, title, or for a slider its global value's name), or the
   * only one when `wanted` is left out; an error naming those CODAP has.
   * @param {string} type
   * @param {unknown} wanted
   * @param {string} word
   * @returns {Promise<Picked>}
   */
  return async function pick(type, wanted, word) {
    const list = get("componentList");
    const [listed] = await send([list]);
    /** @type {Array<{id: CodapId, type: string, name?: string, title?: string, hidden?: boolean}>} */
    const all = (must(list, listed).values ?? []).filter((/** @type {any} */ c) => c.type === type);
    const details = all.length ? await send(all.map((c) => get(`component[${c.id}]`))) : [];
    const found = all.map((c, i) => ({ ...c, detail: details[i]?.success === true ? details[i].values ?? {} : {} }));
    const label = (/** @type {Picked} */ c) =>
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
      (/** @type {Picked} */ c) => String(c.id) === key,
      (/** @type {Picked} */ c) => c.name === key || c.title === key || c.detail.globalValueName === key,
      (/** @type {Picked} */ c) => [c.name, c.title, c.detail.globalValueName].some((n) => String(n ?? "").toLowerCase() === lower),
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
  };
}
