// @ts-check
// The tools the plugin runs, from every family, checked against their definitions: each defined tool has code
// and each piece of code a definition. Tools that change the document end their answer with its digest.

import { createAnalysisTools } from "./analysis.js";
import { createAttributeTools } from "./attributes.js";
import { createCaseTools } from "./cases.js";
import { createComponentTools } from "./components.js";
import { createToolContext, withDigest } from "./context.js";
import { createDatasetTools } from "./datasets.js";
import { createDocumentTools } from "./document.js";
import { createGraphTools } from "./graphs.js";
import { NOT_JOURNALED, createHistoryTools } from "./history.js";
import { createJournal } from "./journal.js";
import { createRawTools } from "./raw.js";
import { createTableTools } from "./tables.js";

/**
 * @import {CodapRequest, Tool} from "../types.js"
 * @import {ToolDefinition} from "./catalog.js"
 * @import {Journal} from "./journal.js"
 */

export { jsonPreview } from "./datasets.js";
export { loadManifest, fetchJson } from "./catalog.js";

const FAMILIES = {
  datasets: createDatasetTools,
  cases: createCaseTools,
  attributes: createAttributeTools,
  tables: createTableTools,
  analysis: createAnalysisTools,
  graphs: createGraphTools,
  components: createComponentTools,
  document: createDocumentTools,
  history: createHistoryTools,
  raw: createRawTools,
};

// The raw tool adds the digest itself (only when its action changes something).
const OWN_DIGEST = new Set(["codap_api"]);

/**
 * The tool functions by name. `deps` as createToolContext takes them; `manifest` (from loadManifest) decides
 * which tools end with the digest. Without a manifest, every tool runs as it is (unit tests of one family).
 * @param {Parameters<typeof createToolContext>[0] & {notice?: ((request: CodapRequest, waitMs?: number) => Promise<unknown>) | null,
 *   tell?: (text: string) => void}} deps
 * @param {{tools: ToolDefinition[], readOnly: Set<string>} | null} [manifest]
 * @returns {Record<string, Tool>}
 */
export function createTools(deps, manifest = null) {
  /** @type {ReturnType<typeof createToolContext> & {journal?: Journal}} */
  const ctx = createToolContext(deps);
  // Restore points around each changing call, for undo_codap_tool_calls (journal.js); kept only with a manifest.
  // CODAP's own Undo and Redo walk through the calls too (`notice`: the plugin's notices to CODAP; `tell`: what
  // the person reads in the plugin's window).
  const { notice = null, tell } = deps;
  if (manifest) {
    const journal = createJournal({ ...ctx, notice, tell });
    ctx.journal = journal;
    ctx.hooks.beforeChange = (requests) => journal.sending(requests);
  }
  /** @type {Record<string, Tool>} */
  const fns = {};
  for (const [family, create] of Object.entries(FAMILIES)) {
    for (const [name, fn] of Object.entries(create(ctx))) {
      if (name in fns) throw new Error(`tool ${name} is defined by two families (${family})`);
      fns[name] = fn;
    }
  }
  if (!manifest) return fns;
  const defined = new Set(manifest.tools.map((t) => t.name));
  const missing = [...defined].filter((n) => !(n in fns));
  const undefinedTools = Object.keys(fns).filter((n) => !defined.has(n));
  if (missing.length || undefinedTools.length) {
    throw new Error(`tools without code: ${missing.join(", ") || "none"}; code without a definition: ${undefinedTools.join(", ") || "none"}`);
  }
  /** @type {Record<string, Tool>} */
  const tools = {};
  for (const name of Object.keys(fns)) {
    const changes = !manifest.readOnly.has(name) && !OWN_DIGEST.has(name);
    // Every call that may change the document is journaled (a raw "get" changes nothing).
    const journaled = !manifest.readOnly.has(name) && !NOT_JOURNALED.has(name)
      ? /** @type {Journal} */ (ctx.journal).around(name, fns[name], name === "codap_api" ? (args) => args?.action !== "get" : undefined)
      : fns[name];
    tools[name] = changes ? async (args, call) => withDigest(ctx, await journaled(args, call)) : journaled;
  }
  return tools;
}
