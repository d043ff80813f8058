"""A random sample of cases in the real CODAP app (as CODAP's Sampler plugin draws one): select_codap_cases with
``sample`` selects n distinct rows, repeatably with a seed, among the rows a condition matches. What is selected is
read back from CODAP's own selection list, never from the tool's answer alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

ROWS: list[dict[str, Any]] = [{"name": f"s{i}", "grade": 10 + i % 3, "height": 150 + (i * 7) % 41} for i in range(40)]


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    codap.drop_what_was_made(before, components)


def selected_rows(codap: CodapPage, dataset: str) -> dict[int, dict[str, Any]]:
    """The rows CODAP has selected, by item id, with their values."""
    listed = codap.ok({"action": "get", "resource": f"dataContext[{dataset}].selectionList"})
    rows = codap.di(
        [{"action": "get", "resource": f"dataContext[{dataset}].itemByCaseID[{c['caseID']}]"} for c in listed]
    )
    return {int(r["values"]["id"]): r["values"]["values"] for r in rows}


def test_a_random_sample_is_selected_repeatably_and_listed(codap: CodapPage) -> None:
    codap.done("create_codap_dataset", {"datasetName": "class", "dataType": "custom", "customData": ROWS})
    drawn = codap.done("select_codap_cases", {"datasetName": "class", "sample": {"n": 8, "seed": 7}})
    held = selected_rows(codap, "class")
    assert len(held) == 8
    answer = drawn["structuredContent"]
    assert sorted(answer["caseIds"]) == sorted(held) and answer["sample"] == {"n": 8, "seed": 7, "drawnFrom": 40}
    assert "random sample of 8 cases (of 40, seed 7)" in drawn["content"][0]["text"]
    assert {r["caseId"] for r in answer["cases"]} == set(held)

    codap.done("select_codap_cases", {"datasetName": "class", "mode": "clear"})
    codap.done("select_codap_cases", {"datasetName": "class", "sample": {"n": 8, "seed": 7}})
    assert set(selected_rows(codap, "class")) == set(held)  # the same seed draws the same rows
    codap.done("select_codap_cases", {"datasetName": "class", "sample": {"n": 8, "seed": 8}})
    other = set(selected_rows(codap, "class"))
    assert other != set(held) and len(other) == 8

    # among the rows a condition matches; more asked than match: all of them
    codap.done("select_codap_cases", {"datasetName": "class", "where": "grade = 10", "sample": {"n": 5}})
    tenth = selected_rows(codap, "class")
    assert len(tenth) == 5 and all(v["grade"] == 10 for v in tenth.values())
    everyone = codap.done("select_codap_cases", {"datasetName": "class", "where": "height > 185", "sample": {"n": 50}})
    tall = [r for r in ROWS if r["height"] > 185]
    assert len(selected_rows(codap, "class")) == len(tall) == everyone["structuredContent"]["matched"]
