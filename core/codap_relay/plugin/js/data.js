// @ts-check
// Pure data helpers: sample generators, attribute type inference, flattening and delimited export.
// No DOM and no network here, so `node --test` can exercise every function.

/** @import {CodapId, Json, JsonObject} from "./types.js" */

/**
 * A value a CODAP cell holds: text, a number or a truth value (cellValue makes anything else text).
 * @typedef {string | number | boolean} Cell
 */

/**
 * An attribute to create, as generateRecords and inferAttributes describe it.
 * @typedef {{name: string, type: string, precision?: number, unit?: string}} AttributeSpec
 */

export const MAX_RECORDS = 1000;

/** A small seeded PRNG (mulberry32) so generated data is reproducible in tests. */
/**
 * A 53-bit hash of a text (cyrb53): seeds for generated data, keys for replayed traces.
 * @param {string} text
 */
export function hashText(text) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** @param {number} [seed] */
export function makeRng(seed = Date.now()) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** @param {() => number} rng @param {number} mean @param {number} sd */
function normal(rng, mean, sd) {
  // Box-Muller; 1 - rng() keeps log() away from zero.
  const u = 1 - rng();
  const v = rng();
  return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** @type {(x: number, digits: number) => number} */
const round = (x, digits) => Math.round(x * 10 ** digits) / 10 ** digits;
/** @type {<T>(rng: () => number, list: T[]) => T} */
const pick = (rng, list) => list[Math.floor(rng() * list.length)];

const FIRST_NAMES = [
  "Ava", "Ben", "Chloe", "Diego", "Emma", "Farah", "Gabe", "Hana", "Ivan", "Jada", "Kai", "Lena", "Milo",
  "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara", "Uma", "Victor", "Wen", "Yusuf", "Zoe",
];

/**
 * Records for the built-in data types, plus the attribute definitions CODAP should use for them.
 * @param {string} dataType
 * @param {number} count
 * @param {() => number} [rng]
 * @returns {{rows: Record<string, Cell>[], attrs: AttributeSpec[]}}
 */
export function generateRecords(dataType, count, rng = makeRng()) {
  const n = Math.max(1, Math.min(MAX_RECORDS, Math.floor(count)));
  /** @type {Record<string, Cell>[]} */
  const rows = [];
  if (dataType === "random_numbers") {
    for (let i = 1; i <= n; i++) {
      const x = round(rng() * 100, 2);
      rows.push({ index: i, x, y: round(2 * x + normal(rng, 0, 15), 2), group: pick(rng, ["A", "B", "C"]) });
    }
    return {
      rows,
      attrs: [
        { name: "index", type: "numeric", precision: 0 },
        { name: "x", type: "numeric", precision: 2 },
        { name: "y", type: "numeric", precision: 2 },
        { name: "group", type: "categorical" },
      ],
    };
  }
  if (dataType === "sample_students") {
    for (let i = 1; i <= n; i++) {
      const grade = 9 + Math.floor(rng() * 4);
      const hours = round(Math.max(0, normal(rng, 6, 3)), 1);
      const math = Math.round(Math.min(100, Math.max(0, normal(rng, 60 + 3 * hours, 10))));
      const reading = Math.round(Math.min(100, Math.max(0, normal(rng, 72, 12))));
      rows.push({
        name: `${pick(rng, FIRST_NAMES)} ${String.fromCharCode(65 + Math.floor(rng() * 26))}.`,
        grade,
        age: grade + 5 + (rng() < 0.4 ? 1 : 0),
        height_cm: round(normal(rng, 168, 9), 1),
        study_hours: hours,
        math_score: math,
        reading_score: reading,
        score: Math.round((math + reading) / 2), // the seed's example plots grade against score
        favorite_subject: pick(rng, ["Math", "Science", "English", "History", "Art"]),
      });
    }
    return {
      rows,
      attrs: [
        { name: "name", type: "categorical" },
        { name: "grade", type: "numeric", precision: 0 },
        { name: "age", type: "numeric", precision: 0, unit: "years" },
        { name: "height_cm", type: "numeric", precision: 1, unit: "cm" },
        { name: "study_hours", type: "numeric", precision: 1, unit: "hours/week" },
        { name: "math_score", type: "numeric", precision: 0 },
        { name: "reading_score", type: "numeric", precision: 0 },
        { name: "score", type: "numeric", precision: 0 },
        { name: "favorite_subject", type: "categorical" },
      ],
    };
  }
  if (dataType === "time_series") {
    const start = Date.UTC(2024, 0, 1);
    let value = 100;
    for (let i = 0; i < n; i++) {
      value = value + normal(rng, 0.2, 2);
      const date = new Date(start + i * 86_400_000).toISOString().slice(0, 10);
      rows.push({ date, day: i + 1, value: round(value, 2), weekday: WEEKDAYS[new Date(date).getUTCDay()] });
    }
    return {
      rows,
      attrs: [
        { name: "date", type: "date" },
        { name: "day", type: "numeric", precision: 0 },
        { name: "value", type: "numeric", precision: 2 },
        { name: "weekday", type: "categorical" },
      ],
    };
  }
  throw new Error(`unknown dataType ${dataType}`);
}

const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

const NUMERIC_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** @param {unknown} v */
const isBlank = (v) => v === null || v === undefined || v === "";

/**
 * numeric | date | categorical, from the non-blank values of one attribute.
 * @param {unknown[]} values
 */
export function inferType(values) {
  const present = values.filter((v) => !isBlank(v));
  if (present.length === 0) return "categorical";
  const numeric = present.every(
    (v) => (typeof v === "number" && Number.isFinite(v)) || (typeof v === "string" && NUMERIC_RE.test(v.trim())),
  );
  if (numeric) return "numeric";
  if (present.every((v) => typeof v === "string" && DATE_RE.test(v.trim()) && !Number.isNaN(Date.parse(v)))) {
    return "date";
  }
  return "categorical";
}

/**
 * Attribute names in order of first appearance across the records, each with its inferred type.
 * @param {Array<Record<string, unknown>>} records
 * @returns {AttributeSpec[]}
 */
export function inferAttributes(records) {
  /** @type {string[]} */
  const names = [];
  const seen = new Set();
  for (const record of records) {
    for (const key of Object.keys(record)) {
      if (!seen.has(key)) {
        seen.add(key);
        names.push(key);
      }
    }
  }
  return names.map((name) => ({ name, type: inferType(records.map((r) => r[name])) }));
}

/**
 * CODAP stores plain values; nested objects and arrays become JSON text so nothing is silently dropped.
 * @param {Json | undefined} value
 * @returns {Cell}
 */
export function cellValue(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return value;
}

/**
 * A record's values as CODAP cells (cellValue).
 * @param {JsonObject} record
 */
export function normaliseRecord(record) {
  /** @type {Record<string, Cell>} */
  const out = {};
  for (const [key, value] of Object.entries(record)) out[key] = cellValue(value);
  return out;
}

/**
 * Flatten a (possibly hierarchical) dataset into one row per item: columns are the attributes of every
 * collection, parents first, so each leaf row carries its parents' values.
 * @param {Array<{name: string, attrs?: Array<{name: string, type?: string, unit?: string, title?: string}>}>} collections
 * @param {Array<{values?: Record<string, unknown>} | Record<string, unknown>>} items CODAP's items, or their values
 */
export function flattenItems(collections, items) {
  /** @type {Array<{name: string, collection: string, type: string, unit?: string, title?: string}>} */
  const columns = [];
  for (const collection of collections) {
    for (const attr of collection.attrs ?? []) {
      columns.push({
        name: attr.name,
        collection: collection.name,
        type: attr.type ?? "",
        ...(attr.unit ? { unit: attr.unit } : {}),
        ...(attr.title && attr.title !== attr.name ? { title: attr.title } : {}),
      });
    }
  }
  const rows = items.map((item) => {
    const values = /** @type {Record<string, unknown>} */ (item.values ?? item);
    /** @type {Record<string, unknown>} */
    const row = {};
    for (const col of columns) row[col.name] = values[col.name] ?? "";
    return row;
  });
  return { columns, rows };
}

/**
 * One field, quoted RFC 4180 style when it holds the separator, a quote, a line break or edge spaces.
 * @param {unknown} value
 * @param {string} sep
 */
export function quoteField(value, sep) {
  const text = value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  const needs = text.includes(sep) || text.includes('"') || /[\r\n]/.test(text) || /^\s|\s$/.test(text);
  return needs ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * CSV (sep ",") or TSV (sep "\t"): header row plus one line per row, CRLF line ends as RFC 4180 asks.
 * @param {string[]} columnNames
 * @param {Array<Record<string, unknown>>} rows
 * @param {string} [sep]
 */
export function toDelimited(columnNames, rows, sep = ",") {
  const lines = [columnNames.map((c) => quoteField(c, sep)).join(sep)];
  for (const row of rows) lines.push(columnNames.map((c) => quoteField(row[c], sep)).join(sep));
  return lines.join("\r\n");
}

/** The attribute name CODAP reads as an item's own id wherever it meets it in an item's values. */
export const ITEM_ID_KEY = "__id__";

/**
 * The values of an item create that CODAP takes as plain columns, whatever they are called. A bare record's `id`
 * is read as the item's id (v3 item-handler.ts createItemsInSegments: a second item with the same id overwrites
 * the first), so each record goes in a `{values: record}` wrapper, which CODAP unwraps. `__id__` is the item id
 * even inside it (DataSet.addCases), so it is left out here and set afterwards (itemIdColumnUpdates).
 * @template {Record<string, unknown>} R
 * @param {R[]} records
 */
export function itemsForCreate(records) {
  return records.map((record) => {
    const { [ITEM_ID_KEY]: _ownId, ...values } = record;
    return { values };
  });
}

/**
 * The item update that gives a dataset's `__id__` column its values after a create: CODAP fills that column of a
 * new item with the item's own id, so every new item is set, blank where its record had no `__id__`.
 * @param {CodapId[]} itemIds
 * @param {Array<Record<string, Json | undefined> | undefined>} records
 */
export function itemIdColumnUpdates(itemIds, records) {
  return itemIds.map((id, i) => ({ id, values: { [ITEM_ID_KEY]: cellValue(records[i]?.[ITEM_ID_KEY]) } }));
}
