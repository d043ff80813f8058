"""The coverage of CODAP's own interface (docs/coverage/*.json): every row well formed, every typed row proven by a
test that exists, every cannot row saying why, what was searched and tried and what a person uses instead; and the
table docs/tools.md shows with its counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codap_relay_tooling.coverage import COVERAGE_DIR, argument_names, load_areas, names_a_test, problems, totals
from codap_relay_tooling.tools_doc import coverage_section


def test_the_coverage_rows_name_real_tools_arguments_and_tests() -> None:
    areas = load_areas()
    assert areas, f"no coverage rows in {COVERAGE_DIR}"
    assert problems(areas) == []
    for area in areas:
        for row in area.rows:
            if row.status == "typed":
                assert row.test and row.test.startswith("tests/e2e/"), f"{row.menu}: its proof is a real-CODAP test"
            if row.cannot is not None:
                c = row.cannot
                assert all(s.strip() for s in (c.why, c.searched, c.tried, c.instead)), row.menu


def _row(**changes: Any) -> dict[str, Any]:
    row = {"menu": "Table ▸ Sort", "action": "sort", "tool": None, "argument": None, "test": None, "cannot": None}
    return {**row, **changes}


def _write(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(rows), "utf-8")


def test_rows_are_counted_typed_cannot_or_left_and_the_table_shows_the_counts(tmp_path: Path) -> None:
    proof = "tests/unit/test_coverage.py::test_rows_are_counted_typed_cannot_or_left_and_the_table_shows_the_counts"
    cannot = {"why": "no API", "searched": "the build", "tried": "update: ignored", "instead": "Table ▸ Ruler ▸ X"}
    _write(
        tmp_path,
        "table",
        [
            _row(tool="sort_codap_cases", argument="attribute, descending: true", test=proof),
            _row(menu="Table ▸ Ruler ▸ X", cannot=cannot),
            _row(menu="Table ▸ Left"),
            _row(menu="Table ▸ Untested", tool="sort_codap_cases", argument="attribute"),
        ],
    )
    _write(tmp_path, "zebra", [_row(menu="Zebra ▸ Stripe")])
    areas = load_areas(tmp_path)
    assert [a.key for a in areas] == ["table", "zebra"] and areas[0].heading == "Case table"
    assert totals(areas) == {"items": 5, "typed": 1, "cannot": 1, "left": 3}
    assert problems(areas) == []
    text = "\n".join(coverage_section(areas))
    assert "| **all** | 5 | 1 | 1 | 3 |" in text and "| [Case table](#case-table) | 4 | 1 | 1 | 2 |" in text
    assert "Instead: Table ▸ Ruler ▸ X" in text and "searched the build; tried update: ignored" in text
    assert "**left**: no real-CODAP test yet" in text and "**left**: not yet done" in text


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (_row(tool="no_such_tool"), "no tool 'no_such_tool'"),
        (_row(tool="sort_codap_cases", argument="order"), "has no argument 'order'"),
        (_row(tool="sort_codap_cases", test="tests/e2e/test_tools_cases.py::test_nothing"), "no test"),
        (_row(tool="sort_codap_cases", test="tests/e2e/test_nowhere.py::test_x"), "no test"),
        (_row(argument="attribute"), "an argument without a tool"),
    ],
)
def test_a_wrong_row_is_named(tmp_path: Path, row: dict[str, Any], problem: str) -> None:
    _write(tmp_path, "table", [row])
    found = problems(load_areas(tmp_path))
    assert len(found) == 1 and problem in found[0] and "table.json: Table ▸ Sort" in found[0]


@pytest.mark.parametrize(
    "row",
    [
        _row(cannot={"why": "x", "searched": "", "tried": "t", "instead": "i"}),
        _row(cannot={"why": "x", "searched": "s", "tried": "t"}),
        _row(test=None, extra=1),
        {"menu": "Table ▸ Sort", "action": "sort"},
    ],
)
def test_a_cannot_row_without_why_searched_tried_and_instead_is_refused(tmp_path: Path, row: dict[str, Any]) -> None:
    _write(tmp_path, "table", [row])
    with pytest.raises(ValueError, match=r"table\.json row 0"):
        load_areas(tmp_path)


def test_node_ids_and_argument_names() -> None:
    assert names_a_test("tests/e2e/test_tools_cases.py::test_sort_reorders_the_cases_in_codap_both_ways")
    assert names_a_test("tests/unit/test_coverage.py::test_a_wrong_row_is_named[row0-no tool 'no_such_tool']")
    assert not names_a_test("tests/e2e/test_tools_cases.py")
    assert not names_a_test("core/codap_relay/catalog.py::plugin_tools")
    assert argument_names("where, caseIds") == ["where", "caseIds"]
    assert argument_names("position.left + size") == ["position", "size"]
    assert argument_names("hidden: true") == ["hidden"]
