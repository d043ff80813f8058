// @ts-check
// The attribute tools: add and delete an attribute (formulas checked in CODAP first: formula_check.js), change one
// (attribute_update.js); with them the whole-dataset tools, importing one (dataset_import.js) and deleting one
// (dataset_delete.js).

import { nameProblem } from "../names.js";
import { attributeFacts, findAttribute, nameInUse, pickCollection, q, readDataset } from "./attribute_read.js";
import { createAttributeUpdate } from "./attribute_update.js";
import { ToolError, codapError, collection, get, invalid, plural, toolResult } from "./context.js";
import { createDatasetDelete } from "./dataset_delete.js";
import { createDatasetImport } from "./dataset_import.js";
import { SHOWN_VALUES, computed, formulaError, reasonOf, shown, syntaxCheck } from "./formula_check.js";

/**
 * @import {CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext & {fetch?: typeof fetch}} ctx */
export function createAttributeTools(ctx) {
  const { send, must, findDataset } = ctx;

  /**
   * @param {{datasetName: string, name: string, collection?: string, formula?: string, type?: string, unit?: string,
   *   description?: string, precision?: number}} args
   */
  async function add_codap_attribute(args) {
    const { datasetName, name, formula } = args;
    const problem = nameProblem("Attribute", name);
    if (problem) throw invalid(problem);
    const found = await findDataset(datasetName);
    const hasFormula = typeof formula === "string" && formula.trim() !== "";
    const dataset = await readDataset(ctx, found, hasFormula ? [syntaxCheck(formula)] : []);
    nameInUse(dataset, name, "add");
    const target = pickCollection(dataset, args.collection);
    if (hasFormula && dataset.extra[0]?.success !== true) {
      throw formulaError(/** @type {string} */ (formula), codapError(dataset.extra[0]));
    }
    /** @type {Record<string, unknown>} */
    const values = { name };
    if (hasFormula) values.formula = formula;
    for (const f of /** @type {const} */ (["type", "unit", "description", "precision"])) if (args[f] !== undefined) values[f] = args[f];
    const base = collection(dataset.id, target.id);
    /** @type {CodapRequest} */
    const create = { action: "create", resource: `${base}.attribute`, values: [values] };
    const cases = get(`${base}.allCases`);
    // The attribute and its computed values in one message: CODAP computes a formula as the attribute is added.
    const [created, read] = await send([create, cases]);
    const attr = must(create, created, `adding attribute ${q(name)} to ${q(dataset.name)}`).values?.attrs?.[0];
    const { values: computedValues, errors, count } = computed(read, name);
    if (hasFormula && errors.length) {
      /** @type {CodapRequest} */
      const remove = { action: "delete", resource: `${base}.attribute[${attr?.id ?? name}]` };
      const [removed] = await send([remove]);
      const left = removed?.success === true ? "" : ` Removing it failed (${codapError(removed)}): delete it with delete_codap_attribute.`;
      const err = formulaError(/** @type {string} */ (formula), reasonOf(errors), { casesWithErrors: errors.length, cases: count });
      if (left) err.message = err.message.replace("Nothing was changed.", `The attribute was added, then removed.${left}`);
      throw err;
    }
    const facts = attributeFacts(attr, target.name);
    // as CODAP shows them: to the precision asked, else without binary noise (7.199999999999999 is 7.2)
    const places = typeof facts.precision === "number" ? facts.precision : null;
    /** @type {(v: unknown) => unknown} */
    const display = (v) => (typeof v !== "number" ? v : places !== null ? Number(v.toFixed(places)) : Number(v.toPrecision(12)));
    const first = computedValues.slice(0, SHOWN_VALUES).map(display);
    const parent = target !== dataset.collections[dataset.collections.length - 1];
    const named = computed(read, name).of.slice(0, SHOWN_VALUES)
      .map((pairs, i) => `${pairs.map(([k, v]) => `${k} ${typeof v === "string" && v ? v : shown(v)}`).join(", ")}: ${shown(first[i])}`);
    const details = [
      facts.type ? `type ${facts.type}` : null,
      facts.unit ? `unit ${facts.unit}` : null,
      facts.precision !== null && facts.precision !== undefined ? `precision ${facts.precision}` : null,
      facts.description ? `description ${q(facts.description)}` : null,
    ].filter(Boolean);
    let text =
      `Added attribute ${q(facts.name)} to collection ${q(target.name)} of dataset ${q(dataset.name)}` +
      (details.length ? ` (${details.join(", ")})` : "") + ".";
    if (hasFormula) {
      text += count
        ? ` Formula ${q(facts.formula)}; CODAP computed ${plural(count, "value")}` +
          (parent ? `, one per ${target.name} case: ${named.join("; ")}${count > named.length ? "; …" : ""}.` : `, the first: ${first.map(shown).join(", ")}.`)
        : ` Formula ${q(facts.formula)}; the collection has no cases yet, so CODAP computed nothing (only the ` +
          "formula's syntax was checked).";
    } else {
      text += ` Its ${plural(count, "value")} are empty; fill them with update_codap_cases.`;
    }
    return toolResult(text, {
      datasetName: dataset.name,
      attribute: facts,
      caseCount: count,
      ...(hasFormula ? { firstValues: first } : {}),
    });
  }

  /** @param {{datasetName: string, name: string}} args */
  async function delete_codap_attribute(args) {
    const found = await findDataset(args.datasetName);
    const dataset = await readDataset(ctx, found);
    const attr = findAttribute(dataset, args.name);
    if (dataset.attributes.length === 1) {
      throw new ToolError(
        `${q(attr.name)} is the only attribute of dataset ${q(dataset.name)}; CODAP would keep its ` +
          `${plural(attr.collection.caseCount, "case")} with no attribute at all. Add another attribute first, or ` +
          "delete the whole dataset with delete_codap_dataset.",
        "last_attribute",
        { datasetName: dataset.name, attribute: attr.name },
      );
    }
    /** @type {CodapRequest} */
    const remove = { action: "delete", resource: `${collection(dataset.id, attr.collection.id)}.attribute[${attr.id}]` };
    const [removed] = await send([remove]);
    must(remove, removed, `deleting attribute ${q(attr.name)} of ${q(dataset.name)}`);
    const after = await readDataset(ctx, found);
    const gone = after.attributes.some((a) => a.id === attr.id);
    if (gone) throw new ToolError(`CODAP still lists attribute ${q(attr.name)} after deleting it.`, "codap_error");
    const removedCollection = !after.collections.some((c) => c.id === attr.collection.id);
    const escaped = attr.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const mentions = new RegExp(`(^|[^\\w])\`?${escaped}\`?($|[^\\w])`);
    const broken = after.attributes.filter((a) => a.formula && mentions.test(a.formula)).map((a) => a.name);
    const remaining = after.collections.map((c) => ({
      name: c.name,
      caseCount: c.caseCount,
      attributes: c.attributes.map((a) => a.name),
    }));
    let text =
      `Deleted attribute ${q(attr.name)} (collection ${q(attr.collection.name)}) from ${q(dataset.name)}.` +
      (removedCollection ? ` It was the only attribute of collection ${q(attr.collection.name)}, so CODAP removed that collection.` : "") +
      ` Remaining attributes: ${remaining.map((c) => `${c.name}: ${c.attributes.join(", ")}`).join(" > ")}` +
      ` (${plural(remaining[remaining.length - 1].caseCount, "case")}).`;
    if (broken.length) {
      text += ` The formulas of ${broken.map(q).join(", ")} used it and now give errors: change them with update_codap_attribute.`;
    }
    return toolResult(text, {
      datasetName: dataset.name,
      deleted: attributeFacts(attr, attr.collection.name),
      removedCollection: removedCollection ? attr.collection.name : null,
      collections: remaining,
      brokenFormulas: broken,
    });
  }

  return {
    add_codap_attribute,
    ...createAttributeUpdate(ctx),
    delete_codap_attribute,
    ...createDatasetDelete(ctx),
    ...createDatasetImport(ctx),
  };
}
