// @ts-check
// CODAP's side channel: the iframe-phone protocol over window.postMessage.
//   child -> parent {type: "hello"} every 200 ms until the parent answers {type: "hello"};
//   calls are {type: "data-interactive", content: {messageType: "call", uuid, value}} and the answer
//   comes back as messageType "returnValue" with the same uuid. CODAP may call us too (e.g.
//   {message: "codap-present"} and notifications); we answer those with {success: true}.
//
// CODAP answers one message per browser task, after whatever it is drawing. On a machine that draws graphs in
// software (no GPU), a new graph can keep it busy for many seconds. A read that waits too long fails harmlessly,
// but a change that timed out may still be carried out afterwards, so changes get a much longer wait and their
// timeout error says the outcome is unknown.
// Each message's round trip is recorded as a User Timing measure "codap-relay message <n>" (detail: how many
// requests it held), so the browser's performance tools and the benchmark see how long a tool waited for CODAP.
// A message unanswered after SLOW_CODAP_MS is reported (onSlow), and every wait is summed (takeWaits), so the
// person and the model hear why a call takes long: CODAP answers on its page's one thread, and where that page
// draws its WebGL graphs in software (no GPU), a new graph can block it for seconds whatever the plugin asks.

import { ToolError } from "./errors.js";
import { isCodapSuccess } from "./types.js";

/** @import {CodapRequest, CodapWaits} from "./types.js" */

/**
 * A message CODAP has not answered yet.
 * @typedef {object} Waiter
 * @property {(value: unknown) => void} resolve
 * @property {ReturnType<typeof setTimeout>} timer
 * @property {number} requests how many requests the message holds
 * @property {number | undefined} sentAt the timeline's time it went out
 * @property {number} started
 * @property {string} described
 * @property {boolean} slow
 * @property {ReturnType<typeof setTimeout> | null} slowTimer
 */

/**
 * What goes over postMessage: the handshake, or a call or its answer.
 * @typedef {{type: "hello"} | {type: string, content: {messageType: string, uuid: string, value: unknown}}} PhoneMessage
 */

const NAMESPACE = "data-interactive";
const MESSAGE_MEASURE = "codap-relay message";
const MAX_MEASURES = 500; // the newest are kept
/** A CODAP message unanswered this long is "slow": the plugin says so, and the tool's answer tells the model. */
export const SLOW_CODAP_MS = 3000;

/**
 * A request as a person reads it: `get componentList`, or the first few of an array (`…, and 2 more`).
 * @param {CodapRequest | CodapRequest[]} request
 */
export function describeRequest(request) {
  const all = Array.isArray(request) ? request : [request];
  /** @param {Partial<CodapRequest> | null | undefined} r */
  const one = (r) => `${r?.action ?? "?"} ${r?.resource ?? "?"}`;
  const shown = all.slice(0, 2).map(one).join(", ");
  return all.length > 2 ? `${shown}, and ${all.length - 2} more` : shown;
}

/**
 * No waits yet: the shape takeWaits returns.
 * @returns {CodapWaits}
 */
function noWaits() {
  return { messages: 0, totalMs: 0, slowestMs: 0, slowest: "" };
}

let counter = 0;
function newUuid() {
  counter += 1;
  const random = globalThis.crypto?.randomUUID ? globalThis.crypto.randomUUID() : Math.random().toString(36).slice(2);
  return `${random}-${counter}`;
}

/**
 * A tuple origin postMessage can target; null for an opaque ("null") or missing one.
 * @param {unknown} origin
 * @returns {string | null}
 */
function originOrNull(origin) {
  return typeof origin === "string" && /^https?:\/\/[^/]+$/.test(origin) ? origin : null;
}

export class CodapPhone {
  constructor({
    win = globalThis.window,
    timeoutMs = 20_000,
    changeTimeoutMs = 120_000,
    helloIntervalMs = 200,
    helloTimeoutMs = 60_000,
    onNotification = /** @type {(notice: any) => void} */ (() => {}),
    timeline = globalThis.performance,
    slowMs = SLOW_CODAP_MS,
    onSlow = /** @type {(slow: {request: string, waitedMs: number} | null) => void} */ (() => {}),
    now = () => Date.now(),
  } = {}) {
    this.win = win;
    this.parent = win?.parent;
    this.embedded = Boolean(win && this.parent && this.parent !== win);
    // Where our messages may go: CODAP's origin once known. The browser names the parent's origin up front
    // (location.ancestorOrigins, Chrome and Safari); otherwise the first message from the parent (its hello)
    // names it. Until then only the hello goes out, to "*": it carries nothing, and CODAP's origin is not
    // fixed (codap.concord.org, codap3, a school's own build), so it cannot be named before CODAP speaks.
    this.parentOrigin = originOrNull(win?.location?.ancestorOrigins?.[0]);
    this.timeoutMs = timeoutMs;
    this.changeTimeoutMs = changeTimeoutMs;
    this.helloIntervalMs = helloIntervalMs;
    this.helloTimeoutMs = helloTimeoutMs;
    this.onNotification = onNotification;
    this.timeline = timeline;
    this.measured = 0; // messages measured so far; each measure is named by its number
    this.slowMs = slowMs;
    this.onSlow = onSlow;
    this.now = now;
    this.slowPending = 0; // messages past slowMs still unanswered
    this.waits = noWaits();

    this.connected = false;
    /** @type {Map<string, Waiter>} */
    this.pending = new Map();
    /** @type {Map<string, (value: unknown) => void>} uuid -> resolve, for notify() */
    this.notices = new Map();
    /** @type {PhoneMessage[]} */
    this.queue = [];
    /** @type {ReturnType<typeof setInterval> | null} */
    this._helloTimer = null;
    /** @param {MessageEvent} event */
    this._listener = (event) => this._receive(event);
    /** @type {() => void} */
    this._resolveConnected = () => {};
    /** @type {Promise<void>} */
    this._whenConnected = new Promise((resolve) => (this._resolveConnected = resolve));
  }

  start() {
    if (!this.embedded) return;
    this.win.addEventListener("message", this._listener);
    const hello = () => this._post({ type: "hello" });
    hello();
    this._helloTimer = this.win.setInterval(hello, this.helloIntervalMs);
    this.win.setTimeout(() => this._stopHello(), this.helloTimeoutMs);
  }

  /** Resolves once CODAP answered the handshake. */
  whenConnected() {
    return this._whenConnected;
  }

  /**
   * Send one request (or an array of them) and resolve with CODAP's reply (or array of replies).
   * @param {CodapRequest | CodapRequest[]} request
   * @returns {Promise<unknown>} a CodapReply, or an array of them for an array (the caller checks which)
   */
  call(request) {
    if (!this.embedded) {
      return Promise.reject(
        new ToolError(
          "The plugin is not running inside CODAP, so it cannot reach CODAP. Open it in CODAP: " +
            "https://codap.concord.org/app/?di=<plugin URL>.",
          "codap_unavailable",
        ),
      );
    }
    const uuid = newUuid();
    const changes = (Array.isArray(request) ? request : [request]).some((r) => r?.action !== "get");
    const timeoutMs = changes ? this.changeTimeoutMs : this.timeoutMs;
    const described = describeRequest(request);
    return new Promise((resolve, reject) => {
      const expire = () => {
        const waiter = this.pending.get(uuid);
        // A hidden tab's timers are slowed by the browser (Firefox runs CODAP's message queue a second late at
        // best, later on a busy machine): a read there waits as long as a change before it counts as unanswered.
        const waited = waiter ? this.now() - waiter.started : timeoutMs;
        if (waiter && this._hidden() && waited < this.changeTimeoutMs) {
          waiter.timer = this.win.setTimeout(expire, Math.min(timeoutMs, this.changeTimeoutMs - waited));
          return;
        }
        this.pending.delete(uuid);
        if (waiter) this._settle(waiter);
        const waiting = this.connected ? "did not answer" : "did not complete the plugin handshake";
        const outcome = changes && this.connected
          ? "It may still carry out the change: check CODAP's state (get_codap_status) before sending it again."
          : "Check that CODAP is open and responsive, then try again.";
        const waitedMs = Math.max(timeoutMs, waited);
        reject(
          new ToolError(
            `CODAP ${waiting} "${described}" within ${Math.round(waitedMs / 1000)} s. ${outcome}`,
            "codap_timeout",
            { codapRequest: described, waitedMs },
          ),
        );
      };
      const timer = this.win.setTimeout(expire, timeoutMs);
      const requests = Array.isArray(request) ? request.length : 1;
      /** @type {Waiter} */
      const waiter = { resolve, timer, requests, sentAt: this.timeline?.now(), started: this.now(), described, slow: false, slowTimer: null };
      // Told once per message when it passes slowMs, and again (null) when no slow message is left. Before the
      // handshake the wait is not CODAP's slowness (main.js says "no answer yet" then).
      waiter.slowTimer = this.win.setTimeout(() => {
        if (!this.pending.has(uuid) || !this.connected) return;
        waiter.slow = true;
        this.slowPending += 1;
        // At least slowMs: a timer can fire a millisecond before the clock it is read against has moved on that far.
        this.onSlow({ request: described, waitedMs: Math.max(this.slowMs, this.now() - waiter.started) });
      }, this.slowMs);
      this.pending.set(uuid, waiter);
      const message = { type: NAMESPACE, content: { messageType: "call", uuid, value: request } };
      if (this.connected) this._post(message);
      else this.queue.push(message);
    });
  }

  /**
   * A notice of the plugin's own to CODAP (busy, idle, an undo entry): sent like a call, but never counted as a
   * tool's wait or reported slow, and never failing. Resolves with CODAP's reply, or null after `waitMs`.
   * @param {CodapRequest} request
   * @param {number} [waitMs]
   * @returns {Promise<unknown>}
   */
  notify(request, waitMs = 1000) {
    if (!this.embedded) return Promise.resolve(null);
    const uuid = `notice-${newUuid()}`;
    return new Promise((resolve) => {
      const timer = this.win.setTimeout(() => {
        this.notices.delete(uuid);
        resolve(null);
      }, waitMs);
      this.notices.set(uuid, (value) => {
        this.win.clearTimeout(timer);
        resolve(value);
      });
      const message = { type: NAMESPACE, content: { messageType: "call", uuid, value: request } };
      if (this.connected) this._post(message);
      else this.queue.push(message);
    });
  }

  /**
   * How long CODAP took since the last call of this: messages answered (or timed out), their total wait, and the
   * slowest with its request. The plugin runs one tool at a time, so between two calls it is one tool's share.
   */
  takeWaits() {
    const waits = this.waits;
    this.waits = noWaits();
    return waits;
  }

  /** Whether the plugin's page is hidden now (CODAP's tab behind another, or its window minimized). */
  _hidden() {
    return this.win?.document?.visibilityState === "hidden";
  }

  /**
   * A message is done (answered or timed out): count its wait, and say when no slow one is left.
   * @param {Waiter} waiter
   */
  _settle(waiter) {
    this.win.clearTimeout(waiter.slowTimer ?? undefined);
    const ms = this.now() - waiter.started;
    this.waits.messages += 1;
    this.waits.totalMs += ms;
    if (ms > this.waits.slowestMs) Object.assign(this.waits, { slowestMs: ms, slowest: waiter.described });
    if (waiter.slow) {
      this.slowPending -= 1;
      if (this.slowPending === 0) this.onSlow(null);
    }
  }

  /**
   * @param {Waiter} waiter
   * @param {unknown} value CODAP's reply (or array of them)
   */
  _measure(waiter, value) {
    if (waiter.sentAt === undefined || typeof this.timeline?.measure !== "function") return;
    try {
      const ok = Array.isArray(value) ? value.every(isCodapSuccess) : isCodapSuccess(value);
      this.measured += 1;
      this.timeline.measure(`${MESSAGE_MEASURE} ${this.measured}`, {
        start: waiter.sentAt,
        end: this.timeline.now(),
        detail: { requests: waiter.requests, ok },
      });
      if (this.measured > MAX_MEASURES) this.timeline.clearMeasures?.(`${MESSAGE_MEASURE} ${this.measured - MAX_MEASURES}`);
    } catch {
      // a timeline that refuses the entry costs the call nothing
    }
  }

  /** @param {PhoneMessage} message */
  _post(message) {
    this.parent.postMessage(message, this.parentOrigin ?? "*");
  }

  _stopHello() {
    if (this._helloTimer !== null) this.win.clearInterval(this._helloTimer);
    this._helloTimer = null;
  }

  /** @param {MessageEvent} event */
  _receive(event) {
    if (event.source !== this.parent) return; // anyone may post to us; only CODAP counts
    if (this.parentOrigin === null) this.parentOrigin = originOrNull(event.origin);
    else if (event.origin !== undefined && event.origin !== this.parentOrigin) return; // navigated elsewhere
    let data = event.data;
    if (typeof data === "string") {
      try {
        data = JSON.parse(data);
      } catch {
        return;
      }
    }
    if (!data || typeof data !== "object") return;
    if (data.type === "hello") {
      if (!this.connected) {
        this.connected = true;
        this._stopHello();
        this._resolveConnected();
        for (const message of this.queue.splice(0)) this._post(message);
      }
      return;
    }
    if (data.type !== NAMESPACE || !this.connected || !data.content) return;
    const { messageType, uuid, value } = data.content;
    if (messageType === "returnValue") {
      const notice = this.notices.get(uuid);
      if (notice) {
        this.notices.delete(uuid);
        notice(value);
        return;
      }
      const waiter = this.pending.get(uuid);
      if (!waiter) return;
      this.pending.delete(uuid);
      this.win.clearTimeout(waiter.timer);
      this._settle(waiter);
      this._measure(waiter, value);
      waiter.resolve(value);
    } else if (messageType === "call") {
      try {
        this.onNotification(value);
      } finally {
        this._post({ type: NAMESPACE, content: { messageType: "returnValue", uuid, value: { success: true } } });
      }
    }
  }
}
