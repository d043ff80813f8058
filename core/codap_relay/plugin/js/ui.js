// The DOM: pairing code, status, copy buttons, superseded banner, activity log. No logic beyond display.

import { displayCode, formatDuration, formatTimeLeft, summarizeArgs } from "./format.js";

const STATUS_TEXT = {
  starting: "Starting…",
  connected: "Connected",
  reconnecting: "Reconnecting…",
  offline: "Offline",
  moved: "Moved to another tab",
  waiting: "Waiting…",
  error: "Not connected",
};

const STATE_TEXT = {
  queued: "queued",
  running: "running…",
  done: "done",
  failed: "error",
  replayed: "re-sending",
  retrying: "sending again…",
  delivered: null, // keeps the outcome's label
};

export function createUI(doc = document) {
  const $ = (id) => doc.getElementById(id);
  const entries = new Map();
  let expiresAt = null;
  let countdownTimer = null;

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

  function resultLine(body) {
    if (!body) return "";
    if (body.error) return `Error: ${body.error.message}`;
    const text = body.result?.content?.[0]?.text ?? JSON.stringify(body.result);
    const first = String(text).split("\n")[0];
    return first.length > 160 ? `${first.slice(0, 159)}…` : first;
  }

  return {
    setSession({ code, expiresAt: at }, relayBase) {
      $("code").textContent = displayCode(code);
      $("code").setAttribute("aria-label", `Pairing code ${code.split("").join(" ")}`);
      $("relay-url").textContent = relayBase;
      $("relay-url").title = relayBase;
      expiresAt = at;
      tick();
    },
    setExpiry(at) {
      expiresAt = at;
      tick();
    },
    setStatus(state) {
      const el = $("status");
      el.textContent = STATUS_TEXT[state] ?? state;
      el.className = `pill pill-${state}`;
    },
    setCodapStatus(text) {
      $("codap-status").textContent = `CODAP: ${text}`;
    },
    showSuperseded(show) {
      $("superseded").hidden = !show;
      if (show) $("connect-here").focus();
    },
    notice(text) {
      clearInterval(countdownTimer);
      countdownTimer = null;
      showNotice(text);
    },
    /** A notice that counts down to ``until`` (ms since the epoch): ``render(secondsLeft)`` gives its text. */
    countdown(until, render) {
      clearInterval(countdownTimer);
      const show = () => showNotice(render(Math.max(0, Math.ceil((until - Date.now()) / 1000))));
      show();
      countdownTimer = setInterval(show, 1000);
    },
    /** A standing note about what this page cannot keep; it stays while other notices come and go. */
    setStorageNote(text) {
      const el = $("storage-note");
      el.textContent = text ?? "";
      el.hidden = !text;
    },
    showCopied(text) {
      const area = $("copied");
      area.value = text;
      area.hidden = false;
    },
    activity(update) {
      let entry = entries.get(update.id);
      if (!entry) {
        if (!update.tool) return; // a status for an entry this page never showed
        const li = doc.createElement("li");
        li.innerHTML =
          '<div class="entry-head"><span class="entry-tool"></span><span class="entry-state"></span></div>' +
          '<div class="entry-args"></div><div class="entry-result"></div>';
        li.dataset.requestId = update.id;
        $("log").prepend(li);
        $("log-empty").hidden = true;
        entry = { li, tool: update.tool };
        entries.set(update.id, entry);
        li.querySelector(".entry-tool").textContent = update.tool;
        li.querySelector(".entry-args").textContent = summarizeArgs(update.tool, update.args);
      }
      const label = STATE_TEXT[update.status];
      if (update.status !== "delivered" && update.status !== "retrying") {
        entry.li.className = `state-${update.status === "replayed" ? (update.body?.error ? "failed" : "done") : update.status}`;
      }
      const state = entry.li.querySelector(".entry-state");
      if (label) {
        const ms = update.ms !== undefined ? ` · ${formatDuration(update.ms)}` : "";
        state.textContent = `${label}${ms}`;
        if (update.status !== "retrying") entry.final = state.textContent;
      } else if (update.status === "delivered" && entry.final) {
        state.textContent = entry.final;
      }
      if (update.body) entry.li.querySelector(".entry-result").textContent = resultLine(update.body);
    },
    on(id, handler) {
      $(id).addEventListener("click", handler);
    },
    onCopy(handler) {
      doc.querySelectorAll("[data-copy]").forEach((b) => b.addEventListener("click", () => handler(b.dataset.copy, b)));
    },
  };
}
