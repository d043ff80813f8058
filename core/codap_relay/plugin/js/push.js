// @ts-check
// The push channel's requests, in order (its socket, kept alive: push_socket.js): the same handlers as the SSE
// StreamConnection, with the order kept here. Requests run strictly in seq order: one that arrives past
// cursor + 1 is held and the plugin asks the relay to resume from its cursor; `resumed.upTo` moves the cursor
// past seqs that will never come (answered, withdrawn, expired). Answers go back over the socket when they fit.

import { PushSocket } from "./push_socket.js";
import { RelayHttpError } from "./relay.js";
import { backoffMs } from "./retry.js";

/**
 * The largest answer sent over the socket, in UTF-8 bytes: API Gateway takes a message of up to 128 KB; a larger
 * outcome (a picture) is posted to `/response` instead.
 */
export const ANSWER_MAX_BYTES = 120_000;
/** How long an answer sent over the socket may wait for the relay's word before it is posted instead. */
export const ANSWER_TIMEOUT_MS = 10_000;

/**
 * @import {ToolRequest} from "./types.js"
 * @import {PushMessage} from "./push_socket.js"
 */

export class PushConnection extends PushSocket {
  /**
   * @param {ConstructorParameters<typeof PushSocket>[0] & {client: {fetchRequest: (pointer: string, token: string) =>
   *   Promise<ToolRequest>}}} options as PushSocket's, and the RelayClient that fetches a request too big to push
   */
  constructor(options) {
    super(options);
    this.client = options.client;
    /** @type {Map<number, PushMessage>} requests that came early (past cursor + 1), by seq */
    this.held = new Map();
    this.resuming = false; // a resume is asked for and its `resumed` not yet here
    /** @type {Promise<void>} */
    this._delivery = Promise.resolve(); // hand-overs in order, pointer fetches included
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
    this.held.clear();
    this.resuming = false;
    super.open(cursor);
  }

  _teardown() {
    // answers on their way over this socket are posted instead (the relay takes one answer once, either way)
    for (const { settle } of [...this.answers.values()]) settle(new Error("the socket closed"));
    super._teardown();
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
    if (first) this._attachedNow(message);
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
}
