// @ts-check
// The cases of a dataset: change values, delete, sort, and group them under a new parent collection.
// Cases are found in a fixed handful of messages: a condition is CODAP's own formula search on the child-most
// collection (caseFormulaSearch), then one message maps the matching cases to their items (itemByCaseID); ids
// are checked in one message (itemByID). Changes go to CODAP as one request each (one change, one Undo).
// The case ids the model sees are CODAP's item ids, the ids export_codap_data gives with includeCaseIds.

import { cellValue } from "../data.js";
import { LISTED_ROWS, caseRowReads, firstCaseReads, rowsText } from "./case_rows.js";
import { createCaseSelection, idList } from "./case_selection.js";
import {
  ToolError,
  collection,
  dataContext,
  get,
  invalid,
  plural,
  refused,
  toolResult,
  unknownAttribute,
} from "./context.js";

/**
 * @import {CodapId, CodapRequest, DescribedAttribute, DescribedDataset, Json} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {CaseSelection} from "./case_selection.js"
 * @import {Cell} from "../data.js"
 */

/** How many groups a grouping's answer lists. */
const MAX_GROUPS_LISTED = 20;

/** @param {unknown} v */
const shownValue = (v) => (typeof v === "string" ? JSON.stringify(v) : String(v));

/** @param {ToolContext} ctx */
export function createCaseTools(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;
  const { select, selectionText } = createCaseSelection(ctx);

  /**
   * The dataset described: collections (parents first) with attributes (ids, formulas) and case counts.
   * @param {string} datasetName
   * @param {boolean} [types]
   */
  async function describe(datasetName, types = false) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types });
    return { found, dataset };
  }

  /**
   * {attr, index} of an attribute by exact name (index: its collection's place, 0 = top), or null.
   * @param {DescribedDataset} dataset
   * @param {string} name
   * @returns {{attr: DescribedAttribute, index: number} | null}
   */
  function locate(dataset, name) {
    for (const [index, c] of dataset.collections.entries()) {
      const attr = c.attributes.find((a) => a.name === name);
      if (attr) return { attr, index };
    }
    return null;
  }

  /**
   * @param {DescribedDataset} dataset
   * @param {string} name
   * @param {string} role what the attribute is for
   */
  function located(dataset, name, role) {
    const at = locate(dataset, name);
    if (!at) throw unknownAttribute(dataset, name, role);
    return at;
  }

  /**
   * The checked values of one update: names that exist and hold no formula, as CODAP cells.
   * @param {DescribedDataset} dataset
   * @param {Record<string, Json> | undefined} given
   */
  function cellsOf(dataset, given) {
    const names = Object.keys(given ?? {});
    if (names.length === 0) throw invalid("values is empty: give the new values by attribute name.");
    for (const name of names) {
      const { attr } = located(dataset, name, "values");
      if (attr.formula) {
        throw new ToolError(
          `Attribute ${JSON.stringify(name)} of ${JSON.stringify(dataset.name)} is computed by the formula ` +
            `${JSON.stringify(attr.formula)}; its values cannot be set. Change the formula instead.`,
          "attribute_has_formula",
          { datasetName: dataset.name, attribute: name, formula: attr.formula },
        );
      }
    }
    return Object.fromEntries(names.map((n) => [n, cellValue(/** @type {Record<string, Json>} */ (given)[n])]));
  }

  /**
   * @param {CaseSelection & {values?: Record<string, Json>,
   *   updates?: Array<Omit<CaseSelection, "datasetName"> & {values: Record<string, Json>}>}} args
   */
  async function update_codap_cases(args) {
    const listed = args.updates !== undefined;
    const single = /** @type {const} */ (["values", "where", "caseIds", "selection"]).filter((k) => args[k] !== undefined);
    if (listed && single.length) {
      throw invalid(`Give updates alone (each with its where, caseIds or selection, and values), or values with ` +
        `where, caseIds or selection, not both (got updates and ${single.join(", ")}).`);
    }
    if (!listed && args.values === undefined) {
      throw invalid("Give values (with where, caseIds or selection), or updates: a list of {where or caseIds, values}.");
    }
    const { dataset } = await describe(args.datasetName, true);
    const asked = args.updates ??
      [{ where: args.where, caseIds: args.caseIds, selection: args.selection, values: args.values ?? {} }];
    /** @type {Array<{ask: CaseSelection, values: Record<string, Cell>, items: Array<{id: CodapId, values: Record<string, unknown>}>}>} */
    const updates = [];
    for (const [i, u] of asked.entries()) {
      /** @type {CaseSelection} */
      const ask = { datasetName: dataset.name, ...(u.where === undefined ? {} : { where: u.where }),
        ...(u.caseIds === undefined ? {} : { caseIds: u.caseIds }),
        ...(u.selection === undefined ? {} : { selection: u.selection }) };
      try {
        const values = cellsOf(dataset, u.values);
        updates.push({ ask, values, items: await select(dataset, ask) });
      } catch (e) {
        if (listed && e instanceof ToolError) {
          e.message = `Update ${i + 1} of ${asked.length} (${selectionText(ask)}): ${e.message} Nothing was changed.`;
          e.data = { ...e.data, update: i };
        }
        throw e;
      }
    }
    // One request for every update (one change in CODAP, one step of its Undo): each row gets the values of
    // every update that selects it, the later update's where two set the same attribute.
    /** @type {Map<CodapId, Record<string, Cell>>} */
    const merged = new Map();
    /** @type {Set<CodapId>} */
    const overlap = new Set();
    for (const u of updates) {
      for (const item of u.items) {
        if (merged.has(item.id)) overlap.add(item.id);
        merged.set(item.id, { ...merged.get(item.id), ...u.values });
      }
    }
    /** @type {CodapRequest} */
    const change = {
      action: "update",
      resource: `${dataContext(dataset.id)}.item`,
      values: [...merged].map(([id, values]) => ({ id, values })),
    };
    const [reply] = await send([change]);
    /** @type {CodapId[]} */
    const changed = must(change, reply, `changing cases of ${JSON.stringify(dataset.name)}`).values?.changedCases ?? [];
    const per = updates.map((u) => ({
      ...(u.ask.where === undefined ? {} : { where: u.ask.where }),
      ...(u.ask.selection === undefined ? {} : { selection: u.ask.selection }),
      values: u.values,
      changed: u.items.length,
      caseIds: u.items.map((item) => item.id),
      // What the cells held before, for the first rows (what changed, and how to put it back).
      before: u.items.slice(0, LISTED_ROWS).map((item) => ({
        caseId: item.id,
        values: Object.fromEntries(Object.keys(u.values).map((n) => [n, item.values?.[n] ?? ""])),
      })),
    }));
    /** @param {typeof per[number]} u */
    const was = (u) => u.before.map((b) => `${b.caseId}: ${Object.entries(b.values).map(([n, v]) => `${n} ${shownValue(v)}`)
      .join(", ")}`).join("; ") + (u.changed > u.before.length ? `; … ${u.changed - u.before.length} more` : "");
    /** @param {Record<string, Cell>} values */
    const setText = (values) => Object.entries(values).map(([n, v]) => `${n} = ${shownValue(v)}`).join(", ");
    const attributes = [...new Set(updates.flatMap((u) => Object.keys(u.values)))];
    if (!listed) {
      const [u] = per;
      return toolResult(
        `Changed ${plural(changed.length, "case")} of ${JSON.stringify(dataset.name)} ${selectionText(args)}: ` +
          `set ${setText(u.values)}. Case ids: ${idList(changed)}.\nBefore (case id: values): ${was(u)}.`,
        { datasetName: dataset.name, changed: changed.length, attributes, values: u.values, caseIds: changed, before: u.before },
      );
    }
    const lines = per.map((u, i) => `${i + 1}. ${selectionText(updates[i].ask)}: set ${setText(u.values)} in ` +
      `${plural(u.changed, "case")} (before: ${was(u)})`);
    let text = `Changed ${plural(changed.length, "case")} of ${JSON.stringify(dataset.name)} in ` +
      `${plural(updates.length, "update")}, as one change (one step of CODAP's Undo):\n${lines.join("\n")}`;
    if (overlap.size) {
      text += `\n${plural(overlap.size, "case")} (${idList([...overlap])}) ${overlap.size === 1 ? "is" : "are"} in more ` +
        "than one update: each got every update's values, the later update's where two set the same attribute.";
    }
    return toolResult(text, {
      datasetName: dataset.name,
      changed: changed.length,
      attributes,
      caseIds: changed,
      updates: per,
    });
  }

  /** @param {CaseSelection} args */
  async function delete_codap_cases(args) {
    const { dataset } = await describe(args.datasetName);
    const items = await select(dataset, args);
    /** @type {CodapRequest} */
    const removal = {
      action: "delete",
      resource: `${dataContext(dataset.id)}.item`,
      values: items.map((item) => ({ id: item.id })),
    };
    const counts = dataset.collections.map((c) => get(`${collection(dataset.id, c.id)}.caseCount`));
    const [reply, ...counted] = await send([removal, ...counts]);
    /** @type {CodapId[]} */
    const deleted = must(removal, reply, `deleting cases of ${JSON.stringify(dataset.name)}`).values ?? [];
    /** @type {Array<{name: string, caseCount: number}>} */
    const collections = dataset.collections.map((c, i) => ({ name: c.name, caseCount: must(counts[i], counted[i]).values }));
    const remaining = collections[collections.length - 1].caseCount;
    const parents = collections.length > 1
      ? ` (${collections.map((c) => `${c.name}: ${c.caseCount}`).join(" > ")})`
      : "";
    // What was deleted, as it was: the first rows' values (read before the deletion).
    const gone = items.slice(0, LISTED_ROWS).map((item) => ({ caseId: item.id, values: item.values ?? {} }));
    return toolResult(
      `Deleted ${plural(deleted.length, "case")} of ${JSON.stringify(dataset.name)} ${selectionText(args)}; ` +
        `${plural(remaining, "case")} remain${remaining === 1 ? "s" : ""}${parents}. Deleted ids: ${idList(deleted)}. ` +
        "undo_codap_tool_calls brings them back." + rowsText("The rows deleted", gone, items.length),
      {
        datasetName: dataset.name,
        deleted: deleted.length,
        remaining,
        caseIds: deleted,
        cases: gone,
        ...(collections.length > 1 ? { collections } : {}),
      },
    );
  }

  /** @param {{datasetName: string, attribute: string, descending?: boolean, maxCases?: number}} args */
  async function sort_codap_cases(args) {
    const { dataset } = await describe(args.datasetName);
    const { attr, index } = located(dataset, args.attribute, "sorting");
    const descending = args.descending === true;
    const sorted = dataset.collections[index];
    // CODAP's case table sort, over the plugin API: update dataContext with {sort: {attr, isDescending}}
    // (v3 data-context-handler.ts; DataSet.sortByAttribute). The first cases of the attribute's collection are
    // read in the same message, after the sort, then as rows (their items: ids and every value) in a second one.
    /** @type {CodapRequest} */
    const sort = {
      action: "update",
      resource: dataContext(dataset.id),
      values: { sort: { attr: attr.id, isDescending: descending } },
    };
    const firsts = firstCaseReads(dataset, sorted, args.maxCases ?? LISTED_ROWS);
    const [reply, ...read] = await send([sort, ...firsts.requests]);
    must(sort, reply, `sorting ${JSON.stringify(dataset.name)} by ${JSON.stringify(attr.name)}`);
    const firstCases = firsts.cases(read);
    const reads = caseRowReads(dataset, sorted, firstCases.map((c) => c.id));
    const rows = (reads.requests.length ? reads.rows(await send(reads.requests)) : []).flatMap((r) => (r ? [r] : []));
    const first = rows.map((r) => r.values[attr.name]);
    const scope = index < dataset.collections.length - 1
      ? ` The ${sorted.name} cases (a parent collection) are in the new order, their child cases with them.`
      : index > 0
        ? ` The cases are sorted within each ${dataset.collections[index - 1].name} case (parents keep their order).`
        : "";
    return toolResult(
      `Sorted ${JSON.stringify(dataset.name)} by ${attr.name}, ${descending ? "descending" : "ascending"}.${scope} ` +
        `First ${attr.name} values now: ${first.map(shownValue).join(", ") || "(no cases)"}.` +
        rowsText(`The first ${rows[0]?.caseId === undefined ? `${sorted.name} cases` : "rows"} in the new order`, rows,
          sorted.caseCount ?? rows.length),
      {
        datasetName: dataset.name,
        attribute: attr.name,
        descending,
        collection: sorted.name,
        firstValues: first,
        cases: rows,
        caseCount: sorted.caseCount,
      },
    );
  }

  /**
   * A `parent` for a new collection that names no collection: CODAP then puts the new one at the top.
   * @param {DescribedDataset} dataset
   */
  function noCollection(dataset) {
    let name = "root";
    while (dataset.collections.some((c) => c.name === name || String(c.id) === name)) name += "_";
    return name;
  }

  /** @param {{datasetName: string, attributes: string[], ungroup?: boolean, collectionName?: string}} args */
  async function group_codap_cases(args) {
    const { found, dataset } = await describe(args.datasetName);
    const ungroup = args.ungroup === true;
    const names = [...new Set(args.attributes)];
    const places = names.map((n) => located(dataset, n, ungroup ? "ungrouping" : "grouping"));
    const colls = dataset.collections;
    /** @type {Array<{attr: DescribedAttribute, values: {collection: CodapId, position?: number}}>} */
    let moves;
    /** @type {{id: CodapId, name: string} | null} */
    let newCollection = null;
    if (ungroup) {
      const leaf = colls.length - 1;
      const flat = places.filter((p) => p.index === leaf).map((p) => p.attr.name);
      if (flat.length) {
        const grouping = colls.slice(0, -1).flatMap((c) => c.attributes.map((a) => a.name));
        throw new ToolError(
          `${flat.map((n) => JSON.stringify(n)).join(", ")} ${flat.length === 1 ? "is" : "are"} in the child-most ` +
            `collection ${JSON.stringify(colls[leaf].name)}, not grouped. ` +
            (grouping.length
              ? `Grouping attributes (in parent collections): ${grouping.join(", ")}.`
              : `${JSON.stringify(dataset.name)} is not grouped: it has one collection.`),
          "not_grouped",
          { datasetName: dataset.name, attributes: flat, available: grouping },
        );
      }
      /** @type {Map<CodapId, number>} */
      const position = new Map();
      moves = places.map(({ attr, index }) => {
        const target = colls[index + 1];
        const at = position.get(target.id) ?? 0;
        position.set(target.id, at + 1);
        return { attr, values: { collection: target.id, position: at } };
      });
    } else {
      const sources = [...new Set(places.map((p) => p.index))];
      if (sources.length > 1) {
        throw invalid(
          `Group by attributes of one collection at a time: ${places.map((p) => `${p.attr.name} (${colls[p.index].name})`).join(", ")}.`,
        );
      }
      const source = colls[sources[0]];
      if (names.length >= source.attributes.length) {
        throw new ToolError(
          `Grouping by every attribute of collection ${JSON.stringify(source.name)} (${source.attributes.map((a) => a.name).join(", ")}) ` +
            "would leave it empty, and CODAP would remove it. Keep at least one attribute in it.",
          "invalid_arguments",
          { datasetName: dataset.name, collection: source.name, attributes: source.attributes.map((a) => a.name) },
        );
      }
      const name = args.collectionName?.trim() || `${names.join(" & ")} groups`;
      if (colls.some((c) => c.name === name)) {
        throw new ToolError(
          `${JSON.stringify(dataset.name)} already has a collection named ${JSON.stringify(name)}. Give another ` +
            `collectionName. Its collections: ${colls.map((c) => c.name).join(", ")}.`,
          "collection_exists",
          { datasetName: dataset.name, collectionName: name, available: colls.map((c) => c.name) },
        );
      }
      // A new collection is placed under the one given as `parent`: the one above the source, or at the top
      // (v3 collection-handler.ts create).
      const above = colls[sources[0] - 1];
      /** @type {CodapRequest} */
      const create = {
        action: "create",
        resource: `${dataContext(dataset.id)}.collection`,
        values: { name, title: name, parent: above ? String(above.id) : noCollection(dataset) },
      };
      const [made] = await send([create]);
      const newId = must(create, made, `creating collection ${JSON.stringify(name)}`).values?.[0]?.id;
      newCollection = { id: newId, name };
      moves = places.map(({ attr }) => ({ attr, values: { collection: newId } }));
    }
    /** @type {CodapRequest[]} */
    const requests = moves.map(({ attr, values }) => ({
      action: "update",
      resource: `${dataContext(dataset.id)}.attributeLocation[${attr.id}]`,
      values,
    }));
    const replies = await send(requests);
    const failed = replies.findIndex((r) => r?.success !== true);
    if (failed >= 0) {
      const error = refused(requests[failed], replies[failed], `moving attribute ${JSON.stringify(moves[failed].attr.name)}`);
      if (newCollection && failed === 0) {
        await send([{ action: "delete", resource: collection(dataset.id, newCollection.id) }]);
      }
      throw error;
    }
    const { datasets: [after] } = await describeDatasets([found], { types: false });
    const collections = after.collections.map((c) => ({
      name: c.name,
      caseCount: c.caseCount,
      attributes: c.attributes.map((a) => a.name),
    }));
    // The groups made: the new collection's first cases, each with how many cases it holds below.
    const made = newCollection ? after.collections.find((c) => c.name === /** @type {{name: string}} */ (newCollection).name) : null;
    const firsts = made ? firstCaseReads(after, made, MAX_GROUPS_LISTED) : null;
    const groups = firsts && firsts.requests.length
      ? firsts.cases(await send(firsts.requests)).map((c) => ({ values: c.values ?? {}, cases: c.children?.length ?? 0 }))
      : [];
    const layout = collections.map((c) => `${c.name} (${plural(c.caseCount, "case")}: ${c.attributes.join(", ")})`).join(" > ");
    const what = ungroup
      ? `Moved ${names.join(", ")} of ${JSON.stringify(dataset.name)} back down`
      : `Grouped ${JSON.stringify(dataset.name)} by ${names.join(", ")} in the new parent collection ${JSON.stringify(/** @type {{name: string}} */ (newCollection).name)}`;
    let groupText = "";
    if (made && groups.length) {
      const below = after.collections[after.collections.indexOf(made) + 1]?.name ?? "child";
      groupText = `\nThe ${plural(made.caseCount, "group")} and how many ${below} cases each holds: ` +
        groups.map((g) => `${Object.entries(g.values).map(([k, v]) => `${k} ${typeof v === "string" && v.trim() ? v : shownValue(v)}`).join(", ")}: ` +
          plural(g.cases, "case")).join("; ") +
        (made.caseCount > groups.length ? `, … ${made.caseCount - groups.length} more.` : ".");
    }
    return toolResult(`${what}. Collections now: ${layout}.${groupText}`, {
      datasetName: dataset.name,
      ungroup,
      attributes: names,
      ...(newCollection ? { newCollection: newCollection.name, groups } : {}),
      collections,
    });
  }

  return { update_codap_cases, delete_codap_cases, sort_codap_cases, group_codap_cases };
}
