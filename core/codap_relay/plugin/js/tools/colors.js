// @ts-check
// Colours as CODAP keeps them: "#rrggbb", with an opacity below 1 as a fourth byte ("#rrggbbaa", what CODAP's own
// colour picker writes). A CSS colour name or rgb() is turned into that form by the browser's own parser (a
// canvas's fillStyle), so what the tools send is what CODAP reads back.

/**
 * `color` as "#rrggbb" or "#rrggbbaa", or null when it is no colour the browser knows.
 * @param {string} color
 * @param {{createElement?: (tag: string) => any} | undefined} [doc] the page's document (a canvas parses names)
 * @returns {string | null}
 */
export function toHex(color, doc = globalThis.document) {
  const text = color.trim().toLowerCase();
  if (/^#[0-9a-f]{6}([0-9a-f]{2})?$/.test(text)) return text;
  const short = /^#([0-9a-f])([0-9a-f])([0-9a-f])([0-9a-f])?$/.exec(text);
  if (short) return `#${short.slice(1).filter(Boolean).map((d) => d + d).join("")}`;
  const context = doc?.createElement?.("canvas")?.getContext?.("2d");
  if (!context) return null;
  // An unknown colour leaves fillStyle as it was: two different starting values tell it apart from black or white.
  /** @type {string[]} */
  const seen = [];
  for (const start of ["#000000", "#ffffff"]) {
    context.fillStyle = start;
    context.fillStyle = text;
    seen.push(String(context.fillStyle));
  }
  if (seen[0] !== seen[1]) return null;
  const parsed = seen[0];
  if (/^#[0-9a-f]{6}$/.test(parsed)) return parsed;
  const rgba = /^rgba?\((\d+),\s*(\d+),\s*(\d+)(?:,\s*([\d.]+))?\)$/.exec(parsed);
  if (!rgba) return null;
  const hex = rgba.slice(1, 4).map((n) => Number(n).toString(16).padStart(2, "0")).join("");
  const alpha = rgba[4] === undefined ? "" : Math.round(Number(rgba[4]) * 255).toString(16).padStart(2, "0");
  return `#${hex}${alpha === "ff" ? "" : alpha}`;
}

/**
 * "#rrggbb" with `opacity` (0 to 1) as its alpha byte; an opacity of 1 leaves the colour without one.
 * @param {string} hex "#rrggbb" or "#rrggbbaa"
 * @param {number} opacity
 */
export function withOpacity(hex, opacity) {
  const base = hex.slice(0, 7);
  if (opacity >= 1) return base;
  return `${base}${Math.round(Math.max(0, opacity) * 255).toString(16).padStart(2, "0")}`;
}
