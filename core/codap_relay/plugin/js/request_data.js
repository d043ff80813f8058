// @ts-check
// A request's data as the relay sends it, over the event stream or the push channel: JSON, with numbers JSON
// cannot hold refused, and the id and tool of a request that cannot be read recovered so it still gets an answer.

/**
 * Whether every number in `value` is finite (JSON.parse reads 1e999 as Infinity).
 * @param {unknown} value
 * @param {number} [depth]
 * @returns {boolean}
 */
function finite(value, depth = 0) {
  if (typeof value === "number") return Number.isFinite(value);
  if (!value || typeof value !== "object" || depth > 200) return true;
  return Object.values(value).every((v) => finite(v, depth + 1));
}

/**
 * An event's data as JSON: {data} when it parses, else {data: null, unreadable: why, id, tool} with the request's
 * id and tool when they can be recovered. A request the plugin cannot read still gets an answer the model sees
 * (an error for its id); JSON cannot hold NaN or Infinity, so they are read as null only to find the id, and the
 * request is never run with them.
 * @param {string} text
 * @returns {{data: any, unreadable?: undefined, id?: undefined, tool?: undefined, found?: undefined}
 *   | {data: null, unreadable: string, id: string | null, tool: string | null, found: any}} `data`: the parsed
 *   JSON, which the caller checks
 */
export function readEventData(text) {
  try {
    const data = JSON.parse(text);
    if (!finite(data)) {
      const found = data && typeof data === "object" ? data : null;
      const id = typeof found?.id === "string" ? found.id : null;
      const why = "the request holds a number JSON cannot hold (such as 1e999)";
      return { data: null, unreadable: why, id, tool: typeof found?.tool === "string" ? found.tool : null, found };
    }
    return { data };
  } catch (err) {
    const why = `the plugin could not read this request as JSON (${/** @type {Error | null} */ (err)?.message ?? err})`;
    /** @type {any} */
    let found = null;
    try {
      // non-finite numbers outside strings (as Python's json writes them) read as null
      found = JSON.parse(String(text).replace(/("(?:[^"\\]|\\.)*")|-?\b(?:Infinity|NaN)\b/g, (m, str) => str ?? "null"));
    } catch {
      const id = /"id"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(String(text));
      try {
        found = id ? { id: JSON.parse(id[1]) } : null;
      } catch {
        found = null;
      }
    }
    const id = typeof found?.id === "string" ? found.id : null;
    return { data: null, unreadable: why, id, tool: typeof found?.tool === "string" ? found.tool : null, found };
  }
}
