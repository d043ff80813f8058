// @ts-check
// Apps connected through OAuth (the relay's one connector, https://RELAY/mcp): the plugin's long-lived key in
// this browser, the question "APP asks to use this CODAP: Allow / Deny", and the list of connected apps with a
// Disconnect button each.
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
    this.asking = Promise.resolve(true);
  }

  /** @param {string} id */
  $(id) {
    return /** @type {any} */ (this.doc.getElementById(id));
  }

  /** Ask the person at this CODAP; resolves true for Allow. One question at a time. */
  /** @param {{app?: unknown, redirect?: unknown}} request */
  ask({ app, redirect }) {
    const asked = this.asking.then(
      () =>
        new Promise((resolve) => {
          const box = this.$("consent");
          this.$("consent-app").textContent = String(app ?? "An app");
          this.$("consent-where").textContent = redirect ? ` (returning to ${redirect})` : "";
          box.hidden = false;
          /** @param {boolean} allow */
          const answer = (allow) => {
            box.hidden = true;
            this.$("consent-allow").onclick = null;
            this.$("consent-deny").onclick = null;
            this.announce(allow ? `${app} is connected.` : `${app} was denied.`);
            resolve(allow);
          };
          this.$("consent-allow").onclick = () => answer(true);
          this.$("consent-deny").onclick = () => answer(false);
          this.$("consent-allow").focus();
          this.announce(`${app} asks to use this CODAP. Allow or deny.`);
        }),
    );
    this.asking = asked.catch(() => false);
    return asked;
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
