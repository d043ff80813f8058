// @ts-check
// What CODAP's case table and card offer beside the cases themselves: setting cases aside and bringing them back
// (the table's eye menu), a dataset's title and description (its Info panel), and how its table or card shows it
// (table or card, hidden attributes, the index column, column widths). Each tool reads CODAP's state back after
// its change and says what changed.
//
// Set aside, over the plugin API (v3 data-context-handler.ts notify): {request: "setAside", caseIDs, operation?}
// with caseIDs as CODAP's case ids or its v3 item ids ("ITEM" + the item id): a bare item id is taken for a case id
// and silently matches nothing. Which items are set aside is read from `get dataContext` (setAsideItems): CODAP
// copies the dataset for it (about 0.5 s at 10,000 cases), so only these tools and export_codap_data ask.

import { createCaseSelection, idList } from "./case_selection.js";
import { ToolError, collection, dataContext, get, invalid, plural, toolResult } from "./context.js";
import { createTableViewTools } from "./table_view.js";

/**
 * @import {CodapId, CodapReply, CodapRequest, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

/**
 * What `get dataContext` says of a dataset's hidden cases: the set-aside items (ids and values), its filter
 * formula (set in the table's eye menu), its title and description.
 * @param {Record<string, any> | undefined} values
 */
export function hiddenCases(values) {
  /** @type {Array<{id: number, values: Record<string, unknown>}>} */
  const setAside = (values?.setAsideItems ?? []).map((/** @type {any} */ item) => {
    const { __id__: _id, ...rest } = item.values ?? {};
    return { id: Number(item.id), values: rest };
  });
  return {
    setAside,
    filterFormula: typeof values?.v3?.filterFormula === "string" ? values.v3.filterFormula : null,
    title: String(values?.title || values?.name || ""),
    description: String(values?.metadata?.description ?? ""),
  };
}

/** CODAP's v3 id of an item, as its set-aside request takes it. @param {CodapId} id */
const itemKey = (id) => `ITEM${id}`;

/** @param {ToolContext} ctx */
export function createTableTools(ctx) {
  const { send, must, findDataset, describeDatasets } = ctx;
  const { select, matching, bySelection } = createCaseSelection(ctx);

  /** @param {string} datasetName */
  async function describe(datasetName) {
    const found = await findDataset(datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: false });
    return dataset;
  }

  /**
   * Sends `requests` then reads the dataset back in the same message: its hidden cases and shown item count.
   * @param {DescribedDataset} dataset
   * @param {CodapRequest[]} requests
   */
  async function changeAndRead(dataset, requests) {
    const read = get(dataContext(dataset.id));
    const count = get(`${dataContext(dataset.id)}.itemCount`);
    const replies = await send([...requests, read, count]);
    requests.forEach((r, i) => must(r, replies[i], `setting cases of ${JSON.stringify(dataset.name)} aside`));
    const n = requests.length;
    return { ...hiddenCases(must(read, replies[n]).values), shown: Number(must(count, replies[n + 1]).values ?? 0) };
  }

  /**
   * @param {{datasetName: string, where?: string, caseIds?: CodapId[], selection?: "selected" | "unselected",
   *   restore?: boolean}} args
   */
  async function set_aside_codap_cases(args) {
    const restore = args.restore === true;
    const given = /** @type {const} */ (["where", "caseIds", "selection"]).filter((k) => args[k] !== undefined);
    if (given.length > 1) throw invalid(`Give at most one of where, caseIds and selection (got ${given.join(" and ")}).`);
    if (!restore && given.length === 0) {
      throw invalid(
        "Say which cases to set aside: where (a CODAP formula such as `height > 190`), caseIds, or selection " +
          "(selected or unselected). To bring set-aside cases back, give restore true.",
      );
    }
    if (restore && args.selection) {
      throw invalid("Set-aside cases cannot be selected: restore them all, or by where or caseIds.");
    }
    const dataset = await describe(args.datasetName);
    const name = JSON.stringify(dataset.name);
    const [beforeReply] = await send([get(dataContext(dataset.id))]);
    const before = hiddenCases(must(get(dataContext(dataset.id)), beforeReply).values);
    const wasAside = new Set(before.setAside.map((i) => i.id));
    /** @type {CodapRequest[]} */
    let requests;
    /** @type {(values: Record<string, unknown>) => CodapRequest} */
    const notify = (values) => ({ action: "notify", resource: dataContext(dataset.id), values });
    if (!restore) {
      let caseIDs;
      if (args.selection) {
        const split = await bySelection(dataset);
        caseIDs = split[args.selection];
        if (!caseIDs.length) {
          throw new ToolError(
            args.selection === "selected"
              ? `No case of ${name} is selected: select some first (select_codap_cases), or give where or caseIds.`
              : `Every case of ${name} is selected, so no unselected case is left to set aside.`,
            "empty_selection",
            { datasetName: dataset.name },
          );
        }
      } else {
        caseIDs = (await select(dataset, args)).map((item) => itemKey(item.id));
      }
      requests = [notify({ request: "setAside", caseIDs })];
    } else if (args.caseIds) {
      const ids = [...new Set(args.caseIds.map(Number))];
      const missing = ids.filter((id) => !wasAside.has(id));
      if (missing.length) {
        throw new ToolError(
          `${plural(missing.length, "case")} of ${name} ${missing.length === 1 ? "is" : "are"} not set aside: ` +
            `${idList(missing)}. Set aside now: ${before.setAside.length ? idList([...wasAside]) : "none"}.`,
          "case_not_found",
          { datasetName: dataset.name, missing, available: [...wasAside] },
        );
      }
      requests = [notify({ request: "setAside", operation: "restore", caseIDs: ids.map(itemKey) })];
    } else if (args.where !== undefined) {
      if (!wasAside.size) throw noneAside(dataset);
      // CODAP's formulas see only the cases shown: bring every set-aside case back, find the matching ones, and
      // set the others aside again.
      const matched = await matching(dataset, args.where, {
        allowNone: true,
        extra: [notify({ request: "restoreSetAsides" })],
      });
      const lookups = matched.map((c) => get(`${dataContext(dataset.id)}.itemByCaseID[${c.id}]`));
      const items = await send(lookups);
      const back = new Set(items.map((r, i) => Number(must(lookups[i], r).values?.id)).filter((id) => wasAside.has(id)));
      const again = [...wasAside].filter((id) => !back.has(id));
      requests = again.length ? [notify({ request: "setAside", caseIDs: again.map(itemKey) })] : [];
      if (!back.size) {
        await changeAndRead(dataset, requests);
        throw new ToolError(
          `No set-aside case of ${name} matches ${JSON.stringify(args.where)}; they stay set aside ` +
            `(${plural(wasAside.size, "case")}).`,
          "empty_selection",
          { datasetName: dataset.name, where: args.where, setAside: [...wasAside] },
        );
      }
    } else {
      if (!wasAside.size) throw noneAside(dataset);
      requests = [notify({ request: "restoreSetAsides" })];
    }
    const after = await changeAndRead(dataset, requests);
    const nowAside = new Set(after.setAside.map((i) => i.id));
    const newlyAside = [...nowAside].filter((id) => !wasAside.has(id));
    const restored = [...wasAside].filter((id) => !nowAside.has(id));
    const state = `Now ${plural(nowAside.size, "case")} of ${name} ${nowAside.size === 1 ? "is" : "are"} set aside and ` +
      `${plural(after.shown, "case")} shown.`;
    const filter = after.filterFormula
      ? ` The table's filter formula ${JSON.stringify(after.filterFormula)} also hides the cases for which it is false.`
      : "";
    let text;
    if (!restore) {
      text = newlyAside.length
        ? `Set aside ${plural(newlyAside.length, "case")} of ${name} ${what(args)}: ids ${idList(newlyAside)}. ${state} ` +
          "Tables, graphs, maps, statistics and formulas leave set-aside cases out, and so does export_codap_data " +
          "unless asked (includeSetAside). They are not deleted: set_aside_codap_cases with restore true brings " +
          "them back (all, or by caseIds or where)."
        : `The cases ${what(args)} were set aside already; nothing changed. ${state}`;
    } else {
      text = `Brought back ${plural(restored.length, "set-aside case")} of ${name}: ids ${idList(restored)}. ` +
        `CODAP selects the cases it brings back, as its menu does. ${state}`;
    }
    return toolResult(text + filter, {
      datasetName: dataset.name,
      restore,
      ...(restore ? { restored } : { setAside: newlyAside }),
      setAsideNow: nowAside.size,
      setAsideIds: [...nowAside],
      shown: after.shown,
      ...(after.filterFormula ? { filterFormula: after.filterFormula } : {}),
    });
  }

  /** @param {DescribedDataset} dataset */
  function noneAside(dataset) {
    return new ToolError(`No case of ${JSON.stringify(dataset.name)} is set aside; nothing to bring back.`, "empty_selection", {
      datasetName: dataset.name,
      setAside: [],
    });
  }

  /** @param {{where?: string, caseIds?: unknown[], selection?: string}} args */
  function what(args) {
    if (args.where !== undefined) return `matching ${args.where.trim()}`;
    if (args.selection) return `that were ${args.selection}`;
    return "with the given ids";
  }

  /**
   * A collection's new title (CODAP's plugin API cannot change its name), read back.
   * @param {DescribedDataset} dataset
   * @param {string} wanted the collection's name or title
   * @param {string} title
   */
  async function retitleCollection(dataset, wanted, title) {
    const coll = dataset.collections.find((c) => c.name === wanted) ?? dataset.collections.find((c) => c.title === wanted);
    if (!coll) {
      throw new ToolError(
        `${JSON.stringify(dataset.name)} has no collection ${JSON.stringify(wanted)}. Its collections: ` +
          `${dataset.collections.map((c) => c.name).join(", ")}.`,
        "collection_not_found",
        { datasetName: dataset.name, collection: wanted, available: dataset.collections.map((c) => c.name) },
      );
    }
    const resource = collection(dataset.id, coll.id);
    /** @type {CodapRequest} */
    const update = { action: "update", resource, values: { title } };
    const [done, read] = await send([update, get(resource)]);
    must(update, done, `retitling collection ${JSON.stringify(coll.name)}`);
    const after = String(must(get(resource), read).values?.title ?? "");
    return { name: coll.name, before: coll.title || coll.name, after };
  }

  /**
   * @param {{datasetName: string, title?: string, description?: string, rerandomize?: boolean, collection?: string,
   *   collectionTitle?: string}} args
   */
  async function update_codap_dataset(args) {
    if ((args.collection === undefined) !== (args.collectionTitle === undefined)) {
      throw invalid("collection and collectionTitle go together: the collection (name or title) and its new title.");
    }
    const asked = [args.title !== undefined, args.description !== undefined, args.rerandomize === true,
      args.collectionTitle !== undefined].some(Boolean);
    if (!asked) throw invalid("Give at least one change: title, description, rerandomize true, or collection with collectionTitle.");
    const found = await findDataset(args.datasetName);
    const { datasets: [dataset] } = await describeDatasets([found], { types: true });
    const name = JSON.stringify(dataset.name);
    const title = args.title?.trim();
    if (args.title !== undefined) {
      if (!title) throw invalid("title is empty: give the new title, the word the class should see.");
      const [listed] = await send([get("dataContextList")]);
      /** @type {Array<{id: CodapId, name: string, title?: string}>} */
      const others = (must(get("dataContextList"), listed).values ?? []).filter((/** @type {any} */ d) => String(d.id) !== String(dataset.id));
      const clash = others.find((d) => d.name === title || d.title === title);
      if (clash) {
        throw new ToolError(
          `Another dataset is already called ${JSON.stringify(title)} (name ${JSON.stringify(clash.name)}): two datasets ` +
            "with one word could not be told apart. Choose another title.",
          "dataset_exists",
          { datasetName: dataset.name, title, available: others.map((d) => d.title || d.name) },
        );
      }
    }
    const random = dataset.collections.flatMap((c) =>
      c.attributes.filter((a) => /\brandom(Normal|Binomial|Pick)?\s*\(/i.test(a.formula ?? "")).map((a) => ({ c, a })));
    if (args.rerandomize && !random.length) {
      throw new ToolError(
        `No attribute of ${name} has a formula with random(), randomNormal(), randomBinomial() or randomPick(): ` +
          "there is nothing to rerandomize.",
        "invalid_arguments",
        { datasetName: dataset.name },
      );
    }
    // The first values of the random attributes, before and after (CODAP recomputes them all).
    const sampled = [...new Set(random.map((r) => r.c))];
    const samples = sampled.flatMap((c) =>
      Array.from({ length: Math.min(3, c.caseCount) }, (_, i) => get(`${collection(dataset.id, c.id)}.caseByIndex[${i}]`)));
    const read = get(dataContext(dataset.id));
    /** @type {Record<string, unknown>} */
    const values = {};
    if (title) values.title = title;
    if (args.description !== undefined) values.metadata = { description: args.description };
    if (args.rerandomize) values.rerandomize = true;
    /** @type {CodapRequest} */
    const change = { action: "update", resource: dataContext(dataset.id), values };
    const replies = await send([read, ...(args.rerandomize ? samples : []), change, read, ...(args.rerandomize ? samples : [])]);
    const k = args.rerandomize ? samples.length : 0;
    const before = hiddenCases(must(read, replies[0]).values);
    must(change, replies[1 + k], `changing dataset ${name}`);
    const after = hiddenCases(must(read, replies[2 + k]).values);
    /** @param {CodapReply[]} rs */
    const firsts = (rs) => random.map(({ a }) => ({
      attribute: a.name,
      values: rs.map((r) => r?.values?.case?.values?.[a.name]).filter((v) => v !== undefined),
    }));
    /** @type {Record<string, {before: unknown, after: unknown}>} */
    const changes = {};
    const notTaken = [];
    if (title) {
      if (after.title === title) changes.title = { before: before.title, after: after.title };
      else notTaken.push(`title (CODAP kept ${JSON.stringify(after.title)})`);
    }
    if (args.description !== undefined) {
      if (after.description === args.description) changes.description = { before: before.description, after: after.description };
      else notTaken.push("description");
    }
    const lines = [];
    if (changes.title) {
      lines.push(
        `Dataset ${name} is now titled ${JSON.stringify(after.title)} (was ${JSON.stringify(before.title)}): CODAP shows ` +
          "the title on its table, card and lists. CODAP's plugin API cannot change a dataset's name, so the name " +
          `stays ${name}, as when a person renames it in the table's Info panel. Every tool takes either word as ` +
          `datasetName: ${JSON.stringify(after.title)} or ${name}.`,
      );
    }
    if (changes.description) lines.push(`Its description is now ${JSON.stringify(after.description)}.`);
    /** @type {Array<{attribute: string, before: unknown[], after: unknown[]}>} */
    let rerandomized = [];
    if (args.rerandomize) {
      const was = firsts(replies.slice(1, 1 + k));
      const now = firsts(replies.slice(3 + k, 3 + 2 * k));
      rerandomized = was.map((w, i) => ({ attribute: w.attribute, before: w.values, after: now[i].values }));
      lines.push(
        `Rerandomized ${name}: CODAP drew new random values for ${rerandomized.map((r) => r.attribute).join(", ")} ` +
          `(first values ${rerandomized.map((r) => `${r.attribute}: ${r.before.join(", ")} → ${r.after.join(", ")}`).join("; ")}).`,
      );
    }
    if (args.collection !== undefined && args.collectionTitle !== undefined) {
      const c = await retitleCollection(dataset, args.collection, args.collectionTitle);
      if (c.after === args.collectionTitle) {
        changes.collectionTitle = { before: c.before, after: c.after };
        lines.push(
          `Collection ${JSON.stringify(c.name)} is now titled ${JSON.stringify(c.after)} (CODAP keeps the name ` +
            `${JSON.stringify(c.name)}; the tools take either word).`,
        );
      } else notTaken.push(`collectionTitle (CODAP kept ${JSON.stringify(c.after)})`);
    }
    if (notTaken.length) lines.push(`CODAP did not take: ${notTaken.join(", ")}.`);
    return toolResult(lines.join(" "), {
      datasetName: dataset.name,
      title: after.title,
      description: after.description,
      changes,
      ...(args.rerandomize ? { rerandomized } : {}),
      ...(notTaken.length ? { notTaken } : {}),
    });
  }

  return { set_aside_codap_cases, update_codap_dataset, ...createTableViewTools(ctx) };
}

