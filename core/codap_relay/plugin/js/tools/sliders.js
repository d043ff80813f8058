// @ts-check
// Sliders, as their inspector panels set them, and CODAP's calculator.
//
// A slider's component create and update take its value (0 too, which `update global` refuses), range, step,
// animation and scale (numeric or date), and `get component` reads them back. A date slider's value and range are
// seconds since 1970 (what its global value holds and formulas see), shown by CODAP as dates; its step counts a
// date unit (2 months). CODAP 3.1.0 stops responding when a slider turns to a date scale over a range of seconds
// (the date axis never finishes its ticks: seen for ranges of 5 s to an hour, never for a day or more), so a date
// scale is always sent with its range, and a date range is at least a day.

import { ToolError, get, invalid, toolResult } from "./context.js";
import { createPicker } from "./component_pick.js";
import { createPlacer, placementText } from "./component_place.js";

/**
 * @import {CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** CODAP's slider animation settings are indexes into these lists (v3 slider-types.ts). */
export const DIRECTIONS = ["backAndForth", "lowToHigh", "highToLow"];
export const MODES = ["nonStop", "onceOnly"];
/** The units a date slider's step counts (v3 date-utils.ts dateUnits, but milliseconds). */
export const DATE_UNITS = ["year", "month", "day", "hour", "minute", "second"];
/** The shortest date range: CODAP 3.1.0's date axis hangs the page over shorter ones (see above). */
export const MIN_DATE_RANGE_S = 86_400;

/** @param {number} n */
const pad = (n) => String(n).padStart(2, "0");

/**
 * A date slider's value (seconds since 1970) as CODAP shows it, in the browser's time zone: "2024-03-01", with
 * the time when it is not midnight ("2024-03-01T14:30", seconds when not whole minutes).
 * @param {unknown} seconds
 * @returns {string | null}
 */
export function dateText(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return null;
  const d = new Date(seconds * 1000);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  if (!d.getHours() && !d.getMinutes() && !d.getSeconds()) return day;
  return `${day}T${pad(d.getHours())}:${pad(d.getMinutes())}${d.getSeconds() ? `:${pad(d.getSeconds())}` : ""}`;
}

/**
 * Seconds since 1970 for a date slider's value: a number as it is, or a date "2024", "2024-03", "2024-03-01",
 * "2024-03-01T14:30[:00]" in the browser's time zone (as CODAP's own date inputs read them), or any ISO date with
 * a zone ("…Z", "…+01:00"). Null when it is no date.
 * @param {unknown} value
 * @returns {number | null}
 */
export function toSeconds(value) {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  const text = String(value).trim();
  const local = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?)?)?)?$/.exec(text);
  if (local) {
    const [y, mo, d, h, mi, s] = local.slice(1).map((p) => (p === undefined ? undefined : Number(p)));
    const date = new Date(/** @type {number} */ (y), (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0, 0, 0);
    if (mo !== undefined && date.getMonth() !== mo - 1) return null; // 2024-02-31
    return date.getTime() / 1000 + (s ?? 0);
  }
  if (/^\d{4}-\d{2}-\d{2}T[\d:.]+(Z|[+-]\d{2}:?\d{2})$/i.test(text)) {
    const ms = Date.parse(text);
    return Number.isFinite(ms) ? ms / 1000 : null;
  }
  return null;
}

/**
 * A slider as the tools and the status give it, from CODAP's `get component[id]`.
 * @param {Record<string, any>} v
 */
export function sliderFacts(v) {
  const date = v.scaleType === "date";
  return {
    globalValue: String(v.globalValueName ?? ""),
    value: v.value ?? null,
    min: v.lowerBound ?? null,
    max: v.upperBound ?? null,
    step: v.multipleOf ?? null,
    scaleType: date ? "date" : "numeric",
    ...(date
      ? { dateUnit: v.dateMultipleOfUnit ?? "day", dates: { value: dateText(v.value), min: dateText(v.lowerBound), max: dateText(v.upperBound) } }
      : {}),
    animationDirection: DIRECTIONS[v.animationDirection] ?? null,
    animationMode: MODES[v.animationMode] ?? null,
    maxPerSecond: v.animationRate ?? null,
  };
}

/**
 * The slider in words: "speed = 2, from 0 to 10 in steps of 0.5" or for a date slider "day = 2024-03-01, from
 * 2024-01-01 to 2024-12-31 in steps of 2 months (date scale)".
 * @param {ReturnType<typeof sliderFacts>} f
 */
export function sliderText(f) {
  const shown = (/** @type {"value" | "min" | "max"} */ k) => (f.dates ? f.dates[k] ?? f[k] : f[k]);
  const step = f.step ? ` in steps of ${f.step}${f.dates ? ` ${f.dateUnit}${f.step === 1 ? "" : "s"}` : ""}` : "";
  return `${f.globalValue} = ${shown("value")}, from ${shown("min")} to ${shown("max")}${step}${f.dates ? " (date scale)" : ""}`;
}

/**
 * The value, range, scale and date unit to send for a new or changed slider: dates read as seconds, a scale change
 * without a range given taking the range CODAP's Scale panel gives (the current year, or -0.5 to 11.5), and a date
 * range of at least a day. Throws invalid_arguments naming what is wrong.
 * @param {{value?: number | string, min?: number | string, max?: number | string, scaleType?: string,
 *   dateUnit?: string}} args
 * @param {{value?: number, min?: number, max?: number, scaleType: string}} current
 * @param {() => number} now milliseconds since 1970
 */
export function sliderRange(args, current, now) {
  const scale = args.scaleType ?? current.scaleType;
  const switching = scale !== current.scaleType;
  if (args.dateUnit !== undefined && scale !== "date") {
    throw invalid("dateUnit is the unit a date slider's step counts: give it with scaleType \"date\" (or for a date slider).");
  }
  /** @param {"value" | "min" | "max"} k */
  const read = (k) => {
    const given = args[k];
    if (given === undefined) return undefined;
    if (scale === "numeric") {
      if (typeof given !== "number") throw invalid(`${k} ${JSON.stringify(given)} is not a number: a numeric slider takes numbers (scaleType "date" takes dates).`);
      return given;
    }
    const seconds = toSeconds(given);
    if (seconds === null) {
      throw invalid(`${k} ${JSON.stringify(given)} is not a date: give "2024-03-01" (or "2024-03-01T14:30", in the browser's time zone) or seconds since 1970.`);
    }
    return seconds;
  };
  let [value, min, max] = [read("value"), read("min"), read("max")];
  if (switching && min === undefined && max === undefined) {
    // What CODAP's Scale panel does on a change of scale: this year (value now), or -0.5 to 11.5 (value 0.5).
    if (scale === "date") {
      const year = new Date(now()).getFullYear();
      [min, max] = [new Date(year, 0, 1).getTime() / 1000, new Date(year, 11, 31, 23, 59, 59).getTime() / 1000];
      value ??= Math.round(now() / 1000);
    } else {
      [min, max] = [-0.5, 11.5];
      value ??= 0.5;
    }
  }
  min ??= current.min;
  max ??= current.max;
  if (typeof min !== "number" || typeof max !== "number") throw invalid("Give the slider's min and max.");
  if (!(min < max)) throw invalid(`min (${args.min ?? min}) must be below max (${args.max ?? max}).`);
  if (scale === "date" && max - min < MIN_DATE_RANGE_S) {
    throw invalid(
      `A date slider's range must span at least a day (min ${dateText(min)}, max ${dateText(max)}): CODAP 3.1.0 stops ` +
        "responding when a date slider's range is shorter. For times within a day, use a numeric slider (e.g. hours).",
    );
  }
  if (switching && value === undefined && current.value !== undefined && (current.value < min || current.value > max)) value = min;
  return { scale, switching, value, min, max };
}

/** @param {ToolContext} ctx */
export function createSliderTools(ctx) {
  const { send, must } = ctx;
  const pick = createPicker(ctx);
  const placer = createPlacer(ctx);
  const now = () => ctx.now();

  /**
   * @param {{name: string, value: number | string, min: number | string, max: number | string, step?: number,
   *   title?: string, animationDirection?: string, animationMode?: string, scaleType?: string, dateUnit?: string,
   *   place?: string, relativeTo?: string | number}} args
   */
  async function create_codap_slider(args) {
    placer.checkPlace(args);
    const { name, step, title, animationDirection, animationMode, dateUnit } = args;
    const { scale, value, min, max } = sliderRange(args, { scaleType: "numeric" }, now);
    const start = /** @type {number} */ (value ?? min);
    if (start < min || start > max) throw invalid(`value (${args.value}) must lie between min (${args.min}) and max (${args.max}).`);
    /** @type {CodapRequest} */
    const global = { action: "create", resource: "global", values: { name, value: start } };
    const globals = get("globalList");
    const [made, listed] = await send([global, globals]);
    if (made?.success !== true) {
      /** @type {string[]} */
      const names = (listed?.success === true ? listed.values ?? [] : []).map((/** @type {{name: string}} */ g) => g.name);
      const taken = names.includes(name);
      throw new ToolError(
        taken
          ? `CODAP already has a global value named ${JSON.stringify(name)} (each has at most one slider). Choose ` +
              `another name. Global values in CODAP: ${names.join(", ")}.`
          : `CODAP refused the global value ${JSON.stringify(name)}: ${made?.values?.error ?? "no reason given"}.`,
        taken ? "global_exists" : "codap_error",
        { name, available: names },
      );
    }
    /** @type {CodapRequest} */
    const create = {
      action: "create",
      resource: "component",
      values: {
        type: "slider",
        globalValueName: name,
        lowerBound: min,
        upperBound: max,
        ...(scale === "date" ? { scaleType: "date", ...(dateUnit ? { dateMultipleOfUnit: dateUnit } : {}) } : {}),
        ...(step !== undefined ? { multipleOf: step } : {}),
        ...(animationDirection ? { animationDirection: DIRECTIONS.indexOf(animationDirection) } : {}),
        ...(animationMode ? { animationMode: MODES.indexOf(animationMode) } : {}),
        ...(title ? { name: title, title } : {}),
      },
    };
    const [reply] = await send([create]);
    const id = must(create, reply, `creating a slider for ${name}`).values?.id;
    const read = get(`component[${id}]`);
    const [detail] = await send([read]);
    const facts = sliderFacts(must(read, detail, `reading the new slider ${id}`).values ?? {});
    const { placement, note } = await placer.placeNew(id, args);
    return toolResult(
      `Created a slider (id ${id}) for the global value ${sliderText(facts)}. Formulas can use ${name} by name` +
        `${facts.dates ? " (seconds since 1970)" : ""}; they update as the slider moves.` + (placement ? placementText(placement) : "") + note,
      {
        componentId: id, name: facts.globalValue || name, ...facts, step: facts.step ?? undefined,
        title: String(detail?.values?.title ?? ""), ...(placement ? { placement } : {}),
      },
    );
  }

  /**
   * @param {string} resource
   * @param {boolean} shown
   * @returns {Promise<[CodapRequest, import("../types.js").CodapReply]>}
   */
  async function showSlider(resource, shown) {
    /** @type {CodapRequest} */
    const request = { action: "update", resource, values: { isVisible: shown } };
    const [reply] = await send([request]);
    return [request, reply];
  }

  /**
   * @param {{slider?: string | number, value?: number | string, min?: number | string, max?: number | string,
   *   step?: number, scaleType?: string, dateUnit?: string, animationDirection?: string, animationMode?: string,
   *   maxPerSecond?: number}} args
   */
  async function update_codap_slider(args) {
    const keys = /** @type {const} */ (["value", "min", "max", "step", "scaleType", "dateUnit", "animationDirection", "animationMode", "maxPerSecond"]);
    if (!keys.some((k) => args[k] !== undefined)) throw invalid(`Say what to change: ${keys.join(", ")}.`);
    const slider = await pick("slider", args.slider, "slider");
    const d = slider.detail;
    const before = sliderFacts(d);
    const { scale, switching, value, min, max } = sliderRange(args, { value: d.value, min: d.lowerBound, max: d.upperBound, scaleType: before.scaleType }, now);
    /** @type {Record<string, unknown>} */
    const values = {};
    if (value !== undefined) values.value = value;
    // A change of scale always carries the range (a date scale over the old numbers can hang CODAP, above).
    if (args.min !== undefined || switching) values.lowerBound = min;
    if (args.max !== undefined || switching) values.upperBound = max;
    if (switching) values.scaleType = scale;
    if (args.dateUnit !== undefined) values.dateMultipleOfUnit = args.dateUnit;
    if (args.step !== undefined) values.multipleOf = args.step;
    if (args.animationDirection !== undefined) values.animationDirection = DIRECTIONS.indexOf(args.animationDirection);
    if (args.animationMode !== undefined) values.animationMode = MODES.indexOf(args.animationMode);
    if (args.maxPerSecond !== undefined) values.animationRate = args.maxPerSecond;
    const resource = `component[${slider.id}]`;
    /** @type {CodapRequest} */
    const update = { action: "update", resource, values };
    // CODAP 3.1.0 stops responding when a shown slider turns from a date scale to a numeric one (whatever the
    // range): the change is made while the slider is hidden, each step its own message so CODAP draws it anew.
    const hide = switching && slider.hidden !== true;
    if (hide) must(...(await showSlider(resource, false)), `hiding slider ${slider.id} to change its scale`);
    const [done] = await send([update]);
    must(update, done, `changing slider ${slider.id}`);
    if (hide) must(...(await showSlider(resource, true)), `showing slider ${slider.id} again`);
    const [read] = await send([get(resource)]);
    const after = sliderFacts(must(get(resource), read).values ?? {});
    /** @type {Record<string, unknown>} */
    const asked = { ...args, value, min, max, scaleType: scale };
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    /** @type {string[]} */
    const notTaken = [];
    for (const k of keys) {
      const [b, a] = [/** @type {any} */ (before)[k] ?? null, /** @type {any} */ (after)[k] ?? null];
      if (b !== a) changes[k] = { before: b, after: a };
      const want = asked[k];
      if (args[k] === undefined || want === a || (k === "step" && args.step === 0 && !a)) continue;
      notTaken.push(`${k} ${JSON.stringify(args[k])} (CODAP has ${JSON.stringify(a)})`);
    }
    const shown = (/** @type {string} */ k, /** @type {unknown} */ v) =>
      after.scaleType === "date" && ["value", "min", "max"].includes(k) ? dateText(v) ?? v : v;
    const lines = Object.entries(changes).map(([k, c]) => `${k} ${shown(k, c.before)} → ${shown(k, c.after)}`);
    const global = after.globalValue || before.globalValue;
    return toolResult(
      (lines.length ? `Slider ${JSON.stringify(global)} (id ${slider.id}): ${lines.join(", ")}.` : `Slider ${JSON.stringify(global)} already had those settings.`) +
        ` Now ${sliderText(after)}. Formulas that use ${global} now see ${after.value}${after.dates ? " (seconds since 1970)" : ""}.` +
        (notTaken.length ? ` CODAP did not take: ${notTaken.join("; ")}.` : ""),
      { componentId: slider.id, ...after, globalValue: global, changes, ...(notTaken.length ? { notTaken } : {}) },
    );
  }

  /** @param {{title?: string, place?: string, relativeTo?: string | number}} args */
  async function create_codap_calculator(args) {
    placer.checkPlace(args);
    /** @type {CodapRequest} */
    const create = { action: "create", resource: "component", values: { type: "calculator", ...(args.title ? { name: args.title, title: args.title } : {}) } };
    const [before, made] = await send([get("componentList"), create]);
    const id = must(create, made, "opening the calculator").values?.id;
    const [read] = await send([get(`component[${id}]`)]);
    const now = must(get(`component[${id}]`), read).values ?? {};
    // CODAP has one calculator: one already open stays where the person put it.
    const open = (before?.success === true ? before.values ?? [] : []).some((/** @type {any} */ c) => String(c.id) === String(id));
    const { placement, note } = args.place ? await placer.placeNew(id, args) : { placement: await placer.settle(id, { move: !open }), note: "" };
    return toolResult(
      `Opened CODAP's calculator (id ${id}${now.title ? `, title ${JSON.stringify(now.title)}` : ""}): the class types sums into it. ` +
        "It keeps nothing in the document's data; for a number the class needs, evaluate_codap_formula computes it." +
        (placement ? placementText(placement) : "") + note,
      { componentId: id, type: "calculator", title: String(now.title ?? ""), ...(placement ? { placement } : {}) },
    );
  }

  return { create_codap_slider, update_codap_slider, create_codap_calculator };
}
