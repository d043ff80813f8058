"""Answers that say what CODAP shows, in the real CODAP app: a formula attribute in a parent collection is answered
one value per parent case, named by that case ("grade 10: 7.2") and rounded to the precision asked; a grouping names
each group and its number of cases. The values are checked against CODAP's own cases (``allCases``)."""

from __future__ import annotations

from collections.abc import Iterator
from statistics import mean
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

SCORES = [6.1, 7.9, 7.6, 5.2, 8.3, 6.2, 7.0, 6.6, 7.4, 6.9, 5.8, 6.4]
ROWS: list[dict[str, Any]] = [{"grade": 10 + i % 3, "score": s} for i, s in enumerate(SCORES)]


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    codap.drop_what_was_made(before, components)


def test_a_parent_formula_is_answered_per_group_as_codap_shows_it(codap: CodapPage) -> None:
    codap.done("create_codap_dataset", {"datasetName": "scores", "dataType": "custom", "customData": ROWS})
    grouped = codap.done("group_codap_cases", {"datasetName": "scores", "attributes": ["grade"]})
    counts = {g: sum(1 for r in ROWS if r["grade"] == g) for g in (10, 11, 12)}
    assert f"grade 10: {counts[10]} cases; grade 11: {counts[11]} cases" in grouped["content"][0]["text"]

    added = codap.done(
        "add_codap_attribute",
        {
            "datasetName": "scores",
            "collection": "grade groups",
            "name": "avg",
            "formula": "mean(score)",
            "precision": 1,
        },
    )
    held = codap.ok({"action": "get", "resource": "dataContext[scores].collection[grade groups].allCases"})
    by_grade = {c["case"]["values"]["grade"]: c["case"]["values"]["avg"] for c in held["cases"]}
    assert by_grade[10] == pytest.approx(mean(r["score"] for r in ROWS if r["grade"] == 10))
    text = added["content"][0]["text"]
    for grade, value in by_grade.items():
        assert f"grade {grade}: {round(value, 1):g}" in text
    assert "one per grade groups case" in text and "99999" not in text
