// @ts-check
// update_codap_attribute: rename an attribute or change its formula (tried on a scratch attribute first, put back
// if it fails on the attribute itself), type, unit, description, precision, hidden, editable, collection or place.

import { nameProblem } from "../names.js";
import {
  ATTRIBUTE_FIELDS,
  attributeFacts,
  findAttribute,
  nameInUse,
  q,
  readDataset,
} from "./attribute_read.js";
import { ToolError, codapError, collection, get, invalid, toolResult } from "./context.js";
import { SHOWN_VALUES, computed, formulaError, reasonOf, shown, syntaxCheck } from "./formula_check.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {AttributeFacts, ReadDataset} from "./attribute_read.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext} ctx */
export function createAttributeUpdate(ctx) {
  const { send, must, findDataset } = ctx;

  /**
   * What the attribute menu's Edit Attribute Properties (editable) and dragging a column (its place, its
   * collection) change, read back from CODAP: {field: {before, after}} for each that changed.
   * CODAP 3.1.0 reads `editable` the wrong way round (it stores the value sent as "protected"), so the value that
   * gives the wanted one is sent, and checked. A move is CODAP's attributeLocation, as the group tool uses.
   * @param {ReadDataset} dataset
   * @param {ReturnType<typeof findAttribute>} attr
   * @param {Record<string, any>} now the attribute as CODAP gave it after the other changes
   * @param {{editable?: boolean, collection?: string, position?: number}} args
   */
  async function protectAndMove(dataset, attr, now, args) {
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    const base = collection(dataset.id, attr.collection.id);
    if (args.editable !== undefined && now.editable !== args.editable) {
      const read = get(`${base}.attribute[${attr.id}]`);
      let after = now.editable;
      for (const sent of [!args.editable, args.editable]) {
        /** @type {CodapRequest} */
        const set = { action: "update", resource: `${base}.attribute[${attr.id}]`, values: { editable: sent } };
        const [done, reread] = await send([set, read]);
        must(set, done, `protecting attribute ${q(attr.name)}`);
        after = must(read, reread).values?.editable;
        if (after === args.editable) break;
      }
      changes.editable = { before: now.editable, after };
    }
    if (args.collection !== undefined || args.position !== undefined) {
      const colls = dataset.collections;
      const target = args.collection === undefined
        ? attr.collection
        : colls.find((c) => c.name === args.collection) ?? colls.find((c) => c.title === args.collection);
      if (!target) {
        throw new ToolError(
          `${q(dataset.name)} has no collection ${q(args.collection)}. Its collections: ${colls.map((c) => c.name).join(", ")}. ` +
            "To make a new parent collection, use group_codap_cases.",
          "collection_not_found",
          { datasetName: dataset.name, collection: args.collection, available: colls.map((c) => c.name) },
        );
      }
      /** @param {CodapId} cid */
      const names = async (cid) => {
        const list = get(`${collection(dataset.id, cid)}.attributeList`);
        const [reply] = await send([list]);
        return (must(list, reply).values ?? []).map((/** @type {{name: string}} */ a) => a.name);
      };
      const beforeNames = await names(attr.collection.id);
      const place = args.position ?? (target.id === attr.collection.id ? beforeNames.indexOf(attr.name) : target.attributes.length);
      /** @type {CodapRequest} */
      const move = {
        action: "update",
        resource: `${base}.attributeLocation[${attr.id}]`,
        // CODAP counts the place among the collection's attributes before the move: past the attribute's own
        // place, one more.
        values: { collection: target.id, position: target.id === attr.collection.id && place > beforeNames.indexOf(attr.name) ? place + 1 : place },
      };
      const [moved] = await send([move]);
      must(move, moved, `moving attribute ${q(attr.name)}`);
      const afterNames = await names(target.id).catch(() => []);
      if (target.id !== attr.collection.id) changes.collection = { before: attr.collection.name, after: target.name };
      const position = { before: beforeNames.indexOf(attr.name), after: afterNames.indexOf(now.name ?? attr.name) };
      if (position.before !== position.after || changes.collection) changes.position = position;
    }
    return changes;
  }

  /**
   * @param {{datasetName: string, name: string, newName?: string, formula?: string, type?: string, unit?: string,
   *   description?: string, precision?: number | string, hidden?: boolean, editable?: boolean, collection?: string,
   *   position?: number}} args
   */
  async function update_codap_attribute(args) {
    const { datasetName, name, newName, formula } = args;
    const changing = /** @type {const} */ (["newName", "formula", "type", "unit", "description", "precision", "hidden",
      "editable", "collection", "position"]).filter((f) => args[f] !== undefined);
    if (changing.length === 0) {
      throw invalid(
        "Say what to change: newName, formula, type, unit, description, precision, hidden, editable, collection or " +
          "position (give only what changes).",
      );
    }
    if (newName !== undefined) {
      const problem = nameProblem("Attribute", newName);
      if (problem) throw invalid(problem);
    }
    const found = await findDataset(datasetName);
    const newFormula = typeof formula === "string" && formula.trim() !== "";
    const dataset = await readDataset(ctx, found, newFormula ? [syntaxCheck(formula)] : []);
    const attr = findAttribute(dataset, name);
    if (newName !== undefined && newName !== attr.name) nameInUse(dataset, newName, "rename");
    if (newFormula && dataset.extra[0]?.success !== true) throw formulaError(/** @type {string} */ (formula), codapError(dataset.extra[0]));
    const base = collection(dataset.id, attr.collection.id);
    /** @type {Array<{case: {id: CodapId, values?: Record<string, unknown>}}>} */
    let oldCases = [];
    if (newFormula) {
      // Tried on a scratch attribute beside it first, so a formula CODAP cannot evaluate changes nothing (a
      // formula taken off an attribute leaves its last values, errors included). The attribute's own values
      // are read in the same message, to put back if the formula fails on the attribute itself (a cycle).
      const scratch = `__codap_relay_check_${Date.now().toString(36)}`;
      /** @type {CodapRequest} */
      const tryIt = { action: "create", resource: `${base}.attribute`, values: [{ name: scratch, formula }] };
      const cases = get(`${base}.allCases`);
      /** @type {CodapRequest} */
      const drop = { action: "delete", resource: `${base}.attribute[${scratch}]` };
      const [tried, read] = await send([tryIt, cases, drop]);
      must(tryIt, tried, `checking the formula ${q(formula)}`);
      const { errors, count } = computed(read, scratch);
      if (errors.length) throw formulaError(/** @type {string} */ (formula), reasonOf(errors), { casesWithErrors: errors.length, cases: count });
      oldCases = read?.values?.cases ?? [];
    }
    /** @type {Record<string, unknown>} */
    const values = {};
    if (newName !== undefined) values.name = newName;
    for (const f of /** @type {const} */ (["formula", "type", "unit", "description", "precision", "hidden"])) {
      if (args[f] !== undefined) values[f] = args[f];
    }
    /** @type {CodapRequest} */
    const update = { action: "update", resource: `${base}.attribute[${attr.id}]`, values };
    const readBack = get(`${base}.attribute[${attr.id}]`);
    const cases = get(`${base}.allCases`);
    const [updated, after, read] = await send([update, readBack, cases]);
    must(update, updated, `changing attribute ${q(attr.name)} of ${q(dataset.name)}`);
    const now = must(readBack, after).values;
    const before = attributeFacts(attr, attr.collection.name);
    const facts = attributeFacts(now, attr.collection.name);
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    for (const f of /** @type {Array<keyof AttributeFacts>} */ (ATTRIBUTE_FIELDS)) {
      if (JSON.stringify(before[f]) !== JSON.stringify(facts[f])) changes[f] = { before: before[f], after: facts[f] };
    }
    const { values: computedValues, errors, count } = computed(read, facts.name);
    if (newFormula && errors.length) {
      // CODAP evaluates it on the attribute itself only (a cycle through another formula): put everything back.
      /** @type {Record<string, unknown>} */
      const back = { formula: before.formula ?? "", unit: before.unit ?? "", description: before.description ?? "" };
      back.name = before.name;
      back.precision = before.precision ?? "";
      back.hidden = before.hidden;
      if (changes.type && before.type) back.type = before.type;
      /** @type {CodapRequest} */
      const undo = { action: "update", resource: `${base}.attribute[${attr.id}]`, values: back };
      /** @type {CodapRequest} */
      const restore = {
        action: "update",
        resource: `${base}.case`,
        values: oldCases.map((c) => ({ id: c.case.id, values: { [before.name]: c.case.values?.[before.name] ?? "" } })),
      };
      const [undone] = await send(before.formula || oldCases.length === 0 ? [undo] : [undo, restore]);
      const put = undone?.success === true
        ? "Nothing was changed."
        : `Putting the attribute back failed (${codapError(undone)}): check it with get_codap_datasets.`;
      const err = formulaError(/** @type {string} */ (formula), reasonOf(errors), { casesWithErrors: errors.length, cases: count });
      err.message = err.message.replace("Nothing was changed.", put);
      throw err;
    }
    Object.assign(changes, await protectAndMove(dataset, attr, now, args));
    const lines = Object.entries(changes).map(
      ([f, { before: b, after: a }]) => `${f}: ${b === null || b === "" ? "(none)" : q(b)} → ${a === null || a === "" ? "(none)" : q(a)}`,
    );
    let text = lines.length
      ? `Changed attribute ${q(facts.name)} of ${q(dataset.name)}: ${lines.join("; ")}.`
      : `Attribute ${q(facts.name)} of ${q(dataset.name)} already had those settings; nothing changed.`;
    if (newFormula && count) {
      text += ` First values CODAP computed: ${computedValues.slice(0, SHOWN_VALUES).map(shown).join(", ")}.`;
    }
    if (formula === "" && before.formula) text += " The values CODAP last computed stay as ordinary values.";
    return toolResult(text, {
      datasetName: dataset.name,
      attribute: facts,
      changes,
      ...(newFormula ? { firstValues: computedValues.slice(0, SHOWN_VALUES) } : {}),
    });
  }

  return { update_codap_attribute };
}
