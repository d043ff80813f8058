// @ts-check
// The DOM: pairing code, status, copy buttons, superseded banner, activity log, trace buttons and replay
// progress. No logic beyond display.

import { Announcer } from "./announce.js";
import { closeDialog, guardDialog, openDialog } from "./dialog.js";
import { displayCode, firstLine, formatDuration, formatTimeLeft, plural, summarizeArgs } from "./format.js";

/**
 * @import {ActivityUpdate, OutcomeBody} from "./types.js"
 * @import {ReplayView} from "./replay.js"
 */

/** @type {Record<string, string>} */
const STATUS_TEXT = {
  starting: "Starting…",
  connected: "Connected",
  reconnecting: "Reconnecting…",
  offline: "Offline",
  moved: "Moved to another tab",
  waiting: "Waiting…",
  room: "Waiting for room…",
  error: "Not connected",
};

/** @type {Record<string, string | null>} */
const STATE_TEXT = {
  queued: "queued",
  running: "running…",
  done: "done",
  failed: "error",
  replayed: "re-sending",
  retrying: "sending again…",
  withdrawn: "withdrawn by the model before it ran",
  delivered: null, // keeps the outcome's label
};

/** @param {Document} [doc] */
export function createUI(doc = document) {
  // Elements by id; each is the kind index.html gives it (buttons, inputs, a progress bar), used as such.
  const $ = /** @type {(id: string) => any} */ ((id) => doc.getElementById(id));
  const copyButtons = () => /** @type {NodeListOf<HTMLButtonElement>} */ (doc.querySelectorAll("[data-copy]"));
  /** @type {Map<string, {li: HTMLLIElement, tool: string, final?: string}>} each request's row, by code and id */
  const entries = new Map();
  /** @type {number | null} */
  let expiresAt = null;
  /** @type {ReturnType<typeof setInterval> | null} */
  let countdownTimer = null;
  /** @type {string | null} */
  let shownCode = null;
  const announcer = new Announcer({ write: (text) => ($("announcer").textContent = text) });
  /** @param {string} code */
  const spelled = (code) => `${code.slice(0, 4).split("").join(" ")}, ${code.slice(4).split("").join(" ")}`;
  const replayDialog = /** @type {HTMLDialogElement} */ ($("replay-dialog"));
  guardDialog(replayDialog, () => $("cancel-replay").click());
  /** @type {{before: string, line: string, shown?: string} | null} */
  let slowNote = null; // {before, shown} while a slow-CODAP note covers the notice

  /** @param {string | null | undefined} text */
  function showNotice(text) {
    const el = $("notice");
    el.textContent = text ?? "";
    el.hidden = !text;
  }

  function tick() {
    if (expiresAt === null) return;
    const left = (expiresAt - Date.now()) / 1000;
    $("time-left").textContent = left > 0 ? `Expires in ${formatTimeLeft(left)}` : "Code expired";
  }
  setInterval(tick, 1000);

  /** @param {OutcomeBody | undefined} body */
  function resultLine(body) {
    if (!body) return "";
    return body.error ? `Error: ${firstLine(body, 1000)}` : firstLine(body, 160);
  }

  /**
   * The copy buttons only while there is a code to copy (``disabled``: keyboard users skip them too).
   * @param {boolean} on
   */
  function offerCopies(on) {
    for (const button of [$("copy-code"), ...copyButtons()]) button.disabled = !on;
  }

  /**
   * The picture a tool sent to the LLM, shown small under its line, so the person sees what the model saw.
   * @param {HTMLLIElement} li
   * @param {OutcomeBody} body
   */
  function showPicture(li, body) {
    /** @type {{type: string, data?: unknown, mimeType?: string} | undefined} */
    const item = body.result?.content?.find?.((c) => c?.type === "image");
    li.querySelector(".entry-image")?.remove();
    if (!item || typeof item.data !== "string" || !/^image\/(png|jpeg|gif|webp)$/.test(/** @type {string} */ (item.mimeType))) return;
    const img = doc.createElement("img");
    img.className = "entry-image";
    img.alt = "The picture sent to the LLM";
    img.src = `data:${item.mimeType};base64,${item.data}`;
    li.append(img);
  }

  return {
    /**
     * @param {{code: string, expiresAt: number}} session
     * @param {string} relayBase
     */
    setSession({ code, expiresAt: at }, relayBase) {
      $("code-text").textContent = displayCode(code);
      // Spelled out, so that a screen reader reads characters, not a word.
      $("code").setAttribute("aria-label", `Pairing code: ${spelled(code)}`);
      if (code !== shownCode) announcer.say(`Pairing code: ${spelled(code)}.`);
      shownCode = code;
      $("relay-url").textContent = relayBase;
      $("apps-url").textContent = `${relayBase}/mcp`;
      $("relay-url").title = relayBase;
      expiresAt = at;
      tick();
      offerCopies(true);
    },
    /** No code for now (a new one is being fetched): nothing to show or copy until ``setSession``. */
    clearSession() {
      $("code-text").textContent = "…";
      $("code").setAttribute("aria-label", "Pairing code: none yet");
      expiresAt = null;
      $("time-left").textContent = "Expires in –";
      offerCopies(false);
    },
    /** @param {number} at ms since the epoch */
    setExpiry(at) {
      expiresAt = at;
      tick();
    },
    /** @param {string} state */
    setStatus(state) {
      const el = $("status");
      if (el.className !== `pill pill-${state}` && state !== "starting") announcer.say(STATUS_TEXT[state] ?? state);
      el.textContent = STATUS_TEXT[state] ?? state;
      el.className = `pill pill-${state}`;
    },
    /** Which channel brings the requests ("push": a WebSocket; "stream": server-sent events), on the status pill's
     * tooltip (and its data-channel, which the tests read).
     * @param {"push" | "stream"} kind
     */
    setChannel(kind) {
      const el = $("status");
      el.dataset.channel = kind;
      el.title = kind === "push" ? "Requests arrive over a WebSocket (push)." : "Requests arrive over an event stream.";
    },
    /** @param {string} text */
    setCodapStatus(text) {
      $("codap-status").textContent = `CODAP: ${text}`;
    },
    /** @param {boolean} show */
    showSuperseded(show) {
      $("superseded").hidden = !show;
      if (show) announcer.say("This session moved to another tab.");
      offerCopies(!show); // the code is served in another tab now; "Connect here" takes it back
      if (show) $("connect-here").focus();
    },
    /** @param {string | null} text */
    notice(text) {
      clearInterval(/** @type {number} */ (countdownTimer)); // clearInterval takes null too
      countdownTimer = null;
      showNotice(text);
      if (text) announcer.say(text);
    },
    /**
     * A notice that counts down to ``until`` (ms since the epoch): ``render(secondsLeft)`` gives its text.
     * @param {number} until
     * @param {(secondsLeft: number) => string} render
     */
    countdown(until, render) {
      clearInterval(/** @type {number} */ (countdownTimer));
      const show = () => showNotice(render(Math.max(0, Math.ceil((until - Date.now()) / 1000))));
      show();
      announcer.say($("notice").textContent); // once: the ticking seconds are not read out
      countdownTimer = setInterval(show, 1000);
    },
    /**
     * A standing note about what this page cannot keep; it stays while other notices come and go.
     * @param {string | null} text
     */
    setStorageNote(text) {
      const el = $("storage-note");
      el.textContent = text ?? "";
      el.hidden = !text;
    },
    /**
     * While CODAP is slow to answer (codap.js onSlow): its text in the notice (a polite status region) and the
     * CODAP line; ``null`` puts back the notice it covered, unless another notice replaced it meanwhile.
     * @param {string | null} text
     */
    codapSlow(text) {
      const el = $("notice");
      const line = $("codap-status");
      if (text) {
        if (slowNote === null) slowNote = { before: el.hidden ? "" : el.textContent, line: line.textContent };
        if (slowNote.shown !== text) announcer.say(text);
        showNotice(text);
        slowNote.shown = text;
        line.textContent = "CODAP: slow to answer";
      } else if (slowNote !== null) {
        if (!el.hidden && el.textContent === slowNote.shown) showNotice(slowNote.before);
        if (line.textContent === "CODAP: slow to answer") line.textContent = slowNote.line;
        slowNote = null;
      }
    },
    /** @param {string} text */
    showCopied(text) {
      const area = $("copied");
      area.value = text;
      area.hidden = false;
    },
    /**
     * One row per request of one session: keyed by the session's code and the request's id, since a new code's
     * LLM may reuse an id of the page's previous code. An update that names the tool refreshes the row's tool,
     * label and arguments.
     * @param {ActivityUpdate} update
     */
    activity(update) {
      const key = `${update.code ?? ""} ${update.id}`;
      let entry = entries.get(key);
      if (!entry) {
        if (!update.tool) return; // a status for an entry this page never showed
        const li = doc.createElement("li");
        li.innerHTML =
          '<div class="entry-head"><span class="entry-tool"></span><span class="entry-state"></span></div>' +
          '<div class="entry-args"></div><div class="entry-result"></div>';
        li.dataset.requestId = update.id;
        if (update.code) li.dataset.code = update.code;
        $("log").prepend(li);
        $("log-empty").hidden = true;
        entry = { li, tool: update.tool };
        entries.set(key, entry);
      }
      if (update.tool) {
        entry.tool = update.tool;
        const tool = /** @type {HTMLElement} */ (entry.li.querySelector(".entry-tool"));
        tool.textContent = update.tool;
        if (update.label) {
          const label = doc.createElement("span");
          label.className = "entry-label";
          label.textContent = ` · ${update.label}`;
          tool.append(label);
        }
        /** @type {HTMLElement} */ (entry.li.querySelector(".entry-args")).textContent = summarizeArgs(update.tool, update.args);
      }
      const label = STATE_TEXT[update.status];
      if (update.status !== "delivered" && update.status !== "retrying") {
        entry.li.className = `state-${update.status === "replayed" ? (update.body?.error ? "failed" : "done") : update.status}`;
      }
      const state = /** @type {HTMLElement} */ (entry.li.querySelector(".entry-state"));
      if (label) {
        const ms = update.ms !== undefined ? ` · ${formatDuration(update.ms)}` : "";
        state.textContent = `${label}${ms}`;
        if (update.status !== "retrying") entry.final = state.textContent;
      } else if (update.status === "delivered" && entry.final) {
        state.textContent = entry.final;
      }
      if (update.body) {
        /** @type {HTMLElement} */ (entry.li.querySelector(".entry-result")).textContent = resultLine(update.body);
        showPicture(entry.li, update.body);
      }
      if (update.status === "done" || update.status === "failed") {
        announcer.call(entry.tool, update.body?.error ? firstLine(update.body, 160) : null);
      }
    },
    /**
     * The replay's progress: {outcome: running|finished|stopped|refused|confirm, done, total, message, running,
     * asking (a question with "Replay anyway" and "Cancel"), calls (the calls it would make: {n, tool, summary,
     * refused: the policy rule or null}, listed under the question; refused ones marked)}.
     * @param {ReplayView} view
     */
    setReplay({ outcome, done = 0, total = 0, message = "", running = false, asking = false, calls = null }) {
      const box = $("replay");
      box.hidden = false;
      box.className = `replay replay-${outcome}`;
      const bar = $("replay-progress");
      bar.hidden = total === 0;
      bar.max = Math.max(1, total);
      bar.value = done;
      if (message !== $("replay-text").textContent && !running && outcome !== "running") {
        // each call's outcome is announced as it ends; the replay's end once; the question when it is asked
        announcer.say(asking ? `${message} The dialog lists ${plural(calls?.length ?? 0, "call")}.` : message);
      }
      $("replay-text").textContent = message;
      $("stop-replay").hidden = !running;
      $("replay-trace").disabled = running || asking;
      $("replay-ask").textContent = asking ? message : "";
      const list = $("replay-calls");
      // The calls are listed in the question when it is asked, under the replay's outcome otherwise.
      if (asking) $("replay-ask").after(list);
      else $("replay-text").after(list);
      {
        list.replaceChildren(
          ...(calls ?? []).map((c) => {
            const li = doc.createElement("li");
            li.value = c.n;
            li.className = c.refused ? "refused" : "";
            li.textContent = `${c.tool} · ${c.summary}${c.refused ? ` · REFUSED by policy (${c.refused}): not sent` : ""}`;
            return li;
          }),
        );
        list.hidden = !calls?.length;
      }
      // Focus starts on the harmless answer; it goes back to the opener (or Stop replay) when answered.
      if (asking) openDialog(replayDialog, $("cancel-replay"));
      else closeDialog(replayDialog, [$("replay-trace"), $("stop-replay")]);
    },
    /**
     * Offer `text` as a file download named `name`.
     * @param {string} name
     * @param {string} text
     * @param {string} [type]
     */
    saveFile(name, text, type = "application/json") {
      const url = URL.createObjectURL(new Blob([text], { type }));
      const link = doc.createElement("a");
      link.href = url;
      link.download = name;
      link.hidden = true;
      doc.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    },
    /** Let the person pick a trace file; `handler(file)` gets it. */
    chooseFile() {
      $("trace-file").value = "";
      $("trace-file").click();
    },
    /** @param {(file: File) => void} handler */
    onFile(handler) {
      $("trace-file").addEventListener("change", () => {
        const [file] = $("trace-file").files;
        if (file) handler(file);
      });
    },
    /**
     * @param {string} id a button's
     * @param {(event: Event) => void} handler
     */
    on(id, handler) {
      $(id).addEventListener("click", handler);
    },
    /** @param {(what: string | undefined, button: HTMLButtonElement) => void} handler */
    onCopy(handler) {
      copyButtons().forEach((b) => b.addEventListener("click", () => handler(b.dataset.copy, b)));
    },
  };
}
