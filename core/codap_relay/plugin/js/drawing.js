// @ts-check
// Whether CODAP has drawn what it holds. A browser draws a page only while it is shown: with CODAP's tab behind
// another (the chat's), or its window minimized, the page is hidden (document.visibilityState, the same in this
// frame as in CODAP's page), no animation frame runs, and CODAP draws its graphs' points in animation frames. A
// picture CODAP gives then has the axes of a graph made or changed since, and none of its points (seen: 0 point
// pixels in Chromium). What CODAP drew before its tab was hidden stays drawn. So a change counts as drawn once
// the page has been shown for DRAW_MS after it; a change made while hidden stays undrawn until the page is shown
// again. Changes are this plugin's changing messages to CODAP and CODAP's notices of changes (main.js). A change
// to one component alone (a graph created or updated) needs only that component drawn again: CODAP places a new
// component without redrawing the others.

/** How long CODAP, shown, takes to draw a change: its points move to their places in half a second. */
export const DRAW_MS = 1000;

/**
 * Where drawing stands now: `hidden` (the page is hidden), `drawn` (every change has had DRAW_MS of the page
 * shown), `drawnInMs` (shown: how long until it has; 0 when drawn; null while hidden and undrawn) and
 * `hiddenForMs` (how long the page has been hidden; 0 while shown).
 * @typedef {{hidden: boolean, drawn: boolean, drawnInMs: number | null, hiddenForMs: number}} DrawState
 */

/** @typedef {{state: (component?: string | number) => DrawState}} Drawing */

/** A page that is always shown and drawn: where there is no document (unit tests, a replay outside CODAP). */
/** @type {Drawing} */
export const ALWAYS_DRAWN = { state: () => ({ hidden: false, drawn: true, drawnInMs: 0, hiddenForMs: 0 }) };

export class DrawWatch {
  /**
   * @param {object} [options]
   * @param {{visibilityState?: string, addEventListener?: (type: string, fn: () => void) => void}} [options.doc]
   * @param {() => number} [options.now] a monotonic clock (ms)
   * @param {number} [options.drawMs]
   */
  constructor({ doc = globalThis.document, now = () => performance.now(), drawMs = DRAW_MS } = {}) {
    this.doc = doc;
    this.now = now;
    this.drawMs = drawMs;
    const start = now();
    /** @type {number | null} when the page was last shown (null: hidden now) */
    this.shownSince = this._hidden() ? null : start;
    /** @type {number | null} when the page was last hidden (null: shown now) */
    this.hiddenSince = this._hidden() ? start : null;
    /** @type {number | null} when the page was shown before it was last hidden */
    this.lastShownFrom = null;
    // What CODAP held before this plugin started is taken as drawn if the page is shown now; a plugin that starts
    // in a hidden tab knows nothing of what was drawn, so it counts that as a change.
    this.lastChange = this._hidden() ? start : -Infinity;
    /** @type {Map<string, number>} the last change of each component changed alone */
    this.componentChanges = new Map();
    doc?.addEventListener?.("visibilitychange", () => this._visibilityChanged());
  }

  _hidden() {
    return this.doc?.visibilityState === "hidden";
  }

  _visibilityChanged() {
    const t = this.now();
    if (this._hidden() && this.hiddenSince === null) {
      this.lastShownFrom = this.shownSince;
      this.shownSince = null;
      this.hiddenSince = t;
    } else if (!this._hidden() && this.shownSince === null) {
      this.shownSince = t;
      this.hiddenSince = null;
    }
  }

  /**
   * CODAP's document changed (or is about to): what it shows must be drawn again; with `component`, only that
   * component changed.
   * @param {string | number} [component]
   */
  changed(component) {
    if (component === undefined) this.lastChange = this.now();
    else this.componentChanges.set(String(component), this.now());
  }

  /**
   * Where drawing stands, for the whole document or for one component of it.
   * @param {string | number} [component]
   * @returns {DrawState}
   */
  state(component) {
    const t = this.now();
    const lastChange = Math.max(this.lastChange, this.componentChanges.get(String(component)) ?? -Infinity);
    if (!this._hidden()) {
      // The visibilitychange event may not have come yet: the page is shown from now at the latest.
      const shown = this.shownSince ?? t;
      const drawnAt = Math.max(shown, lastChange) + this.drawMs;
      return { hidden: false, drawn: t >= drawnAt, drawnInMs: Math.max(0, drawnAt - t), hiddenForMs: 0 };
    }
    const hiddenAt = this.hiddenSince ?? t;
    const shownFrom = this.hiddenSince === null ? this.shownSince : this.lastShownFrom;
    // Drawn if the page was shown for drawMs after the last change before it was hidden.
    const drawn = shownFrom !== null && hiddenAt - Math.max(shownFrom, lastChange) >= this.drawMs;
    return { hidden: true, drawn, drawnInMs: drawn ? 0 : null, hiddenForMs: t - hiddenAt };
  }
}

/** @typedef {import("./types.js").CodapRequest} CodapRequest */

/**
 * `call` (a message to CODAP), counting each changing message as a change when it goes and when CODAP has carried
 * it out: of the components it creates or updates when that is all it does, else of the whole document.
 * @param {(request: CodapRequest | CodapRequest[]) => Promise<unknown>} call
 * @param {{changed: (component?: string | number) => void}} drawing
 * @returns {(request: CodapRequest | CodapRequest[]) => Promise<unknown>}
 */
export function drawnCall(call, drawing) {
  /** @type {(r: CodapRequest) => string | null} */
  const updated = (r) => (r.action === "update" ? /^component\[([^\]]+)\]$/.exec(r.resource)?.[1] ?? null : null);
  /** @type {(r: CodapRequest) => boolean} */
  const creates = (r) => r.action === "create" && r.resource === "component";
  return async (request) => {
    const requests = Array.isArray(request) ? request : [request];
    const changing = requests.filter((r) => r?.action !== "get");
    if (!changing.length) return call(request);
    const alone = changing.every((r) => creates(r) || updated(r) !== null);
    /** @param {unknown} reply */
    const mark = (reply) => {
      if (!alone) return drawing.changed();
      const replies = Array.isArray(request) ? (Array.isArray(reply) ? reply : []) : [reply];
      requests.forEach((r, i) => {
        const id = creates(r) ? /** @type {any} */ (replies[i])?.values?.id : updated(r);
        if (id !== null && id !== undefined) drawing.changed(id);
      });
    };
    mark(null);
    try {
      const reply = await call(request);
      mark(reply);
      return reply;
    } catch (err) {
      drawing.changed();
      throw err;
    }
  };
}
