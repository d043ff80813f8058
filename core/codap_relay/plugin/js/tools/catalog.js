// @ts-check
// The tool definitions: one JSON file per family beside its code (datasets.json beside datasets.js), listed in
// order by catalog.json. The plugin registers them with its session; the relay reads the same files (package
// data) for what it tells MCP clients of tools it knows. Each definition is {name, title, description,
// annotations, inputSchema}; the annotations are the one statement of what a tool may change (MCP clients show
// them, the trace replay skips read-only tools, changing tools end their answer with the document digest).

/**
 * A tool's definition as its family's JSON file holds it (the relay reads the same files).
 * @typedef {{name: string, title?: string, description?: string, annotations?: Record<string, unknown>,
 *   inputSchema?: Record<string, unknown>}} ToolDefinition
 */

/**
 * Reads a file of this folder by name as JSON, in the browser.
 * @param {string} name
 * @returns {Promise<any>}
 */
export async function fetchJson(name) {
  const response = await fetch(new URL(name, import.meta.url));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return response.json();
}

/**
 * Every tool definition, in catalog order, with the sets derived from their annotations. `readJson(name)`
 * reads a file of this folder (fetchJson in the browser, the file system in tests).
 * @param {(name: string) => Promise<any>} [readJson]
 */
export async function loadManifest(readJson = fetchJson) {
  /** @type {{families: string[]}} */
  const { families } = await readJson("catalog.json");
  /** @type {ToolDefinition[][]} */
  const lists = await Promise.all(families.map((family) => readJson(`${family}.json`)));
  const tools = lists.flat();
  return {
    tools,
    families: Object.fromEntries(families.map((f, i) => [f, lists[i].map((t) => t.name)])),
    readOnly: new Set(tools.filter((t) => t.annotations?.readOnlyHint === true).map((t) => t.name)),
    destructive: new Set(tools.filter((t) => t.annotations?.destructiveHint === true).map((t) => t.name)),
  };
}
