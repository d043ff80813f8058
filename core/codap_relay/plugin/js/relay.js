// @ts-check
// The relay's HTTP API as the plugin calls it (sessions, answers, apps, the trace, a pushed request too big to
// push), each call with a deadline; its refusals as RelayHttpError with the Retry-After it named.

/**
 * @import {CreatedSession, OutcomeBody, SessionStatus, ToolRequest, TraceEntry} from "./types.js"
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
