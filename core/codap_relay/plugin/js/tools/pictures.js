// @ts-check
// A graph's picture for the model, as CODAP draws it, or plainly none: CODAP draws nothing while its tab is hidden
// (drawing.js), and a picture it gives of a graph made or changed since shows the axes without the points. Such a
// picture is never sent, and never called settled; the answer says why there is none and what the person can do.

import { ToolError } from "../errors.js";
import { DEFAULT_MAX_SIZE, fitPicture } from "../imaging.js";
import { PICTURE_WAIT_MS, graphLabel } from "../codap_query.js";

/**
 * @import {Component, ImageContent} from "../types.js"
 * @import {Raster} from "../imaging.js"
 * @import {DrawState, Drawing} from "../drawing.js"
 */

/** What the person can do about a picture CODAP has not drawn. */
export const SHOW_CODAP =
  "Bring CODAP's browser tab to the front (or restore its window), then ask for the picture again.";

/**
 * A picture, or why there is none. Drawn: the image item, its facts and a sentence. Not drawn: facts
 * {reason, hiddenSeconds, whatToDo} and the sentence that says so.
 * @typedef {{drawn: true, item: ImageContent, facts: Record<string, unknown>, sentence: string} |
 *   {drawn: false, facts: {reason: string, hiddenSeconds: number, whatToDo: string}, sentence: string}} GraphPicture
 */

/** @param {number} ms */
function howLong(ms) {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
}

/**
 * @param {Pick<Component, "id" | "name" | "title">} graph
 * @param {DrawState} state
 * @returns {GraphPicture}
 */
function notDrawn(graph, state) {
  return {
    drawn: false,
    facts: { reason: "codap_hidden", hiddenSeconds: Math.round(state.hiddenForMs / 1000), whatToDo: SHOW_CODAP },
    sentence:
      `CODAP has not drawn graph ${graphLabel(graph)} as it is now, so there is no picture of it: CODAP's tab is ` +
      `in the background (hidden for ${howLong(state.hiddenForMs)}), and the browser draws nothing on a hidden ` +
      `page. ${SHOW_CODAP}`,
  };
}

/**
 * graphPicture(graph, maxSize): the picture fitted for the model, or why CODAP has not drawn it.
 * @param {object} io
 * @param {{graphSnapshot: (graph: Pick<Component, "id" | "name" | "title">, options?: {once?: boolean}) =>
 *   Promise<{uri: string, settled: boolean}>}} io.codap
 * @param {Raster<any> | null} io.raster
 * @param {Drawing} io.drawing
 * @param {(ms: number) => Promise<void>} io.sleep
 */
export function createGraphPicture({ codap, raster, drawing, sleep }) {
  /**
   * @param {Pick<Component, "id" | "name" | "title" | "hidden">} graph
   * @param {number} [maxSize]
   * @returns {Promise<GraphPicture>}
   */
  return async function graphPicture(graph, maxSize = DEFAULT_MAX_SIZE) {
    if (!raster) throw new ToolError("This plugin cannot make pictures here (no canvas).", "graph_image_unavailable");
    if (graph.hidden) {
      throw new ToolError(
        `Graph ${graphLabel(graph)} is hidden in CODAP, so it is not drawn and has no picture. Show it again ` +
          "(update_codap_component with hidden false), then ask again.",
        "graph_image_unavailable",
        { graphId: graph.id },
      );
    }
    let state = drawing.state(graph.id);
    if (!state.hidden && !state.drawn && state.drawnInMs) {
      await sleep(state.drawnInMs); // shown: CODAP is drawing the last change
      state = drawing.state(graph.id);
    }
    if (state.hidden && !state.drawn) return notDrawn(graph, state);
    // Hidden but drawn before: nothing moves on a hidden page, so one picture is the settled one.
    const snapshot = await codap.graphSnapshot(graph, { once: state.hidden });
    const after = drawing.state(graph.id);
    if (after.hidden && !after.drawn) return notDrawn(graph, after); // hidden, or changed, meanwhile
    const picture = await fitPicture(snapshot.uri, { maxSize, raster });
    const kind = picture.mimeType === "image/jpeg" ? "JPEG" : "PNG";
    let sentence = `${kind}, ${picture.width} × ${picture.height} px, ${Math.ceil(picture.bytes / 1024)} KB.`;
    if (after.hidden) {
      sentence += ` CODAP's tab is in the background (hidden for ${howLong(after.hiddenForMs)}): ` +
        "this is the graph as CODAP drew it before, unchanged since.";
    }
    if (!snapshot.settled) {
      sentence += ` CODAP was still changing the graph after ${PICTURE_WAIT_MS / 1000} s: this is the last picture ` +
        "it gave, and points may be caught moving.";
    }
    if (picture.scaled) {
      sentence += ` CODAP drew it at ${picture.original.width} × ${picture.original.height} px; it was scaled down ` +
        `to at most ${maxSize} px on its longer side.`;
    }
    if (picture.reencoded) sentence += ` It was re-encoded as ${kind} to stay small.`;
    /** @type {ImageContent} */
    const item = { type: "image", data: picture.base64, mimeType: picture.mimeType };
    return {
      drawn: true,
      item,
      facts: {
        mimeType: picture.mimeType,
        width: picture.width,
        height: picture.height,
        bytes: picture.bytes,
        codapWidth: picture.original.width,
        codapHeight: picture.original.height,
        scaled: picture.scaled,
        reencoded: picture.reencoded,
        settled: snapshot.settled,
        codapHidden: after.hidden,
      },
      sentence,
    };
  };
}
