// @ts-check
// The push channel (a WebSocket the relay posts to; docs/plugin.md): the same handlers as the SSE
// StreamConnection, with the order kept here. Requests run strictly in seq order: one that arrives past
// cursor + 1 is held and the plugin asks the relay to resume from its cursor; `resumed.upTo` moves the cursor
// past seqs that will never come (answered, withdrawn, expired). A handshake refused (a 429 or 5xx at $connect)
// is retried with backoff; if sockets keep being refused, or one cannot open or attach twice in a row (a CSP, a
// proxy that drops WebSockets), it stops and the page falls back to SSE (handlers.onFallback) for a while.

import { RelayHttpError, newTabId } from "./relay.js";
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
/**
 * The largest answer sent over the socket, in UTF-8 bytes: API Gateway takes a message of up to 128 KB; a larger
 * outcome (a picture) is posted to `/response` instead.
 */
export const ANSWER_MAX_BYTES = 120_000;
/** How long an answer sent over the socket may wait for the relay's word before it is posted instead. */
export const ANSWER_TIMEOUT_MS = 10_000;
/** No answer this long after a ping: the socket is dead even if it looks open (found within a ping and this). */
export const PING_REPLY_MS = 20_000;
/** No message for this many ping intervals: the socket is dead even if it looks open. */
export const WATCHDOG_PINGS = 2.5;
/** How late a hidden tab's timer may fire without the machine having slept: once a tab has been hidden a minute,
 * Chrome runs chained timers at most once a minute; a few seconds more for a loaded machine. */
export const HIDDEN_TIMER_LATE_MS = 65_000;

/**
 * @import {ChannelHandlers, ToolArgs, ToolRequest} from "./types.js"
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

export class PushConnection {
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
   * @param {{fetchRequest: (pointer: string, token: string) => Promise<ToolRequest>}} options.client the RelayClient
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
    client,
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
    this.client = client;
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
    /** @type {Map<number, PushMessage>} requests that came early (past cursor + 1), by seq */
    this.held = new Map();
    this.resuming = false; // a resume is asked for and its `resumed` not yet here
    /** @type {Promise<void>} */
    this._delivery = Promise.resolve(); // hand-overs in order, pointer fetches included
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
    /** @type {Map<string, {settle: (err: Error | null) => void}>} answers sent and not yet taken, by request id */
    this.answers = new Map();
  }

  /**
   * A call's outcome sent over the socket, which costs the relay a message instead of a REST request: resolves
   * when the relay took it, rejects with the RelayHttpError `POST /response` would have given, or with another
   * error when no word came (then the caller posts it). Null when the socket cannot carry it now (not attached,
   * or too large for one message): the caller posts it.
   * @param {string} id
   * @param {object} body `{result}` or `{error}`
   * @returns {Promise<void> | null}
   */
  answer(id, body) {
    if (!this.attached || this.ws?.readyState !== 1 || this.answers.has(id)) return null;
    const text = JSON.stringify({ action: "answer", ...this._session(), id, ...body });
    if (new TextEncoder().encode(text).length > ANSWER_MAX_BYTES) return null;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error("the relay said nothing of the answer")), ANSWER_TIMEOUT_MS);
      /** @param {Error | null} err */
      const settle = (err) => {
        clearTimeout(timer);
        this.answers.delete(id);
        if (err) reject(err);
        else resolve();
      };
      this.answers.set(id, { settle });
      try {
        /** @type {WebSocket} */ (this.ws).send(text);
      } catch (err) {
        settle(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** @param {number | null} [cursor] the last seq handed on */
  open(cursor = this.cursor) {
    this._teardown();
    this.stopped = false;
    this.cursor = cursor ?? null;
    this.held.clear();
    this.resuming = false;
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

  /** @param {PushMessage} message */
  _message(message) {
    this._kick();
    switch (message.event) {
      case "tool-request":
        this._request(message);
        return;
      case "resumed":
        this._resumed(message);
        return;
      case "cursor-reset":
        // the relay has fewer requests than the cursor says (its store was reset): it sends every unanswered
        // request again, then `resumed`, which sets the cursor anew; until then nothing runs
        this.cursor = null;
        this.held.clear();
        this.resuming = true;
        this.handlers.onCursorReset?.(message);
        return;
      case "answered":
        this.answers.get(String(message.id))?.settle(null);
        return;
      case "answer-refused": {
        const status = Number(message.status) || 500;
        const retry = Number(message.retryAfter) || null;
        const body = /** @type {import("./relay.js").RelayErrorBody} */ (/** @type {unknown} */ (message));
        this.answers.get(String(message.id))?.settle(new RelayHttpError(status, body, retry));
        return;
      }
      case "heartbeat":
        if (this.attached) this._startPings(); // the answer to a ping: the next from here (see _startPings)
        this.handlers.onAlive?.();
        return;
      case "withdrawn":
        this.handlers.onWithdrawn?.({ id: /** @type {string} */ (message.id), tool: /** @type {string} */ (message.tool), args: message.args });
        return;
      case "superseded":
        this.stop();
        this.handlers.onSuperseded();
        return;
      case "closed":
      case "expired":
        this.stop();
        this.handlers.onGone(message.event);
        return;
      case "error":
        if (!this.attached) {
          this._teardown(); // refused before it attached: as good as a socket that never opened
          this._failed();
        } else if (message.code === "not_attached") {
          // the relay no longer counts this socket as the session's (a detach, say): attach again
          this._teardown();
          this._scheduleReopen();
        }
        return;
      default:
    }
  }

  /** @param {PushMessage} message */
  _request(message) {
    const seq = Number(message.seq);
    if (!Number.isInteger(seq) || typeof message.id !== "string") return;
    if (this.cursor !== null && seq <= this.cursor) return; // handed on before: a redelivery
    this.held.set(seq, message);
    if (this.cursor === null || !this.attached) return; // the answer to attach sets the cursor first
    this._drain();
    if (this.held.size && !this.resuming) {
      // a gap: something before this seq has not come (yet); the relay sends everything after the cursor
      this.resuming = true;
      this._send({ action: "resume", ...this._session(), after: this.cursor });
    }
  }

  /** @param {PushMessage} message */
  _resumed(message) {
    const first = !this.attached;
    this.resuming = false;
    const upTo = Number.isInteger(message.upTo) ? message.upTo : null;
    // Everything the relay still has up to upTo came before this message: what is held up to there runs now,
    // in order, and the seqs between that never came are answered, withdrawn or expired.
    // (A relay that names no upTo vouches for what it sent: all of that is held.)
    const seqs = [...this.held.keys()].sort((a, b) => a - b);
    const through = upTo ?? seqs.at(-1) ?? 0;
    for (const seq of seqs) {
      if (seq > through) break;
      this._handOn(/** @type {PushMessage} */ (this.held.get(seq)));
    }
    this.cursor = Math.max(this.cursor ?? 0, through);
    this._drain();
    if (first) {
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
    if (this.held.size && !this.resuming) {
      // pushed past the end of that resume, with a gap still before it
      this.resuming = true;
      this._send({ action: "resume", ...this._session(), after: this.cursor });
    }
  }

  /** Hand on the held requests that follow the cursor without a gap. */
  _drain() {
    for (;;) {
      const next = (this.cursor ?? 0) + 1;
      const message = this.held.get(next);
      if (!message) {
        // drop what the cursor has passed (a resume's upTo or a redelivery)
        for (const seq of this.held.keys()) if (seq <= (this.cursor ?? 0)) this.held.delete(seq);
        return;
      }
      this._handOn(message);
      this.cursor = next;
    }
  }

  /** @param {PushMessage} message */
  _handOn(message) {
    this.held.delete(Number(message.seq));
    this._delivery = this._delivery.then(async () => {
      const request = message.pointer ? await this._fetch(message) : message;
      if (request && !this.stopped) {
        this.handlers.onRequest({
          id: /** @type {string} */ (request.id),
          tool: /** @type {string} */ (request.tool),
          args: request.args ?? {},
          seq: Number(message.seq),
          ...(message.unreadable ? { unreadable: message.unreadable } : {}),
        });
      }
    });
  }

  /**
   * A request too big to push, fetched by its pointer; retried until it comes or the relay says it is gone.
   * @param {PushMessage} message
   * @returns {Promise<ToolRequest | null>}
   */
  async _fetch(message) {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        return await this.client.fetchRequest(/** @type {string} */ (message.pointer), this.token);
      } catch (err) {
        // 404: answered or expired meanwhile; 401/403: a new session replaced this one
        if (err instanceof RelayHttpError && [401, 403, 404].includes(err.status)) return null;
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, this.backoff)));
      }
    }
    return null;
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
    // answers on their way over this socket are posted instead (the relay takes one answer once, either way)
    for (const { settle } of [...this.answers.values()]) settle(new Error("the socket closed"));
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
