// @ts-check
// A text box's value, rebuilt from an allow-list before it reaches CODAP. CODAP 3.1.0's text component (its
// component handler and @concord-consortium/slate-editor) renders whatever Slate JSON it is given: an element's
// `attrs` become HTML attributes (a `style` that covers the page, a `background-image` that fetches a URL), an
// `image` node loads its URL, and a `text` string that parses as a JSON object is taken as rich text. So nothing
// of the value given is passed on: a new value is built holding only what a text box needs, and what was left out
// is named so the answer can say so.
//
// What CODAP takes (v3.1.0 text-registration.ts): `text` as a string (parsed as JSON when it is an object, else
// split into paragraphs at line breaks) or as {document: {children: [Slate nodes]}}. The rebuilt value is always
// the object form, so no string is ever parsed by CODAP.
//
// Kept: blocks paragraph, heading1…heading6, block-quote, bulleted-list, ordered-list, list-item (with `align`
// one of left, center, right, justify); inline `link` with an http or https `href` (a link is followed only when
// the person clicks it; the browser loads nothing for it); text leaves with the marks of CODAP's text toolbar:
// bold, italic, underlined, deleted (strike-through), code, superscript, subscript, and a `color` that is a hex
// colour (#rgb or #rrggbb, with or without alpha: CODAP renders it as a CSS colour, so nothing else is passed).

import { ToolError } from "../errors.js";

/**
 * A text leaf as CODAP gets it: its text and the marks kept.
 * @typedef {{text: string, type?: undefined, bold?: boolean, italic?: boolean, underlined?: boolean,
 *   deleted?: boolean, code?: boolean, superscript?: boolean, subscript?: boolean, color?: string}} SlateText
 */
/**
 * A block, list or link as CODAP gets it.
 * @typedef {{type: string, text?: undefined, align?: string, href?: string, children: SlateNode[]}} SlateElement
 */
/** @typedef {SlateText | SlateElement} SlateNode */
/** A JSON object of the value given, before it is rebuilt. @typedef {Record<string, unknown>} RawNode */

/** The deepest nesting of nodes a text value may have (a list in a list in a list… stays far below it). */
export const MAX_TEXT_DEPTH = 16;
/** The most nodes (elements and text leaves) in one text value. */
export const MAX_TEXT_NODES = 10_000;
/** The most characters of a text value given as a string (plain or JSON). */
export const MAX_TEXT_CHARS = 200_000;

/** @type {Set<unknown>} */
const BLOCKS = new Set(["paragraph", "heading1", "heading2", "heading3", "heading4", "heading5", "heading6", "block-quote", "list-item"]);
/** @type {Set<unknown>} */
const LISTS = new Set(["bulleted-list", "ordered-list"]);
/** @type {Array<"bold" | "italic" | "underlined" | "deleted" | "code" | "superscript" | "subscript">} */
const MARKS = ["bold", "italic", "underlined", "deleted", "code", "superscript", "subscript"];
/** A colour mark CODAP may render: hex digits only. */
const HEX_COLOR = /^#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
/** @type {Set<unknown>} */
const ALIGNS = new Set(["left", "center", "right", "justify"]);

/** @type {(v: unknown) => v is RawNode} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
/** @type {(o: unknown, k: string) => unknown} */
const own = (o, k) => (isObject(o) && Object.hasOwn(o, k) ? o[k] : undefined);

/**
 * The error for a text value the plugin will not rebuild: too deep, too large, or not text at all.
 * @param {string} why
 * @param {Record<string, unknown>} [data]
 */
export function textError(why, data = {}) {
  return new ToolError(`The text was not sent to CODAP: ${why}.`, "text_refused", data);
}

/**
 * An http(s) URL as the browser would read it, or null (javascript:, data:, relative and odd ones are not).
 * @param {unknown} value
 */
export function httpUrl(value) {
  if (typeof value !== "string" || value.length > 2_000) return null;
  let url;
  try {
    url = new URL(value.trim());
  } catch {
    return null;
  }
  return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
}

/**
 * Plain text as CODAP's own textToSlate makes it: a paragraph per line.
 * @param {unknown} text
 * @returns {SlateElement[]}
 */
export function paragraphs(text) {
  return String(text)
    .split(/\r\n|\r|\n/)
    .map((line) => ({ type: "paragraph", children: [{ text: line }] }));
}

class Builder {
  constructor() {
    this.nodes = 0;
    /** @type {Map<string, number>} */
    this.dropped = new Map(); // what was left out → how many times
  }

  /** @param {string} what */
  drop(what) {
    this.dropped.set(what, (this.dropped.get(what) ?? 0) + 1);
  }

  /** @param {number} depth */
  count(depth) {
    if (depth > MAX_TEXT_DEPTH) {
      throw textError(`it nests deeper than ${MAX_TEXT_DEPTH} levels`, { limit: "depth", max: MAX_TEXT_DEPTH });
    }
    if (++this.nodes > MAX_TEXT_NODES) {
      throw textError(`it holds more than ${MAX_TEXT_NODES} nodes`, { limit: "nodes", max: MAX_TEXT_NODES });
    }
  }

  /**
   * Notes what an element or leaf carries beyond what is kept.
   * @param {RawNode} node
   * @param {string[]} kept
   */
  extras(node, kept) {
    for (const key of Object.keys(node)) {
      if (kept.includes(key)) continue;
      if (key === "attrs") this.drop("attrs (HTML attributes)");
      else if (key === "style" || key === "styles") this.drop("styles");
      else if (key === "color") this.drop("a color mark that is not a hex colour (#rrggbb)");
      else this.drop(`the property ${JSON.stringify(key).slice(0, 40)}`);
    }
  }

  /**
   * @param {RawNode} node one whose text is a string
   * @param {number} depth
   */
  leaf(node, depth) {
    this.count(depth);
    /** @type {SlateText} */
    const out = { text: /** @type {string} */ (node.text) };
    for (const mark of MARKS) if (own(node, mark) === true) out[mark] = true;
    if (own(node, "underline") === true) out.underlined = true; // the common spelling of CODAP's mark
    const color = own(node, "color");
    const kept = typeof color === "string" && HEX_COLOR.test(color);
    if (kept) out.color = color;
    this.extras(node, ["text", ...MARKS, "underline", ...(kept ? ["color"] : [])]);
    return out;
  }

  /**
   * Inline content: text leaves and links; anything else gives its text.
   * @param {unknown} children
   * @param {number} depth
   * @returns {SlateNode[]}
   */
  inlines(children, depth) {
    /** @type {SlateNode[]} */
    const out = [];
    for (const child of Array.isArray(children) ? children : []) {
      if (isObject(child) && typeof own(child, "text") === "string") {
        out.push(this.leaf(child, depth));
      } else if (isObject(child) && own(child, "type") === "link") {
        this.count(depth);
        const href = httpUrl(own(child, "href"));
        const inner = this.inlines(own(child, "children"), depth + 1).filter((c) => typeof c.text === "string");
        this.extras(child, ["type", "href", "children"]);
        if (href) {
          out.push({ type: "link", href, children: inner.length ? inner : [{ text: "" }] });
        } else {
          this.drop("links that are not http or https (their text kept)");
          out.push(...inner);
        }
      } else {
        out.push(...this.unknown(child, depth, true));
      }
    }
    return out;
  }

  /**
   * A node that is not allowed: images and non-objects go; an unknown element keeps only its text.
   * @param {unknown} node
   * @param {number} depth
   * @param {boolean} inline
   * @returns {SlateNode[]}
   */
  unknown(node, depth, inline) {
    this.count(depth);
    const type = own(node, "type");
    if (type === "image") {
      this.drop("images");
      return [];
    }
    if (!isObject(node)) {
      this.drop("values that are not Slate nodes");
      return [];
    }
    this.drop(`nodes of type ${JSON.stringify(type ?? null).slice(0, 40)} (their text kept)`);
    const inner = this.inlines(own(node, "children"), depth + 1).flatMap((c) => (c.type === "link" ? /** @type {SlateElement} */ (c).children : [c]));
    if (inline) return inner;
    return inner.length ? [{ type: "paragraph", children: inner }] : [];
  }

  /**
   * @param {unknown} node
   * @param {number} depth
   * @returns {SlateElement[]}
   */
  block(node, depth) {
    const type = own(node, "type");
    if (isObject(node) && (typeof own(node, "text") === "string" || own(node, "type") === "link")) {
      return [{ type: "paragraph", children: this.inlines([node], depth) }]; // inline content gets a paragraph
    }
    if (!isObject(node) || (!BLOCKS.has(type) && !LISTS.has(type))) return /** @type {SlateElement[]} */ (this.unknown(node, depth, false)); // not inline: paragraphs
    this.count(depth);
    const align = own(node, "align");
    this.extras(node, ["type", "children", "align"]);
    const aligned = ALIGNS.has(align) ? { align: /** @type {string} */ (align) } : {};
    if (align !== undefined && !ALIGNS.has(align)) this.drop("an align that is not left, center, right or justify");
    if (LISTS.has(type)) {
      const items = this.blocks(own(node, "children"), depth + 1).map((b) =>
        b.type === "list-item" || LISTS.has(b.type) ? b : { ...b, type: "list-item" },
      );
      return items.length ? [{ type: /** @type {string} */ (type), ...aligned, children: items }] : [];
    }
    const inner = this.inlines(own(node, "children"), depth + 1);
    return [{ type: /** @type {string} */ (type), ...aligned, children: inner.length ? inner : [{ text: "" }] }];
  }

  /**
   * @param {unknown} children
   * @param {number} depth
   * @returns {SlateElement[]}
   */
  blocks(children, depth) {
    return (Array.isArray(children) ? children : []).flatMap((c) => this.block(c, depth));
  }

  /** The dropped things, in words, for the answer. */
  droppedList() {
    return [...this.dropped].map(([what, n]) => (n > 1 ? `${what} ×${n}` : what));
  }
}

/**
 * The children a text value holds, as CODAP would read them; plain text becomes paragraphs.
 * @param {unknown} value
 * @returns {{plain: true, children: SlateElement[]} | {plain: false, children: unknown[]}}
 */
function childrenOf(value) {
  if (typeof value === "string") {
    if (value.length > MAX_TEXT_CHARS) {
      throw textError(`it is ${value.length} characters long, more than ${MAX_TEXT_CHARS}`, { limit: "chars", max: MAX_TEXT_CHARS });
    }
    let parsed;
    try {
      parsed = JSON.parse(value);
    } catch {
      return { plain: true, children: paragraphs(value) };
    }
    // CODAP reads a string that parses as a JSON object (or array) as rich text, so it is read here the same way.
    if (parsed === null || typeof parsed !== "object") return { plain: true, children: paragraphs(value) };
    return childrenOf(parsed);
  }
  if (Array.isArray(value)) return { plain: false, children: value };
  if (isObject(value)) {
    const children = own(own(value, "document"), "children");
    if (Array.isArray(children)) return { plain: false, children };
  }
  throw textError("a text is a string or rich text {document: {children: [Slate nodes]}}", { limit: "shape" });
}

/**
 * The text value CODAP gets for `value` (plain text, a JSON string, or Slate rich text): {value: {document:
 * {children}}, dropped: [what was left out, in words]}. Throws text_refused when it is too deep or too large.
 * @param {unknown} value
 */
export function rebuildText(value) {
  const { plain, children } = childrenOf(value);
  const builder = new Builder();
  const blocks = plain ? children : builder.blocks(children, 1);
  if (!plain && JSON.stringify(blocks).length > MAX_TEXT_CHARS * 2) {
    throw textError(`it is larger than ${MAX_TEXT_CHARS * 2} characters as rich text`, { limit: "chars", max: MAX_TEXT_CHARS * 2 });
  }
  return {
    value: { document: { children: blocks.length ? blocks : paragraphs("") } },
    dropped: builder.droppedList(),
  };
}

/**
 * What CODAP renders of a text value, as plain text (a paragraph a line).
 * @param {any} value a string or Slate JSON, as CODAP holds it
 * @returns {string}
 */
export function plainText(value) {
  if (typeof value === "string") return value;
  /** @type {any[]} */
  const nodes = Array.isArray(value) ? value : value?.document?.children ?? [];
  /** @type {(node: any) => string} */
  const textOf = (node) =>
    typeof node?.text === "string" ? node.text : Array.isArray(node?.children) ? node.children.map(textOf).join("") : "";
  return nodes.map(textOf).join("\n");
}
