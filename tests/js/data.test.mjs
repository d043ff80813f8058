import assert from "node:assert/strict";
import { test } from "node:test";

import {
  flattenItems,
  generateRecords,
  inferAttributes,
  inferType,
  itemIdColumnUpdates,
  itemsForCreate,
  makeRng,
  normaliseRecord,
  quoteField,
  toDelimited,
} from "../../core/codap_relay/plugin/js/data.js";
import { parseCsv } from "../../core/codap_relay/plugin/js/tools/csv_import.js";

test("inferType: numbers, numeric strings, dates, categories, blanks", () => {
  assert.equal(inferType([1, 2.5, "3", " -4e2 ", "", null]), "numeric");
  assert.equal(inferType(["2024-01-01", "2024-02-29T10:00:00Z"]), "date");
  assert.equal(inferType(["2024-13-45"]), "categorical"); // looks like a date, is not one
  assert.equal(inferType(["a", 1]), "categorical");
  assert.equal(inferType([true, false]), "categorical");
  assert.equal(inferType(["", null, undefined]), "categorical");
  assert.equal(inferType([NaN]), "categorical");
});

test("inferAttributes keeps first-appearance order across records", () => {
  const attrs = inferAttributes([{ b: 1, a: "x" }, { c: "2024-05-01", a: "y" }]);
  assert.deepEqual(attrs, [
    { name: "b", type: "numeric" },
    { name: "a", type: "categorical" },
    { name: "c", type: "date" },
  ]);
});

test("normaliseRecord turns nested values into JSON text and null into blank", () => {
  assert.deepEqual(normaliseRecord({ a: { x: 1 }, b: [1, 2], c: null, d: 3 }), { a: '{"x":1}', b: "[1,2]", c: "", d: 3 });
});

test("generators give the requested count, capped at 1000, reproducibly", () => {
  for (const type of ["random_numbers", "sample_students", "time_series"]) {
    const one = generateRecords(type, 25, makeRng(7));
    const two = generateRecords(type, 25, makeRng(7));
    assert.equal(one.rows.length, 25);
    assert.deepEqual(one.rows, two.rows);
    const names = one.attrs.map((a) => a.name);
    assert.deepEqual(Object.keys(one.rows[0]), names);
  }
  assert.equal(generateRecords("random_numbers", 5000, makeRng(1)).rows.length, 1000);
  assert.equal(generateRecords("random_numbers", 2.7, makeRng(1)).rows.length, 2);
  assert.throws(() => generateRecords("nope", 3));
});

test("time_series dates are consecutive ISO days", () => {
  const { rows } = generateRecords("time_series", 3, makeRng(2));
  assert.deepEqual(rows.map((r) => r.date), ["2024-01-01", "2024-01-02", "2024-01-03"]);
});

test("quoteField quotes separators, quotes, line breaks and edge spaces only", () => {
  assert.equal(quoteField("plain", ","), "plain");
  assert.equal(quoteField("a,b", ","), '"a,b"');
  assert.equal(quoteField('say "hi"', ","), '"say ""hi"""');
  assert.equal(quoteField("two\nlines", ","), '"two\nlines"');
  assert.equal(quoteField(" padded", ","), '" padded"');
  assert.equal(quoteField("a,b", "\t"), "a,b");
  assert.equal(quoteField("a\tb", "\t"), '"a\tb"');
  assert.equal(quoteField(null, ","), "");
  assert.equal(quoteField(3.5, ","), "3.5");
});

test("CSV and TSV round-trip through the import's parser", () => {
  const rows = [
    { name: 'O"Brien, Pat', note: "line1\r\nline2", n: 3 },
    { name: "tab\there", note: "", n: -0.5 },
  ];
  for (const sep of [",", "\t"]) {
    const text = toDelimited(["name", "note", "n"], rows, sep);
    const parsed = parseCsv(text, sep);
    assert.deepEqual(parsed[0], ["name", "note", "n"]);
    assert.deepEqual(parsed.slice(1), rows.map((r) => [r.name, r.note, String(r.n)]));
  }
});

test("flattenItems puts parent attributes first and fills blanks", () => {
  const collections = [
    { name: "classes", attrs: [{ name: "class", type: "categorical" }] },
    { name: "students", attrs: [{ name: "student", type: "categorical" }, { name: "score", type: "numeric", unit: "pts" }] },
  ];
  const items = [
    { id: 1, values: { student: "Ann", score: 90, class: "A" } },
    { id: 2, values: { student: "Bo", class: "B" } },
  ];
  const { columns, rows } = flattenItems(collections, items);
  assert.deepEqual(columns.map((c) => [c.name, c.collection]), [
    ["class", "classes"],
    ["student", "students"],
    ["score", "students"],
  ]);
  assert.equal(columns[2].unit, "pts");
  assert.deepEqual(rows, [
    { class: "A", student: "Ann", score: 90 },
    { class: "B", student: "Bo", score: "" },
  ]);
});

test("itemsForCreate wraps each record so CODAP reads id as a column, and leaves __id__ for an update", () => {
  const records = [{ id: 3, v: 31, __id__: "u-1" }, { id: 4, values: "x" }];
  assert.deepEqual(itemsForCreate(records), [{ values: { id: 3, v: 31 } }, { values: { id: 4, values: "x" } }]);
  assert.deepEqual(records[0], { id: 3, v: 31, __id__: "u-1" }); // the records are not changed
  assert.deepEqual(itemIdColumnUpdates([11, 12], records), [
    { id: 11, values: { __id__: "u-1" } },
    { id: 12, values: { __id__: "" } },
  ]);
});
