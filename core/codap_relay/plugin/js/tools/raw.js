// @ts-check
// The raw Data Interactive request, for what no typed tool covers, under the plugin's policy (policy.js): what
// would reach outside the document (URLs, other documents, the plugin's own window) is refused before anything
// is sent. codap_api_help gives the reference of CODAP's resources by topic (raw_help.js).

import { MAX_TEXT, ToolError, get, toolResult, withDigest } from "./context.js";
import { enforcePolicy } from "./policy.js";
import { checkFor, notTakenText } from "./raw_check.js";
import { EXAMPLES, HELP, HELP_TOPICS } from "./raw_help.js";

/**
 * @import {CodapAction, CodapRequest, Json} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {SelfComponent} from "./policy.js"
 */

/** @param {ToolContext} ctx */
export function createRawTools(ctx) {
  const { ask, send, must } = ctx;
  /** @type {SelfComponent | null} */
  let self = null; // the plugin's own component {id, name, title}, from get interactiveFrame, read once

  /**
   * CODAP's answers to the policy's probes, in one message with get interactiveFrame while it is unknown.
   * @param {CodapRequest[]} probes
   */
  async function resolve(probes) {
    const frame = self ? [] : [get("interactiveFrame")];
    const replies = await send([...frame, ...probes]);
    if (!self && replies[0]?.success === true && replies[0].values?.id !== undefined) {
      const { id, name, title } = replies[0].values;
      self = { id, name, title };
    }
    return { self, replies: replies.slice(frame.length) };
  }

  /** @param {{action: CodapAction, resource: string, values?: Json}} args */
  async function codap_api(args) {
    const { action, resource, values } = args;
    const asked = { action, resource, ...(values !== undefined ? { values } : {}) };
    const { requests: request, dropped } = await enforcePolicy(asked, { resolve });
    const sent = /** @type {CodapRequest} */ (request); // the policy read it as one
    // CODAP answers success to values its handlers ignore: what the request meant to change is read back.
    const check = checkFor(sent);
    let reply;
    /** @type {ReturnType<NonNullable<typeof check>["compare"]> | null} */
    let checked = null;
    if (check) {
      const replies = await send([...check.before, sent]);
      reply = must(sent, replies[check.before.length]);
      const after = await send(check.after(reply.values?.id));
      checked = check.compare(replies.slice(0, check.before.length), after);
    } else {
      reply = await ask(sent);
    }
    const text = JSON.stringify(reply);
    const left = dropped.length
      ? `\nThe text was rebuilt from what a text box shows; left out: ${dropped.join("; ")}.`
      : "";
    const notTaken = checked?.notTaken ?? [];
    const headline = notTaken.length ? notTakenText(notTaken) : `CODAP answered "${action} ${resource}" with success.`;
    let unread = "";
    if (checked?.unverified.length) unread = ` CODAP gives no way to read back ${checked.unverified.join(", ")}.`;
    else if (checked && !notTaken.length) unread = " Read back from CODAP: every value took.";
    const result = toolResult(
      `${headline}${unread}${left}\n` +
        `${text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text}`,
      {
        ...reply,
        ...(dropped.length ? { dropped } : {}),
        ...(checked ? { notTaken, unverified: checked.unverified } : {}),
      },
    );
    return action === "get" ? result : withDigest(ctx, result);
  }

  /** @param {{topic?: string}} args */
  async function codap_api_help(args) {
    const topic = args.topic ?? "overview";
    if (!Object.hasOwn(HELP, topic)) {
      throw new ToolError(`codap_api_help has no topic ${JSON.stringify(topic)}. Topics: ${HELP_TOPICS.join(", ")}.`,
        "invalid_arguments", { available: HELP_TOPICS });
    }
    const examples = (EXAMPLES[topic] ?? []).map((e) => e.request);
    return toolResult(`codap_api reference: ${topic}\n${HELP[topic]}`, { topic, topics: HELP_TOPICS, text: HELP[topic], examples });
  }

  return { codap_api, codap_api_help };
}
