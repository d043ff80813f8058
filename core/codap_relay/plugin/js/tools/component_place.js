// @ts-check
// Where a new component lands. CODAP puts a new component in the first free spot of the canvas it shows, and when
// the shown canvas is full, on top of others in its middle: the tools then move it to the nearest free spot (which
// may lie beyond what the person sees) and say where it is, how big CODAP draws it and what it overlaps.

import { ToolError, get, invalid } from "./context.js";
import { boxOf, freePlace, overlaps } from "./layout.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {Box} from "./layout.js"
 */

/** CODAP 3.1.0's menu bar and tool shelf above its canvas (its canvas starts 117 px down the page, measured). */
export const CODAP_HEADER = 117;

/**
 * The canvas a person sees, about: the browser window's size (the plugin, inside CODAP's page from another site,
 * can read no more of it) less CODAP's header, the canvas scrolled to its top left. Null where there is no window
 * (Node). A browser's own toolbars take some of the window too, so the canvas may be smaller by them.
 * @param {{outerWidth?: number, outerHeight?: number}} [win]
 * @returns {{width: number, height: number} | null}
 */
export function visibleCanvas(win = /** @type {any} */ (globalThis)) {
  const [w, h] = [win.outerWidth, win.outerHeight];
  if (!w || !h || !Number.isFinite(w) || !Number.isFinite(h)) return null;
  return { width: w, height: Math.max(0, h - CODAP_HEADER) };
}

/**
 * Whether a component's box reaches past the canvas the person sees (they scroll the canvas to see it); null where
 * that canvas is unknown.
 * @param {Box} box
 * @param {{width: number, height: number} | null} canvas visibleCanvas()
 */
export const beyondCanvas = (box, canvas) =>
  canvas ? box.left + box.width > canvas.width || box.top + box.height > canvas.height : null;

/**
 * The words for a component beyond the visible canvas.
 * @param {{width: number, height: number} | undefined} canvas
 */
export const beyondCanvasText = (canvas) =>
  `it lies beyond the canvas the person sees (about ${canvas?.width} × ${canvas?.height} px): they scroll the canvas to see it`;

/**
 * A place asked for with place and relativeTo, and whether the component took it (update_codap_component's
 * placement): wanted is where it would sit, blockedBy the components that place would cover, why (when not taken)
 * the reason in words.
 * @typedef {{place: string, relativeTo: CodapId, wanted: {left: number, top: number}, blockedBy: CodapId[],
 *   offCanvas: boolean, taken: boolean, why?: string}} AskedPlace
 */

/**
 * Where a component is and what it overlaps, for an answer.
 * @typedef {{position: {left: number, top: number}, size: {width: number, height: number}, overlaps: CodapId[],
 *   beyondVisibleCanvas: boolean | null, movedFrom?: {left: number, top: number}, visibleCanvas?: {width: number, height: number},
 *   asked?: AskedPlace}} Placement
 */

/**
 * Why a place asked for was refused: " is off the canvas and would cover "Notes" (text box, id 5)", or "" when it
 * was free.
 * @param {{left: number, top: number}} wanted
 * @param {string[]} blockers how the answer names the components it would cover
 */
export function refusedBecause(wanted, blockers) {
  const offCanvas = wanted.left < 0 || wanted.top < 0;
  return [offCanvas && "is off the canvas", blockers.length && `would cover ${blockers.join(", ")}`].filter(Boolean).join(" and ");
}

/**
 * The place asked, `place` component `relativeTo`, as the answer gives it: taken unless it is off the canvas or
 * would cover `blockers`.
 * @param {string} place
 * @param {CodapId} relativeTo
 * @param {{left: number, top: number}} wanted
 * @param {Array<{id: CodapId, label: string}>} blockers
 * @returns {AskedPlace}
 */
export function askedPlace(place, relativeTo, wanted, blockers) {
  const why = refusedBecause(wanted, blockers.map((b) => b.label));
  const at = { left: wanted.left, top: wanted.top };
  const offCanvas = wanted.left < 0 || wanted.top < 0;
  return { place, relativeTo, wanted: at, blockedBy: blockers.map((b) => b.id), offCanvas, taken: why === "", ...(why ? { why } : {}) };
}

/**
 * The place refused, in the words every placing tool uses: "the place right of it, left 420, top 20, would cover
 * "Notes" (text box, id 5)" (the component went to the nearest free place instead).
 * @param {string} place
 * @param {string} other how to name the component it was to go beside ("it", or its name)
 * @param {{left: number, top: number}} wanted
 * @param {string} why refusedBecause's reason
 */
export function refusalText(place, other, wanted, why) {
  return `the place ${place.replace("_", " ")} ${other}, left ${wanted.left}, top ${wanted.top}, ${why}`;
}

/**
 * The placement in words: " It sits at (400, 20), 300 × 98 px, moved there from (540, 300) where it covered 3 and 5."
 * @param {Placement} p
 */
export function placementText(p) {
  const at = `(${p.position.left}, ${p.position.top}), ${p.size.width} × ${p.size.height} px`;
  const moved = p.movedFrom ? `, moved there from (${p.movedFrom.left}, ${p.movedFrom.top}), where CODAP put it on top of other components` : "";
  const over = p.overlaps.length ? `; it overlaps ${p.overlaps.join(", ")} (update_codap_component place moves it beside one)` : "";
  const beyond = p.beyondVisibleCanvas ? `; ${beyondCanvasText(p.visibleCanvas)}` : "";
  return ` It sits at ${at}${moved}${over}${beyond}.`;
}

/**
 * How each tool context places a component beside another (update_codap_component's place and relativeTo, which
 * components.js registers; its answer's structuredContent.placement says whether the place asked was taken): the
 * create tools take place and relativeTo too.
 * @type {WeakMap<object, (id: CodapId, place: string, relativeTo: string | number) => Promise<{structuredContent?: {placement?: AskedPlace}}>>}
 */
const besides = new WeakMap();

/**
 * @param {object} ctx
 * @param {(id: CodapId, place: string, relativeTo: string | number) => Promise<{structuredContent?: {placement?: AskedPlace}}>} placeBeside
 */
export function registerPlaceBeside(ctx, placeBeside) {
  besides.set(ctx, placeBeside);
}

/** @param {ToolContext} ctx */
export function createPlacer(ctx) {
  const { send, must } = ctx;

  /**
   * The create tools' place and relativeTo, checked before anything is made.
   * @param {{place?: string, relativeTo?: string | number}} args
   */
  function checkPlace(args) {
    if ((args.place === undefined) !== (args.relativeTo === undefined)) {
      throw invalid("place and relativeTo go together: place right_of, left_of, below, above or instead_of relativeTo a component.");
    }
  }

  /**
   * Places new component `id` `place` `relativeTo` as update_codap_component does (giving way to the nearest free
   * place), then says where it is; what kept it from there is a note, never a failed call (it is made): a place
   * refused in update_codap_component's words, and the placement's `asked` says which place and why.
   * @param {CodapId} id
   * @param {{place?: string, relativeTo?: string | number}} args
   * @returns {Promise<{placement: Placement | null, note: string}>}
   */
  async function placeNew(id, args) {
    if (args.place === undefined || args.relativeTo === undefined) return { placement: await settle(id), note: "" };
    const beside = besides.get(ctx);
    let note = "";
    /** @type {AskedPlace | undefined} */
    let asked;
    try {
      if (!beside) throw new ToolError("no component tools", "codap_error");
      asked = (await beside(id, args.place, args.relativeTo)).structuredContent?.placement;
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      note = ` It could not go ${args.place.replace("_", " ")} ${JSON.stringify(args.relativeTo)}: ${err.message}`;
    }
    if (asked && !asked.taken) {
      const refused = refusalText(asked.place, JSON.stringify(args.relativeTo), asked.wanted, asked.why ?? "");
      note = ` ${refused[0].toUpperCase()}${refused.slice(1)}; this is the nearest free place.`;
    }
    const placement = await settle(id, { move: !asked });
    return { placement: placement && asked ? { ...placement, asked } : placement, note };
  }

  /**
   * Reads where component `id` is; when `move` and it covers another shown component, moves it to the nearest free
   * spot (on the visible canvas when there is one). Returns its placement as CODAP has it afterwards.
   * @param {CodapId} id
   * @param {{move?: boolean}} [options] false: only report (a table CODAP showed again stays where it was)
   * @returns {Promise<Placement | null>} null when CODAP gives the component no place
   */
  async function settle(id, { move = true } = {}) {
    const list = get("componentList");
    const [listed] = await send([list]);
    /** @type {Array<{id: CodapId, hidden?: boolean}>} */
    const all = must(list, listed).values;
    const shown = (Array.isArray(all) ? all : []).filter((/** @type {any} */ c) => !c.hidden || String(c.id) === String(id));
    const replies = await send(shown.map((c) => get(`component[${c.id}]`)));
    /** @type {Array<{id: CodapId, box: Box}>} */
    const boxes = [];
    shown.forEach((c, i) => {
      const box = replies[i]?.success === true ? boxOf(replies[i].values) : null;
      if (box) boxes.push({ id: c.id, box });
    });
    let own = boxes.find((b) => String(b.id) === String(id))?.box ?? null;
    if (!own) return null;
    const others = boxes.filter((b) => String(b.id) !== String(id));
    const canvas = visibleCanvas();
    /** @type {{left: number, top: number} | undefined} */
    let movedFrom;
    if (move && others.some((o) => overlaps(/** @type {Box} */ (own), o.box))) {
      const free = freePlace(own, others.map((o) => o.box), canvas);
      /** @type {CodapRequest} */
      const update = { action: "update", resource: `component[${id}]`, values: { position: { left: free.left, top: free.top } } };
      const read = get(`component[${id}]`);
      const [moved, after] = await send([update, read]);
      must(update, moved, `moving the new component ${id} off the others`);
      const now = boxOf(must(read, after).values);
      if (now && (now.left !== own.left || now.top !== own.top)) {
        movedFrom = { left: own.left, top: own.top };
        own = now;
      }
    }
    const box = /** @type {Box} */ (own);
    return {
      position: { left: box.left, top: box.top },
      size: { width: box.width, height: box.height },
      overlaps: others.filter((o) => overlaps(box, o.box)).map((o) => o.id),
      beyondVisibleCanvas: beyondCanvas(box, canvas),
      ...(movedFrom ? { movedFrom } : {}),
      ...(canvas ? { visibleCanvas: canvas } : {}),
    };
  }

  return { settle, placeNew, checkPlace };
}
