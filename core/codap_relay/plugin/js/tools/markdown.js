// @ts-check
// A text box's formatting written as Markdown, both ways: what CODAP's text toolbar sets (v3.1.0
// text-inspector.tsx over @concord-consortium/slate-editor) read from Markdown a model writes, and CODAP's rich
// text (Slate JSON) written back as Markdown so a model sees the formatting without a picture.
//
// The toolbar's buttons and the Markdown for each: headings 1-3 (`#`, `##`, `###`; the editor also keeps 4-6),
// block quote (`> `), bulleted and numbered lists (`- `, `1. `), bold (`**b**`), italic (`*i*`), underline
// (`<u>u</u>`), strike-through (`~~s~~`), code (`` `c` ``), superscript and subscript (`<sup>`, `<sub>`), text
// colour (`<span style="color: #d62728">…</span>`, any CSS colour name or hex) and links (`[text](https://…)`).
// Each line is a paragraph, as in plain text; blank lines only separate. What the toolbar cannot make (images,
// which load a URL; links that are not http or https) is left out and named.

import { toHex } from "./colors.js";
import { httpUrl, paragraphs, plainText } from "./richtext.js";

/**
 * The marks a text leaf carries, by Slate's names.
 * @typedef {{bold?: true, italic?: true, underlined?: true, deleted?: true, code?: true, superscript?: true,
 *   subscript?: true, color?: string}} Marks
 * @typedef {{text: string} & Marks} Leaf
 * @typedef {{type: string, href?: string, children: Array<Leaf | Inline | Block>}} Block
 * @typedef {{type: "link", href: string, children: Leaf[]}} Inline
 */

/** HTML tags read inside Markdown, and the mark each sets. */
/** @type {Record<string, keyof Marks>} */
const TAGS = { u: "underlined", ins: "underlined", sup: "superscript", sub: "subscript", s: "deleted", del: "deleted",
  strike: "deleted", b: "bold", strong: "bold", i: "italic", em: "italic", code: "code", span: "color", font: "color" };
/** The marks in the order they are written out, outermost first (a colour, then underline… code innermost). */
/** @type {Array<keyof Marks>} */
const ORDER = ["color", "underlined", "superscript", "subscript", "deleted", "bold", "italic", "code"];
const LIST_TYPES = new Set(["bulleted-list", "ordered-list"]);

/** @param {string} c */
const isSpace = (c) => c === undefined || /\s/.test(c);
/** @param {string} c */
const isWordChar = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

class Reader {
  /** @param {{createElement?: (tag: string) => any} | undefined} doc the page (a canvas reads colour names) */
  constructor(doc) {
    this.doc = doc;
    /** @type {Map<string, number>} */
    this.dropped = new Map();
  }

  /** @param {string} what */
  drop(what) {
    this.dropped.set(what, (this.dropped.get(what) ?? 0) + 1);
  }

  /**
   * The leaves and links of one line of Markdown.
   * @param {string} src
   * @param {Marks} marks
   * @returns {Array<Leaf | Inline>}
   */
  inline(src, marks = {}) {
    /** @type {Array<Leaf | Inline>} */
    const out = [];
    let text = "";
    const flush = () => {
      if (text) out.push({ text, ...marks });
      text = "";
    };
    let i = 0;
    while (i < src.length) {
      const c = src[i];
      if (c === "\\" && i + 1 < src.length && /[\\`*_~[\]()<>#+\-.!|{}]/.test(src[i + 1])) {
        text += src[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        const run = /^`+/.exec(src.slice(i))?.[0] ?? "`";
        const end = src.indexOf(run, i + run.length);
        if (end > i) {
          flush();
          const code = src.slice(i + run.length, end);
          out.push({ text: run.length > 1 ? code.trim() : code, ...marks, code: true });
          i = end + run.length;
          continue;
        }
      }
      if (c === "[") {
        const link = /^\[((?:\\.|[^\]\\])*)\]\(\s*((?:[^()\s]|\([^()\s]*\))*)\s*\)/.exec(src.slice(i));
        if (link) {
          flush();
          const inner = /** @type {Leaf[]} */ (this.inline(link[1], marks).flatMap((n) => ("type" in n ? n.children : [n])));
          const href = httpUrl(link[2]);
          if (href) out.push({ type: "link", href, children: inner.length ? inner : [{ text: "" }] });
          else {
            this.drop("links that are not http or https (their text kept)");
            out.push(...inner);
          }
          i += link[0].length;
          continue;
        }
      }
      if (c === "<") {
        const tag = this.tag(src, i, marks);
        if (tag) {
          flush();
          out.push(...tag.nodes);
          i = tag.end;
          continue;
        }
      }
      if (c === "*" || c === "_" || c === "~") {
        const span = this.emphasis(src, i, marks);
        if (span) {
          flush();
          out.push(...span.nodes);
          i = span.end;
          continue;
        }
        const run = src.slice(i).match(c === "*" ? /^\*+/ : c === "_" ? /^_+/ : /^~+/)?.[0] ?? c;
        text += run; // a delimiter with nothing to close it is text
        i += run.length;
        continue;
      }
      text += c;
      i += 1;
    }
    flush();
    return out;
  }

  /**
   * `**bold**`, `*italic*`, `***both***`, `~~struck~~` (and `_` for `*`) at `i`, or null.
   * @param {string} src
   * @param {number} i
   * @param {Marks} marks
   */
  emphasis(src, i, marks) {
    const c = src[i];
    let n = 0;
    while (src[i + n] === c) n++;
    if (c === "~" ? n !== 2 : n > 3) return null;
    const after = src[i + n];
    if (isSpace(after) || (c === "_" && isWordChar(src[i - 1]))) return null;
    for (let k = i + n + 1; k < src.length; k++) {
      if (src[k] === "\\") {
        k++;
        continue;
      }
      if (src[k] !== c || src[k - 1] === c) continue;
      let m = 0;
      while (src[k + m] === c) m++;
      if (m === n && !isSpace(src[k - 1]) && !(c === "_" && isWordChar(src[k + m]))) {
        /** @type {Marks} */
        const inner = { ...marks };
        if (c === "~") inner.deleted = true;
        if (c !== "~" && n !== 2) inner.italic = true;
        if (c !== "~" && n >= 2) inner.bold = true;
        return { nodes: this.inline(src.slice(i + n, k), inner), end: k + m };
      }
      k += m - 1;
    }
    return null;
  }

  /**
   * An HTML tag of TAGS at `i` with its closing tag, or null (then `<` is text).
   * @param {string} src
   * @param {number} i
   * @param {Marks} marks
   */
  tag(src, i, marks) {
    const open = /^<([a-z]+)((?:\s[^<>]*)?)>/i.exec(src.slice(i));
    const name = open?.[1].toLowerCase();
    if (!open || !name || !(name in TAGS)) return null;
    const closing = new RegExp(`<(/?)${name}(?:\\s[^<>]*)?>`, "gi");
    closing.lastIndex = i + open[0].length;
    let depth = 1;
    let found;
    while ((found = closing.exec(src))) {
      depth += found[1] ? -1 : 1;
      if (depth === 0) break;
    }
    if (!found) return null;
    const body = src.slice(i + open[0].length, found.index);
    /** @type {Marks} */
    const inner = { ...marks };
    const mark = TAGS[name];
    if (mark === "color") {
      const given = /(?:^|[\s;"'])color\s*[:=]\s*["']?\s*([^;"'>]+)/i.exec(open[2])?.[1]?.trim();
      const hex = given ? toHex(given, this.doc) : null;
      if (hex) inner.color = hex;
      else this.drop(given ? `the colour ${JSON.stringify(given.slice(0, 30))} (not a colour; the text kept)` : `a <${name}> without a colour (its text kept)`);
    } else {
      inner[mark] = true;
      if (mark === "superscript") delete inner.subscript; // the toolbar makes them exclusive
      if (mark === "subscript") delete inner.superscript;
    }
    return { nodes: this.inline(body, inner), end: found.index + found[0].length };
  }
}

/**
 * Adjacent leaves with the same marks, joined.
 * @param {Array<Leaf | Inline>} nodes
 * @returns {Array<Leaf | Inline>}
 */
function merged(nodes) {
  /** @type {Array<Leaf | Inline>} */
  const out = [];
  for (const node of nodes) {
    const last = out[out.length - 1];
    if (last && !("type" in last) && !("type" in node)) {
      const { text: a, ...ma } = last;
      const { text: b, ...mb } = node;
      if (JSON.stringify(Object.entries(ma).sort()) === JSON.stringify(Object.entries(mb).sort())) {
        last.text = a + b;
        continue;
      }
    }
    out.push(node);
  }
  return out.length ? out : [{ text: "" }];
}

const BLOCK_RULES = /** @type {const} */ ([
  [/^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/, (/** @type {RegExpExecArray} */ m) => ({ type: `heading${m[1].length}`, text: m[2] })],
  [/^\s{0,3}>\s?(.*)$/, (/** @type {RegExpExecArray} */ m) => ({ type: "block-quote", text: m[1] })],
  [/^\s*[-*+]\s+(.*)$/, (/** @type {RegExpExecArray} */ m) => ({ type: "bulleted-list", text: m[1] })],
  [/^\s*\d{1,9}[.)]\s+(.*)$/, (/** @type {RegExpExecArray} */ m) => ({ type: "ordered-list", text: m[1] })],
]);

/**
 * CODAP's rich text for Markdown: {children: [Slate blocks], dropped: [what was left out, in words]}.
 * @param {string} markdown
 * @param {{createElement?: (tag: string) => any}} [doc] the page, whose canvas reads colour names
 */
export function markdownToSlate(markdown, doc = globalThis.document) {
  const reader = new Reader(doc);
  /** @type {Block[]} */
  const blocks = [];
  for (const line of String(markdown).split(/\r\n|\r|\n/)) {
    if (!line.trim()) continue;
    if (/^\s*!\[[^\]]*\]\([^)]*\)\s*$/.test(line)) {
      reader.drop("images (a picture in a text box loads a URL)");
      continue;
    }
    let block = { type: "paragraph", text: line };
    for (const [re, make] of BLOCK_RULES) {
      const m = re.exec(line);
      if (m) {
        block = make(m);
        break;
      }
    }
    const children = merged(reader.inline(block.text.replace(/!\[[^\]]*\]\([^)]*\)/g, () => {
      reader.drop("images (a picture in a text box loads a URL)");
      return "";
    })));
    if (LIST_TYPES.has(block.type)) {
      const last = blocks[blocks.length - 1];
      const item = { type: "list-item", children };
      if (last?.type === block.type) last.children.push(item);
      else blocks.push({ type: block.type, children: [item] });
    } else {
      blocks.push({ type: block.type, children });
    }
  }
  return {
    children: blocks.length ? blocks : [{ type: "paragraph", children: [{ text: "" }] }],
    dropped: [...reader.dropped].map(([what, n]) => (n > 1 ? `${what} ×${n}` : what)),
  };
}

/** @param {string} text */
const escaped = (text) => text.replace(/[\\`*_~[\]<]/g, (c) => `\\${c}`);

/**
 * One leaf as Markdown: its marks around its text, spaces kept outside them.
 * @param {any} leaf
 */
function leafMarkdown(leaf) {
  const raw = String(leaf.text ?? "");
  const [, lead, core, trail] = /^(\s*)([\s\S]*?)(\s*)$/.exec(raw) ?? ["", "", raw, ""];
  if (!core) return raw;
  // A code span holding a backtick is fenced by two, with a space inside each end.
  const fence = core.includes("`") ? ["``", " "] : ["`", ""];
  let out = leaf.code ? fence[0] + fence[1] + core + fence[1] + fence[0] : escaped(core);
  for (const mark of [...ORDER].reverse()) {
    if (!leaf[mark] || mark === "code") continue;
    if (mark === "italic") out = `*${out}*`;
    else if (mark === "bold") out = `**${out}**`;
    else if (mark === "deleted") out = `~~${out}~~`;
    else if (mark === "underlined") out = `<u>${out}</u>`;
    else if (mark === "superscript") out = `<sup>${out}</sup>`;
    else if (mark === "subscript") out = `<sub>${out}</sub>`;
    else if (mark === "color" && typeof leaf.color === "string") out = `<span style="color: ${leaf.color}">${out}</span>`;
  }
  return lead + out + trail;
}

/**
 * Inline content as Markdown.
 * @param {any[]} nodes
 * @returns {string}
 */
function inlineMarkdown(nodes) {
  return (Array.isArray(nodes) ? nodes : [])
    .map((n) => {
      if (typeof n?.text === "string") return leafMarkdown(n);
      if (n?.type === "link") return `[${inlineMarkdown(n.children)}](${n.href ?? ""})`;
      return inlineMarkdown(n?.children);
    })
    .join("");
}

/**
 * CODAP's rich text (Slate blocks, or {document: {children}}) as Markdown: a line per block.
 * @param {any} value
 * @returns {string}
 */
export function slateToMarkdown(value) {
  /** @type {any[]} */
  const nodes = Array.isArray(value) ? value : value?.document?.children ?? [];
  /** @type {string[]} */
  const lines = [];
  /**
   * @param {any[]} list
   * @param {string} indent
   */
  const walk = (list, indent) => {
    for (const node of list) {
      const type = String(node?.type ?? "paragraph");
      if (LIST_TYPES.has(type)) {
        let n = 0;
        for (const item of node.children ?? []) {
          if (LIST_TYPES.has(item?.type)) walk([item], `${indent}  `);
          else lines.push(`${indent}${type === "ordered-list" ? `${++n}.` : "-"} ${inlineMarkdown(item?.children)}`);
        }
        continue;
      }
      const heading = /^heading([1-6])$/.exec(type);
      const prefix = heading ? `${"#".repeat(Number(heading[1]))} ` : type === "block-quote" ? "> " : "";
      lines.push(`${indent}${prefix}${inlineMarkdown(node?.children ?? [node])}`);
    }
  };
  walk(nodes, "");
  return lines.join("\n");
}

/**
 * Whether rich text holds anything but plain paragraphs of unmarked text.
 * @param {any} value
 */
export function isFormatted(value) {
  /** @type {any[]} */
  const nodes = Array.isArray(value) ? value : value?.document?.children ?? [];
  /** @type {(node: any) => boolean} */
  const formatted = (node) => {
    if (typeof node?.text === "string") return Object.keys(node).some((k) => k !== "text" && node[k]);
    if (node?.type && node.type !== "paragraph") return true;
    return (node?.children ?? []).some(formatted);
  };
  return nodes.some(formatted);
}

/**
 * The rich text CODAP gets for a text box's text: plain text a paragraph a line, or Markdown read as above.
 * {value: {document: {children}}, dropped: [what Markdown held that a text box cannot]}.
 * @param {string} text
 * @param {boolean} markdown
 */
export function textValue(text, markdown) {
  if (!markdown) return { value: { document: { children: paragraphs(text) } }, dropped: [] };
  const { children, dropped } = markdownToSlate(text);
  return { value: { document: { children } }, dropped };
}

/**
 * What a text box shows, as the answers and the status give it: its text, and its formatting as Markdown when it
 * has any.
 * @param {any} value CODAP's rich text
 * @returns {{text: string, markdown?: string}}
 */
export function textFacts(value) {
  return { text: plainText(value), ...(isFormatted(value) ? { markdown: slateToMarkdown(value) } : {}) };
}
