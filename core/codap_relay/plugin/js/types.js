// @ts-check
// The plugin's shared types, in one place (JSDoc typedefs, checked by tsc; nothing here runs but the guards):
// CODAP's requests and replies (the Data Interactive API as CODAP 3 answers it), a tool's arguments and result,
// and the relay session the plugin holds. Modelled on concord-consortium/codap-plugin-api's src/api/types.ts.
// Modules import them with `@import {CodapReply} from "./types.js"` (or `import("./types.js").CodapReply`).

/**
 * What a request asks CODAP to do. `notify` sends an event (busy, undo entries) rather than changing a resource;
 * `register` and `unregister` start and stop notifications (logMessageMonitor).
 * @typedef {"get" | "create" | "update" | "delete" | "notify" | "register" | "unregister"} CodapAction
 */

/**
 * One Data Interactive request: an action on a resource (`dataContext[12].collection[3].caseCount`), with the
 * values a create, update or notify carries. Arrays of them go out as one message, answered by one array.
 * @typedef {object} CodapRequest
 * @property {CodapAction} action
 * @property {string} resource
 * @property {unknown} [values]
 * @property {unknown} [meta]
 */

/**
 * A request CODAP carried out. `values` depends on the resource (a list, a component, a count…): the code that
 * asked reads it, so it stays open here.
 * @typedef {object} CodapSuccess
 * @property {true} success
 * @property {any} [values]
 * @property {CodapId[]} [itemIDs] the items an item create made
 * @property {CodapId[]} [caseIDs] the cases a create made
 */

/**
 * A request CODAP refused. Its message is in `values.error`; some handlers nest a whole failed reply there
 * (codap_query.js codapError unwraps it), and some answer `success: null` rather than false.
 * @typedef {object} CodapFailure
 * @property {false | null | undefined} success
 * @property {{error?: unknown, [key: string]: unknown}} [values]
 * @property {unknown} [error] where a few handlers (caseFormulaSearch) put their reason instead
 */

/** @typedef {CodapSuccess | CodapFailure} CodapReply */

/**
 * A message CODAP sends the plugin of its own accord (a notification): what changed, by resource
 * (`undoChangeNotice`, `document`, `logMessageNotice`…), with values that depend on it.
 * @typedef {{action?: string, resource?: string, values?: any}} CodapNotification
 */

/**
 * Sends one message to CODAP: a request answered by a reply, or an array answered by an array (CodapPhone.call).
 * @typedef {(request: CodapRequest | CodapRequest[]) => Promise<unknown>} CodapCall
 */

/**
 * Whether CODAP carried the request out: narrows a reply to CodapSuccess. Anything else (a failure, a missing
 * reply, a stray value) is not a success.
 * @param {unknown} reply
 * @returns {reply is CodapSuccess}
 */
export function isCodapSuccess(reply) {
  return typeof reply === "object" && reply !== null && /** @type {{success?: unknown}} */ (reply).success === true;
}

/**
 * A value as JSON carries it: what a tool's arguments, CODAP's values and the relay's messages are made of where
 * their shape is open (a case's values, a raw request's values).
 * @typedef {null | boolean | number | string | JsonArray | JsonObject} Json
 */
/** @typedef {Json[]} JsonArray */
/** @typedef {{[key: string]: Json}} JsonObject */

/** CODAP's ids: numbers in CODAP 3's answers, strings where a model or a resource path gave them. @typedef {number | string} CodapId */

/** A dataset as dataContextList names it (title: its name when it has none). @typedef {{id: CodapId, name: string, title: string}} DatasetRef */

/**
 * An attribute as the tools describe it (codap_query.js describeDatasets).
 * @typedef {object} DescribedAttribute
 * @property {string} name
 * @property {CodapId} id
 * @property {string} type "" when CODAP infers it
 * @property {string} [unit]
 * @property {string} [title] only when it differs from the name
 * @property {string} [formula]
 * @property {boolean} [hidden] hidden in the dataset's table and card
 */

/** @typedef {{name: string, title: string, id: CodapId, caseCount: number, attributes: DescribedAttribute[]}} DescribedCollection */

/**
 * A dataset with its collections (parent first) and every attribute's name; its case count is its last
 * collection's (the leaf cases).
 * @typedef {object} DescribedDataset
 * @property {string} name
 * @property {string} title
 * @property {CodapId} id
 * @property {number} caseCount
 * @property {DescribedCollection[]} collections
 * @property {string[]} attributes
 */

/**
 * A component as componentList lists it, with the title CODAP shows and `get component[id]`'s description.
 * @typedef {object} Component
 * @property {CodapId} id
 * @property {string} type "graph", "caseTable", "text"…
 * @property {string} [name]
 * @property {string} title
 * @property {boolean} [hidden]
 * @property {Record<string, any>} detail
 */

/** @typedef {{type: "text", text: string}} TextContent */
/** @typedef {{type: "image", data: string, mimeType: string}} ImageContent */

/**
 * A tool's answer as MCP carries it: sentences (and pictures) for the model, the same facts as data.
 * @typedef {object} ToolResult
 * @property {Array<TextContent | ImageContent>} content
 * @property {any} [structuredContent]
 * @property {boolean} [isError]
 * @property {Record<string, unknown>} [_meta] what MCP carries beside the answer (slow.js: CODAP's waits)
 */

/**
 * A tool's arguments, already checked against its inputSchema (by the relay, or trace.js for a replay): each
 * tool reads the names its JSON definition declares.
 * @typedef {JsonObject} ToolArgs
 */

/**
 * A tool function. Written as a method's type so that a tool may declare the arguments its schema promises
 * (`{name: string, …}`) and still be one of a family's tools.
 * The second argument names the call (its request id), so that what the tool records can be found by it later.
 * (null for a call made again by CODAP's Redo that had none).
 * @typedef {{tool(args: ToolArgs, call?: {id: string | null}): Promise<ToolResult>}["tool"]} Tool
 */

/** The `error` a failed call posts to the relay (errors.js errorBody). @typedef {{message: string, code: string, data?: unknown}} ToolErrorBody */

/**
 * A call's outcome as the plugin posts it to the relay (and keeps it in its ledger): the tool's result, or why it
 * failed.
 * @typedef {{result: ToolResult, error?: undefined} | {error: ToolErrorBody, result?: undefined}} OutcomeBody
 */

/**
 * A request id's line in the plugin's ledger (storage.js): started before its tool runs, done with its outcome
 * until the relay took it (posted); `at` is when it last changed (ms since the epoch).
 * @typedef {object} LedgerEntry
 * @property {"started" | "done"} state
 * @property {string} [tool]
 * @property {number} [seq]
 * @property {ToolArgs} [args] the arguments, or a note that they were too large to keep
 * @property {OutcomeBody} [body] until the relay took it
 * @property {boolean} [posted]
 * @property {boolean} [bodyLost] the outcome was too large for storage
 * @property {number} at
 */

/**
 * One call of a saved trace (trace.js buildTrace): a relayed call or a replayed one.
 * @typedef {object} TraceCall
 * @property {string} tool
 * @property {ToolArgs} args
 * @property {string} status "completed", "failed"…
 * @property {string | null} summary
 * @property {string | null} error its error's code
 * @property {string} at ISO 8601
 * @property {string | null} completedAt
 * @property {number | null} latencyMs
 * @property {string} [via] "llm" (relayed) or "replay"
 */

/**
 * Where a trace's replay stands (replay.js), kept in storage so a reload neither runs a call twice nor forgets it:
 * each call's state by its index in the trace ("started", "done", "failed", "skipped", "refused", "interrupted").
 * @typedef {object} ReplayProgress
 * @property {string} key the trace's key (trace.js traceKey)
 * @property {string} name its file's name
 * @property {string[]} tools each call's tool
 * @property {Record<string, string>} states
 * @property {string} outcome "running", "finished", "stopped"
 * @property {string | null} reason
 * @property {number} [at] when it last changed (ms since the epoch)
 */

/** A session this tab had before (storage.js history), whose log the relay may still keep. @typedef {{code: string, token: string, endedAt: number}} PastSession */

/**
 * The relay's answer to POST /api/sessions (relay.js createSession).
 * @typedef {object} CreatedSession
 * @property {string} code
 * @property {string} browserToken
 * @property {number} ttl seconds
 * @property {string} expiresAt ISO 8601
 * @property {string} [changes] where CODAP's change notices go (`codap-relay serve` only)
 * @property {string} [push] the push channel's WebSocket URL, when the relay offers one
 */

/**
 * The session the plugin holds (session.js, kept by storage.js to survive a reload): its pairing code, the token only
 * this browser holds, when it expires (ms since the epoch, slid by each status read) and where its channels are.
 * @typedef {object} Session
 * @property {string} code
 * @property {string} token
 * @property {number} ttl seconds
 * @property {number} expiresAt
 * @property {string | null} changes
 * @property {string | null} push
 */

/**
 * A change in a request's life, as the runner tells the page (the activity panel): queued, running, done or
 * failed (with its outcome and time), replayed from the ledger, retrying its answer, delivered, withdrawn.
 * @typedef {object} ActivityUpdate
 * @property {string} id
 * @property {string} status
 * @property {string} [tool]
 * @property {ToolArgs} [args]
 * @property {string} [label] how a local call (a replayed trace's) is named
 * @property {OutcomeBody} [body]
 * @property {number} [ms] how long the tool ran
 * @property {number} [startedAt]
 * @property {number} [attempt] of the answer's delivery
 * @property {string} [code] the session's pairing code (the page adds it)
 */

/**
 * The relay's public status of a session (GET /api/sessions/{code}).
 * @typedef {{code: string, ttl: number, expiresAt: string, connected: boolean, lastSeen: string | null,
 *   pending: number}} SessionStatus
 */

/**
 * A tool request as the relay sends it (its stream's or push channel's event): `seq` orders them; `unreadable`
 * says why the plugin could not read one (it then answers it with that error, never runs it).
 * @typedef {object} ToolRequest
 * @property {string} id
 * @property {string} tool
 * @property {ToolArgs} args
 * @property {number} seq
 * @property {string} [unreadable]
 */

/**
 * A request of the session's log as its trace view gives it (GET …/log?view=trace): with its arguments and answer.
 * @typedef {object} TraceEntry
 * @property {number} seq
 * @property {string} id
 * @property {string} tool
 * @property {string} status
 * @property {string} queuedAt ISO 8601
 * @property {string | null} completedAt
 * @property {number | null} latencyMs
 * @property {string | null} error its error's code
 * @property {ToolArgs} [args]
 * @property {string} [summary]
 */

/**
 * What a channel to the relay (stream.js StreamConnection, push.js PushConnection) tells the page: its state
 * ("connected", "reconnecting", "offline", "room"), each request, and the session's end.
 * @typedef {object} ChannelHandlers
 * @property {(state: string) => void} onStatus
 * @property {(request: ToolRequest) => void} onRequest
 * @property {() => void} onSuperseded another tab took the session
 * @property {(kind: string) => void} onGone "closed" or "expired"
 * @property {() => void} [onAlive]
 * @property {(wait: {ms: number}) => void} [onWaitForRoom]
 * @property {(withdrawn: {id: string, tool: string, args?: ToolArgs}) => void} [onWithdrawn]
 * @property {(why: string) => void} [onUnreadable]
 * @property {(note: unknown) => void} [onCursorReset]
 * @property {() => void} [onFallback] the push channel gave up: use the stream for a while
 */

/**
 * The waits CODAP cost since they were last taken (CodapPhone.takeWaits).
 * @typedef {{messages: number, totalMs: number, slowestMs: number, slowest: string}} CodapWaits
 */

