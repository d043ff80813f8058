// @ts-check
// When to try again after the relay refused or could not be reached: backoff with jitter, the Retry-After it
// named (capped), and creating a session by waiting out the refusals that end by themselves.

import { RelayHttpError } from "./relay.js";

/**
 * @import {ToolDefinition} from "./tools/catalog.js"
 * @import {RelayClient} from "./relay.js"
 */

/**
 * A retry's pause: doubling from `base` with each `attempt` (0 first), at most `max`, with jitter.
 * @param {number} attempt
 * @param {{base?: number, max?: number, random?: () => number}} [options]
 */
export function backoffMs(attempt, { base = 500, max = 15_000, random = Math.random } = {}) {
  const exp = Math.min(max, base * 2 ** Math.max(0, attempt));
  return Math.round(exp * (0.75 + random() * 0.5)); // jitter so many tabs do not retry in step
}

/**
 * How long to wait after a refusal that named its Retry-After: never less than the relay asked, plus a random
 * share of it (at least 1 s, at most 15 s) so a class that was refused together does not come back together.
 * @param {number} seconds
 * @param {{random?: () => number}} [options]
 */
export function retryAfterMs(seconds, { random = Math.random } = {}) {
  const floor = Math.max(0, seconds) * 1000;
  const spread = Math.min(15_000, Math.max(1000, floor / 2));
  return Math.round(floor + random() * spread);
}

/** The longest Retry-After a retry honours: a wrong or huge one must not hold an answer back for long. */
export const RETRY_AFTER_CAP_SECONDS = 60;

/**
 * How long to wait before retrying after ``error``: the Retry-After the relay named (at most ``capSeconds``, with
 * retryAfterMs's jitter), else the ``backoff`` (backoffMs's options) of this ``attempt``.
 * @param {unknown} error
 * @param {number} attempt
 * @param {{capSeconds?: number, backoff?: {base?: number, max?: number}, random?: () => number}} [options]
 */
export function retryDelayMs(error, attempt, { capSeconds = RETRY_AFTER_CAP_SECONDS, backoff = {}, random = Math.random } = {}) {
  const seconds = error instanceof RelayHttpError ? error.retryAfter : null;
  if (seconds !== null && seconds !== undefined) return retryAfterMs(Math.min(seconds, capSeconds), { random });
  return backoffMs(attempt, { ...backoff, random });
}

/**
 * Why a session could not be created yet, when waiting will help; null when it will not.
 * @param {unknown} err
 */
export function waitReason(err) {
  if (!(err instanceof RelayHttpError)) return "unreachable"; // fetch failed: offline, relay down, blocked
  if (err.status === 429) return "busy";
  if (err.status === 503 || err.status === 502 || err.status === 504) return "unavailable";
  return null;
}

/**
 * Create a session, waiting out refusals that end by themselves: the per-address session limit (429, for its
 * Retry-After), a relay that is briefly unavailable, or one that cannot be reached (growing pauses). Before each
 * pause ``onWait({reason, ms, error})`` says why and for how long. Other refusals (bad input) are thrown.
 */
/**
 * @param {RelayClient} client
 * @param {ToolDefinition[]} tools the manifest to register
 * @param {{onWait?: (wait: {reason: string, ms: number, error: unknown}) => void,
 *   sleep?: (ms: number) => Promise<void>, random?: () => number}} [options]
 */
export async function createSessionWhenAllowed(client, tools, { onWait = () => {}, sleep, random = Math.random } = {}) {
  const pause = sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.createSession(tools);
    } catch (error) {
      const reason = waitReason(error);
      if (reason === null) throw error;
      // the session limit's Retry-After is the rest of its window (up to a minute): waited out in full
      const ms = retryDelayMs(error, attempt, { capSeconds: Infinity, backoff: { base: 1000, max: 30_000 }, random });
      onWait({ reason, ms, error });
      await pause(ms);
    }
  }
}
