// @ts-check
// What the raw tool (codap_api) may ask of CODAP: ONE list of rules, checked in the plugin before a request
// reaches CODAP (codap_api runs it for every request it sends; a replayed trace marks and skips what it refuses).
// The raw Data Interactive API can reach outside the document: a webView, game (plugin), guideView or
// imageComponentView component loads a page or picture from any URL, a map's geoRaster and a text's image nodes
// fetch one, `dataContextFromURL` downloads one, `update document` replaces the whole document, and the plugin's
// own component could be hidden, moved away, shrunk or closed while it keeps answering the LLM; a text's rich text
// can carry HTML attributes and styles (a box over the whole page, a background image). A text's value is rebuilt
// from an allow-list (richtext.js); the rules refuse the rest, and values too deep or too large to read whole;
// every other request goes through as it is.
//
// Requests are read as CODAP reads them (v3.1.0 resource-parser.ts): the resource is split into `type[name]`
// clauses by CODAP's own regular expression, the last clause's type picks the handler, and a later clause of a
// type overrides an earlier one. The rules compare types and actions without regard to case or surrounding
// space, read values by own properties only, refuse a `__proto__` key anywhere in the values, and check each
// element of a values array, and each request of an array of requests.
//
// Which component `component[X]` means (id, v3 id, name or title: findTileFromNameOrId) is CODAP's call: before a
// change to a named component, the plugin asks CODAP `get` with the very same resource and compares the id it
// gets back with its own (from `get interactiveFrame`, read once and kept).

import { ToolError } from "../errors.js";
import { rebuildText } from "./richtext.js";
import { MIN_DATE_RANGE_S } from "./sliders.js";

/** @import {CodapId, CodapReply, CodapRequest} from "../types.js" */

/**
 * A resource as CODAP parses it: its clauses, the last one's type, and the last name given to each type (by the
 * type in lower case).
 * @typedef {{clauses: Array<{type: string, name: string | undefined}>, type: string | undefined,
 *   byType: Record<string, string | undefined>}} ParsedResource
 */

/**
 * A request as the rules read it: action and type in lower case, its values as given.
 * @typedef {{action: string, resource: string, values: unknown, parsed: ParsedResource, type: string}} ReadRequest
 */

/**
 * One rule of the policy (see RULES).
 * @typedef {{id: string, rule: string, instead: string, check: (req: ReadRequest) => string | null}} PolicyRule
 */

/** A rule a request breaks, and why. @typedef {{rule: PolicyRule, why: string}} Refusal */

/** The plugin's own component, as far as it is known. @typedef {{id?: CodapId | null, name?: string, title?: string}} SelfComponent */

/** The component types codap_api may create: none of them loads a URL. */
export const SAFE_COMPONENT_TYPES = ["graph", "caseTable", "caseCard", "map", "slider", "text", "calculator"];

/** Keys that carry a URL in component values (compared in lower case), anywhere in the values. */
export const URL_KEYS = ["url", "currentgameurl", "georaster", "src", "href", "srcset"];
/** Keys that carry HTML attributes or CSS (a style can cover the page or fetch a background image). */
export const STYLE_KEYS = ["attrs", "style", "styles"];

/** @param {unknown} v */
const lower = (v) => (typeof v === "string" ? v.trim().toLowerCase() : "");
/** @type {(object: unknown, key: string) => unknown} */
const own = (object, key) =>
  (object && typeof object === "object" && Object.hasOwn(object, key) ? /** @type {Record<string, unknown>} */ (object)[key] : undefined);

// CODAP v3.1.0 parseResourceSelector, verbatim: clauses `word` or `word[name]` anywhere in the string.
const SELECTOR_RE = /(([\w]+)(?:\[\s*([^\]]+)\s*])?)/g;
const CLAUSE_RE = /^([\w]+)(?:\[\s*([^\]]+)\s*])?$/;
// What a resource looks like when CODAP and a reader agree on it: clauses joined by dots, nothing else.
const WELL_FORMED_RE = /^\w+(\[[^\]]+\])?(\.\w+(\[[^\]]+\])?)*$/;

/**
 * The resource as CODAP parses it: {clauses: [{type, name}], type (the last), byType (last name per type)}.
 * @param {unknown} resource
 * @returns {ParsedResource}
 */
export function parseResource(resource) {
  /** @type {ParsedResource["clauses"]} */
  const clauses = [];
  /** @type {ParsedResource["byType"]} */
  const byType = {};
  for (const selector of String(resource).match(SELECTOR_RE) ?? []) {
    const match = CLAUSE_RE.exec(selector);
    if (!match) continue;
    clauses.push({ type: match[1], name: match[2] });
    byType[lower(match[1])] = match[2];
  }
  return { clauses, type: clauses.at(-1)?.type, byType };
}

/** How deep values may nest, and how long a JSON string inside them may be, before they are refused whole. */
export const MAX_VALUE_DEPTH = 40;
export const MAX_JSON_CHARS = 1_000_000;
/** Stand-ins keysIn yields for what cannot be inspected, and for an image node. */
const TOO_DEEP = "(values nested too deep)";
const TOO_LARGE = "(a JSON string too large)";
const IMAGE_NODE = "(an image node)";

/** Text values rebuilt from the allow-list (richtext.js): their link hrefs are http(s) links, never loaded. */
const REBUILT = new WeakSet();

/**
 * Every object key anywhere in `value` (own keys only), and the JSON text strings inside it parsed too; what is
 * nested deeper than MAX_VALUE_DEPTH, or a JSON string of MAX_JSON_CHARS or more, yields a stand-in that every
 * rule refuses, so nothing it cannot read counts as clean.
 * @param {unknown} value
 * @param {number} [depth]
 * @returns {Generator<string, void, undefined>}
 */
function* keysIn(value, depth = 0) {
  if (value === null || (typeof value === "object" && REBUILT.has(value))) return;
  if (depth > MAX_VALUE_DEPTH) {
    yield TOO_DEEP;
    return;
  }
  if (typeof value === "string") {
    const text = value.trim();
    if (text.startsWith("{") || text.startsWith("[")) {
      if (text.length >= MAX_JSON_CHARS) {
        yield TOO_LARGE;
        return;
      }
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch {
        return;
      }
      yield* keysIn(parsed, depth + 1);
    }
    return;
  }
  if (typeof value !== "object") return;
  if (lower(own(value, "type")) === "image") yield IMAGE_NODE;
  for (const key of Object.keys(value)) {
    yield key;
    yield* keysIn(/** @type {Record<string, unknown>} */ (value)[key], depth + 1);
  }
  if (Object.hasOwn(value, "__proto__")) yield "__proto__";
}

/** @type {(values: unknown, wanted: string[]) => string | null} */
const hasKey = (values, wanted) => {
  for (const key of keysIn(values)) {
    if (wanted.includes(lower(key)) || wanted.includes(key)) return key;
  }
  return null;
};

/** @type {(values: unknown) => unknown[]} */
const asList = (values) => (Array.isArray(values) ? values : [values]);

/**
 * THE rules. Each: `id` (the refusal's data.rule), `rule` (one line, shown in codap_api's description and in
 * codap_api_help's policy topic), `instead` (the typed tool to use, or what the person can do), and `check(req)`
 * → a sentence saying why this request breaks it, or null. `req` is {action, resource, values, parsed, type}
 * with action and type in lower case. The plugin's own component is the one rule that also needs CODAP's answer
 * (see ownComponentTarget).
 * @type {PolicyRule[]}
 */
export const RULES = [
  {
    id: "bounded_values",
    rule: `Values nest at most ${MAX_VALUE_DEPTH} levels, and a JSON string in them is shorter than ${MAX_JSON_CHARS} characters: what the plugin cannot read whole is not sent.`,
    instead: "Send smaller, flatter values.",
    check: ({ values }) => {
      const key = hasKey(values, [TOO_DEEP, TOO_LARGE]);
      return key ? `the values hold ${key}` : null;
    },
  },
  {
    id: "resource_form",
    rule: "The resource is clauses joined by dots, each a word or word[name] (dataContext[d].collection[c]); nothing else around them.",
    instead: "Write the resource as CODAP documents it; codap_api_help shows each resource.",
    check: ({ resource }) =>
      WELL_FORMED_RE.test(resource.trim()) ? null : `the resource ${JSON.stringify(resource)} is not of the form clause[name].clause[name]`,
  },
  {
    id: "no_url_import",
    rule: "No dataContextFromURL: it makes the browser download any URL.",
    instead: "import_codap_data",
    check: ({ parsed }) =>
      parsed.clauses.some((c) => lower(c.type) === "datacontextfromurl")
        ? "dataContextFromURL makes the browser fetch a URL"
        : null,
  },
  {
    id: "no_document_change",
    rule: "The document can be read (get document), not created, replaced, updated or deleted: that would open another document.",
    instead: "Change the open document with the typed tools; the person opens documents from CODAP's menu.",
    check: ({ action, parsed }) =>
      action !== "get" && parsed.clauses.some((c) => ["document", "interactiveapi"].includes(lower(c.type)))
        ? `"${action} document" would replace or open a document`
        : null,
  },
  {
    id: "safe_component_types",
    rule: `New components only of the types ${SAFE_COMPONENT_TYPES.join(", ")}: webView, game (plugin), guideView and imageComponentView load a URL.`,
    instead: "create_codap_graph, or update_codap_component for existing components; the person adds web pages from CODAP's toolbar.",
    check: ({ action, type, values }) => {
      if (action !== "create" || type !== "component") return null;
      for (const v of asList(values)) {
        const kind = own(v, "type");
        if (!SAFE_COMPONENT_TYPES.some((t) => lower(t) === lower(kind))) {
          return `a component of type ${JSON.stringify(kind ?? null)} is not one codap_api may create`;
        }
      }
      return null;
    },
  },
  {
    id: "no_urls_in_components",
    rule: `No URL, style or image in a component's values: keys ${[...URL_KEYS, ...STYLE_KEYS].join(", ")} and image nodes (any case, at any depth, also inside JSON strings) are refused. A text's value is first rebuilt from the rich-text allow-list (paragraphs, headings, quotes, lists, http(s) links, the text toolbar's marks, hex colours), which drops them.`,
    instead: "update_codap_component",
    check: ({ action, parsed, values }) => {
      if (action === "get" || !parsed.clauses.some((c) => ["component", "interactiveframe"].includes(lower(c.type)))) {
        return null;
      }
      const key = hasKey(values, [...URL_KEYS, ...STYLE_KEYS, IMAGE_NODE]);
      if (key === IMAGE_NODE) return "the values hold an image node, which makes the browser load a URL";
      return key ? `the values carry ${JSON.stringify(key)}, which can make the browser load a URL or cover the page` : null;
    },
  },
  {
    id: "date_slider_range",
    rule: `A slider turned to a date scale (scaleType "date") carries its lowerBound and upperBound, seconds since 1970 at least ${MIN_DATE_RANGE_S} (a day) apart: CODAP 3.1.0 stops responding when a date slider's range is shorter, as it is when the numbers of a numeric slider are read as dates.`,
    instead: "update_codap_slider (scaleType date, min and max as dates), or send lowerBound and upperBound with scaleType.",
    check: ({ action, parsed, values }) => {
      if (action === "get" || !parsed.clauses.some((c) => lower(c.type) === "component")) return null;
      for (const v of asList(values)) {
        if (lower(own(v, "scaleType")) !== "date") continue;
        const [lo, hi] = [own(v, "lowerBound"), own(v, "upperBound")];
        if (typeof lo !== "number" || typeof hi !== "number" || !(hi - lo >= MIN_DATE_RANGE_S)) {
          return `scaleType "date" with ${typeof lo === "number" && typeof hi === "number" ? `a range of ${hi - lo} s` : "no lowerBound and upperBound"} would freeze CODAP`;
        }
      }
      return null;
    },
  },
  {
    id: "not_the_plugin",
    rule: "The plugin's own component (by id, name or title) and interactiveFrame can be read, never changed: no hide, move, resize, minimize, retitle, select or close.",
    instead: "Nothing: the plugin's window is the person's view of what the LLM does. Other components: update_codap_component.",
    check: ({ action, type, parsed }) =>
      action !== "get" && parsed.clauses.some((c) => lower(c.type) === "interactiveframe")
        ? `"${action} interactiveFrame" changes the plugin's own window`
        : null,
  },
  {
    id: "no_prototype_keys",
    rule: "No __proto__ key anywhere in the values.",
    instead: "Use ordinary names.",
    check: ({ values }) => (hasKey(values, ["__proto__"]) ? "the values hold a __proto__ key" : null),
  },
];

/** The rule list as text: one line per rule, for codap_api's description and codap_api_help. */
export function policyText() {
  return RULES.map((r) => `${r.id}: ${r.rule} Instead: ${r.instead}`).join("\n");
}

/**
 * A request as the rules read it; null when it is not an object with string action and resource.
 * @param {unknown} request
 * @returns {ReadRequest | null}
 */
function normalize(request) {
  if (!request || typeof request !== "object" || Array.isArray(request)) return null;
  const action = own(request, "action");
  const resource = own(request, "resource");
  if (typeof action !== "string" || typeof resource !== "string") return null;
  const parsed = parseResource(resource);
  return { action: lower(action), resource, values: own(request, "values"), parsed, type: lower(parsed.type) };
}

/**
 * The error codap_api throws for a refused request.
 * @param {unknown} request
 * @param {PolicyRule} rule
 * @param {string} why
 */
export function policyError(request, rule, why) {
  const action = own(request, "action");
  const resource = own(request, "resource");
  return new ToolError(
    `Refused by the plugin's policy (rule ${rule.id}): ${why}. ${rule.rule} Nothing was sent to CODAP. ` +
      `Instead: ${rule.instead}`,
    "refused_by_policy",
    { rule: rule.id, instead: rule.instead, action: action ?? null, resource: resource ?? null },
  );
}

/**
 * The first rule `request` breaks, without asking CODAP: {rule, why} or null. `self` ({id, name, title} of the
 * plugin's component, when known) refuses changes that name the plugin outright.
 * @param {unknown} request
 * @param {SelfComponent | null} [self]
 * @returns {Refusal | null}
 */
export function checkRequest(request, self = null) {
  const req = normalize(request);
  if (!req) {
    return { rule: ruleNamed("resource_form"), why: "a request is an object with a string action and resource" };
  }
  for (const rule of RULES) {
    const why = rule.check(req);
    if (why) return { rule, why };
  }
  const target = componentName(req);
  if (target !== null && self && namesPlugin(target, self)) {
    return { rule: ruleNamed("not_the_plugin"), why: `component[${target}] is the plugin itself` };
  }
  return null;
}

/**
 * The rule with this id (one of RULES').
 * @param {string} id
 */
function ruleNamed(id) {
  return /** @type {PolicyRule} */ (RULES.find((r) => r.id === id));
}

/**
 * The component a changing component request names, or null (gets, and requests of other types).
 * @param {ReadRequest} req
 */
function componentName(req) {
  if (req.action === "get" || req.type !== "component") return null;
  const name = req.parsed.byType.component;
  return name === undefined ? null : name;
}

/** @param {string} name @param {SelfComponent} self */
function namesPlugin(name, self) {
  const n = lower(name);
  const id = self.id === undefined || self.id === null ? null : String(self.id);
  return (
    (id !== null && (n === id.toLowerCase() || n === `webv${id}`.toLowerCase())) ||
    (typeof self.name === "string" && self.name !== "" && n === lower(self.name)) ||
    (typeof self.title === "string" && self.title !== "" && n === lower(self.title))
  );
}

/**
 * For a request that changes a named component: the `get` request that makes CODAP say which component it
 * means (the same resource, so CODAP resolves it the same way); null otherwise.
 * @param {unknown} request
 * @returns {CodapRequest | null}
 */
export function ownComponentProbe(request) {
  const req = normalize(request);
  if (!req || componentName(req) === null) return null;
  return { action: "get", resource: req.resource };
}

/**
 * `request` with the text of every text value it creates or updates rebuilt from the rich-text allow-list
 * (richtext.js): {request, dropped: [what was left out, in words]}. Throws text_refused for a text too deep or
 * too large. The rules then see the rebuilt text, whose http(s) links are the only URLs they let through.
 * @param {unknown} request
 * @returns {{request: unknown, dropped: string[]}}
 */
export function rebuildTexts(request) {
  const req = normalize(request);
  if (!req || !["create", "update"].includes(req.action) || req.type !== "component") return { request, dropped: [] };
  /** @type {string[]} */
  const dropped = [];
  /** @type {(v: any) => unknown} */
  const rebuild = (v) => {
    if (!v || typeof v !== "object" || Array.isArray(v) || !Object.hasOwn(v, "text")) return v;
    const text = rebuildText(v.text);
    REBUILT.add(text.value);
    dropped.push(...text.dropped);
    return { ...v, text: text.value };
  };
  const values = Array.isArray(req.values) ? req.values.map(rebuild) : rebuild(req.values);
  return { request: values === req.values ? request : { .../** @type {object} */ (request), values }, dropped };
}

/**
 * A request as it will be sent, or why it will not be: {request, dropped} with its text rebuilt, or {refusal:
 * {rule, why}} (a text too deep or too large is refused under the bounded_values rule). Needs no CODAP: the
 * replay's confirmation uses it to mark the calls the policy refuses.
 * @param {unknown} request
 * @returns {{refusal: Refusal, request?: undefined, dropped?: undefined}
 *   | {request: unknown, dropped: string[], refusal?: undefined}}
 */
export function reviewRequest(request) {
  let rebuilt;
  try {
    rebuilt = rebuildTexts(request);
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    return { refusal: { rule: ruleNamed("bounded_values"), why: err.message.replace(/\.$/, "") } };
  }
  const refusal = checkRequest(rebuilt.request);
  return refusal ? { refusal } : rebuilt;
}

/**
 * Checks every request (one, or an array) against the rules, after rebuilding its text values; throws the
 * refused_by_policy ToolError for the first one that breaks a rule, else resolves to {requests (the same shape,
 * text rebuilt: what to send), dropped}. Only a change to a named component needs CODAP: `resolve(probes)` sends the
 * `get` probes in one message and resolves to {self: {id, name, title} of the plugin's component or null,
 * replies: CODAP's reply to each probe}.
 * @param {unknown} requests
 * @param {{resolve: (probes: CodapRequest[]) => Promise<{self: SelfComponent | null, replies: CodapReply[]}>}} io
 * @returns {Promise<{requests: unknown, dropped: string[]}>}
 */
export async function enforcePolicy(requests, { resolve }) {
  /** @type {unknown[]} */
  const list = [];
  /** @type {string[]} */
  const dropped = [];
  for (const request of Array.isArray(requests) ? requests : [requests]) {
    const reviewed = reviewRequest(request);
    if (reviewed.refusal) throw policyError(request, reviewed.refusal.rule, reviewed.refusal.why);
    list.push(reviewed.request);
    dropped.push(...reviewed.dropped);
  }
  const sent = { requests: Array.isArray(requests) ? list : list[0], dropped };
  const probed = list.map((request) => ({ request, probe: ownComponentProbe(request) })).filter((p) => p.probe);
  if (probed.length === 0) return sent;
  const ownRule = ruleNamed("not_the_plugin");
  const { self, replies } = await resolve(probed.map((p) => /** @type {CodapRequest} */ (p.probe)));
  probed.forEach(({ request }, i) => {
    if (!self || self.id === undefined || self.id === null) {
      throw policyError(
        request,
        ownRule,
        "the plugin cannot tell which component is its own (CODAP did not answer get interactiveFrame), so it " +
          "changes no named component",
      );
    }
    const refusal = checkRequest(request, self);
    if (refusal) throw policyError(request, refusal.rule, refusal.why);
    const reply = replies[i];
    const id = reply?.success === true ? own(reply.values, "id") : undefined;
    if (id !== undefined && String(id) === String(self.id)) {
      throw policyError(request, ownRule, `${own(request, "resource")} is the plugin's own component (id ${self.id})`);
    }
  });
  return sent;
}
