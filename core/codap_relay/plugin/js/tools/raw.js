// The raw Data Interactive request, for what no typed tool covers.

import { MAX_TEXT, toolResult } from "./context.js";

export function createRawTools(ctx) {
  const { ask } = ctx;

  async function codap_api(args) {
    const { action, resource, values } = args;
    const reply = await ask({ action, resource, ...(values !== undefined ? { values } : {}) });
    const text = JSON.stringify(reply);
    return toolResult(
      `CODAP answered "${action} ${resource}" with success.\n${text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text}`,
      reply,
    );
  }

  return { codap_api };
}
