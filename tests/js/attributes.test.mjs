// The CSV import's pure parts (csv_import.js): RFC 4180 CSV parsing, values kept as written, the URL check, and the
// activity log's summary of an import (the URL's host always shown, from format.js).

import assert from "node:assert/strict";
import { test } from "node:test";

import { summarizeArgs } from "../../core/codap_relay/plugin/js/format.js";
import {
  MAX_CSV_ROWS,
  csvToDataset,
  importUrl,
  parseCsv,
} from "../../core/codap_relay/plugin/js/tools/csv_import.js";

test("parseCsv reads RFC 4180: quoted commas, doubled quotes, line breaks in fields, CRLF, a BOM", () => {
  assert.deepEqual(parseCsv('\uFEFFa,b\r\n1,"x, ""y""\r\nz"\r\n"",3\r\n'), [
    ["a", "b"],
    ["1", 'x, "y"\r\nz'],
    ["", "3"],
  ]);
  assert.deepEqual(parseCsv("a,b\n1,2"), [["a", "b"], ["1", "2"]]);
  assert.deepEqual(parseCsv('a\n""'), [["a"], [""]]);
  assert.deepEqual(parseCsv("a,b\n,\n"), [["a", "b"], ["", ""]]);
  assert.throws(() => parseCsv('a\n"open'), (e) => e.code === "invalid_csv" && /line 2/.test(e.message));
  assert.throws(() => parseCsv('a\n"x"y'), (e) => e.code === "invalid_csv" && /after a closing quote/.test(e.message));
});

test("csvToDataset keeps values as written: numbers only where CODAP reads the same number", () => {
  const { columns, rows } = csvToDataset("id,n,t,e\n007,1,1.50,\n010,-2.5,x,\n");
  assert.deepEqual(columns, [{ name: "id", type: "categorical" }, { name: "n" }, { name: "t" }, { name: "e" }]);
  assert.deepEqual(rows, [
    { id: "007", n: 1, t: "1.50", e: "" },
    { id: "010", n: -2.5, t: "x", e: "" },
  ]);
  assert.deepEqual(csvToDataset("a,b\n1\n").rows, [{ a: 1, b: "" }]);
});

test("csvToDataset refuses what CODAP could not take, saying what to do", () => {
  assert.throws(() => csvToDataset(""), (e) => e.code === "invalid_csv" && /header row/.test(e.message));
  assert.throws(() => csvToDataset("a,,c\n1,2,3"), (e) => e.code === "invalid_csv" && /Column 2/.test(e.message));
  assert.throws(() => csvToDataset("a,a\n1,2"), (e) => e.code === "invalid_csv" && /twice/.test(e.message));
  assert.throws(() => csvToDataset("a,b\n1,2,3"), (e) => e.code === "invalid_csv" && /Row 1 .* 3 fields/.test(e.message));
  const many = `x\n${"1\n".repeat(MAX_CSV_ROWS + 1)}`;
  assert.throws(() => csvToDataset(many), (e) => e.code === "csv_too_large" && /10,000/.test(e.message));
  assert.throws(() => csvToDataset("x".repeat(5 * 1024 * 1024 + 1)), (e) => e.code === "csv_too_large" && /5 MB/.test(e.message));
});

test("importUrl takes https only", () => {
  assert.equal(importUrl("https://example.org/a.csv").host, "example.org");
  for (const bad of ["http://example.org/a.csv", "file:///etc/passwd", "data:text/csv,a%0A1", "javascript:alert(1)", "ftp://x/a"]) {
    assert.throws(() => importUrl(bad), (e) => e.code === "url_refused" && /Only https/.test(e.message), bad);
  }
  assert.throws(() => importUrl("not a url"), (e) => e.code === "url_refused");
  assert.throws(() => importUrl("https://u:p@example.org/a.csv"), (e) => e.code === "url_refused");
});

test("the activity log shows the host an import reads from, never the rest of the URL", () => {
  assert.equal(summarizeArgs("import_codap_data", { datasetName: "d", url: "https://data.example.org/x/y.csv?k=secret" }), "d · from data.example.org");
  assert.equal(summarizeArgs("import_codap_data", { datasetName: "d", url: "http://evil.test/a.csv" }), "d · from evil.test");
});

test("parseCsv reads TSV with sep \\t: a comma is text, a quoted tab is a field's", () => {
  assert.deepEqual(parseCsv('a\tb\r\n"x\ty"\t1,2\r\n', "\t"), [["a", "b"], ["x\ty", "1,2"]]);
  assert.throws(() => parseCsv('a\tb\n"x"y\t1', "\t"), (e) => e.code === "invalid_csv" && e.data.line === 2);
});
