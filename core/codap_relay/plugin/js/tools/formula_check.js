// @ts-check
// Formulas checked in CODAP before an attribute keeps one: CODAP's syntax check, the error values it computes for
// the cases a formula fails on, and the error that names the reason; the computed values an answer shows.

import { q } from "./attribute_read.js";
import { ToolError } from "./context.js";

/** @import {CodapReply, CodapRequest} from "../types.js" */

/** How many computed values an answer shows. */
export const SHOWN_VALUES = 5;
/** CODAP writes a formula's error as the value of each case it fails for: "❌ Undefined symbol foo". */
const FORMULA_ERROR_MARK = "❌";

/** A value as a sentence shows it: numbers bare, text quoted, empty as (empty). */
/** @param {unknown} v */
export const shown = (v) => (v === "" || v === null || v === undefined ? "(empty)" : typeof v === "string" ? q(v) : String(v));

/** CODAP's own check of a formula's syntax (formulaEngine evalExpression compiles it): its reason, or null. */
/** @type {(formula: string) => CodapRequest} */
export const syntaxCheck = (formula) => ({
  action: "notify",
  resource: "formulaEngine",
  values: { request: "evalExpression", source: formula, records: [] },
});

/**
 * @param {string} formula
 * @param {string} reason
 * @param {Record<string, unknown>} [data]
 */
export function formulaError(formula, reason, data = {}) {
  return new ToolError(
    `CODAP cannot evaluate the formula ${q(formula)}: ${reason}. Nothing was changed. Check the attribute and ` +
      "function names (backquotes around names with spaces) and that a formula in a parent collection uses " +
      "only its own or parent attributes or aggregates such as mean().",
    "formula_error",
    { formula, codapError: reason, ...data },
  );
}

/**
 * The values CODAP computed for attribute `name` in an allCases reply, and its error values.
 * @param {CodapReply | undefined} reply
 * @param {string} name
 */
export function computed(reply, name) {
  /** @type {Array<{case?: {values?: Record<string, unknown>}}>} */
  const cases = reply?.success === true ? reply.values?.cases ?? [] : [];
  const values = cases.map((c) => c.case?.values?.[name]);
  const errors = /** @type {string[]} */ (values.filter((v) => typeof v === "string" && v.startsWith(FORMULA_ERROR_MARK)));
  // each value's case, named by its other values (a parent case: "grade 10")
  const of = cases.map((c) => Object.entries(c.case?.values ?? {}).filter(([k]) => k !== name).slice(0, 2));
  return { values, errors, count: values.length, of };
}

/** @param {string[]} errors */
export const reasonOf = (errors) => errors[0].slice(FORMULA_ERROR_MARK.length).trim();
