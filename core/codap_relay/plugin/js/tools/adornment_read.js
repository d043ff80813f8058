// @ts-check
// The statistics and lines a graph shows, read kind by kind (`get component[id].adornment[type]`, one message).
// CODAP 3.1.0's adornmentList leaves out what it draws on some plots (a box plot or a mean on a histogram is listed
// as []), so the list cannot say what a graph shows; each kind's own get can. Count and percent are one CODAP
// adornment (type Count, with showCount and showPercent): each is named by what it shows.

import { ADORNMENTS, ADORNMENT_NAMES } from "./adornment_kinds.js";
import { get } from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest} from "../types.js"
 */

/**
 * A kind a graph has (shown or hidden), with CODAP's description of it.
 * @typedef {{name: string, type: string, id?: string | number, isVisible: boolean, detail: Record<string, any>}} ReadAdornment
 */

// "Percent" is read through "Count": CODAP answers both with the one Count adornment.
const TYPES = [...new Set(Object.values(ADORNMENTS).map((a) => a.type))].filter((t) => t !== ADORNMENTS.percent.type);

/**
 * The requests that read each kind of a graph, in the order adornmentsRead takes their replies.
 * @param {CodapId} graphId
 * @returns {CodapRequest[]}
 */
export const adornmentReads = (graphId) => TYPES.map((t) => get(`component[${graphId}].adornment[${t}]`));

/** How many requests adornmentReads makes. */
export const ADORNMENT_READS = TYPES.length;

/** @param {Record<string, any>} detail a movable value adornment: CODAP keeps it visible with no value left */
const movableCount = (detail) =>
  (detail.data ?? []).reduce((/** @type {number} */ n, /** @type {{movableValues?: unknown[]}} */ c) => n + (c.movableValues?.length ?? 0), 0);

/**
 * The kinds a graph has, from the replies to adornmentReads (a kind the graph never had is not found).
 * @param {Array<CodapReply | undefined>} replies
 * @returns {ReadAdornment[]}
 */
export function adornmentsRead(replies) {
  /** @type {ReadAdornment[]} */
  const out = [];
  replies.forEach((reply, i) => {
    if (reply?.success !== true || !reply.values || typeof reply.values !== "object") return;
    /** @type {Record<string, any>} */
    const detail = reply.values;
    const type = TYPES[i];
    const visible = detail.isVisible === true;
    if (type === ADORNMENTS.count.type) {
      out.push({ name: "count", type, id: detail.id, isVisible: visible && detail.showCount !== false, detail });
      out.push({ name: "percent", type: ADORNMENTS.percent.type, id: detail.id, isVisible: visible && detail.showPercent === true, detail });
      return;
    }
    const shown = visible && (type !== ADORNMENTS.movable_value.type || movableCount(detail) > 0);
    out.push({ name: ADORNMENT_NAMES.get(type) ?? type, type, id: detail.id, isVisible: shown, detail });
  });
  return out;
}
