// @ts-check
// The CODAP query layer: how the tools talk to CODAP, and the reads they share (datasets, their collections and
// attributes, graphs and their pictures). `call` is the transport (CodapPhone.call); nothing here touches the DOM.
//
// How it talks to CODAP (v3 handles one plugin message per browser task, so every message waits its turn):
// - requests that do not depend on each other go out as one array in one message, answered by one array;
// - a tool sends a fixed handful of messages whatever the size of the document, never one per case or attribute;
// - datasets and collections are addressed by id once found, because CODAP resolves `dataContext[x]` by title
//   before name (a name could reach another dataset whose title it is) and cannot parse a name holding "]";
// - `get dataContext[x]` is never used: CODAP rebuilds every case of the dataset to answer it, and graphs of
//   that dataset redraw (hundreds of ms at 1,000 cases). Collection lists, collections and counts are cheap;
// - every number reported is one CODAP gave back in the same message as the change it counts.

import { ToolError } from "./errors.js";
import { nameProblem } from "./names.js";
import { isCodapSuccess } from "./types.js";

/**
 * @import {CodapCall, CodapId, CodapReply, CodapRequest, CodapSuccess, Component, DatasetRef, DescribedDataset,
 *   DescribedCollection} from "./types.js"
 */

// CODAP makes a graph's picture on request from what is on screen (v3 DataDisplayRenderState.updateSnapshot).
// A graph has none until it is mounted (CODAP answers "DataDisplay not found"): ask again after growing pauses.
// A new or changed graph then animates its points for about a second (transitions of 1 s, an animation timer of
// 2 s), and a picture taken meanwhile shows them half drawn or not at all: the picture counts once two taken a
// moment apart are the same, byte for byte. All of it for at most PICTURE_WAIT_MS.
export const PICTURE_WAIT_MS = 20_000;
const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 1000;
const SETTLE_PAUSE_MS = 100; // a few animation frames between two pictures compared
// A graph with no size on screen (minimized) gives an empty picture, "data:,": after this long of only that, stop.
const EMPTY_GIVE_UP_MS = 2000;

/** @param {string} message */
export function invalid(message) {
  return new ToolError(message, "invalid_arguments");
}

/** @type {(resource: string) => CodapRequest} */
export const get = (resource) => ({ action: "get", resource });
/** @param {CodapId} id */
export const dataContext = (id) => `dataContext[${id}]`;
/** @type {(datasetId: CodapId, collectionId: CodapId) => string} */
export const collection = (datasetId, collectionId) => `dataContext[${datasetId}].collection[${collectionId}]`;

/**
 * CODAP's own words for a failed reply. Some handlers nest a whole failed result as the error
 * (`{success: null, values: {error: {success: false, values: {error: "DataDisplay not found"}}}}`): unwrap it.
 * @param {unknown} reply
 * @returns {string}
 */
export function codapError(reply) {
  /** @type {any} */
  let error = /** @type {CodapReply | null | undefined} */ (reply)?.values?.error;
  for (let depth = 0; error && typeof error === "object" && depth < 4; depth++) error = error.values?.error;
  return typeof error === "string" && error ? error : "CODAP reported a failure without a message";
}

/**
 * The error for a request CODAP answered with success: false, quoting CODAP's own message.
 * @param {{action: string, resource: string}} request
 * @param {unknown} reply
 * @param {string} [what] how the message names the request, if not by its action and resource
 */
export function refused(request, reply, what) {
  const codapMessage = codapError(reply);
  return new ToolError(
    `CODAP refused ${what ?? `"${request.action} ${request.resource}"`}: ${codapMessage}`,
    "codap_error",
    { action: request.action, resource: request.resource, codapError: codapMessage },
  );
}

/**
 * What CODAP's component types are called in a sentence.
 * @type {Record<string, string>}
 */
const COMPONENT_NAMES = {
  caseTable: "a case table",
  caseCard: "a case card",
  text: "a text box",
  slider: "a slider",
  map: "a map",
  calculator: "a calculator",
  webView: "a web page or plugin",
  guideView: "a guide",
  image: "an image",
};

/**
 * How a component is found by what a model calls it, strictest first: its id, its name, its title, then name or
 * title in any case. The first test that matches one component decides; more than one is ambiguous.
 */
/**
 * @param {string} key
 * @returns {Array<(c: {id: CodapId, name?: string, title?: string}) => boolean>}
 */
export function nameMatchers(key) {
  const lower = key.toLowerCase();
  return [
    (c) => String(c.id) === key,
    (c) => c.name === key,
    (c) => c.title === key,
    (c) => String(c.name ?? "").toLowerCase() === lower || String(c.title ?? "").toLowerCase() === lower,
  ];
}

/**
 * `"Title" (id 12)` for the graphs a message names.
 * @param {{id: CodapId, name?: string, title?: string}} g
 */
export const graphLabel = (g) => `${JSON.stringify(g.title || g.name || `graph ${g.id}`)} (id ${g.id})`;

/**
 * The reads the tools share, over `call`; `sleep` and `now` pace the wait for a new graph's picture.
 * @param {{call: CodapCall, sleep: (ms: number) => Promise<void>, now: () => number}} io
 */
export function createCodapQuery({ call, sleep, now }) {
  /**
   * One message holding every request; resolves with CODAP's replies in order.
   * @param {CodapRequest[]} requests
   * @returns {Promise<CodapReply[]>}
   */
  async function send(requests) {
    if (requests.length === 0) return [];
    const replies = await call(requests);
    if (!Array.isArray(replies) || replies.length !== requests.length) {
      throw new ToolError(
        `CODAP answered ${requests.length} requests with ${JSON.stringify(replies)?.slice(0, 200)}, not one reply each.`,
        "codap_error",
      );
    }
    return replies;
  }

  /**
   * The reply if it succeeded, else a ToolError carrying CODAP's message.
   * @param {{action: string, resource: string}} request
   * @param {unknown} reply
   * @param {string} [what]
   * @returns {CodapSuccess}
   */
  function must(request, reply, what) {
    if (isCodapSuccess(reply)) return reply;
    throw refused(request, reply, what);
  }

  /**
   * One request in a message of its own: CODAP's reply if it succeeded, else a ToolError with its message.
   * @param {CodapRequest} request
   * @param {string} [what]
   */
  async function ask(request, what) {
    const [reply] = await send([request]);
    return must(request, reply, what);
  }

  /**
   * @param {DatasetRef[]} list
   * @param {unknown} name
   * @returns {DatasetRef}
   */
  function pickDataset(list, name) {
    const problem = nameProblem("Dataset", name);
    if (problem) throw invalid(problem);
    // Names are unique in CODAP; a title is accepted too when it names exactly one dataset.
    const byName = list.filter((d) => d.name === name);
    if (byName.length === 1) return byName[0];
    const byTitle = list.filter((d) => d.title === name);
    if (byTitle.length === 1) return byTitle[0];
    const names = list.map((d) => d.name);
    const shown = list.map((d) => (d.title && d.title !== d.name ? `${d.name} (titled ${JSON.stringify(d.title)})` : d.name));
    throw new ToolError(
      `CODAP has no dataset named ${JSON.stringify(name)} (by name or title). ` +
        (names.length ? `Datasets in CODAP: ${shown.join(", ")}.` : "CODAP has no datasets yet; create one first."),
      "dataset_not_found",
      { datasetName: name, available: names },
    );
  }

  /** @type {(reply: CodapSuccess) => DatasetRef[]} */
  const datasetList = (reply) => (reply.values ?? []).map((/** @type {any} */ d) => ({ id: d.id, name: d.name, title: d.title || d.name }));

  /** @param {unknown} name */
  async function findDataset(name) {
    return pickDataset(datasetList(await ask(get("dataContextList"))), name);
  }

  /**
   * Collections, attributes and case counts of datasets, in two messages for any number of datasets:
   * every collection list, then every collection with its case count. `types` false reads attribute names only
   * (CODAP builds each attribute's category map to describe it fully, which costs time at many categories).
   * @param {DatasetRef[]} datasets
   * @param {{types?: boolean, extra?: CodapRequest[]}} [options]
   * @returns {Promise<{datasets: DescribedDataset[], extra: CodapReply[]}>}
   */
  async function describeDatasets(datasets, { types = true, extra = [] } = {}) {
    const listRequests = datasets.map((d) => get(`${dataContext(d.id)}.collectionList`));
    const replies = await send([...listRequests, ...extra]);
    /** @type {Array<Array<{id: CodapId, name: string, title?: string}>>} */
    const lists = datasets.map((d, i) => must(listRequests[i], replies[i]).values ?? []);
    const pairs = datasets.flatMap((d, i) => lists[i].map((c) => ({ d, c })));
    const requests = pairs.flatMap(({ d, c }) => [
      get(types ? collection(d.id, c.id) : `${collection(d.id, c.id)}.attributeList`),
      get(`${collection(d.id, c.id)}.caseCount`),
    ]);
    const answers = await send(requests);
    /** @type {DescribedCollection[]} */
    const described = pairs.map(({ c }, i) => {
      const attrs = must(requests[2 * i], answers[2 * i]).values;
      const count = must(requests[2 * i + 1], answers[2 * i + 1]).values;
      return {
        name: c.name,
        title: c.title || c.name,
        id: c.id,
        caseCount: count,
        attributes: ((types ? attrs?.attrs : attrs) ?? []).map((/** @type {any} */ a) => ({
          name: a.name,
          id: a.id,
          type: a.type || "",
          ...(a.unit ? { unit: a.unit } : {}),
          ...(a.title && a.title !== a.name ? { title: a.title } : {}),
          ...(a.formula ? { formula: a.formula } : {}),
          ...(a.hidden === true ? { hidden: true } : {}),
        })),
      };
    });
    const out = datasets.map((d) => {
      const colls = described.filter((_, i) => pairs[i].d === d);
      return {
        name: d.name,
        title: d.title || d.name,
        id: d.id,
        caseCount: colls.length ? colls[colls.length - 1].caseCount : 0,
        collections: colls,
        attributes: colls.flatMap((c) => c.attributes.map((a) => a.name)),
      };
    });
    return { datasets: out, extra: replies.slice(listRequests.length) };
  }

  /**
   * Every dataset, described; `extra` requests ride along in the collection-list message.
   * @param {CodapSuccess} listReply
   * @param {CodapRequest[]} [extra]
   */
  async function describeAll(listReply, extra = []) {
    const found = datasetList(listReply);
    return describeDatasets(found, { extra });
  }

  /**
   * Every component with the title CODAP shows, and the graphs among them: two messages however many components
   * there are. The component list holds only titles set explicitly; an untitled graph or table shows its
   * dataset's name.
   * @returns {Promise<{components: Component[], graphs: Component[]}>}
   */
  async function listGraphs() {
    const list = get("componentList");
    const [listed] = await send([list]);
    /** @type {Array<{id: CodapId, type: string, name?: string, title?: string}>} */
    const listing = must(list, listed).values ?? [];
    const details = await send(listing.map((c) => get(`component[${c.id}]`)));
    const components = listing.map((c, i) => {
      const reply = details[i];
      const detail = isCodapSuccess(reply) ? reply.values ?? {} : {};
      return { ...c, title: detail.title || c.title || detail.dataContext || "", detail };
    });
    return { components, graphs: components.filter((c) => c.type === "graph") };
  }

  /**
   * The graph `wanted` names (id, name or title), or a ToolError that names the graphs CODAP has.
   * @param {{components: Component[], graphs: Component[]}} listed
   * @param {unknown} wanted
   * @returns {Component}
   */
  function pickGraph({ components, graphs }, wanted) {
    const available = graphs.map(graphLabel);
    const listing = graphs.length ? `Graphs in CODAP: ${available.join(", ")}.` : "CODAP has no graphs; make one with create_codap_graph.";
    if (wanted === undefined || wanted === null || String(wanted).trim() === "") {
      if (graphs.length === 1) return graphs[0];
      throw new ToolError(`Say which graph: give its name, title or id. ${listing}`, "invalid_arguments", { available });
    }
    const key = String(wanted).trim();
    for (const matches of nameMatchers(key)) {
      const graphMatches = graphs.filter(matches);
      if (graphMatches.length === 1) return graphMatches[0];
      if (graphMatches.length > 1) {
        throw new ToolError(
          `${graphMatches.length} graphs are called ${JSON.stringify(key)}: ${graphMatches.map(graphLabel).join(", ")}. ` +
            "Give the id of the one you mean.",
          "invalid_arguments",
          { available },
        );
      }
      const other = components.find((c) => c.type !== "graph" && matches(c));
      if (other) {
        const which = String(other.id) === key ? `Component ${other.id}` : `${JSON.stringify(key)} (id ${other.id})`;
        throw new ToolError(
          `${which} is ${COMPONENT_NAMES[other.type] ?? `a ${other.type}`} in CODAP, not a graph; only graphs ` +
            `have pictures here. ${listing}`,
          "not_a_graph",
          { component: { id: other.id, type: other.type }, available },
        );
      }
    }
    throw new ToolError(`CODAP has no graph called ${JSON.stringify(key)}. ${listing}`, "graph_not_found", {
      graph: key,
      available,
    });
  }

  /**
   * CODAP's picture of a graph once its drawing has settled: {uri, settled}. Waits (bounded) for a new graph's
   * first drawing and for its points to finish moving; after PICTURE_WAIT_MS it gives the last picture it got
   * (settled false), or fails if there was none. `once`: the first picture CODAP gives is the settled one (a hidden
   * page, drawn before it was hidden: nothing moves on it).
   * @param {{id: CodapId, name?: string, title?: string}} graph
   * @param {{once?: boolean}} [options]
   * @returns {Promise<{uri: string, settled: boolean}>}
   */
  async function graphSnapshot(graph, { once = false } = {}) {
    const component = get(`component[${graph.id}]`);
    const display = get(`dataDisplay[${graph.id}]`);
    const started = now();
    let pause = FIRST_PAUSE_MS;
    /** @type {string | null} */
    let previous = null;
    /** @type {number | null} the first of the empty pictures in a row */
    let emptySince = null;
    for (;;) {
      // The component is read in the same message, so a graph closed meanwhile ends the wait at once.
      const [shown, pictured] = await send([component, display]);
      must(component, shown, `reading graph ${graphLabel(graph)}`);
      const uri = pictured?.success === true ? pictured.values?.exportDataUri : undefined;
      const drawn = typeof uri === "string" && uri.startsWith("data:image/");
      if (drawn && (uri === previous || once)) return { uri, settled: true };
      if (drawn) previous = uri;
      const empty = pictured?.success === true && !drawn;
      emptySince = empty ? emptySince ?? now() : null;
      if (emptySince !== null && now() - emptySince >= EMPTY_GIVE_UP_MS) {
        throw new ToolError(
          `CODAP gave only an empty picture of graph ${graphLabel(graph)}: it is not drawn on screen (minimized, ` +
            "or too small). Restore it to its full size in CODAP, then ask again.",
          "graph_image_unavailable",
          { graphId: graph.id },
        );
      }
      const waited = now() - started;
      if (waited >= PICTURE_WAIT_MS) {
        if (previous) return { uri: previous, settled: false };
        const said = codapError(pictured);
        throw new ToolError(
          `CODAP gave no picture of graph ${graphLabel(graph)} within ${Math.round(waited / 1000)} s (it answered ` +
            `${JSON.stringify(said)}). CODAP draws a graph's picture once the graph is on screen: if it is ` +
            "minimized or hidden, show it, then ask again.",
          "graph_image_unavailable",
          { graphId: graph.id, codapError: said },
        );
      }
      await sleep(Math.min(drawn ? SETTLE_PAUSE_MS : pause, PICTURE_WAIT_MS - waited));
      if (!drawn) pause = Math.min(LONGEST_PAUSE_MS, pause * 2);
    }
  }

  return {
    send,
    must,
    ask,
    datasetList,
    findDataset,
    describeDatasets,
    describeAll,
    listGraphs,
    pickGraph,
    graphSnapshot,
  };
}
