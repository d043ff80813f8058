// @ts-check
// One error type for everything a tool can fail with; `code` becomes the relay error's code.

export class ToolError extends Error {
  /**
   * @param {string} message what went wrong and what to do, for the model
   * @param {string} [code] the relay error's code
   * @param {Record<string, any>} [data] facts for the structured error (names, ids, limits)
   */
  constructor(message, code = "tool_failed", data = undefined) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.data = data;
  }
}

/**
 * The `error` object posted to the relay for any thrown value.
 * @param {unknown} err
 * @returns {import("./types.js").ToolErrorBody}
 */
export function errorBody(err) {
  if (err instanceof ToolError) {
    return { message: err.message, code: err.code, ...(err.data !== undefined ? { data: err.data } : {}) };
  }
  const said = /** @type {{message?: unknown} | null | undefined} */ (err)?.message;
  return { message: `The plugin failed unexpectedly: ${said ?? String(err)}`, code: "plugin_exception" };
}
