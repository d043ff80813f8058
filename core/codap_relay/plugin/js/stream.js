// @ts-check
// The event stream (SSE) from the relay: reconnect with backoff, a cursor so no request is received twice, a
// heartbeat watchdog, and waiting for room when the relay's stream functions are all taken.

import { RelayHttpError, newTabId } from "./relay.js";
import { readEventData } from "./request_data.js";
import { RETRY_AFTER_CAP_SECONDS, backoffMs, retryAfterMs } from "./retry.js";

/**
 * @import {ChannelHandlers} from "./types.js"
 * @import {RelayClient} from "./relay.js"
 */

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
