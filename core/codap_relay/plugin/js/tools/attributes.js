// @ts-check
// The attributes and whole datasets: add, change and delete an attribute (formulas checked in CODAP first),
// delete a dataset, import CSV text or an https CSV file as a new dataset (reading and fetching it: csv_import.js).

import { nameProblem } from "../names.js";
import { csvToDataset, fetchCsv, importUrl } from "./csv_import.js";
import {
  ToolError,
  codapError,
  collection,
  dataContext,
  get,
  invalid,
  plural,
  refused,
  toolResult,
} from "./context.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DatasetRef} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * An attribute as CODAP describes it (`get …collection[C]`'s attrs).
 * @typedef {object} CodapAttribute
 * @property {CodapId} id
 * @property {string} name
 * @property {string} [title]
 * @property {string} [type]
 * @property {string} [formula]
 * @property {string} [unit]
 * @property {string} [description]
 * @property {number | string | null} [precision]
 * @property {boolean} [hidden]
 */

/** A collection as readDataset reads it. @typedef {{id: CodapId, name: string, title: string, caseCount: number, attributes: CodapAttribute[]}} ReadCollection */

/**
 * A dataset as readDataset reads it: its collections, every attribute with its collection, and the replies to the
 * requests that rode along.
 * @typedef {DatasetRef & {collections: ReadCollection[], attributes: Array<CodapAttribute & {collection: ReadCollection}>,
 *   extra: CodapReply[]}} ReadDataset
 */

/**
 * An attribute in an answer: CODAP's own fields (null where it has none) and its collection's name.
 * @typedef {object} AttributeFacts
 * @property {string} collection
 * @property {string} name
 * @property {string | null} type
 * @property {string | null} formula
 * @property {string | null} unit
 * @property {string | null} description
 * @property {number | string | null} precision
 * @property {boolean} hidden
 */

/** How many computed values an answer shows. */
const SHOWN_VALUES = 5;
/** CODAP writes a formula's error as the value of each case it fails for: "❌ Undefined symbol foo". */
const FORMULA_ERROR_MARK = "❌";

/** @param {unknown} v */
const q = (v) => JSON.stringify(v);

/** A value as a sentence shows it: numbers bare, text quoted, empty as (empty). */
/** @param {unknown} v */
const shown = (v) => (v === "" || v === null || v === undefined ? "(empty)" : typeof v === "string" ? q(v) : String(v));

/** What an attribute looks like in an answer and in structured data (CODAP's own fields). */
const ATTRIBUTE_FIELDS = ["name", "type", "formula", "unit", "description", "precision", "hidden"];
/**
 * @param {Partial<CodapAttribute> | null | undefined} a
 * @param {string} collectionName
 * @returns {AttributeFacts}
 */
function attributeFacts(a, collectionName) {
  const out = /** @type {AttributeFacts} */ ({ collection: collectionName });
  for (const f of ATTRIBUTE_FIELDS) /** @type {Record<string, unknown>} */ (out)[f] = /** @type {Record<string, unknown> | null | undefined} */ (a)?.[f] ?? (f === "hidden" ? false : f === "name" ? "" : null);
  if (out.type === "") out.type = null;
  return out;
}

/** @param {ToolContext & {fetch?: typeof fetch}} ctx */
export function createAttributeTools(ctx) {
  const { send, must, findDataset, datasetList } = ctx;
  /** @type {typeof fetch} */
  const fetchImpl = ctx.fetch ?? ((input, init) => globalThis.fetch(input, init));

  /**
   * A dataset's collections with their attributes as CODAP describes them (type, formula, unit, precision,
   * hidden…) and case counts: two messages. `extra` requests ride along in the first.
   * @param {DatasetRef} found
   * @param {CodapRequest[]} [extra]
   * @returns {Promise<ReadDataset>}
   */
  async function readDataset(found, extra = []) {
    const listRequest = get(`${dataContext(found.id)}.collectionList`);
    const [listed, ...extraReplies] = await send([listRequest, ...extra]);
    /** @type {Array<{id: CodapId, name: string, title?: string}>} */
    const colls = must(listRequest, listed).values ?? [];
    const requests = colls.flatMap((c) => [get(collection(found.id, c.id)), get(`${collection(found.id, c.id)}.caseCount`)]);
    const replies = await send(requests);
    /** @type {ReadCollection[]} */
    const collections = colls.map((c, i) => ({
      id: c.id,
      name: c.name,
      title: c.title || c.name,
      caseCount: must(requests[2 * i + 1], replies[2 * i + 1]).values,
      attributes: must(requests[2 * i], replies[2 * i]).values?.attrs ?? [],
    }));
    return {
      ...found,
      collections,
      attributes: collections.flatMap((c) => c.attributes.map((a) => ({ ...a, collection: c }))),
      extra: extraReplies,
    };
  }

  /**
   * @param {ReadDataset} dataset
   * @param {string} name
   */
  function findAttribute(dataset, name) {
    const exact = dataset.attributes.filter((a) => a.name === name);
    if (exact.length) return exact[0];
    const names = dataset.attributes.map((a) => a.name);
    const near = dataset.attributes.filter((a) => a.name.toLowerCase() === String(name).toLowerCase() || a.title === name);
    throw new ToolError(
      `Dataset ${q(dataset.name)} has no attribute ${q(name)}.` +
        (near.length ? ` Did you mean ${near.map((a) => q(a.name)).join(" or ")}?` : "") +
        ` Its attributes: ${names.join(", ") || "(none)"}.`,
      "attribute_not_found",
      { datasetName: dataset.name, attribute: name, available: names },
    );
  }

  /**
   * @param {ReadDataset} dataset
   * @param {string | undefined} wanted
   */
  function pickCollection(dataset, wanted) {
    const colls = dataset.collections;
    if (wanted === undefined || wanted === null || wanted === "") return colls[colls.length - 1];
    const lower = String(wanted).toLowerCase();
    const match =
      colls.find((c) => c.name === wanted) ??
      colls.find((c) => c.title === wanted) ??
      colls.find((c) => c.name.toLowerCase() === lower || c.title.toLowerCase() === lower);
    if (match) return match;
    const names = colls.map((c) => c.name);
    throw new ToolError(
      `Dataset ${q(dataset.name)} has no collection ${q(wanted)}. Its collections, parent first: ${names.join(" > ")}. ` +
        "Leave collection out to use the child-most one.",
      "collection_not_found",
      { datasetName: dataset.name, collection: wanted, available: names },
    );
  }

  /**
   * @param {ReadDataset} dataset
   * @param {string} name
   * @param {"add" | "rename"} what
   */
  function nameInUse(dataset, name, what) {
    const clash = dataset.attributes.find((a) => a.name === name);
    if (!clash) return;
    throw new ToolError(
      `Dataset ${q(dataset.name)} already has an attribute ${q(name)} (in collection ${q(clash.collection.name)}). ` +
        (what === "add"
          ? "Change it with update_codap_attribute, or choose another name."
          : "Choose another name, or delete that attribute first with delete_codap_attribute."),
      "attribute_exists",
      { datasetName: dataset.name, attribute: name, collection: clash.collection.name },
    );
  }

  /** CODAP's own check of a formula's syntax (formulaEngine evalExpression compiles it): its reason, or null. */
  /** @type {(formula: string) => CodapRequest} */
  const syntaxCheck = (formula) => ({
    action: "notify",
    resource: "formulaEngine",
    values: { request: "evalExpression", source: formula, records: [] },
  });

  /**
   * @param {string} formula
   * @param {string} reason
   * @param {Record<string, unknown>} [data]
   */
  function formulaError(formula, reason, data = {}) {
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
  function computed(reply, name) {
    /** @type {Array<{case?: {values?: Record<string, unknown>}}>} */
    const cases = reply?.success === true ? reply.values?.cases ?? [] : [];
    const values = cases.map((c) => c.case?.values?.[name]);
    const errors = /** @type {string[]} */ (values.filter((v) => typeof v === "string" && v.startsWith(FORMULA_ERROR_MARK)));
    // each value's case, named by its other values (a parent case: "grade 10")
    const of = cases.map((c) => Object.entries(c.case?.values ?? {}).filter(([k]) => k !== name).slice(0, 2));
    return { values, errors, count: values.length, of };
  }

  /** @param {string[]} errors */
  const reasonOf = (errors) => errors[0].slice(FORMULA_ERROR_MARK.length).trim();

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
    const dataset = await readDataset(found, hasFormula ? [syntaxCheck(formula)] : []);
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

  /**
   * What the attribute menu's Edit Attribute Properties (editable) and dragging a column (its place, its
   * collection) change, read back from CODAP: {field: {before, after}} for each that changed.
   * CODAP 3.1.0 reads `editable` the wrong way round (it stores the value sent as "protected"), so the value that
   * gives the wanted one is sent, and checked. A move is CODAP's attributeLocation, as the group tool uses.
   * @param {Awaited<ReturnType<typeof readDataset>>} dataset
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
    const dataset = await readDataset(found, newFormula ? [syntaxCheck(formula)] : []);
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

  /** @param {{datasetName: string, name: string}} args */
  async function delete_codap_attribute(args) {
    const found = await findDataset(args.datasetName);
    const dataset = await readDataset(found);
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
    const after = await readDataset(found);
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

  /** @param {{datasetName: string}} args */
  async function delete_codap_dataset(args) {
    const found = await findDataset(args.datasetName);
    const dataset = await readDataset(found, [get("componentList")]);
    /** @type {Array<{id: CodapId, type: string, title?: string, name?: string}>} */
    const componentsBefore = dataset.extra[0]?.success === true ? dataset.extra[0].values ?? [] : [];
    /** @type {CodapRequest} */
    const remove = { action: "delete", resource: dataContext(dataset.id) };
    const list = get("dataContextList");
    const comps = get("componentList");
    const [removed, listed, compReply] = await send([remove, list, comps]);
    must(remove, removed, `deleting dataset ${q(dataset.name)}`);
    const remaining = datasetList(must(list, listed));
    if (remaining.some((d) => d.id === dataset.id)) {
      throw new ToolError(`CODAP still lists dataset ${q(dataset.name)} after deleting it.`, "codap_error");
    }
    /** @type {Array<{id: CodapId}>} */
    const componentsAfter = compReply?.success === true ? compReply.values ?? [] : componentsBefore;
    const closed = componentsBefore
      .filter((c) => !componentsAfter.some((a) => a.id === c.id))
      .map((c) => ({ id: c.id, type: c.type, title: c.title || c.name || "" }));
    const cases = dataset.collections.length ? dataset.collections[dataset.collections.length - 1].caseCount : 0;
    const attrNames = dataset.attributes.map((a) => a.name);
    const hierarchy = dataset.collections.length > 1
      ? ` in ${plural(dataset.collections.length, "collection")} (${dataset.collections.map((c) => `${c.name} ${c.caseCount}`).join(" > ")})`
      : "";
    const text =
      `Deleted dataset ${q(dataset.name)}: ${plural(cases, "case")}${hierarchy} and ${plural(attrNames.length, "attribute")} ` +
      `(${attrNames.join(", ") || "none"}).` +
      (closed.length ? ` CODAP closed ${plural(closed.length, "component")} showing it (${closed.map((c) => c.type).join(", ")}).` : "") +
      (remaining.length
        ? ` Datasets remaining: ${remaining.map((d) => d.name).join(", ")}.`
        : " CODAP has no datasets now.");
    return toolResult(text, {
      datasetName: dataset.name,
      removed: {
        cases,
        attributes: attrNames,
        collections: dataset.collections.map((c) => ({ name: c.name, caseCount: c.caseCount })),
      },
      closedComponents: closed,
      remainingDatasets: remaining.map((d) => d.name),
    });
  }

  /** @param {{datasetName: string, csv?: string, url?: string}} args */
  async function import_codap_data(args) {
    const { datasetName, csv, url } = args;
    const problem = nameProblem("Dataset", datasetName);
    if (problem) throw invalid(problem);
    if ((csv === undefined) === (url === undefined)) {
      throw invalid("Give exactly one of csv (the CSV text) or url (an https:// address of a CSV file).");
    }
    const address = url !== undefined ? importUrl(url) : null;
    const list = get("dataContextList");
    const [listed] = await send([list]);
    if (datasetList(must(list, listed)).some((d) => d.name === datasetName)) {
      throw new ToolError(
        `CODAP already has a dataset named ${q(datasetName)}. Choose another name, or delete that one first with ` +
          "delete_codap_dataset.",
        "dataset_exists",
        { datasetName },
      );
    }
    const text = address ? await fetchCsv(address, fetchImpl) : /** @type {string} */ (csv);
    const { columns, rows } = csvToDataset(text);
    // CODAP answers a create for an existing name with that dataset, so the check above comes first.
    /** @type {CodapRequest} */
    const create = {
      action: "create",
      resource: "dataContext",
      values: { name: datasetName, title: datasetName, collections: [{ name: datasetName, attrs: columns }] },
    };
    const [createdReply] = await send([create]);
    const datasetId = must(create, createdReply, `creating dataset ${q(datasetName)}`).values?.id;
    const colls = get(`${dataContext(datasetId)}.collectionList`);
    /** @type {CodapRequest} */
    const addRows = { action: "create", resource: `${dataContext(datasetId)}.item`, values: rows };
    /** @type {CodapRequest} */
    const table = { action: "create", resource: "component", values: { type: "caseTable", dataContext: String(datasetId) } };
    const count = get(`${dataContext(datasetId)}.itemCount`);
    // Rows, table and count in one message: one change in CODAP, and the count CODAP holds after it.
    const replies = await send([colls, ...(rows.length ? [addRows] : []), table, count]);
    const collReply = replies[0];
    /** @type {CodapReply} */
    const added = rows.length ? replies[1] : { success: true };
    const [tabled, counted] = replies.slice(-2);
    if (added?.success !== true) {
      const error = refused(addRows, added, `the rows of the new dataset ${q(datasetName)}`);
      error.message += ` The dataset was created empty; delete it with delete_codap_dataset and try again.`;
      throw error;
    }
    const itemCount = must(count, counted).values;
    const collId = (must(colls, collReply).values ?? [])[0]?.id;
    const described = collId !== undefined ? await send([get(collection(datasetId, collId))]) : [];
    /** @type {CodapAttribute[]} */
    const attrs = described[0]?.success === true ? described[0].values?.attrs ?? [] : [];
    const types = columns.map((c) => ({ name: c.name, type: attrs.find((a) => a.name === c.name)?.type || "" }));
    const source = address ? `from ${address.host} (${address.href})` : "from CSV text";
    const tableText = tabled?.success === true ? " A case table shows it." : ` CODAP did not open a case table: ${codapError(tabled)}.`;
    return toolResult(
      `Imported ${plural(itemCount, "row")} ${source} into new dataset ${q(datasetName)} with ` +
        `${plural(types.length, "attribute")}: ${types.map((t) => `${t.name}${t.type ? ` (${t.type})` : ""}`).join(", ")}.` +
        tableText,
      {
        datasetName,
        source: address ? { url: address.href, host: address.host } : "csv",
        rowCount: itemCount,
        attributes: types,
        sample: rows.slice(0, 3),
        caseTableId: tabled?.success === true ? tabled.values?.id ?? null : null,
      },
    );
  }

  return {
    add_codap_attribute,
    update_codap_attribute,
    delete_codap_attribute,
    delete_codap_dataset,
    import_codap_data,
  };
}
