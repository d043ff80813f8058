// @ts-check
// One error type for everything a tool can fail with; `code` becomes the relay error's code.

export class ToolError extends Error {
  constructor(message, code = "tool_failed", data = undefined) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.data = data;
  }
}

/** The `error` object posted to the relay for any thrown value. */
export function errorBody(err) {
  if (err instanceof ToolError) {
    return { message: err.message, code: err.code, ...(err.data !== undefined ? { data: err.data } : {}) };
  }
  return { message: `The plugin failed unexpectedly: ${err?.message ?? String(err)}`, code: "plugin_exception" };
}
