// @ts-check
// Talking to the relay: plain HTTP calls (session, response, status) and the SSE stream with
// reconnect/backoff, a cursor, and a heartbeat watchdog.

/**
 * @import {ChannelHandlers, CreatedSession, OutcomeBody, SessionStatus, ToolRequest, TraceEntry} from "./types.js"
 * @import {ToolDefinition} from "./tools/catalog.js"
 */

/** The relay's error body, when it sent one: `{message, code, …}`. @typedef {{message?: string, code?: string, [key: string]: unknown}} RelayErrorBody */

export class RelayHttpError extends Error {
  /**
   * @param {number} status
   * @param {RelayErrorBody | null} body
   * @param {number | null} [retryAfter]
   */
  constructor(status, body, retryAfter = null) {
    super(body?.message ?? `relay answered HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter; // seconds, from the Retry-After header (429 and 503)
  }
}

/** The relay took the call but gave no whole answer in time (a hung connection, a stalled proxy). Callers treat
 * it as they treat an unreachable relay: retry later. */
export class RelayTimeoutError extends Error {
  /** @param {number} seconds */
  constructor(seconds) {
    super(`the relay did not answer within ${seconds} s`);
    this.seconds = seconds;
  }
}

/** How long a call may take before it counts as lost: long enough for a slow school network, short enough that
 * a connection nobody answers never leaves the plugin waiting for ever. An answer carries up to a few megabytes:
 * it gets more time by its size, at a slow link's pace; a pointed-to request (size unknown) gets the most. */
export const CALL_TIMEOUT_MS = 20_000;
export const TRANSFER_TIMEOUT_MS = 120_000;
export const SLOW_LINK_BYTES_PER_SECOND = 32_000; // 256 kbit/s

/**
 * Retry-After in seconds: a number of seconds or an HTTP date; null when absent or unreadable.
 * @param {string | number | null | undefined} value
 * @param {number} [now]
 * @returns {number | null}
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (value === null || value === undefined || value === "") return null;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

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

export class RelayClient {
  /**
   * @param {string} base the relay's base URL
   * @param {typeof fetch} [fetchImpl]
   * @param {{callMs?: number, transferMs?: number}} [timeouts] how long a call may take, and a download of a
   *   pointed-to request (an answer's upload gets callMs plus its size at SLOW_LINK_BYTES_PER_SECOND)
   */
  constructor(base, fetchImpl = globalThis.fetch.bind(globalThis), { callMs = CALL_TIMEOUT_MS, transferMs = TRANSFER_TIMEOUT_MS } = {}) {
    this.base = base;
    this.fetch = fetchImpl;
    this.callMs = callMs;
    this.transferMs = transferMs;
    /** @type {string | null} the plugin's key in this browser (apps.js), sent when it opens a session */
    this.identity = null;
  }

  /**
   * ``read(res)`` within ``ms`` of sending, the body included: past it the call is aborted (RelayTimeoutError).
   * @template T
   * @param {string} url
   * @param {RequestInit} init
   * @param {number} ms
   * @param {(res: Response, signal: AbortSignal) => Promise<T>} read
   * @returns {Promise<T>}
   */
  async _within(url, init, ms, read) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ms);
    try {
      return await read(await this.fetch(url, { ...init, signal: controller.signal }), controller.signal);
    } catch (err) {
      if (controller.signal.aborted) throw new RelayTimeoutError(Math.round(ms / 1000));
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The relay's JSON answer to `path` (null when it has no body); a refusal throws RelayHttpError.
   * @param {string} path
   * @param {RequestInit} [init]
   * @param {number} [ms]
   * @returns {Promise<any>} the answer's JSON, whose shape each caller names
   */
  async _json(path, init = {}, ms = this.callMs) {
    return this._within(this.base + path, init, ms, async (res, signal) => {
      /** @type {any} */
      let body = null;
      try {
        body = await res.json();
      } catch (err) {
        if (signal.aborted) throw err; // the deadline passed while the body came: a timeout, not an empty body
        body = null;
      }
      if (!res.ok) throw new RelayHttpError(res.status, body, parseRetryAfter(res.headers?.get?.("Retry-After")));
      return body;
    });
  }

  /**
   * @param {ToolDefinition[]} tools the tools to register
   * @returns {Promise<CreatedSession>}
   */
  createSession(tools) {
    // ``identity``: the key this browser keeps for the plugin (apps.js); apps connected by OAuth follow it
    const body = this.identity ? { tools, identity: this.identity } : { tools };
    return this._json("/api/sessions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  /**
   * The apps connected to this plugin through OAuth: {persistent, apps: [{id, app, connectedAt}]}.
   * @param {string} code
   * @param {string} token
   * @returns {Promise<{persistent: boolean, apps: Array<{id: string, app: string, connectedAt: string}>}>}
   */
  connectedApps(code, token) {
    return this._json(`/api/sessions/${encodeURIComponent(code)}/grants`, {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
    });
  }

  /** @param {string} code @param {string} token @param {string} id */
  disconnectApp(code, token, id) {
    return this._json(`/api/sessions/${encodeURIComponent(code)}/grants/${encodeURIComponent(id)}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${token}` },
    });
  }

  /** The session's public status, or null when the relay no longer knows the code. With the browser ``token``
   * it is also a sign of life: the relay slides the code's expiry (the stream cannot, while it waits for room).
   * @param {string} code
   * @param {string | null} [token]
   * @returns {Promise<SessionStatus | null>}
   */
  async sessionStatus(code, token = null) {
    try {
      const init = token ? { headers: { Authorization: `Bearer ${token}` } } : {};
      return await this._json(`/api/sessions/${encodeURIComponent(code)}`, init);
    } catch (err) {
      if (err instanceof RelayHttpError && err.status === 404) return null;
      throw err;
    }
  }

  /**
   * ``keepalive`` lets the call outlive the page (sent while the frame unloads).
   * @param {string} code
   * @param {string} token
   * @param {{keepalive?: boolean}} [options]
   */
  endSession(code, token, { keepalive = false } = {}) {
    return this._json(`/api/sessions/${encodeURIComponent(code)}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${token}` },
      keepalive,
    });
  }

  /** This tab is going away (pagehide): its stream ends at the relay's next poll and the LLM sees the plugin as
   * not connected. Bodiless, no headers (the token rides in the query, as the stream's does): a keepalive fetch
   * that needs no CORS preflight, so it leaves while the page unloads.
   * @param {string} code
   * @param {string} token
   * @param {string} tab
   */
  detach(code, token, tab) {
    const params = new URLSearchParams({ tab, token });
    return this._json(`/api/sessions/${encodeURIComponent(code)}/detach?${params}`, { method: "POST", keepalive: true });
  }

  /** Whether a stream could start now (204), else a RelayHttpError: 503 with Retry-After when the relay's stream
   * functions are all taken. EventSource hides a refused stream's status; this shows it.
   * @param {string} code
   * @param {string} token
   */
  async checkStream(code, token) {
    const params = new URLSearchParams({ code, token, mode: "check" });
    await this._json(`/stream?${params}`, { cache: "no-store" }); // 204: no body, read as null
    return true;
  }

  /** Every entry of a session's trace (GET …/log?view=trace, page by page); the relay answers for a while
   * after the session ended.
   * @param {string} code
   * @param {string} token
   */
  async traceEntries(code, token) {
    /** @type {TraceEntry[]} */
    const entries = [];
    /** @type {number | null | undefined} */
    let after = 0;
    while (after !== null && after !== undefined) {
      /** @type {{entries: TraceEntry[], next?: number | null}} */
      const page = await this._json(`/api/sessions/${encodeURIComponent(code)}/log?view=trace&after=${after}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      entries.push(...page.entries);
      after = page.next;
    }
    return entries;
  }

  /**
   * A request too big to push (the push channel's `pointer`, a path under the relay): {id, tool, args, seq}.
   * @param {string} pointer
   * @param {string} token
   * @returns {Promise<ToolRequest>}
   */
  fetchRequest(pointer, token) {
    return this._json(pointer, { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" }, this.transferMs);
  }

  /**
   * What CODAP said changed (changes.js), to the session's `changes` path that a long-lived relay gave.
   * @param {string} path
   * @param {string} token
   * @param {unknown} note
   */
  postChanges(path, token, note) {
    return this._json(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify(note),
    });
  }

  /**
   * A call's outcome, to the relay (a consent question's answer is one too: `{result: {allow}}`).
   * @param {string} code
   * @param {string} token
   * @param {string} id
   * @param {OutcomeBody | {result: {allow: boolean, number?: string, reason?: string}}} body
   */
  postResponse(code, token, id, body) {
    const text = JSON.stringify({ code, id, ...body });
    // ?code= lets the relay check the token before it reads the body (up to 3 MB)
    return this._json(`/response?code=${encodeURIComponent(code)}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: text,
    }, this._uploadMs(text));
  }

  /**
   * A call's deadline plus the time ``text`` takes to send over a slow link.
   * @param {string} text
   */
  _uploadMs(text) {
    return this.callMs + Math.ceil((text.length / SLOW_LINK_BYTES_PER_SECOND) * 1000);
  }
}

/** An id for this page (16 random bytes, hex): crypto.getRandomValues works outside secure contexts too. */
export function newTabId() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

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
 * One logical stream per session. EventSource reconnects by itself after network errors and sends
 * Last-Event-ID; when it gives up (HTTP error) or the watchdog sees silence, we reopen it ourselves with
 * the cursor as ?lastEventId=.
 */
export class StreamConnection {
  /**
   * @param {object} options
   * @param {string} options.base the relay's base URL
   * @param {string} options.code the session's pairing code
   * @param {string} options.token the browser token
   * @param {ChannelHandlers} options.handlers onStatus, onRequest, onSuperseded, …
   * @param {number} [options.watchdogMs] reconnect when nothing arrived for this long
   * @param {typeof EventSource} [options.EventSourceImpl]
   * @param {RelayClient} options.client
   * @param {string} [options.tab] this page's id: it leads the stream's id at the relay, so the page can detach it
   */
  constructor({ base, code, token, handlers, watchdogMs = 45_000, EventSourceImpl = globalThis.EventSource, client, tab = newTabId() }) {
    this.base = base;
    this.code = code;
    this.token = token;
    this.tab = tab;
    this.handlers = handlers;
    this.watchdogMs = watchdogMs;
    this.EventSourceImpl = EventSourceImpl;
    this.client = client;
    /** @type {EventSource | null} */
    this.es = null;
    /** @type {number | null} the last request's event id: a reopened stream starts after it */
    this.cursor = null;
    this.attempt = 0;
    this.waitingForRoom = false;
    this.stopped = true;
    // Pending timers, null when none (clearTimeout takes null, whatever its type says: hence the casts where they
    // are cleared).
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._watchdog = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._retry = null;
  }

  /** @param {number | null} [cursor] the event id to start after */
  open(cursor = this.cursor) {
    this._teardown();
    this.stopped = false;
    this.cursor = cursor;
    const params = new URLSearchParams({ code: this.code, token: this.token, tab: this.tab });
    if (cursor !== null && cursor !== undefined) params.set("lastEventId", String(cursor));
    const es = new this.EventSourceImpl(`${this.base}/stream?${params}`);
    this.es = es;
    // Armed before the stream opens: a connection the relay (or a proxy) accepted and never answers is given up
    // after watchdogMs, as a silent open stream is, instead of "Reconnecting…" for ever.
    this._kick();
    /** @type {(fn: (event: MessageEvent<string>) => void) => (event: Event) => void} */
    const mine = (fn) => (event) => {
      if (this.es === es) fn(/** @type {MessageEvent<string>} */ (event));
    };
    es.onopen = mine(() => {
      this.attempt = 0;
      this._kick();
      this.handlers.onStatus("connected");
    });
    es.addEventListener("tool-request", mine((event) => {
      this._kick();
      this.cursor = Number(event.lastEventId) || this.cursor;
      const seq = Number(event.lastEventId) || 0;
      const { data, unreadable, id, tool } = readEventData(event.data);
      if (unreadable) {
        // answered with an error the model sees; without an id there is nothing to answer, so the person is told
        if (id) this.handlers.onRequest({ id, tool: tool ?? "unknown", args: {}, seq, unreadable });
        else this.handlers.onUnreadable?.(unreadable);
        return;
      }
      this.handlers.onRequest({ ...data, seq });
    }));
    es.addEventListener("withdrawn", mine((event) => {
      // a request the model withdrew before this plugin received it: never run, shown in the activity log
      try {
        this.handlers.onWithdrawn?.(JSON.parse(event.data));
      } catch {
        // not for the log, then
      }
    }));
    es.addEventListener("heartbeat", mine(() => {
      this._kick();
      this.handlers.onAlive?.();
    }));
    es.addEventListener("cursor-reset", mine((event) => {
      this._kick();
      this.cursor = null;
      this.handlers.onCursorReset?.(JSON.parse(event.data || "{}"));
    }));
    es.addEventListener("reconnect", mine(() => {
      this.handlers.onStatus("reconnecting"); // the browser reconnects after the retry delay
    }));
    es.addEventListener("superseded", mine(() => {
      this.stop();
      this.handlers.onSuperseded();
    }));
    for (const kind of ["closed", "expired"]) {
      es.addEventListener(kind, mine(() => {
        this.stop();
        this.handlers.onGone(kind);
      }));
    }
    es.onerror = mine(() => {
      if (es.readyState !== 2) {
        // EventSource retries by itself; the watchdog keeps running, so a retry that hangs is given up on
        this.handlers.onStatus("reconnecting");
        return;
      }
      this._clearWatchdog();
      this._recover();
    });
  }

  /**
   * After the stream failed for good (an HTTP error, which EventSource does not show): is the code still alive
   * (the call, with the token, also keeps it so), and is there room for a stream? A relay whose stream functions
   * are all taken answers 503 with Retry-After: then say so (``onWaitForRoom``) and look again after that long,
   * as often as it takes; the code stays alive meanwhile. Otherwise reopen with backoff.
   */
  async _recover() {
    if (this.stopped) return;
    if (!this.waitingForRoom) this.handlers.onStatus(globalThis.navigator?.onLine === false ? "offline" : "reconnecting");
    try {
      const status = await this.client.sessionStatus(this.code, this.token);
      if (status === null) {
        this.stop();
        this.handlers.onGone("expired");
        return;
      }
      this.handlers.onAlive?.();
    } catch {
      // relay unreachable: keep retrying with backoff
    }
    if (this.stopped) return;
    try {
      await this.client.checkStream(this.code, this.token);
      if (this.waitingForRoom) this.attempt = 0; // room at last: connect at once
      this.waitingForRoom = false;
    } catch (err) {
      // 503: the stream functions are all taken; 429: the gateway's limit for the stream route. Both say when.
      const full = err instanceof RelayHttpError && (err.status === 503 || err.status === 429);
      if (full && err.retryAfter !== null && !this.stopped) {
        const ms = retryAfterMs(Math.min(err.retryAfter, RETRY_AFTER_CAP_SECONDS));
        this.waitingForRoom = true;
        this.handlers.onStatus("room");
        this.handlers.onWaitForRoom?.({ ms });
        clearTimeout(/** @type {number} */ (this._retry));
        this._retry = setTimeout(() => this._recover(), ms);
        return;
      }
      // anything else: the reopened stream meets it and reports it itself
    }
    this._scheduleReopen();
  }

  _scheduleReopen() {
    if (this.stopped) return;
    clearTimeout(/** @type {number} */ (this._retry));
    const delay = backoffMs(this.attempt++);
    this._retry = setTimeout(() => {
      if (!this.stopped) this.open(this.cursor);
    }, delay);
  }

  _kick() {
    this._clearWatchdog();
    this._watchdog = setTimeout(() => {
      // no heartbeat for too long: the connection is dead even if the socket looks open
      if (this.stopped) return;
      this.handlers.onStatus("reconnecting");
      this._teardown();
      this._scheduleReopen();
    }, this.watchdogMs);
  }

  _clearWatchdog() {
    clearTimeout(/** @type {number} */ (this._watchdog));
    this._watchdog = null;
  }

  _teardown() {
    this._clearWatchdog();
    clearTimeout(/** @type {number} */ (this._retry));
    if (this.es) {
      const es = this.es;
      this.es = null;
      es.close();
    }
  }

  stop() {
    this.stopped = true;
    this._teardown();
  }
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
