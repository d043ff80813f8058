// @ts-check
// Apps connected through OAuth (the relay's one connector, https://RELAY/mcp): the plugin's long-lived key in
// this browser, the question "APP asks to use this CODAP" (Allow needs the number the consent page shows where the
// person is connecting the app: a stranger who typed this code on a page of their own has that number, the person
// here does not), and the list of connected apps with a Disconnect button each.
//
// The key lives in localStorage (per browser and CODAP site, unlike the session in sessionStorage): a grant is bound
// to it, so the next class's new code reaches the same app with no new consent. Where storage is blocked there is
// no key; a grant then lasts as long as this page's code, and the list says so.

const KEY_BYTES = 32;

/** @param {Uint8Array} bytes */
function base64url(bytes) {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/**
 * This browser's key for the plugin at ``relayBase``: {key, persistent}. ``key`` is null where storage is blocked.
 * @param {string} relayBase
 */
export function pluginIdentity(relayBase, win = globalThis) {
  const name = `codap-relay:${relayBase}:identity`;
  try {
    const storage = win.localStorage; // throws where third-party storage is blocked
    let key = storage.getItem(name);
    if (!key || !/^[A-Za-z0-9_-]{43}$/.test(key)) {
      key = base64url(win.crypto.getRandomValues(new Uint8Array(KEY_BYTES)));
      storage.setItem(name, key);
      if (storage.getItem(name) !== key) return { key: null, persistent: false };
    }
    return { key, persistent: true };
  } catch {
    return { key: null, persistent: false };
  }
}

export const CONSENT_TOOL = "codap_relay_consent";
const MAX_TRIES = 3; // numbers that are not the page's, then the question answers Deny by itself

/**
 * The relay's question (oauth/consent.py): the app's name (its own say), the host its metadata document is published
 * at (none for an app that registered itself), where it returns to, and a check of the page's number.
 * @typedef {{app?: unknown, verified?: unknown, redirect?: unknown, loopback?: unknown, salt?: unknown, check?: unknown}} ConsentQuestion
 * @typedef {{allow: boolean, number?: string, reason?: string}} ConsentAnswer
 */

/**
 * Whether ``typed`` is the page's number: the relay sent sha256("salt:number") so that a mistyped number is said at
 * once (the relay checks the number itself too). Where the browser has no SubtleCrypto (an insecure origin), the
 * relay's own check is the only one.
 * @param {string} salt
 * @param {string} typed
 * @param {string} check
 */
async function sameNumber(salt, typed, check, win = globalThis) {
  const subtle = win.crypto?.subtle;
  if (!subtle) return true;
  const digest = new Uint8Array(await subtle.digest("SHA-256", new TextEncoder().encode(`${salt}:${typed}`)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("") === check;
}

const NOT_KEPT =
  "This browser blocks the plugin's storage, so a connected app lasts only as long as this code: after a reload " +
  "or a new code, connect the app again.";

export class ConnectedApps {
  /**
   * @param {{doc?: Document, list: (() => Promise<any>) | null, disconnect: (id: string) => Promise<any>,
   *   announce?: (text: string) => void}} options
   */
  constructor({ doc = document, list, disconnect, announce = () => {} }) {
    this.doc = doc;
    this.list = list;
    this.disconnect = disconnect;
    /** @type {(text: string) => void} */
    this.announce = announce;
    /** @type {Promise<unknown>} the question shown now (the next waits for it) */
    this.asking = Promise.resolve();
  }

  /** @param {string} id */
  $(id) {
    return /** @type {any} */ (this.doc.getElementById(id));
  }

  /**
   * Ask the person at this CODAP; one question at a time. Resolves the answer the relay gets: Allow carries the
   * number the person typed (the one the consent page shows where they are connecting the app; the relay checks it),
   * Deny nothing, and a number that is not the page's three times a Deny with ``reason: "number"``.
   * @param {ConsentQuestion} question
   * @returns {Promise<ConsentAnswer>}
   */
  ask(question) {
    /** @type {Promise<ConsentAnswer>} */
    const asked = this.asking.then(() => new Promise((resolve) => this.show(question, resolve)));
    this.asking = asked.catch(() => undefined);
    return asked;
  }

  /**
   * @param {ConsentQuestion} question
   * @param {(answer: ConsentAnswer) => void} resolve
   */
  show({ app, verified, redirect, loopback, salt, check }, resolve) {
    const name = String(app ?? "An app");
    const box = this.$("consent");
    const input = this.$("consent-number");
    this.$("consent-app").textContent = name;
    this.$("consent-proof").textContent = verified
      ? `Verified: its registration is published at ${verified}.`
      : "Unverified: this app registered itself with the relay, so its name is its own say.";
    this.$("consent-where").textContent = !redirect
      ? ""
      : loopback
        ? `It returns to a program on this computer (${redirect}): any program here could be it.`
        : `It returns to ${redirect}.`;
    input.value = "";
    this.say("");
    let tries = 0;
    /** @param {ConsentAnswer} answer */
    const finish = (answer) => {
      box.hidden = true;
      this.$("consent-allow").onclick = null;
      this.$("consent-deny").onclick = null;
      input.onkeydown = null;
      this.announce(answer.allow ? `${name} is allowed.` : `${name} was denied.`);
      resolve(answer);
    };
    const allow = async () => {
      const typed = String(input.value).trim();
      if (!/^[0-9]{2}$/.test(typed)) {
        this.say(`Type the two-digit number shown on the page where you are connecting ${name}. No such page? Press Deny.`);
        input.focus();
        return;
      }
      if (typeof salt === "string" && typeof check === "string" && !(await sameNumber(salt, typed, check))) {
        tries += 1;
        if (tries >= MAX_TRIES) {
          finish({ allow: false, reason: "number" });
          return;
        }
        const left = MAX_TRIES - tries;
        this.say(`${typed} is not the number on the page where you are connecting ${name} (${left} ${left === 1 ? "try" : "tries"} left). No such page? Press Deny.`);
        input.select();
        return;
      }
      finish({ allow: true, number: typed });
    };
    this.$("consent-allow").onclick = allow;
    this.$("consent-deny").onclick = () => finish({ allow: false });
    /** @param {KeyboardEvent} event */
    input.onkeydown = (event) => {
      if (event.key !== "Enter") return undefined;
      event.preventDefault();
      return allow(); // Enter in the number field is Allow (the field has the focus only when moved there)
    };
    box.hidden = false;
    // The question itself takes the focus, never Allow: a key pressed for something else answers nothing.
    this.$("consent-title").focus();
    this.announce(`${name} asks to use this CODAP. To allow it, type the number shown on the page where you are connecting it.`);
  }

  /** @param {string} text what is wrong with the number typed ("" hides it): beside the field, which it describes,
   * and through the page's one live region */
  say(text) {
    const said = this.$("consent-error");
    said.textContent = text;
    said.hidden = !text;
    if (text) this.announce(text);
  }

  /** Show the apps connected now. */
  async refresh() {
    if (!this.list) return;
    let found;
    try {
      found = await this.list();
    } catch {
      return; // the list stays as it was; the next refresh tries again
    }
    const ol = this.$("apps");
    ol.replaceChildren();
    for (const entry of found.apps) {
      const li = this.doc.createElement("li");
      const name = this.doc.createElement("span");
      name.textContent = entry.app;
      const button = this.doc.createElement("button");
      button.type = "button";
      button.textContent = "Disconnect";
      button.setAttribute("aria-label", `Disconnect ${entry.app}`);
      button.onclick = async () => {
        button.disabled = true;
        try {
          await this.disconnect(entry.id);
          this.announce(`${entry.app} is disconnected.`);
        } finally {
          await this.refresh();
        }
      };
      li.append(name, " ", button);
      ol.append(li);
    }
    this.$("apps-empty").hidden = found.apps.length > 0;
    this.$("apps-note").hidden = found.persistent;
    this.$("apps-note").textContent = found.persistent ? "" : NOT_KEPT;
  }
}
