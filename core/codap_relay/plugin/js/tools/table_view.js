// @ts-check
// How a dataset's case table or card shows it, as the table's title bar and its eye (View) and Resize menus set
// it: table or card, which attributes are hidden, the index column, the columns' widths. Read back from CODAP.
//
// A dataset has at most one table and one card, one of them shown: asking CODAP for the other (create component
// caseCard or caseTable) switches them, as the title bar's switch does. The index column is the table's
// isIndexHidden; "resize all columns" is notify autoScale on the table, whose widths only CODAP's whole document
// holds (componentStorage.attributeWidths).

import { readDocument, rebuildComponent } from "./codap_document.js";
import { ToolError, collection, get, invalid, toolResult } from "./context.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext} ctx */
export function createTableViewTools(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;

  /**
   * Every attribute of the dataset with whether it is hidden, and its table and card (ids, shown or hidden).
   * @param {import("../types.js").DatasetRef} found
   */
  async function view(found) {
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    const reads = dataset.collections.map((c) => get(collection(dataset.id, c.id)));
    const list = get("componentList");
    const replies = await send([...reads, list]);
    const attrs = dataset.collections.flatMap((c, i) =>
      (must(reads[i], replies[i]).values?.attrs ?? []).map((/** @type {any} */ a) => ({ id: a.id, name: String(a.name), hidden: a.hidden === true, collection: c.id })));
    /** @type {Array<{id: CodapId, type: string, hidden?: boolean}>} */
    const listed = must(list, replies[replies.length - 1]).values ?? [];
    const tiles = listed.filter((c) => c.type === "caseTable" || c.type === "caseCard");
    const details = tiles.length ? await send(tiles.map((c) => get(`component[${c.id}]`))) : [];
    const mine = tiles
      .map((c, i) => ({ ...c, detail: details[i]?.success === true ? details[i].values ?? {} : {} }))
      .filter((c) => c.detail.dataContext === dataset.name);
    const table = mine.find((c) => c.type === "caseTable") ?? null;
    const card = mine.find((c) => c.type === "caseCard") ?? null;
    const shown = [table, card].find((c) => c && !c.hidden) ?? null;
    return { dataset, attrs, table, card, shown };
  }

  /**
   * @param {{datasetName: string, view?: "table" | "card", hideAttributes?: string[], showAttributes?: string[],
   *   showAllAttributes?: boolean, indexColumn?: boolean, fitColumns?: boolean, collapsed?: boolean}} args
   */
  async function update_codap_table(args) {
    const hide = [...new Set(args.hideAttributes ?? [])];
    const show = [...new Set(args.showAttributes ?? [])];
    const asked = args.view !== undefined || hide.length || show.length || args.showAllAttributes === true ||
      args.indexColumn !== undefined || args.fitColumns === true || args.collapsed !== undefined;
    if (!asked) {
      throw invalid("Say what to change: view, hideAttributes, showAttributes, showAllAttributes, indexColumn, fitColumns or collapsed.");
    }
    const both = hide.filter((n) => show.includes(n));
    if (both.length) throw invalid(`${both.join(", ")} cannot be both hidden and shown.`);
    const found = await findDataset(args.datasetName);
    const before = await view(found);
    const { dataset, attrs } = before;
    const name = JSON.stringify(dataset.name);
    const unknown = [...hide, ...show].filter((n) => !attrs.some((a) => a.name === n));
    if (unknown.length) {
      throw new ToolError(
        `${name} has no attribute ${unknown.map((n) => JSON.stringify(n)).join(", ")}. Its attributes: ` +
          `${attrs.map((a) => a.name).join(", ")}.`,
        "attribute_not_found",
        { datasetName: dataset.name, attribute: unknown[0], available: attrs.map((a) => a.name) },
      );
    }
    /** @type {CodapRequest[]} */
    const requests = [];
    const hiddenWanted = new Map(attrs.map((a) => [a.name, a.hidden]));
    for (const n of hide) hiddenWanted.set(n, true);
    for (const n of show) hiddenWanted.set(n, false);
    if (args.showAllAttributes) for (const a of attrs) if (!hide.includes(a.name)) hiddenWanted.set(a.name, false);
    for (const a of attrs) {
      if (hiddenWanted.get(a.name) !== a.hidden) {
        requests.push({
          action: "update",
          resource: `${collection(dataset.id, a.collection)}.attribute[${a.id}]`,
          values: { hidden: hiddenWanted.get(a.name) },
        });
      }
    }
    const wantType = args.view === "card" ? "caseCard" : args.view === "table" ? "caseTable" : null;
    const other = wantType === "caseCard" ? before.table : wantType === "caseTable" ? before.card : null;
    if (wantType && (before.shown?.type !== wantType || (other && !other.hidden))) {
      requests.push({ action: "create", resource: "component", values: { type: wantType, dataContext: String(dataset.id) } });
      // CODAP switches a table to a new card (and back) itself; showing one it has already leaves the other shown.
      if (other && !other.hidden) requests.push({ action: "update", resource: `component[${other.id}]`, values: { isVisible: false } });
    }
    if (requests.length) {
      const replies = await send(requests);
      requests.forEach((r, i) => must(r, replies[i], `changing how ${name} is shown`));
    }
    // The index column and the widths are the table's, once it is shown (the switch above may have shown it).
    const middle = wantType ? await view(found) : before;
    const table = middle.table && !middle.table.hidden ? middle.table : null;
    if ((args.indexColumn !== undefined || args.fitColumns || args.collapsed !== undefined) && !table) {
      throw new ToolError(
        `${name} is not shown in a case table${middle.card && !middle.card.hidden ? " (it shows as a case card)" : ""}: ` +
          "the index column and the column widths are a table's. Give view table to show it as a table.",
        "invalid_arguments",
        { datasetName: dataset.name },
      );
    }
    const tableId = table?.id;
    /** @type {CodapRequest[]} */
    const tableRequests = [];
    if (args.indexColumn !== undefined) {
      tableRequests.push({ action: "update", resource: `component[${tableId}]`, values: { isIndexHidden: !args.indexColumn } });
    }
    const widthsBefore = args.fitColumns && ctx.listen ? await widths(tableId) : null;
    if (args.fitColumns) {
      tableRequests.push({ action: "notify", resource: `component[${tableId}]`, values: { request: "autoScale" } });
    }
    if (tableRequests.length) {
      const replies = await send(tableRequests);
      tableRequests.forEach((r, i) => must(r, replies[i], `changing ${name}'s table`));
    }
    /** @type {number | null} */
    let collapsedCount = null;
    if (args.collapsed !== undefined && table) {
      if (dataset.collections.length < 2) {
        throw invalid(`${name} has one collection: only the cases of a parent collection collapse (group the cases first).`);
      }
      collapsedCount = await collapse(table.id, dataset.id, args.collapsed);
    }
    const after = await view(found);
    const tableNow = after.table ? (await send([get(`component[${after.table.id}]`)]))[0]?.values ?? {} : {};
    const widthsAfter = widthsBefore ? await widths(tableId) : null;
    /** @type {string[]} */
    const notTaken = [];
    const hiddenNow = after.attrs.filter((a) => a.hidden).map((a) => a.name);
    for (const [n, want] of hiddenWanted) if (after.attrs.find((a) => a.name === n)?.hidden !== want) notTaken.push(`${n} ${want ? "hidden" : "shown"}`);
    if (wantType && after.shown?.type !== wantType) notTaken.push(`view ${args.view}`);
    if (args.indexColumn !== undefined && (tableNow.isIndexHidden === true) === args.indexColumn) notTaken.push(`indexColumn ${args.indexColumn}`);
    /** @type {string[]} */
    const said = [];
    const shownAs = after.shown ? (after.shown.type === "caseCard" ? "a case card" : "a case table") : "no table or card";
    if (wantType) said.push(`${name} shows as ${shownAs} now (id ${after.shown?.id ?? "none"})`);
    const changedHidden = after.attrs.filter((a) => before.attrs.find((b) => b.id === a.id)?.hidden !== a.hidden);
    if (hide.length || show.length || args.showAllAttributes) {
      said.push(
        (changedHidden.length
          ? `${changedHidden.map((a) => `${a.name} ${a.hidden ? "hidden" : "shown"}`).join(", ")}`
          : "no attribute changed") +
          `; hidden now: ${hiddenNow.join(", ") || "none"} (hidden attributes keep their values, and formulas still use them)`,
      );
    }
    if (args.indexColumn !== undefined) said.push(`the index column is ${tableNow.isIndexHidden ? "hidden" : "shown"}`);
    if (collapsedCount !== null) {
      said.push(collapsedCount ? `${collapsedCount} parent case${collapsedCount === 1 ? " is" : "s are"} collapsed to one row each` : "every parent case is expanded");
      if ((collapsedCount > 0) !== args.collapsed) notTaken.push(`collapsed ${args.collapsed}`);
    }
    if (args.fitColumns) {
      const changed = widthsBefore && widthsAfter ? JSON.stringify(widthsBefore) !== JSON.stringify(widthsAfter) : null;
      said.push(changed === false ? "the columns already fit their content" : "CODAP fitted every column to its content");
    }
    const text = `Table view of ${name}: ${said.join("; ")}.` + (notTaken.length ? ` CODAP did not take: ${notTaken.join(", ")}.` : "");
    return toolResult(text, {
      datasetName: dataset.name,
      view: after.shown ? (after.shown.type === "caseCard" ? "card" : "table") : null,
      componentId: after.shown?.id ?? null,
      hiddenAttributes: hiddenNow,
      indexColumn: after.table ? tableNow.isIndexHidden !== true : null,
      ...(widthsAfter ? { columnWidths: widthsAfter } : {}),
      ...(collapsedCount !== null ? { collapsedCases: collapsedCount } : {}),
      ...(notTaken.length ? { notTaken } : {}),
    });
  }

  /**
   * Collapses every case of the dataset's parent collections to one row in the table, or expands them all, as each
   * parent row's −/+ does: CODAP's plugin API has no request for it, so CODAP's saved document is rebuilt with the
   * table's collapsed cases (_links_.collapsedNodes) changed. Returns how many are collapsed after, read back.
   * @param {CodapId} tableId
   * @param {CodapId} datasetId
   * @param {boolean} collapsed
   */
  async function collapse(tableId, datasetId, collapsed) {
    if (!ctx.listen) throw new ToolError("This plugin cannot read CODAP's document here.", "document_unavailable");
    const frame = (await send([get("interactiveFrame")]))[0]?.values?.id ?? null;
    const { storage } = await rebuildComponent(ctx, tableId, (s, doc) => {
      const context = (doc.contexts ?? []).find((c) => String(c.guid) === String(datasetId));
      const parents = (context?.collections ?? []).slice(0, -1).flatMap((c) => c.cases ?? []);
      const links = s._links_ ?? (s._links_ = {});
      if (collapsed) links.collapsedNodes = parents.map((c) => ({ type: "DG.Case", id: c.guid }));
      else delete links.collapsedNodes;
    }, frame);
    const nodes = storage?._links_?.collapsedNodes;
    return Array.isArray(nodes) ? nodes.length : nodes ? 1 : 0;
  }

  /**
   * The table's column widths by attribute id, from CODAP's whole document (none until a column is resized).
   * @param {CodapId | undefined} tableId
   * @returns {Promise<Record<string, number> | null>}
   */
  async function widths(tableId) {
    if (tableId === undefined) return null;
    const doc = await readDocument(ctx).catch(() => null);
    const stored = doc?.components?.find((c) => String(c.guid) === String(tableId))?.componentStorage?.attributeWidths;
    if (!Array.isArray(stored)) return null;
    return Object.fromEntries(stored.map((/** @type {any} */ w) => [String(w._links_?.attr?.id ?? w.id), Number(w.width)]));
  }

  return { update_codap_table };
}
