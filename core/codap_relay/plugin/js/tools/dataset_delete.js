// @ts-check
// delete_codap_dataset: delete a whole dataset, saying what it held and which components CODAP closed with it.

import { q, readDataset } from "./attribute_read.js";
import { ToolError, dataContext, get, plural, toolResult } from "./context.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/** @param {ToolContext} ctx */
export function createDatasetDelete(ctx) {
  const { send, must, findDataset, datasetList } = ctx;

  /** @param {{datasetName: string}} args */
  async function delete_codap_dataset(args) {
    const found = await findDataset(args.datasetName);
    const dataset = await readDataset(ctx, found, [get("componentList")]);
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

  return { delete_codap_dataset };
}
