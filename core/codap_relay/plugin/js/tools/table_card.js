// @ts-check
// A dataset's case table and case card share one place on CODAP's canvas: asking CODAP for the card of a dataset
// whose table is shown (create component caseCard) shows the card and hides the table, as the toggle at the top
// of either does. create_codap_table says which one it hid, read back from CODAP, and how to show it again.

import { get } from "./context.js";

/**
 * @import {CodapId} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {string} type CODAP's component type */
const word = (type) => (type === "caseCard" ? "card" : "table");

/**
 * The dataset's table or card that was shown before and that CODAP hid when it showed component `id`; null when
 * none was.
 * @param {ToolContext} ctx
 * @param {CodapId} id
 * @param {Array<{id: CodapId, type?: string, hidden?: boolean}>} listedBefore CODAP's component list before
 * @param {string} dataset the dataset's name, as CODAP gives it in a component's dataContext
 * @returns {Promise<{id: CodapId, type: string} | null>}
 */
export async function hiddenInItsPlace(ctx, id, listedBefore, dataset) {
  const list = get("componentList");
  const [listed] = await ctx.send([list]);
  /** @type {Array<{id: CodapId, hidden?: boolean}>} */
  const now = ctx.must(list, listed).values ?? [];
  const hiddenNow = new Set(now.filter((c) => c.hidden).map((c) => String(c.id)));
  const candidates = listedBefore.filter((c) =>
    String(c.id) !== String(id) && /^case(Table|Card)$/.test(c.type ?? "") && !c.hidden && hiddenNow.has(String(c.id)));
  if (!candidates.length) return null;
  const replies = await ctx.send(candidates.map((c) => get(`component[${c.id}]`)));
  const at = replies.findIndex((r) => r?.success === true && String(r.values?.dataContext) === dataset);
  return at < 0 ? null : { id: candidates[at].id, type: String(candidates[at].type) };
}

/**
 * What the answer says of the table and card: the one hidden in the shown one's place and how to show it again.
 * @param {string} shownType
 * @param {{id: CodapId, type: string} | null} hidden
 */
export function tableCardText(shownType, hidden) {
  const one = shownType === "caseCard" ? ", one case at a time. " : ". ";
  if (!hidden) return `${one}CODAP keeps one table and one card per dataset: asking again shows the same one.`;
  const other = word(hidden.type);
  return `${one}CODAP shows a dataset's table or its card in one place: its case ${other} (id ${hidden.id}) is ` +
    `hidden now, not closed; update_codap_table with view "${other}" (or the toggle at the top of the case ` +
    `${word(shownType)}) shows the ${other} again.`;
}
