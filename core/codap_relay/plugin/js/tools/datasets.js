// @ts-check
// The datasets: create one, add cases, list them, export one.

import {
  ITEM_ID_KEY,
  MAX_RECORDS,
  flattenItems,
  generateRecords,
  hashText,
  inferAttributes,
  itemIdColumnUpdates,
  itemsForCreate,
  makeRng,
  normaliseRecord,
  toDelimited,
} from "../data.js";
import { nameProblem } from "../names.js";
import {
  MAX_TEXT,
  ToolError,
  collection,
  dataContext,
  datasetLine,
  get,
  invalid,
  plural,
  publicDataset,
  refused,
  toolResult,
  unknownAttribute,
} from "./context.js";
import { idList } from "./case_selection.js";
import { createPlacer, placementText } from "./component_place.js";
import { hiddenCases } from "./tables.js";

/**
 * @import {Cell} from "../data.js"
 * @import {CodapId, CodapRequest, CodapSuccess, JsonObject} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext} ctx */
export function createDatasetTools(ctx) {
  const { send, must, ask, datasetList, findDataset, describeDatasets, describeAll, rng } = ctx;
  const placer = createPlacer(ctx);

  /**
   * The `__id__` column of new items, which CODAP fills with their own ids (see itemsForCreate).
   * @param {CodapId} datasetId
   * @param {CodapId[] | undefined} itemIds
   * @param {Array<Record<string, Cell>>} records
   */
  async function setItemIdColumn(datasetId, itemIds, records) {
    /** @type {CodapRequest & {values: unknown[]}} */
    const update = { action: "update", resource: `${dataContext(datasetId)}.item`, values: itemIdColumnUpdates(itemIds ?? [], records) };
    if (update.values.length) await ask(update, `setting the ${ITEM_ID_KEY} column of the new cases`);
  }

  /**
   * @param {{datasetName: string, dataType: string, recordCount?: number, customData?: JsonObject[], place?: string,
   *   relativeTo?: string | number}} args
   */
  async function create_codap_dataset(args) {
    const { datasetName, dataType, recordCount, customData } = args;
    placer.checkPlace(args);
    const problem = nameProblem("Dataset", datasetName);
    if (problem) throw invalid(problem);
    let rows;
    let attrs;
    let note = "";
    if (dataType === "custom") {
      if (!Array.isArray(customData) || customData.length === 0) {
        throw invalid("dataType 'custom' needs customData: a non-empty array of objects, one per record.");
      }
      if (customData.length > MAX_RECORDS) {
        throw invalid(`customData holds ${customData.length} records; the limit is ${MAX_RECORDS} per call. ` +
          "Create the dataset with the first 1000 and add the rest with add_codap_cases.");
      }
      if (customData.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
        throw invalid("customData must hold objects, one per record, keyed by attribute name.");
      }
      rows = customData.map(normaliseRecord);
      attrs = inferAttributes(rows);
      if (attrs.length === 0) throw invalid("customData records have no fields; give each record at least one.");
      for (const a of attrs) {
        const bad = nameProblem("Attribute", a.name);
        if (bad) throw invalid(bad);
      }
      if (recordCount !== undefined && recordCount !== customData.length) {
        note = ` (all ${customData.length} customData records were used)`;
      }
    } else {
      if (recordCount === undefined) throw invalid(`dataType '${dataType}' generates recordCount rows: give recordCount (1-1000).`);
      const draw = rng ?? makeRng(hashText(JSON.stringify([datasetName, dataType, recordCount])));
      ({ rows, attrs } = generateRecords(dataType, recordCount, draw));
    }
    const list = get("dataContextList");
    const [listed] = await send([list]);
    if (datasetList(must(list, listed)).some((d) => d.name === datasetName)) {
      throw new ToolError(
        `CODAP already has a dataset named ${JSON.stringify(datasetName)}. Use add_codap_cases to add rows to it, ` +
          "or choose another name.",
        "dataset_exists",
        { datasetName },
      );
    }
    // CODAP answers a create for an existing name with that dataset, so the check above comes first.
    /** @type {CodapRequest} */
    const create = {
      action: "create",
      resource: "dataContext",
      values: { name: datasetName, title: datasetName, collections: [{ name: datasetName, attrs }] },
    };
    const [createdReply] = await send([create]);
    const datasetId = must(create, createdReply, `creating dataset ${JSON.stringify(datasetName)}`).values?.id;
    // Rows, table and count in one message: one change in CODAP, one redraw, and the count CODAP holds after it.
    /** @type {CodapRequest} */
    const addRows = { action: "create", resource: `${dataContext(datasetId)}.item`, values: itemsForCreate(rows) };
    /** @type {CodapRequest} */
    const table = { action: "create", resource: "component", values: { type: "caseTable", dataContext: String(datasetId) } };
    const count = get(`${dataContext(datasetId)}.itemCount`);
    const [added, tabled, counted] = await send([addRows, table, count]);
    if (added?.success !== true) {
      const error = refused(addRows, added, `the rows of the new dataset ${JSON.stringify(datasetName)}`);
      error.message += ` The dataset was created empty (id ${datasetId}); add rows with add_codap_cases.`;
      throw error;
    }
    if (attrs.some((a) => a.name === ITEM_ID_KEY)) await setItemIdColumn(datasetId, added.itemIDs, rows);
    const itemCount = must(count, counted).values;
    const attrList = attrs.map((a) => `${a.name} (${a.type})`).join(", ");
    const tableId = tabled?.success === true ? tabled.values?.id : null;
    // The new table goes to a free spot, as a table create_codap_table makes does (CODAP may put it over others).
    const { placement, note: placed } = tableId != null ? await placer.placeNew(tableId, args) : { placement: null, note: "" };
    const tableText = tabled?.success === true
      ? ` A case table (id ${tableId}) shows it.${placement ? placementText(placement) : ""}${placed}`
      : ` CODAP did not open a case table: ${tabled?.values?.error ?? "no reply"}.`;
    return toolResult(
      `Created dataset ${JSON.stringify(datasetName)} in CODAP with ${plural(itemCount, "record")}${note} ` +
        `and ${plural(attrs.length, "attribute")}: ${attrList}.${tableText}`,
      {
        datasetName,
        datasetId,
        dataType,
        recordCount: itemCount,
        attributes: attrs.map((a) => ({ name: a.name, type: a.type })),
        caseTableId: tableId ?? null,
        sample: rows.slice(0, 3),
        ...(placement ? { placement } : {}),
      },
    );
  }

  /** @param {{datasetName: string, cases: JsonObject[]}} args */
  async function add_codap_cases(args) {
    const { datasetName, cases } = args;
    if (!Array.isArray(cases) || cases.length === 0) {
      throw invalid("cases must be a non-empty array of objects, one per case, keyed by attribute name.");
    }
    if (cases.some((c) => c === null || typeof c !== "object" || Array.isArray(c))) {
      throw invalid("cases must hold objects, one per case, keyed by attribute name.");
    }
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    const known = new Set(dataset.attributes);
    const fields = [...new Set(cases.flatMap((c) => Object.keys(c)))];
    const ignored = fields.filter((k) => !known.has(k));
    if (fields.length > 0 && ignored.length === fields.length) {
      throw unknownAttribute(dataset, ignored[0], "the new cases (none of their fields match)");
    }
    // All cases in one request (one change, one redraw in CODAP), the counts read in the same message.
    const records = cases.map(normaliseRecord);
    /** @type {CodapRequest} */
    const addRows = { action: "create", resource: `${dataContext(dataset.id)}.item`, values: itemsForCreate(records) };
    const counts = dataset.collections.map((c) => get(`${collection(dataset.id, c.id)}.caseCount`));
    const [added, ...counted] = await send([addRows, ...counts]);
    const n = must(addRows, added, `adding cases to ${JSON.stringify(dataset.name)}`).itemIDs?.length ?? 0;
    if (known.has(ITEM_ID_KEY)) await setItemIdColumn(dataset.id, /** @type {CodapSuccess} */ (added).itemIDs, records);
    const totals = dataset.collections.map((c, i) => ({
      name: c.name,
      caseCount: must(counts[i], counted[i]).values,
    }));
    const total = totals[totals.length - 1].caseCount;
    const parents = totals.length > 1
      ? ` (${totals.map((t) => `${t.name}: ${t.caseCount}`).join(" > ")})`
      : "";
    const warn = ignored.length
      ? ` Fields not in the dataset were ignored: ${ignored.join(", ")} (add attributes with codap_api first).`
      : "";
    /** @type {CodapId[]} CODAP's ids of the new rows, in the order given */
    const caseIds = /** @type {CodapSuccess} */ (added).itemIDs ?? [];
    return toolResult(
      `Added ${plural(n, "case")} to ${JSON.stringify(dataset.name)}; it now has ${plural(total, "case")}${parents}.` +
        `${warn} The new rows' case ids, in the order given: ${idList(caseIds)}.`,
      {
        datasetName: dataset.name,
        added: n,
        totalCases: total,
        caseIds,
        ...(totals.length > 1 ? { collections: totals } : {}),
        ignoredFields: ignored,
      },
    );
  }

  async function get_codap_datasets() {
    const { datasets } = await describeAll(await ask(get("dataContextList")));
    const text = datasets.length
      ? `CODAP has ${plural(datasets.length, "dataset")}:\n${datasets.map(datasetLine).join("\n")}`
      : "CODAP has no datasets yet. Create one with create_codap_dataset.";
    return toolResult(text, { datasets: datasets.map(publicDataset) });
  }

  /**
   * @param {{datasetName: string, format?: "json" | "csv" | "tsv", includeMetadata?: boolean,
   *   includeCaseIds?: boolean, includeSetAside?: boolean}} args
   */
  async function export_codap_data(args) {
    const format = args.format ?? "json";
    const found = await findDataset(args.datasetName);
    // The attributes and every item in one message, so the columns match the rows they describe.
    const colls = get(`${dataContext(found.id)}.collectionList`);
    const [listReply] = await send([colls]);
    /** @type {Array<{id: CodapId, name: string}>} */
    const collections = must(colls, listReply).values ?? [];
    const attrRequests = collections.map((c) =>
      get(args.includeMetadata ? collection(found.id, c.id) : `${collection(found.id, c.id)}.attributeList`));
    const itemsRequest = get(`${dataContext(found.id)}.itemSearch[*]`);
    // The set-aside cases (and the table's filter formula) come only with the whole dataset's description.
    const hiddenRequest = get(dataContext(found.id));
    const replies = await send([...attrRequests, itemsRequest, hiddenRequest]);
    const described = collections.map((c, i) => {
      const v = must(attrRequests[i], replies[i]).values;
      return { name: c.name, attrs: (args.includeMetadata ? v?.attrs : v) ?? [] };
    });
    /** @type {Array<{id: CodapId, values: Record<string, unknown>}>} */
    const shownItems = must(itemsRequest, replies[replies.length - 2], `reading the rows of ${JSON.stringify(found.name)}`)
      .values ?? [];
    const hidden = hiddenCases(must(hiddenRequest, replies[replies.length - 1]).values);
    const items = args.includeSetAside ? [...shownItems, ...hidden.setAside] : shownItems;
    const { columns, rows } = flattenItems(described, items);
    if (args.includeSetAside) {
      let flag = "set aside";
      while (columns.some((c) => c.name === flag)) flag += "_";
      rows.forEach((row, i) => { row[flag] = i >= shownItems.length; });
      columns.push({ name: flag, collection: "", type: "boolean" });
    }
    const names = columns.map((c) => c.name);
    const metadata = {
      name: found.name,
      title: found.title || found.name,
      collections: described.map((c) => ({ name: c.name, attributes: c.attrs.map((/** @type {{name: string}} */ a) => a.name) })),
      attributes: columns,
      rowCount: rows.length,
    };
    /**
     * @type {{datasetName: string, format: string, rowCount: number, columns: string[], setAside: number,
     *   filterFormula?: string, metadata?: typeof metadata,
     *   caseIds?: CodapId[], rows?: typeof rows, data?: string}}
     */
    const structured = {
      datasetName: found.name,
      format,
      rowCount: rows.length,
      columns: names,
      setAside: hidden.setAside.length,
      ...(hidden.filterFormula ? { filterFormula: hidden.filterFormula } : {}),
    };
    if (args.includeMetadata) structured.metadata = metadata;
    if (args.includeCaseIds) structured.caseIds = items.map((item) => item.id);
    let shown;
    if (format === "json") {
      structured.rows = rows;
      shown = jsonPreview(args.includeMetadata ? { metadata, rows } : rows);
    } else {
      structured.data = toDelimited(names, rows, format === "tsv" ? "\t" : ",");
      shown = structured.data.length > MAX_TEXT
        ? `${structured.data.slice(0, MAX_TEXT)}\n… (truncated here; structuredContent has all)`
        : structured.data;
    }
    const hierarchy = metadata.collections.length > 1
      ? ` The dataset is hierarchical (${metadata.collections.map((c) => c.name).join(" > ")}); each row is one ` +
        "leaf case carrying its parents' values."
      : "";
    const meta = args.includeMetadata
      ? `\nAttributes: ${columns.map((c) => `${c.name} (${c.type || "?"}${c.unit ? `, ${c.unit}` : ""}; ${c.collection})`).join(", ")}`
      : "";
    let ids = "";
    if (args.includeCaseIds) {
      ids = `\nCase ids (item ids), in row order, for caseIds of update_codap_cases, delete_codap_cases, select_codap_cases and evaluate_codap_formula: ${/** @type {CodapId[]} */ (structured.caseIds).join(", ")}`;
      if (ids.length > MAX_TEXT) ids = `${ids.slice(0, MAX_TEXT)} … (truncated here; structuredContent.caseIds has all)`;
    }
    const n = hidden.setAside.length;
    let left = "";
    if (n && args.includeSetAside) {
      left = ` That includes the ${plural(n, "set-aside case")} (the last rows, column ${JSON.stringify(names[names.length - 1])} true).`;
    } else if (n) {
      left = ` ${plural(n, "case")} ${n === 1 ? "is" : "are"} set aside in CODAP and left out, as CODAP's own export leaves them out: ` +
        "includeSetAside true adds them (set_aside_codap_cases with restore true brings them back).";
    }
    if (hidden.filterFormula) {
      left += ` The table's filter formula ${JSON.stringify(hidden.filterFormula)} hides the cases for which it is false; they are not exported.`;
    }
    return toolResult(
      `Exported ${plural(rows.length, "row")} of ${JSON.stringify(found.name)} as ${format.toUpperCase()}.${left}${hierarchy}${meta}\n\n${shown}${ids}`,
      structured,
    );
  }

  return { create_codap_dataset, add_codap_cases, get_codap_datasets, export_codap_data };
}

/**
 * The JSON text shown to the model: indented like JSON.stringify(value, null, 1), cut at MAX_TEXT. Rows are
 * written one at a time so a 10,000-row export does not build megabytes of text to show 60 kB of it.
 * @param {unknown[] | {metadata: unknown, rows: unknown[]}} value
 */
export function jsonPreview(value) {
  const rows = Array.isArray(value) ? value : value.rows;
  const head = Array.isArray(value) ? "[" : `{\n "metadata": ${JSON.stringify(value.metadata, null, 1).replaceAll("\n", "\n ")},\n "rows": [`;
  const indent = Array.isArray(value) ? " " : "  ";
  const tail = Array.isArray(value) ? "\n]" : "\n ]\n}";
  if (rows.length === 0) return Array.isArray(value) ? "[]" : `${head}]\n}`;
  let text = head;
  for (let i = 0; i < rows.length; i++) {
    text += `${i ? "," : ""}\n${indent}${JSON.stringify(rows[i], null, 1).replaceAll("\n", `\n${indent}`)}`;
    if (text.length > MAX_TEXT) {
      return `${text.slice(0, MAX_TEXT)}\n… (truncated here; structuredContent has all ${rows.length} rows)`;
    }
  }
  return text + tail;
}
