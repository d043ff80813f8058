// @ts-check
// import_codap_data: CSV text or an https CSV file as a new dataset with a case table (reading and fetching the
// CSV: csv_import.js).

import { nameProblem } from "../names.js";
import { q } from "./attribute_read.js";
import { ToolError, codapError, collection, dataContext, get, invalid, plural, refused, toolResult } from "./context.js";
import { createPlacer, placementText } from "./component_place.js";
import { csvToDataset, fetchCsv, importUrl } from "./csv_import.js";

/**
 * @import {CodapReply, CodapRequest} from "../types.js"
 * @import {CodapAttribute} from "./attribute_read.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext & {fetch?: typeof fetch}} ctx */
export function createDatasetImport(ctx) {
  const { send, must, datasetList } = ctx;
  const placer = createPlacer(ctx);
  /** @type {typeof fetch} */
  const fetchImpl = ctx.fetch ?? ((input, init) => globalThis.fetch(input, init));

  /** @param {{datasetName: string, csv?: string, url?: string, place?: string, relativeTo?: string | number}} args */
  async function import_codap_data(args) {
    const { datasetName, csv, url } = args;
    placer.checkPlace(args);
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
    const tableId = tabled?.success === true ? tabled.values?.id ?? null : null;
    // The new table goes to a free spot, as a table create_codap_table makes does (CODAP may put it over others).
    const { placement, note: placed } = tableId != null ? await placer.placeNew(tableId, args) : { placement: null, note: "" };
    const tableText = tabled?.success === true
      ? ` A case table (id ${tableId}) shows it.${placement ? placementText(placement) : ""}${placed}`
      : ` CODAP did not open a case table: ${codapError(tabled)}.`;
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
        caseTableId: tableId,
        ...(placement ? { placement } : {}),
      },
    );
  }

  return { import_codap_data };
}
