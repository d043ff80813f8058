// @ts-check
// What survives a reload of the plugin frame, in sessionStorage (per tab, per relay):
//   - the session (code, browser token, ttl, expiry), so a reload keeps the same pairing code;
//   - a ledger of request ids: "started" before a tool runs, then its outcome until the relay took it;
//   - the sessions this tab had before (code and token), so their calls can still go into a saved trace while
//     the relay keeps their logs;
//   - the progress of a trace replay: which of its calls started and which finished.
// A reload therefore re-posts a stored outcome instead of running the same request twice, and a replay
// resumed after a reload skips the calls that already ran.
// The plugin is a third-party frame inside CODAP; where the browser blocks third-party storage, reading
// sessionStorage throws, and the same records live in memory for the life of the page instead.

/** @import {LedgerEntry, OutcomeBody, PastSession, ReplayProgress, Session, ToolArgs, TraceCall} from "./types.js" */

const MAX_LEDGER = 500;
const MAX_HISTORY = 5; // earlier sessions remembered for the trace
const MAX_REPLAYS = 5; // replays whose progress is kept, newest first

/** The Storage interface over a Map: what the plugin keeps when the browser lets it keep nothing. */
export class MemoryStorage {
  constructor() {
    /** @type {Map<string, string>} */
    this.map = new Map();
  }

  /**
   * @param {string} key
   * @returns {string | null}
   */
  getItem(key) {
    return this.map.has(key) ? /** @type {string} */ (this.map.get(key)) : null;
  }

  /** @param {string} key @param {unknown} value */
  setItem(key, value) {
    this.map.set(key, String(value));
  }

  /** @param {string} key */
  removeItem(key) {
    this.map.delete(key);
  }
}

/**
 * The frame's sessionStorage if the browser lets it be used, else memory. ``persistent`` says whether a
 * reload keeps what is written; ``reason`` is the browser's refusal, for the console.
 * @param {{sessionStorage: Storage}} [win]
 * @returns {{storage: Storage | MemoryStorage, persistent: boolean, reason: string | null}}
 */
export function openStorage(win = globalThis) {
  const probe = "codap-relay:probe";
  try {
    const storage = win.sessionStorage; // the getter itself throws a SecurityError where storage is blocked
    storage.setItem(probe, "1");
    storage.removeItem(probe);
    return { storage, persistent: true, reason: null };
  } catch (err) {
    return { storage: new MemoryStorage(), persistent: false, reason: String(/** @type {Error | null | undefined} */ (err)?.message ?? err) };
  }
}

/** What the plugin keeps, each relay's under its own prefix; `storage` as openStorage gives it. */
export class PluginStore {
  /**
   * @param {Pick<Storage, "getItem" | "setItem" | "removeItem"> | null} storage
   * @param {string} relayBase
   */
  constructor(storage, relayBase) {
    this.storage = storage;
    this.prefix = `codap-relay:${relayBase}:`;
  }

  /**
   * What is kept under `key` (as JSON), else `fallback`.
   * @param {string} key
   * @param {any} fallback
   * @returns {any} the parsed JSON: callers check its shape
   */
  _read(key, fallback) {
    try {
      const raw = this.storage?.getItem(this.prefix + key);
      return raw ? JSON.parse(raw) : fallback;
    } catch {
      return fallback;
    }
  }

  /** @param {string} key @param {unknown} value */
  _write(key, value) {
    try {
      this.storage?.setItem(this.prefix + key, JSON.stringify(value));
      return true;
    } catch {
      return false; // quota or disabled storage: keep working from memory
    }
  }

  /** @returns {Session | null} */
  loadSession() {
    const s = this._read("session", null);
    return s && typeof s.code === "string" && typeof s.token === "string" ? s : null;
  }

  /** @param {Session} session */
  saveSession(session) {
    this._write("session", session);
  }

  clearSession() {
    try {
      this.storage?.removeItem(this.prefix + "session");
      this.storage?.removeItem(this.prefix + "ledger");
    } catch {
      // storage withdrawn since start-up: nothing of ours is left to clear
    }
  }

  /**
   * Earlier sessions of this tab, oldest first: [{code, token, endedAt}].
   * @returns {PastSession[]}
   */
  history() {
    const list = this._read("history", []);
    return Array.isArray(list) ? list.filter((/** @type {any} */ s) => typeof s?.code === "string" && typeof s?.token === "string") : [];
  }

  /**
   * Remember a session this tab no longer uses (its log stays readable for the relay's grace period).
   * @param {{code: string, token: string}} session
   * @param {number} [endedAt]
   */
  addHistory({ code, token }, endedAt = Date.now()) {
    const list = this.history().filter((s) => s.code !== code);
    list.push({ code, token, endedAt });
    this._write("history", list.slice(-MAX_HISTORY));
  }

  /** @param {string} code */
  forgetHistory(code) {
    this._write("history", this.history().filter((s) => s.code !== code));
  }

  /**
   * A replay's progress ({key, name, tools, states: {index: state}, outcome, reason, at}): the one of the trace
   * with `key`, or without a key the latest; null if none is kept.
   * @param {string | null} [key]
   * @returns {ReplayProgress | null}
   */
  loadReplay(key = null) {
    /** @type {ReplayProgress[]} */
    const replays = Object.values(this._read("replays", {})).filter(
      (/** @type {any} */ r) => typeof r?.key === "string" && r.states && typeof r.states === "object" && Array.isArray(r.tools),
    );
    if (key !== null) return replays.find((r) => r.key === key) ?? null;
    return replays.sort((a, b) => (b.at ?? 0) - (a.at ?? 0))[0] ?? null;
  }

  /**
   * True when it was written to storage (false: it lives in the caller's memory only).
   * @param {ReplayProgress} replay
   */
  saveReplay(replay) {
    /** @type {Record<string, ReplayProgress>} */
    const replays = this._read("replays", {});
    replays[replay.key] = replay;
    const keys = Object.keys(replays).sort((a, b) => (replays[b].at ?? 0) - (replays[a].at ?? 0));
    for (const old of keys.slice(MAX_REPLAYS)) delete replays[old];
    return this._write("replays", replays);
  }

  /**
   * Calls this tab ran from replayed traces, for the next saved trace (the relay never saw them).
   * @returns {TraceCall[]}
   */
  replayed() {
    if (this._replayed) return this._replayed; // this page's list, which storage may have refused
    const list = this._read("replayed", []);
    return Array.isArray(list) ? list : [];
  }

  /** @param {TraceCall} call */
  addReplayed(call) {
    this._replayed = [...this.replayed(), call].slice(-MAX_LEDGER);
    this._write("replayed", this._replayed);
  }

  /** @returns {Record<string, LedgerEntry>} */
  ledger() {
    return this._read("ledger", {});
  }

  /** @param {string} id */
  entry(id) {
    return this.ledger()[id] ?? null;
  }

  /**
   * @param {string} id
   * @param {Partial<LedgerEntry>} patch
   */
  _update(id, patch) {
    const ledger = this.ledger();
    ledger[id] = /** @type {LedgerEntry} */ ({ ...(ledger[id] ?? {}), ...patch, at: Date.now() });
    const ids = Object.keys(ledger);
    if (ids.length > MAX_LEDGER) {
      // forget the oldest answered ids first; unanswered ones must survive
      ids
        .filter((k) => ledger[k].posted)
        .sort((a, b) => ledger[a].at - ledger[b].at)
        .slice(0, ids.length - MAX_LEDGER)
        .forEach((k) => delete ledger[k]);
    }
    if (!this._write("ledger", ledger) && patch.body) {
      // too big for storage: keep the id and state so a reload still will not run it again
      ledger[id] = { ...ledger[id], body: undefined, bodyLost: true };
      this._write("ledger", ledger);
    }
  }

  /** @param {string} id @param {{tool: string, seq?: number, args?: ToolArgs}} meta */
  markStarted(id, meta) {
    this._update(id, { state: "started", ...meta });
  }

  /** @param {string} id @param {OutcomeBody} body */
  saveOutcome(id, body) {
    this._update(id, { state: "done", body, posted: false });
  }

  /** @param {string} id */
  markPosted(id) {
    const e = this.entry(id);
    if (e) this._update(id, { posted: true, body: undefined });
  }

  /** Outcomes stored but not yet accepted by the relay (to re-post after a reload). */
  unposted() {
    return Object.entries(this.ledger())
      .filter(([, e]) => e.state === "done" && !e.posted)
      .map(([id, e]) => ({ id, ...e }));
  }
}
