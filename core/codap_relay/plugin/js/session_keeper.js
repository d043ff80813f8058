// @ts-check
// The session's pairing code, got and kept: the stored session restored if the relay still knows it, else a new one
// created (after CODAP's reload of the frame, waiting out the relay's limits and telling the person why), its
// expiry kept as the relay slides it. Connecting it is session.js's.

import { createSessionWhenAllowed } from "./retry.js";

/**
 * @import {Session} from "./types.js"
 * @import {ToolDefinition} from "./tools/catalog.js"
 * @import {PluginStore} from "./storage.js"
 * @import {RelayClient} from "./relay.js"
 */

/**
 * The parts of the page (ui.js) the session shows itself in.
 * @typedef {Pick<ReturnType<typeof import("./ui.js").createUI>, "setStatus" | "countdown" | "setExpiry" | "notice" |
 *   "setSession" | "showSuperseded" | "clearSession" | "activity" | "setChannel">} SessionUI
 */

/**
 * The frame's handshake with CODAP, as far as the first session waits for it (frameSettled).
 * @typedef {{reloadExpected: boolean, whenConnected: () => Promise<unknown>, handshakeMs: number}} Frame
 */

// CODAP v3 reloads a plugin's frame once, right after the handshake, to add its language (?lang=…&locale=…).
// A session created before that reload is lost with the page and still counts against the relay's per-address
// limit, so a frame that has no locale yet waits briefly for the reload before it asks for a code.
export const RELOAD_GRACE_MS = 2000;

/**
 * What the person reads while the relay makes the page wait, by createSessionWhenAllowed's reason.
 * @param {string} relayBase
 * @returns {Record<string, (error: Error) => string>}
 */
export function waitingTexts(relayBase) {
  return {
    busy: () =>
      "Too many plugins on this network asked the relay for a code in the last minute (a class sharing one " +
      "internet address can reach the limit). This page gets its code by itself",
    unavailable: () => "The relay is briefly unavailable. This page tries again by itself",
    room: () =>
      "The relay is serving as many CODAP windows as it may at once. This page keeps its code (give it to your LLM " +
      "now if you like) and connects by itself when a place frees up; it looks again",
    unreachable: (error) =>
      `Cannot reach the relay at ${relayBase} (${error.message}). Check that it is running and that this ` +
      "computer is online. Trying again",
  };
}

export class SessionKeeper {
  /**
   * @param {object} options
   * @param {RelayClient} options.client the relay's client (relay.js)
   * @param {PluginStore} options.store where the session, its history and the ledger are kept
   * @param {boolean} options.persistent whether the store survives a reload (openStorage)
   * @param {SessionUI} options.ui
   * @param {{tools: ToolDefinition[], readOnly: Set<string>}} options.manifest registered with each new session
   * @param {string} options.relayBase
   * @param {Frame} options.frame
   * @param {(fn: () => void, ms: number) => unknown} [options.setTimer]
   * @param {(timer: unknown) => void} [options.clearTimer] takes null too
   * @param {() => number} [options.now] the wall clock (ms)
   * @param {() => number} [options.random] the jitter of the waits (retry.js)
   */
  constructor({
    client,
    store,
    persistent,
    ui,
    manifest,
    relayBase,
    frame,
    setTimer = (fn, ms) => globalThis.setTimeout(fn, ms), // called as a method, setTimeout itself would throw
    clearTimer = (timer) => globalThis.clearTimeout(/** @type {number} */ (timer)),
    now = () => Date.now(),
    random = Math.random,
  }) {
    this.client = client;
    this.store = store;
    this.persistent = persistent;
    this.ui = ui;
    this.manifest = manifest;
    this.relayBase = relayBase;
    this.frame = frame;
    this.setTimer = setTimer;
    this.clearTimer = clearTimer;
    this.now = now;
    this.random = random;
    this.waiting = waitingTexts(relayBase);
    /** @type {Session | null} */
    this.session = null;
    /** @type {Promise<Session> | null} */
    this.obtaining = null; // the session being created, so clicks and events do not ask twice
  }

  refreshExpiry() {
    // the relay slides the expiry whenever the stream is alive
    if (!this.session) return;
    this.session.expiresAt = this.now() + this.session.ttl * 1000;
    this.ui.setExpiry(this.session.expiresAt);
  }

  /** @param {{reason: string, ms: number, error: unknown}} wait */
  showWaiting({ reason, ms, error }) {
    this.ui.setStatus("waiting");
    const text = this.waiting[reason](/** @type {Error} */ (error));
    this.ui.countdown(this.now() + ms, (seconds) => `${text} in ${seconds} s; there is no need to reload.`);
  }

  /**
   * A new session, waiting out the relay's limits; one at a time however often it is asked for.
   * @param {string | null} reason what the person is told once it is there
   */
  newSession(reason) {
    this.obtaining ??= this.createSession(reason).finally(() => {
      this.obtaining = null;
    });
    return this.obtaining;
  }

  /** @param {string | null} reason */
  async createSession(reason) {
    const created = await createSessionWhenAllowed(this.client, this.manifest.tools, {
      onWait: (wait) => this.showWaiting(wait),
      sleep: (ms) => this.delay(ms),
      random: this.random,
    });
    const previous = this.session;
    this.session = {
      code: created.code,
      token: created.browserToken,
      ttl: created.ttl,
      expiresAt: Date.parse(created.expiresAt) || this.now() + created.ttl * 1000,
      changes: typeof created.changes === "string" ? created.changes : null,
      push: typeof created.push === "string" ? created.push : null, // the push channel's URL, when offered
    };
    this.store.clearSession();
    if (previous) this.store.addHistory(previous); // its trace can still be saved while the relay keeps its log
    this.store.saveSession(this.session);
    this.ui.notice(reason);
    return this.session;
  }

  /** @param {number} ms */
  delay(ms) {
    return new Promise((resolve) => this.setTimer(() => resolve(undefined), ms));
  }

  /** Resolves when this page is the one CODAP keeps (or when it does not reload the frame after all). */
  frameSettled() {
    if (!this.frame.reloadExpected) return Promise.resolve();
    return Promise.race([this.frame.whenConnected().then(() => this.delay(RELOAD_GRACE_MS)), this.delay(this.frame.handshakeMs)]);
  }

  async restoreOrCreate() {
    const saved = this.store.loadSession();
    if (saved) {
      try {
        const status = await this.client.sessionStatus(saved.code, saved.token);
        if (status) {
          this.session = { ...saved, expiresAt: Date.parse(status.expiresAt) || saved.expiresAt };
          return this.session;
        }
        this.store.addHistory(saved);
        return this.newSession("The previous code expired, so this is a new one. Give it to your LLM again.");
      } catch {
        this.session = saved; // relay unreachable: the stream will keep trying with this session
        return this.session;
      }
    }
    await this.frameSettled();
    return this.newSession(null);
  }
}
