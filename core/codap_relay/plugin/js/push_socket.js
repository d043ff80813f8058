// @ts-check
// The push channel's socket (a WebSocket the relay posts to; docs/plugin.md), kept alive: it attaches to the
// session, pings at the interval the relay names and counts a silent socket as dead (a laptop's sleep too), and
// reopens with backoff. A handshake refused (a 429 or 5xx at $connect) is retried; if sockets keep being refused, or
// one cannot open or attach twice in a row (a CSP, a proxy that drops WebSockets), it stops and the page falls back
// to SSE (handlers.onFallback) for a while. What the messages mean: push.js.

import { newTabId } from "./relay.js";
import { readEventData } from "./request_data.js";
import { backoffMs } from "./retry.js";

/** Consecutive failed opens/attaches after which the page uses SSE instead. */
export const FAILURES_BEFORE_FALLBACK = 2;
/**
 * Consecutive sockets closed before they opened after which the page uses SSE instead. A page cannot read the
 * handshake's status: API Gateway refusing $connect (429 when new connections come faster than the account's
 * quota, as at a school's first bell, or a 5xx) looks like a proxy refusing the upgrade. So these are retried with
 * backoff (0.5, 1, 2, 4, 8 s, jittered) and are not failures; only when they go on does the page fall back.
 */
export const REFUSALS_BEFORE_FALLBACK = 6;
/** No answer this long after a ping: the socket is dead even if it looks open (found within a ping and this). */
export const PING_REPLY_MS = 20_000;
/** No message for this many ping intervals: the socket is dead even if it looks open. */
export const WATCHDOG_PINGS = 2.5;
/** How late a hidden tab's timer may fire without the machine having slept: once a tab has been hidden a minute,
 * Chrome runs chained timers at most once a minute; a few seconds more for a loaded machine. */
export const HIDDEN_TIMER_LATE_MS = 65_000;

/**
 * @import {ChannelHandlers, ToolArgs} from "./types.js"
 */

/**
 * A message the relay pushes: a request (or the `pointer` to fetch a large one), the answer to attach or resume
 * (`resumed`), a heartbeat, a withdrawn request, the session's end, or an error.
 * @typedef {object} PushMessage
 * @property {string} event
 * @property {number | string} [seq]
 * @property {string} [id]
 * @property {string} [tool]
 * @property {ToolArgs} [args]
 * @property {string} [pointer]
 * @property {string} [unreadable]
 * @property {number} [upTo]
 * @property {number | string} [pingSeconds]
 * @property {string} [code]
 * @property {number} [status]
 * @property {number} [retryAfter]
 */

export class PushSocket {
  /**
   * @param {object} options
   * @param {string} options.base the relay's base URL
   * @param {string} options.url the session's push URL (wss://…, or ws:// on loopback)
   * @param {string} options.code the session's pairing code
   * @param {string} options.token the browser token
   * @param {ChannelHandlers} options.handlers onStatus, onRequest, onSuperseded, onGone,
   *   onAlive, onWithdrawn, onCursorReset, onFallback
   * @param {number} [options.watchdogMs] reconnect when nothing arrived for this long, until the relay names its
   *   ping interval (then 2.5 pings)
   * @param {number} [options.attachTimeoutMs] a socket not open and attached by then (from open()) has failed
   * @param {typeof WebSocket} [options.WebSocketImpl]
   * @param {string} [options.tab] this page's id: it leads the connection's consumer id at the relay
   * @param {{base?: number, max?: number, random?: () => number}} [options.backoff] backoffMs's options
   * @param {() => number} [options.now] the wall clock (ms): a ping timer that fires far too late means the
   *   machine slept, and the socket is then reopened at once instead of after 2.5 silent pings
   */
  constructor({
    base,
    url,
    code,
    token,
    handlers,
    watchdogMs = 45_000,
    attachTimeoutMs = 15_000,
    WebSocketImpl = globalThis.WebSocket,
    tab = newTabId(),
    backoff = {},
    now = () => Date.now(),
  }) {
    this.base = base;
    this.url = url;
    this.code = code;
    this.token = token;
    this.tab = tab;
    this.handlers = handlers;
    this.watchdogMs = watchdogMs;
    this.attachTimeoutMs = attachTimeoutMs;
    this.WebSocketImpl = WebSocketImpl;
    this.backoff = backoff;
    this.now = now;
    /** @type {WebSocket | null} */
    this.ws = null;
    /** @type {number | null} the last seq handed on (or skipped as never coming); null: none known yet */
    this.cursor = null;
    /** @type {number | null} */
    this.pingMs = null; // from the relay's answer to attach
    this.attached = false;
    this.attempt = 0;
    this.failures = 0; // opens/attaches that failed in a row
    this.refusals = 0; // sockets closed before they opened, in a row
    this.stopped = true;
    // Pending timers, null when none (clearTimeout and clearInterval take null, whatever their types say: hence
    // the casts where they are cleared).
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._watchdog = null;
    /** @type {number | null} when the watchdog fires (the wall clock's ms) */
    this._watchdogAt = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._ping = null;
    this._pingDue = 0; // when the pending ping should fire (ms, `now`'s clock)
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._retry = null;
  }

  /** @param {number | null} [cursor] the last seq handed on */
  open(cursor = this.cursor) {
    this._teardown();
    this.stopped = false;
    this.cursor = cursor ?? null;
    this.attached = false;
    let ws;
    try {
      ws = new this.WebSocketImpl(this.url);
    } catch {
      // a CSP that forbids the URL throws here in some browsers
      this._failed();
      return;
    }
    this.ws = ws;
    this._kick(this.attachTimeoutMs); // a socket that neither opens nor fails (a stalled proxy) has failed too
    /** @type {<E extends Event>(fn: (event: E) => void) => (event: E) => void} */
    const mine = (fn) => (event) => {
      if (this.ws === ws) fn(event);
    };
    let opened = false;
    ws.onopen = mine(() => {
      opened = true;
      this._send({ action: "attach", ...this._session(), tab: this.tab, after: this.cursor });
      this._kick(this.attachTimeoutMs);
    });
    ws.onmessage = mine((/** @type {MessageEvent<string>} */ event) => {
      const { data, unreadable, id, found } = readEventData(event.data);
      if (unreadable) {
        // a request whose id and seq can be read is answered with an error in its turn; anything else is shown
        if (id && found?.event === "tool-request") this._message({ ...found, args: {}, unreadable });
        else this.handlers.onUnreadable?.(unreadable);
        return;
      }
      if (data && typeof data === "object") this._message(data);
    });
    // A socket that fails fires error and then close; some stacks only one of them.
    ws.onerror = mine(() => this._lost(opened));
    ws.onclose = mine(() => this._lost(opened));
  }

  /** Close the socket and its timers, keeping the cursor: open() starts again (pagehide, bfcache). */
  pause() {
    this._teardown();
  }

  stop() {
    this.stopped = true;
    this._teardown();
  }

  /** Every message names its session: the relay keeps nothing per connection (a Lambda per message on AWS). */
  _session() {
    return { code: this.code, token: this.token };
  }

  /** @param {Record<string, unknown>} message */
  _send(message) {
    try {
      this.ws?.send(JSON.stringify(message));
    } catch {
      // a closing socket: its close event follows and reconnects
    }
  }

  /**
   * What a message the relay pushed means (push.js).
   * @param {PushMessage} message
   */
  _message(message) {}

  /**
   * The relay took this socket as the session's (its answer to attach): the pings start at the interval it named.
   * @param {PushMessage} message
   */
  _attachedNow(message) {
    this.attached = true;
    this.attempt = 0;
    this.failures = 0;
    this.refusals = 0;
    const ping = Number(message.pingSeconds);
    if (ping > 0) this.pingMs = ping * 1000;
    this._startPings();
    this._kick();
    this.handlers.onStatus("connected");
  }

  /**
   * The next ping, ``every`` from now. Each is set when the relay's answer to the last one (its heartbeat) arrives:
   * a timer set from a socket's message counts as a new one, while a timer set from a timer (or a setInterval)
   * counts as a chain, and once a tab has been hidden a minute Chrome runs a chain's timers at most once a minute
   * (intensive wake-up throttling; a ping every 20 s came every 60 s). Until the answer comes, the ping's own
   * timer sets the next one.
   */
  _startPings() {
    clearTimeout(/** @type {number} */ (this._ping));
    this._pingDue = this.now() + this._pingEvery();
    this._ping = setTimeout(() => this._pingNow(), this._pingEvery());
  }

  _pingEvery() {
    return this.pingMs ?? this.watchdogMs / WATCHDOG_PINGS;
  }

  _pingNow() {
    const every = this._pingEvery();
    // Timers stop while a laptop sleeps, and its socket rarely survives. A hidden tab's timer is late by up to a
    // minute: that is no sleep.
    const slept = this.now() - this._pingDue > Math.max(every, HIDDEN_TIMER_LATE_MS);
    if (slept) {
      this._lost();
      return;
    }
    this._send({ action: "ping", ...this._session(), after: this.cursor });
    // the relay answers every ping: silence after one means a dead socket (pings come minutes apart)
    this._tighten(PING_REPLY_MS);
    this._startPings();
  }

  /** (Re)arm the watchdog: after ``ms`` without a message the socket counts as dead. */
  _kick(ms = this.pingMs ? this.pingMs * WATCHDOG_PINGS : this.watchdogMs) {
    clearTimeout(/** @type {number} */ (this._watchdog));
    this._watchdogAt = this.now() + ms;
    this._watchdog = setTimeout(() => {
      if (this.stopped) return;
      this._lost();
    }, ms);
  }

  /**
   * Bring the watchdog forward to ``ms`` from now, never back (a ping's answer is due within it).
   * @param {number} ms
   */
  _tighten(ms) {
    if (this._watchdogAt === null || this.now() + ms < this._watchdogAt) this._kick(ms);
  }

  /** The socket died or went silent; ``opened``: false for a socket closed before it opened (refused). */
  _lost(opened = true) {
    if (this.stopped) return;
    const attached = this.attached;
    this._teardown();
    if (!attached) {
      if (opened) this._failed();
      else this._refused();
      return;
    }
    this.handlers.onStatus(globalThis.navigator?.onLine === false ? "offline" : "reconnecting");
    this._scheduleReopen();
  }

  /** An open or attach that failed: try again, or after two in a row fall back to SSE (for a while). */
  _failed() {
    this.failures += 1;
    this._retryOrFallBack(this.failures >= FAILURES_BEFORE_FALLBACK);
  }

  /** A handshake refused: try again after the backoff; fall back only when refusals go on. */
  _refused() {
    this.refusals += 1;
    this._retryOrFallBack(this.refusals >= REFUSALS_BEFORE_FALLBACK);
  }

  /** @param {boolean} fallBack */
  _retryOrFallBack(fallBack) {
    if (fallBack) {
      this.stop(); // open() later tries push again (the page does, after a while): the fall back is not for good
      this.failures = this.refusals = this.attempt = 0;
      this.handlers.onFallback?.();
      return;
    }
    this.handlers.onStatus("reconnecting");
    this._scheduleReopen();
  }

  _scheduleReopen() {
    if (this.stopped) return;
    clearTimeout(/** @type {number} */ (this._retry));
    this._retry = setTimeout(() => {
      if (!this.stopped) this.open(this.cursor);
    }, backoffMs(this.attempt++, this.backoff));
  }

  _teardown() {
    clearTimeout(/** @type {number} */ (this._watchdog));
    clearTimeout(/** @type {number} */ (this._ping));
    clearTimeout(/** @type {number} */ (this._retry));
    this._watchdog = this._ping = this._retry = this._watchdogAt = null;
    this.attached = false;
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      try {
        ws.close(1000);
      } catch {
        // already closed
      }
    }
  }
}
