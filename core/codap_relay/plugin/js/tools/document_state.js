// @ts-check
// CODAP's whole document as it stands (v2 JSON): what no `get` of a resource gives. CODAP answers `get document`
// with success at once and sends the document itself to the plugins subscribed to documents (this plugin is) as a
// `document` notification. It holds the document's name, each component's layout (position, size, the height it
// had before it was minimized) and stored settings (a map's centre and zoom, a table's column widths), and each
// dataset's set-aside cases. CODAP copies the whole document for it: about 0.2 s at 10,000 cases.

import { ToolError, get } from "./context.js";

/**
 * @import {CodapNotification} from "../types.js"
 * @import {ToolContext} from "./context.js"
 */

const WAIT_MS = 10_000;

/**
 * A function giving CODAP's document now, or null where the plugin hears no notifications (unit tests).
 * @param {Pick<ToolContext, "send" | "listen" | "sleep">} ctx
 * @returns {(() => Promise<Record<string, any>>) | null}
 */
export function documentReader({ send, listen, sleep }) {
  if (!listen) return null;
  const hear = listen;
  return async function documentNow() {
    let stop = () => {};
    /** @type {Promise<CodapNotification>} */
    const heard = new Promise((resolve) => {
      stop = hear((value) => {
        if (value?.resource === "document" && value?.values?.operation === "newDocumentState") resolve(value);
      });
    });
    try {
      const [reply] = await send([get("document")]);
      if (reply?.success !== true) {
        throw new ToolError(`CODAP did not give its document: ${reply?.values?.error ?? "no reason"}.`, "codap_error");
      }
      const notice = await Promise.race([heard, sleep(WAIT_MS).then(() => null)]);
      if (!notice) throw new ToolError(`CODAP did not send its document within ${WAIT_MS / 1000} s.`, "codap_error");
      return notice.values.state ?? {};
    } finally {
      stop();
    }
  };
}
