// @ts-check
// The trace file: what a session did in CODAP, saved as JSON to keep, share, or run again on another document.
// Pure code: building the file from the relay's log, and reading one back (every check happens before anything
// runs, so a file that is refused changes nothing). docs/plugin.md documents the format.
//
//   {"format": "codap-relay-trace", "version": 1, "exportedAt": "<ISO time>", "plugin": "<plugin version>",
//    "calls": [{"tool", "args", "status", "summary", "error", "at", "completedAt", "latencyMs", "via"}]}
//
// No pairing code, browser token or request id goes into it. A later plugin reads every earlier version (it
// converts them) and refuses a later one with a message.

import { hashText } from "./data.js";
import { CONSENT_TOOL } from "./apps.js";
import { reviewRequest } from "./tools/policy.js";

/**
 * @import {ToolArgs, TraceCall, TraceEntry} from "./types.js"
 * @import {ToolDefinition} from "./tools/catalog.js"
 */

/**
 * The part of JSON Schema the plugin's tools use (what schemaProblem checks).
 * @typedef {object} JsonSchema
 * @property {string | string[]} [type]
 * @property {unknown[]} [enum]
 * @property {number} [minimum]
 * @property {number} [maximum]
 * @property {number} [minLength]
 * @property {number} [maxLength]
 * @property {JsonSchema} [items]
 * @property {string[]} [required]
 * @property {Record<string, JsonSchema>} [properties]
 * @property {boolean | JsonSchema} [additionalProperties]
 */

/** A call of a trace file as readTrace returns it. @typedef {{tool: string, args: ToolArgs, status: string, summary: string | null}} ReadCall */

/**
 * What a replay does with one call (replayPlan): run it, skip it (`why`), or refuse it (`why`, and the policy's
 * `rule`).
 * @typedef {{call: ReadCall, action: "run" | "skip" | "refuse", why?: string, rule?: string}} PlannedCall
 */

export const TRACE_FORMAT = "codap-relay-trace";
export const TRACE_VERSION = 1;
export const MAX_TRACE_BYTES = 20 * 1024 * 1024;
/** The most calls one replay runs (a longer trace is refused whole, before anything runs). */
export const MAX_REPLAY_CALLS = 500;

/** Why a file cannot be replayed; the message is for the person who chose it. */
export class TraceError extends Error {}

/**
 * The trace file for `relayed` (the relay's trace entries, oldest session first) and `replayed` (calls this tab
 * ran from a replayed trace, which the relay never saw), in the order they happened.
 * @param {{relayed: TraceEntry[], replayed?: TraceCall[], pluginVersion: string, exportedAt?: string}} sources
 */
export function buildTrace({ relayed, replayed = [], pluginVersion, exportedAt = new Date().toISOString() }) {
  /** @type {TraceCall[]} */
  const calls = [
    // the relay's own consent questions (apps.js) are no tool calls: a replay could not run them
    ...relayed.filter((e) => e.tool !== CONSENT_TOOL).map((e) => ({
      tool: e.tool,
      args: e.args ?? {},
      status: e.status,
      summary: e.summary ?? null,
      error: e.error ?? null,
      at: e.queuedAt,
      completedAt: e.completedAt ?? null,
      latencyMs: e.latencyMs ?? null,
      via: "llm",
    })),
    ...replayed.map((c) => ({ ...c, via: "replay" })),
  ];
  calls.sort((a, b) => String(a.at).localeCompare(String(b.at))); // ISO times in UTC sort as text
  return { format: TRACE_FORMAT, version: TRACE_VERSION, exportedAt, plugin: pluginVersion, calls };
}

/**
 * "codap-relay-trace-2026-05-04-1432.json" for a file saved at that (local) time.
 * @param {Date} [date]
 */
export function traceFileName(date = new Date()) {
  /** @param {number} n */
  const two = (n) => String(n).padStart(2, "0");
  const day = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
  return `codap-relay-trace-${day}-${two(date.getHours())}${two(date.getMinutes())}.json`;
}

/**
 * The calls of a trace file's text, checked against `tools` (this plugin's manifest): every call names a tool
 * this plugin has, with arguments its input schema accepts. Throws TraceError saying what is wrong.
 * @param {string} text
 * @param {ToolDefinition[]} tools
 * @returns {ReadCall[]}
 */
export function readTrace(text, tools) {
  let file;
  try {
    file = JSON.parse(text);
  } catch {
    throw new TraceError("This file is not a codap-relay trace: it is not JSON.");
  }
  if (!file || typeof file !== "object" || Array.isArray(file) || file.format !== TRACE_FORMAT) {
    throw new TraceError(`This file is not a codap-relay trace (it has no "format": "${TRACE_FORMAT}").`);
  }
  const { version } = file;
  if (!Number.isInteger(version) || version < 1) {
    throw new TraceError(`This trace is damaged: its version is ${JSON.stringify(version)}, not a whole number.`);
  }
  if (version > TRACE_VERSION) {
    throw new TraceError(
      `This trace was saved by a newer codap-relay plugin (trace version ${version}); this plugin reads traces up ` +
        `to version ${TRACE_VERSION}. Update codap-relay, then replay it again.`,
    );
  }
  if (!Array.isArray(file.calls)) throw new TraceError('This trace is damaged: it has no list of "calls".');
  const byName = new Map(tools.map((t) => [t.name, t]));
  return file.calls.map((/** @type {any} */ call, /** @type {number} */ i) => {
    const where = `Call ${i + 1} of ${file.calls.length}`;
    if (!call || typeof call !== "object" || Array.isArray(call)) throw new TraceError(`${where} is damaged: not an object.`);
    const spec = typeof call.tool === "string" ? byName.get(call.tool) : undefined;
    if (!spec) {
      throw new TraceError(
        `${where} uses the tool ${JSON.stringify(call.tool)}, which this plugin does not have. Its tools: ` +
          `${[...byName.keys()].join(", ")}.`,
      );
    }
    if (typeof call.status !== "string") throw new TraceError(`${where} (${call.tool}) is damaged: it has no status.`);
    const problem = schemaProblem(/** @type {JsonSchema | undefined} */ (spec.inputSchema), call.args, "args");
    if (problem) throw new TraceError(`${where} (${call.tool}) has arguments this plugin cannot run: ${problem}.`);
    return { tool: call.tool, args: call.args, status: call.status, summary: typeof call.summary === "string" ? call.summary : null };
  });
}

/**
 * What a replay does with each call: "run", "skip" with the reason, or "refuse" with the policy rule it breaks.
 * A replay re-creates what the session made, so it runs the calls that changed CODAP and succeeded: read-only
 * tools (by their annotations) and calls that failed or never finished when recorded are skipped. A raw request
 * the plugin's policy refuses (tools/policy.js) is never sent to CODAP: the confirmation marks it and the replay
 * passes over it. Every call that runs goes through its tool, so through the same policy as a live call.
 * @param {ReadCall[]} calls
 * @param {Set<string>} readOnlyTools
 * @returns {PlannedCall[]}
 */
export function replayPlan(calls, readOnlyTools) {
  return calls.map((call) => {
    if (readOnlyTools.has(call.tool)) return { call, action: "skip", why: "read-only" };
    if (call.status !== "completed") return { call, action: "skip", why: `${call.status} when recorded` };
    if (call.tool === "codap_api") {
      // as codap_api itself reviews it (text rebuilt, then the rules); the tool checks again when it runs
      const { refusal } = reviewRequest(call.args);
      if (refusal) return { call, action: "refuse", why: `refused by the plugin's policy (${refusal.rule.id})`, rule: refusal.rule.id };
    }
    return { call, action: "run" };
  });
}

/**
 * A short fingerprint of the calls: the same file gives the same key.
 * @param {ReadCall[]} calls
 */
export function traceKey(calls) {
  return hashText(JSON.stringify(calls.map((c) => [c.tool, c.args, c.status]))).toString(16);
}

/** @type {Record<string, (v: unknown) => boolean> & {object: (v: unknown) => v is Record<string, unknown>}} */
const TYPES = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number" && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === "boolean",
  array: (v) => Array.isArray(v),
  object: /** @type {(v: unknown) => v is Record<string, unknown>} */ ((v) => v !== null && typeof v === "object" && !Array.isArray(v)),
  null: (v) => v === null,
};

/**
 * The first way `value` breaks `schema`, or null. Covers the JSON Schema the plugin's own tools use (type,
 * enum, required, properties, additionalProperties: false, items, minimum/maximum, minLength/maxLength); the
 * relay checks every relayed call in full, and this keeps a damaged or hand-edited file from reaching CODAP.
 * @param {JsonSchema | boolean | null | undefined} schema
 * @param {unknown} value
 * @param {string} path
 * @returns {string | null}
 */
export function schemaProblem(schema, value, path) {
  if (!schema || typeof schema !== "object") return null;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => TYPES[t]?.(value))) return `${path} must be ${types.join(" or ")}`;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    return `${path} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`;
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `${path} must be at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${path} must be at most ${schema.maximum}`;
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) return `${path} is too short`;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `${path} is too long`;
  }
  if (Array.isArray(value) && schema.items) {
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(schema.items, value[i], `${path}[${i}]`);
      if (problem) return problem;
    }
  }
  if (TYPES.object(value)) {
    // Own properties only: "constructor", "toString" or "__proto__" must not pass through Object.prototype.
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(value, name)) return `${path}.${name} is missing`;
    }
    const properties = schema.properties ?? {};
    const names = Object.keys(value);
    if (Object.hasOwn(value, "__proto__") && !names.includes("__proto__")) names.push("__proto__");
    for (const name of names) {
      const item = value[name];
      if (Object.hasOwn(properties, name)) {
        const problem = schemaProblem(properties[name], item, `${path}.${name}`);
        if (problem) return problem;
      } else if (schema.additionalProperties === false) {
        return `${path}.${name} is not an argument of this tool`;
      }
    }
  }
  return null;
}
