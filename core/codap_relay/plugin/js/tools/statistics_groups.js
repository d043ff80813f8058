// @ts-check
// The groups compute_codap_statistics gives a row each: the values of an attribute or of a formula (groupBy), or
// groups named by a condition each (groups).

import { ToolError, collection, get } from "./context.js";
import { createFormulaValues, errorText, isError, ref } from "./formula_values.js";

/**
 * @import {DescribedAttribute, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** At most this many groups (rows per attribute). */
export const MAX_GROUPS = 50;
/** The group of the cases with no value. */
export const NO_VALUE = "(no value)";

/**
 * A group of cases the statistics are computed for: its label, its condition in an aggregate's filter, that
 * condition as the answer shows it, and the hidden attribute holding it (named groups).
 * @typedef {{label: string, condition: string, shown: string, attribute?: string}} Group
 */

/** @param {ToolContext} ctx */
export function createStatisticsGroups(ctx) {
  const { send, must } = ctx;
  const { withTemporaryFormulas } = createFormulaValues(ctx);

  /**
   * The groups the rows are computed for, each with its `condition` (true for its cases, in an aggregate's
   * filter) and `shown` (that condition as the answer shows it), and the hidden attributes they need.
   * - groupBy an attribute: its values as CODAP lists them in its categories (its non-empty values, in CODAP's
   *   order), and a group "(no value)";
   * - groupBy a formula: the values CODAP gives it, read first as the categories of a hidden attribute holding
   *   it (one message), then grouped as an attribute's;
   * - named groups: one hidden attribute a group holds its condition, evaluated case by case (CODAP's `or` and
   *   `and` fail inside an aggregate's filter; if() reads the attribute's "true"/"false" there).
   * @param {DescribedDataset} dataset
   * @param {string} prefix the temporary attributes' prefix
   * @param {{attribute: DescribedAttribute | null, formula: string | null, named: Record<string, string> | null}} by
   * @returns {Promise<{groups: Array<Group | null>, temporary: Array<{name: string, formula: string}>, column: string | null}>}
   */
  async function groupsOf(dataset, prefix, by) {
    const top = dataset.collections[0];
    if (by.named) {
      const temporary = Object.values(by.named).map((formula, i) => ({ name: `${prefix}group${i}`, formula }));
      const groups = Object.entries(by.named).map(([label, formula], i) => ({
        label,
        condition: `if(${ref(temporary[i].name)}, true, false)`,
        shown: `(${formula})`,
        attribute: temporary[i].name,
      }));
      return { groups, temporary, column: "group" };
    }
    if (!by.attribute && !by.formula) return { groups: [null], temporary: [], column: null };
    /** @type {string[]} */
    let order;
    /** @type {Array<{name: string, formula: string}>} */
    let temporary = [];
    let name;
    let shownName;
    if (by.attribute) {
      name = by.attribute.name;
      shownName = ref(name);
      const request = get(`${collection(dataset.id, top.id)}.attribute[${by.attribute.id}]`);
      const [reply] = await send([request]);
      order = must(request, reply, `reading the values of ${JSON.stringify(name)}`).values?._categoryMap?.__order ?? [];
    } else {
      const formula = /** @type {string} */ (by.formula);
      name = `${prefix}group`;
      shownName = `(${formula})`;
      temporary = [{ name, formula }];
      const request = get(`${collection(dataset.id, top.id)}.attribute[${name}]`);
      const { readReplies: [reply] } = await withTemporaryFormulas(dataset, top, temporary, [request]);
      order = must(request, reply, `reading the values of the groupBy formula ${JSON.stringify(formula)}`)
        .values?._categoryMap?.__order ?? [];
      const failed = order.find(isError);
      if (failed !== undefined) {
        const reason = errorText(failed);
        throw new ToolError(
          `CODAP cannot evaluate the groupBy formula ${JSON.stringify(formula)} on ${JSON.stringify(dataset.name)}: ` +
            `${reason}. groupBy is an attribute's name or a formula giving each case its group, e.g. ` +
            '`if(transport = "walk" or transport = "bike", "active", "driven")`. Attributes of ' +
            `${JSON.stringify(top.name)}: ${top.attributes.map((a) => a.name).join(", ")}.`,
          "formula_error",
          { datasetName: dataset.name, groupBy: formula, codapError: reason },
        );
      }
    }
    const what = by.attribute ? `Attribute ${JSON.stringify(name)}` : `The formula ${JSON.stringify(by.formula)}`;
    if (order.length > MAX_GROUPS) {
      throw new ToolError(
        `${what} has ${order.length} distinct values; groupBy takes one with at most ${MAX_GROUPS}. Group by ` +
          "something with fewer values (a formula such as `round(age / 10) * 10` bins numbers), or narrow the " +
          "cases with where.",
        "too_many_groups",
        { datasetName: dataset.name, groupBy: by.attribute ? name : by.formula, groups: order.length, max: MAX_GROUPS },
      );
    }
    const groups = [...order, ""].map((v) => ({
      label: v === "" ? NO_VALUE : v,
      condition: `${ref(name)} = ${JSON.stringify(v)}`,
      shown: `${shownName} = ${JSON.stringify(v)}`,
    }));
    return { groups, temporary, column: by.attribute ? name : "group" };
  }

  return { groupsOf };
}
