// @ts-check
// The plugin's session, connected (its code got and kept: session_keeper.js): the runner, change reporter,
// connected apps, and the push channel or SSE stream; it renews the session to a new code, replaces it when the
// relay ends or expires it, and falls back from push to the stream (trying push again later). Everything it talks
// to comes in through its constructor (main.js passes the page's; tests pass fakes).

import { CONSENT_TOOL, ConnectedApps } from "./apps.js";
import { ChangeReporter } from "./changes.js";
import { PushConnection } from "./push.js";
import { RelayHttpError } from "./relay.js";
import { backoffMs } from "./retry.js";
import { Runner } from "./runner.js";
import { SessionKeeper } from "./session_keeper.js";
import { StreamConnection } from "./stream.js";

/**
 * @import {ChannelHandlers, CodapNotification, Session, Tool, ToolRequest} from "./types.js"
 * @import {RelayClient} from "./relay.js"
 */

/**
 * What every channel of a session is opened with.
 * @typedef {{base: string, code: string, token: string, client: RelayClient, watchdogMs: number, tab: string,
 *   handlers: ChannelHandlers}} ChannelOptions
 */

/**
 * How the session's channels are made: the SSE stream, the push channel, and whether this browser has WebSocket.
 * @typedef {object} Channels
 * @property {(options: ChannelOptions) => StreamConnection} stream
 * @property {(options: ChannelOptions & {url: string}) => PushConnection} push
 * @property {() => boolean} pushable
 */

/**
 * One connect's channel options and its push channel (null while it uses the stream from the start).
 * @typedef {{options: ChannelOptions, pushed: PushConnection | null}} Link
 */

/**
 * The apps connected through OAuth (apps.js), made anew for each connected session.
 * @typedef {Pick<ConnectedApps, "ask" | "refresh">} Apps
 */

export const PUSH_BLOCKED =
  "This network or browser does not let the plugin keep its WebSocket to the relay, so it uses the relay's " +
  "event stream instead. Everything works the same.";

export class SessionController extends SessionKeeper {
  /**
   * @param {ConstructorParameters<typeof SessionKeeper>[0] & {tools: Record<string, Tool>, watchdogMs: number,
   *   tab: string, channels?: Channels, connectedApps?: (options: ConstructorParameters<typeof ConnectedApps>[0]) => Apps}} options
   *   as SessionKeeper's, and: `tools`, what the runner calls; `watchdogMs`, how long a silent channel waits before
   *   it reconnects; `tab`, this page's id at the relay; `channels` and `connectedApps`, how they are made
   */
  constructor(options) {
    super(options);
    const {
      tools,
      watchdogMs,
      tab,
      channels = {
        stream: (options) => new StreamConnection(options),
        push: (options) => new PushConnection(options),
        pushable: () => Boolean(globalThis.WebSocket),
      },
      connectedApps = (options) => new ConnectedApps(options),
    } = options;
    this.tools = tools;
    this.watchdogMs = watchdogMs;
    this.tab = tab;
    this.channels = channels;
    this.connectedApps = connectedApps;
    /** @type {StreamConnection | PushConnection | null} */
    this.stream = null;
    /** @type {Runner | null} */
    this.runner = null;
    /** @type {ChangeReporter | null} */
    this.reporter = null; // tells a long-lived relay what CODAP said changed (MCP subscriptions)
    /** @type {Apps | null} */
    this.apps = null; // the apps connected through OAuth, and their consent questions (apps.js)
    this.pushFallbacks = 0; // times the push channel gave way to SSE on this page: each waits longer to try push again
    /** @type {unknown} */
    this.pushRetry = null; // the timer that tries push again after a fall back
    this.waitedForRoom = false; // the stream waited for room: its countdown notice goes once it connects
  }

  /** Restore or create the session, then connect it; a failure is told on the page. */
  async start() {
    try {
      await this.restoreOrCreate();
    } catch (err) {
      this.ui.setStatus("error");
      const what =
        err instanceof RelayHttpError
          ? `The relay at ${this.relayBase} refused to create a pairing code (${err.message})`
          : `The plugin failed while starting (${/** @type {Error} */ (err).message})`;
      this.ui.notice(`${what}. Reload the plugin to try again; if this keeps happening, check the relay's settings.`);
      return;
    }
    this.connect();
  }

  /** A CODAP notice, for the change reporter. @param {CodapNotification} notice */
  hear(notice) {
    try {
      this.reporter?.hear(notice);
    } catch {
      // a notice this cannot read must not keep it from the tools' own listeners
    }
  }

  /** Connects the session there is (restoreOrCreate or newSession made it). */
  connect() {
    this.stream?.stop();
    this.runner?.stop();
    const session = /** @type {Session} */ (this.session);
    this.ui.setSession(session, this.relayBase);
    this.ui.showSuperseded(false);
    const { code, token, changes } = session;
    this.reporter?.stop();
    this.reporter = changes ? new ChangeReporter({ post: (note) => this.client.postChanges(changes, token, note) }) : null;
    this.apps = this.connectedApps({
      list: () => this.client.connectedApps(code, token),
      disconnect: (id) => this.client.disconnectApp(code, token, id),
      announce: (text) => this.ui.notice(text),
    });
    this.apps.refresh();
    this.runner = new Runner({
      tools: this.tools,
      store: this.store,
      post: (id, body) => this.deliverAnswer(link, code, token, id, body),
      onActivity: (update) => {
        this.ui.activity({ ...update, code }); // rows are per code: ids repeat across codes
        // CODAP tells other plugins, not this one, of the components this plugin's own tools make or remove
        if (update.status === "done" && !this.manifest.readOnly.has(/** @type {string} */ (update.tool))) this.reporter?.ranTool(/** @type {string} */ (update.tool));
      },
    });
    /** @type {Link} */
    const link = {
      options: {
        base: this.relayBase,
        code,
        token,
        client: this.client,
        watchdogMs: this.watchdogMs,
        tab: this.tab,
        handlers: this.channelHandlers(code, token, () => this.fallBack(link)),
      },
      pushed: null,
    };
    this.clearTimer(this.pushRetry);
    const push = session.push && this.channels.pushable();
    link.pushed = push ? this.channels.push({ ...link.options, url: /** @type {string} */ (session.push) }) : null;
    this.stream = link.pushed ?? this.channels.stream(link.options);
    this.ui.setChannel(push ? "push" : "stream");
    this.runner.resume();
    this.stream.open(null); // after a (re)load the relay sends every unanswered request; the ledger dedupes
  }

  /**
   * What the channels of the session `code` tell the page.
   * @param {string} code
   * @param {string} token
   * @param {() => void} onFallback
   * @returns {ChannelHandlers}
   */
  channelHandlers(code, token, onFallback) {
    const ui = this.ui;
    return {
      onStatus: (state) => {
        ui.setStatus(state);
        if (state === "connected") {
          this.refreshExpiry();
          if (this.waitedForRoom) ui.notice(null); // the countdown to the next look is over
          this.waitedForRoom = false;
        }
      },
      onWaitForRoom: ({ ms }) => {
        this.waitedForRoom = true;
        this.showWaiting({ reason: "room", ms, error: null });
        ui.setStatus("room");
      },
      onAlive: () => this.refreshExpiry(),
      onRequest: (request) => {
        this.refreshExpiry();
        if (request.tool === CONSENT_TOOL) {
          this.answerConsent(request, code, token);
          return;
        }
        /** @type {Runner} */ (this.runner).enqueue(request);
      },
      onSuperseded: () => this.superseded(),
      onGone: (kind) => this.gone(kind),
      onWithdrawn: ({ id, tool, args }) => ui.activity({ id, tool, args, status: "withdrawn", code }),
      onUnreadable: (why) => ui.notice(`The relay sent something the plugin could not read, and it could not tell which request it was: ${why}.`),
      onCursorReset: () => ui.notice("The relay restarted its queue; unanswered requests are being sent again."),
      onFallback,
    };
  }

  /**
   * A call's outcome to the relay: over the push socket when it can carry it (a message costs the relay less than
   * a request), else, or when the socket said nothing, by `POST /response`. A refusal is the same either way.
   * @param {Link} link
   * @param {string} code
   * @param {string} token
   * @param {string} id
   * @param {import("./types.js").OutcomeBody} body
   */
  async deliverAnswer(link, code, token, id, body) {
    const sent = this.stream === link.pushed ? link.pushed?.answer(id, body) : null;
    if (sent) {
      try {
        return await sent;
      } catch (err) {
        if (err instanceof RelayHttpError) throw err;
      }
    }
    return this.client.postResponse(code, token, id, body);
  }

  /** Another tab took the session: this one says so, and offers to take it back (connectHere). */
  superseded() {
    this.ui.setStatus("moved");
    this.ui.showSuperseded(true);
  }

  /**
   * The relay ended or expired the session: a new code replaces it.
   * @param {string} kind "closed" or "expired"
   */
  async gone(kind) {
    /** @type {Runner} */ (this.runner).stop();
    this.ui.setStatus("reconnecting");
    this.ui.clearSession();
    const why = kind === "closed" ? "The session was ended" : "The code expired";
    try {
      await this.newSession(`${why}, so this is a new code. Give it to your LLM again.`);
      this.connect();
    } catch (err) {
      this.ui.setStatus("error");
      this.ui.notice(`${why} and a new code could not be created: ${/** @type {Error} */ (err).message}. Reload the plugin to try again.`);
    }
  }

  /**
   * The push channel gave up: the stream takes over from its cursor, and push is tried again later.
   * @param {Link} link
   */
  fallBack(link) {
    if (this.pushFallbacks++ === 0) this.ui.notice(PUSH_BLOCKED);
    const sse = this.channels.stream(link.options);
    this.stream = sse;
    this.ui.setChannel("stream");
    sse.open(/** @type {PushConnection} */ (link.pushed).cursor); // only a push channel falls back
    // Not for good: a refusal may have been API Gateway's at a busy moment. Later (1 min, then longer), the
    // stream makes way for push again, from its cursor; if push fails again, this comes back here.
    this.clearTimer(this.pushRetry);
    this.pushRetry = this.setTimer(() => this.retryPush(link, sse), backoffMs(this.pushFallbacks - 1, { base: 60_000, max: 30 * 60_000, random: this.random }));
  }

  /**
   * The stream `sse` makes way for push again, unless the page moved on (a new code, superseded).
   * @param {Link} link
   * @param {StreamConnection} sse
   */
  retryPush(link, sse) {
    if (this.stream !== sse || sse.stopped) return;
    sse.stop();
    const pushed = this.channels.push({ ...link.options, url: /** @type {string} */ (/** @type {Session} */ (this.session).push) });
    this.stream = link.pushed = pushed;
    this.ui.setChannel("push");
    pushed.open(sse.cursor ?? null);
  }

  /**
   * The relay asks whether an app may use this CODAP (someone typed this code on its consent page).
   * @param {ToolRequest} request
   * @param {string} code
   * @param {string} token
   */
  async answerConsent(request, code, token) {
    const answer = await /** @type {Apps} */ (this.apps).ask(request.args ?? {});
    try {
      await this.client.postResponse(code, token, request.id, { result: answer });
    } catch (err) {
      this.ui.notice(`The answer could not reach the relay: ${/** @type {Error} */ (err).message}. Start again from the app.`);
    }
    // the relay makes the grant when the consent page next looks (about once a second): look again after it
    for (const ms of [1500, 4000, 10_000]) this.setTimer(() => this.apps?.refresh(), ms);
  }

  /** The person asked for a new code: the old one ends once the new one is there. */
  async renew() {
    if (this.obtaining) return;
    const old = this.session;
    this.ui.clearSession(); // the old code ends as soon as the new one is there: not one to copy now
    try {
      await this.newSession("New code created. The old code no longer works.");
      if (old) this.client.endSession(old.code, old.token).catch(() => {});
      this.connect();
    } catch (err) {
      if (old) this.ui.setSession(old, this.relayBase); // it still works
      this.ui.notice(`Could not create a new code: ${/** @type {Error} */ (err).message}`);
    }
  }

  /** The person takes the session back from the tab that superseded this one. */
  connectHere() {
    this.ui.notice("Connected here again; the other tab stops serving this session.");
    this.connect();
  }

  /**
   * The page is hidden (pagehide): its channel lets go of the session, which ends if nothing of it survives.
   * @param {boolean} persisted the page goes into the back-forward cache
   */
  hide(persisted) {
    const session = this.session;
    if (!session) return;
    /** @type {{pause?: () => void} | null} */ (this.stream)?.pause?.(); // a push socket closes now (the relay then drops it as the consumer)
    // Nothing of a memory-only session survives the unload: end it now, so the LLM is told the session ended
    // instead of its requests waiting for a page that is gone. A stored session is kept for the reload.
    if (!this.persistent && !persisted) {
      this.client.endSession(session.code, session.token, { keepalive: true }).catch(() => {});
      return;
    }
    // A kept session: detach this page's stream. On AWS a streamed response runs on after its client left, so
    // without this the stream would keep the session "connected" and hold a stream function for up to 14 min.
    this.client.detach(session.code, session.token, this.tab).catch(() => {});
  }

  /**
   * The page is shown again (pageshow).
   * @param {boolean} persisted back from the back-forward cache
   */
  show(persisted) {
    // this page detached its stream on pagehide, so it attaches again
    if (persisted && this.stream && !this.stream.stopped) this.stream.open(this.stream.cursor);
  }

  /** The browser is online again: the channel reopens from its cursor. */
  reopen() {
    if (this.stream && !this.stream.stopped) this.stream.open(this.stream.cursor);
  }
}
