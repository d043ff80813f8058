// @ts-check
// Where components sit on CODAP's canvas, and where one can go beside, below or instead of another without
// covering a third. Pure geometry over the boxes CODAP gives (`get component[id]`: position and dimensions).

/**
 * @typedef {{left: number, top: number, width: number, height: number}} Box
 */

/** The space CODAP itself leaves between components it places. */
export const GAP = 10;

/** @type {readonly string[]} */
export const PLACES = ["right_of", "left_of", "below", "above", "instead_of"];

/**
 * What CODAP 3.1.0 draws beyond the size it gives for a component of fixed size (measured in its page): a slider
 * is drawn 98 px tall for the 73 it gives (its title bar comes on top), the calculator 166 × 196 px for 137 × 162.
 * @type {Record<string, {width: number, height: number}>}
 */
export const DRAWN_EXTRA = { slider: { width: 0, height: 25 }, calculator: { width: 29, height: 34 } };

/**
 * A component's box as CODAP draws it, from CODAP's description of it, or null when CODAP gave none.
 * @param {Record<string, any> | undefined} detail `get component[id]`'s values
 * @returns {Box | null}
 */
export function boxOf(detail) {
  const p = detail?.position;
  const d = detail?.dimensions;
  if (!p || !d || ![p.left, p.top, d.width, d.height].every(Number.isFinite)) return null;
  const extra = DRAWN_EXTRA[String(detail?.type)] ?? { width: 0, height: 0 };
  return { left: p.left, top: p.top, width: d.width + extra.width, height: d.height + extra.height };
}

/** @param {Box} a @param {Box} b */
export function overlaps(a, b) {
  return a.left < b.left + b.width && b.left < a.left + a.width && a.top < b.top + b.height && b.top < a.top + a.height;
}

/**
 * Where a box of `size` goes `place` another box `other` (instead_of: at its place).
 * @param {string} place one of PLACES
 * @param {{width: number, height: number}} size
 * @param {Box} other
 * @returns {Box}
 */
export function placed(place, size, other) {
  const { width, height } = size;
  switch (place) {
    case "right_of":
      return { left: other.left + other.width + GAP, top: other.top, width, height };
    case "left_of":
      return { left: other.left - width - GAP, top: other.top, width, height };
    case "below":
      return { left: other.left, top: other.top + other.height + GAP, width, height };
    case "above":
      return { left: other.left, top: other.top - height - GAP, width, height };
    default:
      return { left: other.left, top: other.top, width, height };
  }
}

/**
 * The free place nearest `wanted` (same size) that covers none of `obstacles` and lies on the canvas (left and top
 * not negative): `wanted` itself when it is free. With `bounds` (the canvas a person sees), a free place within
 * them comes before any beyond them. Candidates line up with the obstacles' edges, and one beyond all of them is
 * always free, so there is always an answer.
 * @param {Box} wanted
 * @param {Box[]} obstacles
 * @param {{width: number, height: number} | null} [bounds]
 * @returns {Box}
 */
export function freePlace(wanted, obstacles, bounds = null) {
  const xs = new Set([wanted.left, 0]);
  const ys = new Set([wanted.top, 0]);
  for (const o of obstacles) {
    xs.add(o.left + o.width + GAP).add(o.left - wanted.width - GAP).add(o.left);
    ys.add(o.top + o.height + GAP).add(o.top - wanted.height - GAP).add(o.top);
  }
  let best = null;
  let bestDistance = Infinity;
  for (const left of xs) {
    if (left < 0) continue;
    for (const top of ys) {
      if (top < 0) continue;
      const box = { left, top, width: wanted.width, height: wanted.height };
      const outside = bounds && (left + box.width > bounds.width || top + box.height > bounds.height) ? 1e9 : 0;
      const distance = outside + Math.abs(left - wanted.left) + Math.abs(top - wanted.top);
      if (distance < bestDistance && !obstacles.some((o) => overlaps(box, o))) {
        best = box;
        bestDistance = distance;
      }
    }
  }
  if (best) return best;
  // Unreachable (a place right of every obstacle is free), but never loop or fail on odd input.
  const right = Math.max(0, ...obstacles.map((o) => o.left + o.width + GAP));
  return { left: right, top: Math.max(0, wanted.top), width: wanted.width, height: wanted.height };
}

/**
 * A component's place for the status: its position and size as CODAP gives them.
 * @param {Record<string, any>} detail `get component[id]`'s values
 * @returns {{position?: {left: number, top: number}, size?: {width: number, height: number}}}
 */
export function placeOf(detail) {
  const box = boxOf(detail);
  return box ? { position: { left: box.left, top: box.top }, size: { width: box.width, height: box.height } } : {};
}

/**
 * Adds to each component what only the whole document says (minimized: CODAP keeps the height it had in
 * savedHeight) and which shown components it overlaps (`covers`, by id).
 * @template {{id: unknown, hidden?: boolean, position?: {left: number, top: number}, size?: {width: number, height: number},
 *   minimized?: boolean, covers?: unknown[]}} T
 * @param {T[]} components
 * @param {Record<string, any> | null} documentState CODAP's document (v2 JSON), or null when it could not be read
 * @returns {T[]}
 */
export function withLayout(components, documentState) {
  /** @type {Map<string, any>} */
  const stored = new Map((documentState?.components ?? []).map((/** @type {any} */ c) => [String(c.guid), c]));
  const boxes = components.map((c) => {
    const s = stored.get(String(c.id));
    const minimized = s ? s.savedHeight != null : undefined;
    if (minimized) c.minimized = true;
    if (c.hidden || !c.position || !c.size) return null;
    // A minimized component covers only its title bar, as CODAP draws it.
    const height = minimized && Number.isFinite(s.layout?.height) ? s.layout.height : c.size.height;
    return { left: c.position.left, top: c.position.top, width: c.size.width, height };
  });
  components.forEach((c, i) => {
    const own = boxes[i];
    if (!own) return;
    const covers = components.filter((o, j) => j !== i && boxes[j] && overlaps(own, /** @type {Box} */ (boxes[j]))).map((o) => o.id);
    if (covers.length) c.covers = covers;
  });
  return components;
}

/**
 * Where a component is, for the end of its status line: " (id 7) at (left, top), width × height px[, minimized]
 * [, overlapping 3, 9]".
 * @param {{id: unknown, hidden?: boolean, position?: {left: number, top: number}, size?: {width: number, height: number},
 *   minimized?: boolean, covers?: unknown[]}} c
 */
export function placeText(c) {
  const where = c.position && c.size
    ? ` at (${c.position.left}, ${c.position.top}), ${c.size.width} × ${c.size.height} px${c.minimized ? ", minimized" : ""}`
    : "";
  const hidden = c.hidden ? ", hidden" : "";
  return ` (id ${c.id})${where}${hidden}${c.covers?.length ? `, overlapping ${c.covers.join(", ")}` : ""}`;
}
