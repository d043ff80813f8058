// The size a new text box needs to show its whole text. CODAP 3.1.0 makes every text box 300 × 100 px, which shows
// three lines (a 34 px title bar over 12 px Helvetica on 18 px lines) and hides the rest behind a scroll bar the
// person may never notice. The plugin cannot see CODAP's page, so it measures the text as CODAP sets it, in its own
// frame (or estimates the width where it has no canvas), and asks CODAP for a box that fits.

const FONT = "12px Helvetica, sans-serif";
const LINE_PX = 18;
const TITLE_BAR_PX = 34;
const EDITOR_PADDING_PX = 3; // on each side of the text
const SLACK_PX = 8; // rounding between this measure and CODAP's own layout
const DEFAULT = { width: 300, height: 100 };
/** Wider boxes tried, in turn, before a text is left to scroll; past the last, the box keeps MAX_HEIGHT. */
const WIDTHS = [300, 380, 460];
const MAX_HEIGHT = 420;
/** An average 12 px Helvetica character, where no canvas measures (Node's tests). */
const AVERAGE_CHAR_PX = 6.2;

/** @returns {(s: string) => number} the width of a string in CODAP's text font */
function measurer() {
  const canvas = typeof document === "undefined" ? null : document.createElement("canvas");
  const context = canvas?.getContext?.("2d") ?? null;
  if (!context) return (s) => s.length * AVERAGE_CHAR_PX;
  context.font = FONT;
  return (s) => context.measureText(s).width;
}

/**
 * How many lines a paragraph takes when wrapped at `width` px, word by word as the browser wraps it.
 * @param {string} paragraph
 * @param {number} width
 * @param {(s: string) => number} measure
 */
function wrappedLines(paragraph, width, measure) {
  const words = paragraph.split(/\s+/).filter(Boolean);
  if (!words.length) return 1;
  let lines = 1;
  let line = "";
  for (const word of words) {
    const tried = line ? `${line} ${word}` : word;
    if (line && measure(tried) > width) {
      lines += 1 + Math.floor(measure(word) / width); // a word longer than the line breaks inside itself
      line = word;
    } else {
      line = tried;
    }
  }
  return lines;
}

/**
 * The box for `text` (as given to create_codap_text; Markdown marks are left out of the measure and a heading takes
 * about one and a half lines): CODAP's default when that shows it all, else the narrowest of WIDTHS that does, else
 * the widest at MAX_HEIGHT, where the text scrolls.
 * @param {string} text
 * @param {boolean} markdown
 * @returns {{width: number, height: number, resized: boolean, scrolls: boolean}}
 */
export function textBoxSize(text, markdown) {
  const measure = measurer();
  const paragraphs = text.split("\n").filter((p, i, all) => !markdown || p.trim() !== "" || i === all.length - 1);
  /** @param {number} width */
  const heightAt = (width) => {
    const inner = width - 2 * EDITOR_PADDING_PX - SLACK_PX;
    let lines = 0;
    for (const raw of paragraphs) {
      const heading = markdown && /^#{1,3}\s/.test(raw);
      const plain = markdown ? raw.replace(/^(#{1,3}|>|-|\d+\.)\s+/, "").replace(/[*_~`]/g, "") : raw;
      lines += wrappedLines(plain, inner, measure) * (heading ? 1.5 : 1);
    }
    return Math.ceil(TITLE_BAR_PX + 2 * EDITOR_PADDING_PX + lines * LINE_PX + SLACK_PX);
  };
  if (heightAt(DEFAULT.width) <= DEFAULT.height) return { ...DEFAULT, resized: false, scrolls: false };
  for (const width of WIDTHS) {
    const height = heightAt(width);
    if (height <= MAX_HEIGHT) return { width, height: Math.max(height, DEFAULT.height), resized: true, scrolls: false };
  }
  return { width: WIDTHS[WIDTHS.length - 1], height: MAX_HEIGHT, resized: true, scrolls: true };
}
