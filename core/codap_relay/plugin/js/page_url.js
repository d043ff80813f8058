// @ts-check
// What the plugin page's URL sets: the relay it talks to (its own, or a local one ?relay= names) and the time
// limits ?watchdog=, ?handshake= and ?calls= give.

/**
 * A time limit from the page's URL (`?watchdog=`, `?handshake=`, `?calls=`), in milliseconds: the named parameter
 * in seconds, or `fallbackSeconds` where it is absent or not a positive number (a NaN limit would make every timer
 * fire at once).
 * @param {URLSearchParams} params
 * @param {string} name
 * @param {number} fallbackSeconds
 */
export function limitMsFrom(params, name, fallbackSeconds) {
  const seconds = Number(params.get(name));
  return (Number.isFinite(seconds) && seconds > 0 ? seconds : fallbackSeconds) * 1000;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The relay this page talks to: the one that served it (everything before /plugin/), or the one ?relay= names
 * if that is on this page's own origin or on this computer (loopback, a local codap-relay). Any other ?relay=
 * is refused with an error that says so: a link to a relay's plugin must not pair it with a stranger's relay,
 * whose code and copy buttons would then hand the LLM that relay's URLs. (The page's CSP limits where it may
 * connect too: http/guards.py.)
 * @param {{href: string}} location
 */
export function relayBaseFrom(location) {
  const url = new URL(location.href);
  const own = url.origin + url.pathname.replace(/\/plugin(\/.*)?$/, "");
  const override = url.searchParams.get("relay");
  if (!override) return own;
  /** @type {URL | null} */
  let target = null;
  try {
    target = new URL(override);
  } catch {
    target = null;
  }
  const allowed =
    target !== null &&
    (target.origin === url.origin ||
      ((target.protocol === "http:" || target.protocol === "https:") && LOOPBACK_HOSTS.has(target.hostname)));
  if (!allowed) {
    throw new Error(
      `?relay=${override} names a relay other than the one that served this plugin (${url.origin}) and not one ` +
        "on this computer, so the plugin will not use it. Open the plugin from that relay's own /plugin/ address",
    );
  }
  // allowed: target is a URL
  return (/** @type {URL} */ (target).origin + /** @type {URL} */ (target).pathname).replace(/\/+$/, "");
}
