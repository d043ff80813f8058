// @ts-check
// Slow CODAP, said out loud. CODAP answers the plugin on its page's one thread; where that page draws its WebGL
// graphs in software (a computer without a GPU, or with the browser's hardware acceleration off), each new graph
// blocks it for seconds, often tens, and every request waits, whatever it asks (docs/plugin.md, "When CODAP is
// slow"). The person sees a note while a message waits past SLOW_CODAP_MS; the model reads in the tool's answer
// how long CODAP took, why, and what fixes it; a timeout names the tool and the CODAP request it waited for.

import { SLOW_CODAP_MS } from "./codap.js";
import { ToolError } from "./errors.js";

export const SLOW_CAUSE =
  "CODAP answers on one thread, and a graph drawn with WebGL on a computer without graphics acceleration (a " +
  "virtual machine, a remote desktop, or hardware acceleration turned off in the browser) keeps it busy for " +
  "seconds.";
export const SLOW_FIX =
  "Fix: in CODAP's Settings menu choose \"Disable graphics acceleration\", or turn on hardware acceleration in " +
  "the browser's settings.";
/** Where the wait is reported in a result's `_meta` (MCP's field for data beside the tool's own). */
export const WAIT_META = "codap-relay/codap-wait";

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The plugin's status while a message waits: what it waits for, how long so far, the likely cause and the fix. */
export function slowStatusText({ request, waitedMs }) {
  return `CODAP is slow to answer (waiting ${seconds(waitedMs)} for "${request}"). ${SLOW_CAUSE} ${SLOW_FIX}`;
}

/**
 * Each tool, reporting CODAP's share of its time when CODAP was slow: a line in its text and `_meta[WAIT_META]`
 * ({codapMs, messages, slowestMs, slowestRequest, cause, fix}); a CODAP timeout names the tool as well.
 * @param {Record<string, (args: object, call?: {id: string}) => Promise<any>>} tools
 * @param {{takeWaits: () => {messages: number, totalMs: number, slowestMs: number, slowest: string}}} phone
 * @param {number} [slowMs]
 */
export function withCodapWaits(tools, phone, slowMs = SLOW_CODAP_MS) {
  /** @type {Record<string, (args: object, call?: {id: string}) => Promise<any>>} */
  const wrapped = {};
  for (const [name, fn] of Object.entries(tools)) {
    wrapped[name] = async (args, call) => {
      phone.takeWaits(); // one tool runs at a time: what came before is not this tool's
      let result;
      try {
        result = await fn(args, call);
      } catch (err) {
        phone.takeWaits();
        if (!(err instanceof ToolError && err.code === "codap_timeout")) throw err;
        throw new ToolError(`${name} was waiting for CODAP: ${err.message} ${SLOW_CAUSE} ${SLOW_FIX}`, err.code, {
          ...(err.data ?? {}),
          tool: name,
        });
      }
      return noteWaits(result, phone.takeWaits(), slowMs);
    };
  }
  return wrapped;
}

function noteWaits(result, waits, slowMs) {
  const text = result?.content?.[0];
  if (waits.slowestMs < slowMs || text?.type !== "text" || typeof text.text !== "string") return result;
  const line =
    `CODAP was slow: it took ${seconds(waits.totalMs)} to answer this call's ` +
    `${waits.messages === 1 ? "message" : `${waits.messages} messages`}, ${seconds(waits.slowestMs)} for ` +
    `"${waits.slowest}". ${SLOW_CAUSE} ${SLOW_FIX}`;
  const wait = {
    codapMs: Math.round(waits.totalMs),
    messages: waits.messages,
    slowestMs: Math.round(waits.slowestMs),
    slowestRequest: waits.slowest,
    cause: SLOW_CAUSE,
    fix: SLOW_FIX,
  };
  return {
    ...result,
    content: [{ ...text, text: `${text.text}\n${line}` }, ...result.content.slice(1)],
    _meta: { ...(result._meta ?? {}), [WAIT_META]: wait },
  };
}
