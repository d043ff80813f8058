// @ts-check
// Pure text helpers for the activity log and the status line.

/** @import {ToolArgs} from "./types.js" */

const MAX_SUMMARY = 90;

/**
 * @param {string} text
 * @param {number} [max]
 */
function clip(text, max = MAX_SUMMARY) {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** @param {unknown} v */
const quote = (v) => (typeof v === "string" ? v : JSON.stringify(v));

/**
 * A short, human summary of a tool call's arguments for the activity log.
 * @param {string} tool
 * @param {ToolArgs | null} [args]
 */
export function summarizeArgs(tool, args = {}) {
  const a = args ?? {};
  switch (tool) {
    case "create_codap_dataset": {
      const n = a.dataType === "custom" && Array.isArray(a.customData) ? a.customData.length : a.recordCount;
      return clip(`${quote(a.datasetName)} · ${a.dataType} · ${n} record${n === 1 ? "" : "s"}`);
    }
    case "add_codap_cases": {
      const n = Array.isArray(a.cases) ? a.cases.length : 0;
      return clip(`${quote(a.datasetName)} · ${n} case${n === 1 ? "" : "s"}`);
    }
    case "create_codap_graph":
      return clip(
        `${a.graphType} of ${quote(a.datasetName)}: x=${a.xAttribute}${a.yAttribute ? `, y=${a.yAttribute}` : ""}` +
          (a.includeImage ? " + picture" : ""),
      );
    case "get_codap_graph_image":
      return clip(`${a.graph === undefined ? "the only graph" : `graph ${quote(a.graph)}`}${a.maxSize ? ` · at most ${a.maxSize} px` : ""}`);
    case "get_codap_datasets":
      return "all datasets";
    case "get_codap_status":
      return clip(
        [a.includeDatasets === false ? null : "datasets", a.includeComponents === false ? null : "components"]
          .filter(Boolean)
          .join(" + ") || "version only",
      );
    case "export_codap_data":
      return clip(`${quote(a.datasetName)} as ${a.format ?? "json"}${a.includeMetadata ? " + metadata" : ""}`);
    case "codap_api":
      return clip(`${a.action} ${a.resource}`);
    default:
      return clip(genericSummary(a));
  }
}

/**
 * The host of a URL argument (the activity log shows where data comes from, never a whole URL's query).
 * @param {unknown} url
 */
function hostOf(url) {
  try {
    return new URL(String(url)).host || String(url);
  } catch {
    return String(url);
  }
}

// How the arguments the typed tools share read in the log, in this order; the rest follow as name=value.
/** @type {Array<[string, (value: any) => string]>} */
const SHARED_ARGS = [
  ["datasetName", (v) => quote(v)],
  ["graph", (v) => `graph ${quote(v)}`],
  ["component", (v) => `component ${quote(v)}`],
  ["name", (v) => quote(v)],
  ["attribute", (v) => `by ${quote(v)}`],
  ["attributes", (v) => (Array.isArray(v) ? v.map(quote).join(", ") : quote(v))],
  ["where", (v) => `where ${v}`],
  ["caseIds", (v) => (Array.isArray(v) ? `${v.length} case id${v.length === 1 ? "" : "s"}` : quote(v))],
  ["formula", (v) => `= ${v}`],
  ["url", (v) => `from ${hostOf(v)}`],
  ["csv", (v) => `${String(v).split("\n").filter((l) => l.trim()).length} CSV lines`],
];

/**
 * Any tool's arguments: the shared ones in a fixed order and words, the others as name=value.
 * @param {ToolArgs} args
 */
export function genericSummary(args) {
  const parts = [];
  const used = new Set();
  for (const [key, show] of SHARED_ARGS) {
    if (args[key] === undefined || args[key] === null) continue;
    parts.push(show(args[key]));
    used.add(key);
  }
  for (const [key, value] of Object.entries(args)) {
    if (used.has(key) || value === undefined) continue;
    parts.push(`${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  return parts.length ? parts.join(" · ") : "no arguments";
}

/**
 * One line about a tool's outcome ({result} or {error}): the error's message, or the first line of the result's
 * text (of its JSON when it has no text), at most `max` characters; null when there is no outcome.
 * @param {{result?: any, error?: {message?: string}} | null | undefined} body
 * @param {number} [max]
 */
export function firstLine(body, max = 300) {
  if (!body) return null;
  const text = body.error
    ? body.error.message ?? "failed"
    : body.result?.content?.find?.((/** @type {any} */ c) => c?.type === "text")?.text ?? JSON.stringify(body.result) ?? "";
  return clip(String(text).trim().split("\n")[0], max);
}

/** @param {number} ms */
export function formatDuration(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * "9:05" for 545 seconds; "expired" at zero or below.
 * @param {number} seconds
 */
export function formatTimeLeft(seconds) {
  if (!(seconds > 0)) return "expired";
  const s = Math.ceil(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${rest}` : `${m}:${rest}`;
}

/**
 * Groups of four for reading a code aloud: ABCD-EFGH. The copy button copies the plain code.
 * @param {string | null | undefined} code
 */
export function displayCode(code) {
  return code && code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code ?? "";
}

/**
 * @param {number} n
 * @param {string} word
 */
export function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
