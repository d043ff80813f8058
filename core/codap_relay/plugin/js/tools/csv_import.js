// @ts-check
// A CSV import's pure parts: the RFC 4180 parser (the plugin's only one), the dataset it makes (values kept as
// written, codes with leading zeros kept as text), the https check of an address and the bounded fetch of a file.

import { nameProblem } from "../names.js";
import { ToolError } from "./context.js";

/** @param {unknown} v */
const q = (v) => JSON.stringify(v);

/** The most CSV text (characters) and rows one import takes. */
export const MAX_CSV_CHARS = 5 * 1024 * 1024;
export const MAX_CSV_ROWS = 10_000;

/** A field CODAP reads as this very number, written the way JavaScript writes it back ("12", "-0.5", "1e21"). */
const NUMBER_RE = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
/** @param {string} field */
function asNumber(field) {
  if (!NUMBER_RE.test(field)) return null;
  const n = Number(field);
  return Number.isFinite(n) && String(n) === field ? n : null;
}
/** A number written with leading zeros ("007", "-01.5"): a code, kept as text and categorical. */
const LEADING_ZEROS_RE = /^[+-]?0\d/;

/**
 * RFC 4180 CSV: fields separated by commas (or `sep`: "\t" reads TSV), records by CRLF or LF, a field in double
 * quotes may hold the separator, line breaks and quotes written twice. A byte order mark is dropped; a last empty
 * line is no record.
 * Returns an array of records (arrays of strings); throws ToolError (invalid_csv) on a quote left open or a
 * stray character after a closing quote.
 */
/**
 * @param {string} text
 * @param {string} [sep]
 * @returns {string[][]}
 */
export function parseCsv(text, sep = ",") {
  const src = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const records = [];
  /** @type {string[]} */
  let record = [];
  let ended = false; // a quoted last field ended the text and its record
  let field = "";
  let line = 1;
  let i = 0;
  const n = src.length;
  const endRecord = () => {
    record.push(field);
    records.push(record);
    record = [];
    field = "";
  };
  while (i < n) {
    const ch = src[i];
    if (ch === '"' && field === "") {
      // A quoted field: until the quote that is not doubled.
      const start = line;
      i++;
      for (;;) {
        if (i >= n) {
          throw new ToolError(
            `The CSV has a quoted field opened on line ${start} that is never closed. Close it with a double quote ` +
              '(a quote inside a quoted field is written twice: "").',
            "invalid_csv",
            { line: start },
          );
        }
        const c = src[i];
        if (c === '"') {
          if (src[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (c === "\n") line++;
        field += c;
        i++;
      }
      const next = src[i];
      if (i < n && next !== sep && next !== "\n" && next !== "\r") {
        throw new ToolError(
          `The CSV has text after a closing quote on line ${line} (${q(src.slice(i, i + 20))}). Put the whole field ` +
            'in quotes and write a quote inside it twice ("").',
          "invalid_csv",
          { line },
        );
      }
      // A quoted empty field stays a field even at the end of a record.
      if (i >= n) {
        record.push(field);
        records.push(record);
        ended = true;
      }
      continue;
    }
    if (ch === sep) {
      record.push(field);
      field = "";
      i++;
    } else if (ch === "\r" && src[i + 1] === "\n") {
      endRecord();
      line++;
      i += 2;
    } else if (ch === "\n" || ch === "\r") {
      endRecord();
      line++;
      i++;
    } else {
      field += ch;
      i++;
    }
  }
  if (!ended && (field !== "" || record.length > 0)) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/**
 * CSV text → {columns: [{name, type?}], rows: [{name: value}]}, values as CODAP should hold them: a number only
 * when CODAP reads the field as that very number, "" for an empty field, the text as written otherwise. A column
 * holding a number with leading zeros ("007") is made categorical so CODAP keeps it as a code.
 * @param {string} text
 */
export function csvToDataset(text) {
  if (text.length > MAX_CSV_CHARS) {
    throw new ToolError(
      `The CSV is ${(text.length / 1024 / 1024).toFixed(1)} MB; the limit is 5 MB per import. Split it into ` +
        "parts under 5 MB and 10,000 rows: import the first, then add the others with add_codap_cases.",
      "csv_too_large",
      { chars: text.length, limit: MAX_CSV_CHARS },
    );
  }
  const records = parseCsv(text).filter((r) => !(r.length === 1 && r[0] === ""));
  if (records.length === 0) {
    throw new ToolError("The CSV is empty: give a header row of column names, then one line per row.", "invalid_csv");
  }
  const header = records[0].map((h) => h.trim());
  const empty = header.findIndex((h) => h === "");
  if (empty >= 0) {
    throw new ToolError(
      `Column ${empty + 1} of the CSV's header row has no name (header: ${header.map(q).join(", ")}). ` +
        "Give every column a name in the first line.",
      "invalid_csv",
      { header },
    );
  }
  const seen = new Set();
  for (const h of header) {
    const problem = nameProblem("Column", h);
    if (problem) throw new ToolError(`${problem} (CSV header)`, "invalid_csv", { header });
    if (seen.has(h)) {
      throw new ToolError(
        `The CSV's header row names column ${q(h)} twice; CODAP needs a different name for each column.`,
        "invalid_csv",
        { header },
      );
    }
    seen.add(h);
  }
  const body = records.slice(1);
  if (body.length > MAX_CSV_ROWS) {
    throw new ToolError(
      `The CSV has ${body.length} rows; the limit is ${MAX_CSV_ROWS.toLocaleString("en-US")} per import. Import the ` +
        "first 10,000, then add the rest with add_codap_cases.",
      "csv_too_large",
      { rows: body.length, limit: MAX_CSV_ROWS },
    );
  }
  const codes = new Set();
  const rows = body.map((record, r) => {
    if (record.length > header.length) {
      throw new ToolError(
        `Row ${r + 1} of the CSV (after the header) has ${record.length} fields; the header names ` +
          `${header.length} columns. Quote fields that hold commas ("a, b").`,
        "invalid_csv",
        { row: r + 1, fields: record.length, columns: header.length },
      );
    }
    /** @type {Record<string, string | number>} */
    const row = {};
    header.forEach((name, c) => {
      const field = record[c] ?? "";
      const number = asNumber(field);
      row[name] = number ?? field;
      if (number === null && LEADING_ZEROS_RE.test(field) && Number.isFinite(Number(field))) codes.add(name);
    });
    return row;
  });
  const columns = header.map((name) => (codes.has(name) ? { name, type: "categorical" } : { name }));
  return { columns, rows };
}

/** The URL an import may fetch, or a ToolError: https only (no http, file:, data:, javascript:, …). */
/** @param {string} text */
export function importUrl(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new ToolError(
      `${q(text)} is not a URL. Give the full https:// address of a CSV file, or pass the CSV text as csv.`,
      "url_refused",
      { url: text },
    );
  }
  if (url.protocol !== "https:") {
    throw new ToolError(
      `Only https:// URLs can be imported; ${q(url.protocol)} is refused (${q(text.slice(0, 100))}). Use the ` +
        "https:// address of the file, or pass the CSV text as csv.",
      "url_refused",
      { url: text.slice(0, 200), scheme: url.protocol.replace(/:$/, "") },
    );
  }
  if (url.username || url.password) {
    throw new ToolError(
      "URLs with a user name or password are refused. Give the file's address without credentials, or pass the " +
        "CSV text as csv.",
      "url_refused",
      { host: url.host },
    );
  }
  return url;
}

/** The text of an https CSV file, read up to the size limit; ToolErrors that say why not (CORS, status, size). */
/**
 * @param {URL} url
 * @param {typeof fetch} fetchImpl
 * @returns {Promise<string>}
 */
export async function fetchCsv(url, fetchImpl) {
  let response;
  try {
    response = await fetchImpl(url.href, { credentials: "omit", redirect: "follow", cache: "no-store" });
  } catch (caught) {
    const err = /** @type {{message?: unknown} | null | undefined} */ (caught);
    throw new ToolError(
      `The browser refused to fetch ${url.href} or could not reach ${url.host} (${err?.message ?? err}). The ` +
        "plugin fetches the file from the user's browser, so the server must allow cross-origin requests (CORS); " +
        "most likely it does not. Download the CSV some other way and pass its text as csv.",
      "url_fetch_failed",
      { url: url.href, host: url.host, reason: String(err?.message ?? err) },
    );
  }
  const finalUrl = response.url ? new URL(response.url) : url;
  if (finalUrl.protocol !== "https:") {
    throw new ToolError(
      `${url.href} redirected to ${finalUrl.protocol} ${finalUrl.host}; only https:// is imported.`,
      "url_refused",
      { url: url.href, redirectedTo: finalUrl.href },
    );
  }
  if (!response.ok) {
    throw new ToolError(
      `${url.host} answered HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""} for ` +
        `${url.href}. Check the address.`,
      "url_fetch_failed",
      { url: url.href, host: url.host, status: response.status },
    );
  }
  const type = response.headers.get("content-type") ?? "";
  if (/text\/html|application\/xhtml/i.test(type)) {
    throw new ToolError(
      `${url.href} gave a web page (${type}), not CSV. Give the address of the CSV file itself (for a file on a ` +
        "code host, its raw address).",
      "url_not_csv",
      { url: url.href, contentType: type },
    );
  }
  const tooLarge = () =>
    new ToolError(
      `${url.href} holds more than 5 MB; the limit is 5 MB and 10,000 rows per import. Import a smaller file.`,
      "csv_too_large",
      { url: url.href, limit: MAX_CSV_CHARS },
    );
  const length = Number(response.headers.get("content-length"));
  if (Number.isFinite(length) && length > MAX_CSV_CHARS) throw tooLarge();
  if (!response.body?.getReader) {
    const text = await response.text();
    if (text.length > MAX_CSV_CHARS) throw tooLarge();
    return text;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > MAX_CSV_CHARS) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}
