// @ts-check
// CODAP's busy signal while a tool runs: `indicateBusy` once a call has run longer than BUSY_DELAY_MS, and
// `indicateIdle` when it ends (answered, failed or timed out) if busy was shown. A quick call, most reads, shows
// nothing, so the page does not flicker on every call. With cursorMode CODAP 3.1.0 dims its page under a wait
// cursor (without it, CODAP shows its full splash screen); it drops the signal by itself after 60 s, so a longer
// call renews it. These are the plugin's own notices, not the model's requests: the policy's refusal of model
// changes to `interactiveFrame` does not apply to them. While CODAP's tab is hidden nobody sees the signal, and
// each message costs a background tab a second in Firefox: none is sent then (a call that ends shown again still
// takes its busy signal back).

/** @type {import("./types.js").CodapRequest} */
export const BUSY = { action: "notify", resource: "interactiveFrame", values: { request: "indicateBusy", cursorMode: true } };
/** @type {import("./types.js").CodapRequest} */
export const IDLE = { action: "notify", resource: "interactiveFrame", values: { request: "indicateIdle" } };
/** How long a call runs before CODAP shows busy: about what a person notices as a wait, longer than a quick read. */
export const BUSY_DELAY_MS = 400;
/** CODAP turns busy off after 60 s; the signal is renewed before that. */
export const RENEW_MS = 45_000;
/** How long a call's answer waits for CODAP to take the idle notice (so the page is usable when the answer comes). */
export const IDLE_WAIT_MS = 1000;

/**
 * Each tool, with CODAP shown busy while it runs past BUSY_DELAY_MS (calls that overlap share one busy period).
 * @param {Record<string, import("./types.js").Tool>} tools
 * @param {{notify: (request: import("./types.js").CodapRequest, waitMs?: number) => Promise<unknown>}} phone
 * @param {{setTimeout: typeof setTimeout, clearTimeout: typeof clearTimeout,
 *   setInterval: typeof setInterval, clearInterval: typeof clearInterval}} [timers]
 * @param {() => boolean} [hidden] whether CODAP's tab is hidden now
 */
export function withBusySignal(tools, phone, timers = globalThis, hidden = () => false) {
  let running = 0;
  /** @type {ReturnType<typeof setTimeout> | null} */
  let delay = null;
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let renew;
  let shown = false;
  const show = () => {
    delay = null;
    if (hidden()) return;
    shown = true;
    phone.notify(BUSY, 0); // CODAP takes it in order with the call's own messages
    renew = timers.setInterval(() => hidden() || phone.notify(BUSY, 0), RENEW_MS);
  };
  const start = () => {
    running += 1;
    if (running === 1) delay = timers.setTimeout(show, BUSY_DELAY_MS);
  };
  const end = async () => {
    running -= 1;
    if (running > 0) return;
    if (delay !== null) timers.clearTimeout(delay);
    delay = null;
    if (!shown) return;
    shown = false;
    timers.clearInterval(renew);
    await phone.notify(IDLE, IDLE_WAIT_MS);
  };
  /** @type {Record<string, import("./types.js").Tool>} */
  const wrapped = {};
  for (const [name, fn] of Object.entries(tools)) {
    wrapped[name] = async (args, call) => {
      start();
      try {
        return await fn(args, call);
      } finally {
        await end();
      }
    };
  }
  return wrapped;
}
