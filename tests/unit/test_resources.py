"""The CODAP primer's size, the CSV pages, the prompts' text and the resource URIs, without a browser."""

from __future__ import annotations

import pytest

from codap_relay.primer import PRIMER
from codap_relay.prompts import PROMPTS, PromptError, find_prompt, prompts_text
from codap_relay.resources import PAGE_BYTES, dataset_uri, graph_uri, page_uri, paginate


def test_the_primer_fits_in_2_kb_and_names_the_basics() -> None:
    assert len(PRIMER.encode("utf-8")) <= 2048
    for word in ("collections", "attributes", "cases", "formula", "Case ids", "codap://datasets", "export_codap_data"):
        assert word in PRIMER


def csv_of(rows: int, width: int) -> str:
    return "\r\n".join(["i,t", *(f"{i},{'x' * width}" for i in range(1, rows + 1))])


def test_a_small_csv_is_one_page() -> None:
    text = csv_of(10_000, 3)
    assert paginate(text) == [(1, 10_000, text)]


def test_a_large_csv_comes_in_pages_of_whole_rows_each_with_the_header() -> None:
    text = csv_of(10_000, 60)
    pages = paginate(text)
    assert len(pages) > 1
    assert all(len(p.encode()) <= PAGE_BYTES and p.startswith("i,t\r\n") for _, _, p in pages)
    assert pages[0][0] == 1 and pages[-1][1] == 10_000
    assert all(pages[k + 1][0] == pages[k][1] + 1 for k in range(len(pages) - 1))
    body = [line for _, _, p in pages for line in p.split("\r\n")[1:]]
    assert body == text.split("\r\n")[1:]


def test_a_row_larger_than_a_page_still_gets_its_own_page() -> None:
    pages = paginate(csv_of(3, 100), limit=50)
    assert [(f, last) for f, last, _ in pages] == [(1, 1), (2, 2), (3, 3)]


def test_uris_encode_names() -> None:
    assert dataset_uri("class data/2") == "codap://datasets/class%20data%2F2"
    assert dataset_uri("a", "/cases") == page_uri("a", 1) == "codap://datasets/a/cases"
    assert page_uri("a", 3) == "codap://datasets/a/cases?page=3"
    assert graph_uri("Höhe") == "codap://graphs/H%C3%B6he/image"


def test_six_class_prompts_render_short_and_name_tools() -> None:
    assert {p.name for p in PROMPTS} >= {
        "explore_dataset",
        "compare_groups",
        "fit_line",
        "clean_data",
        "graph_for_question",
        "explain_screen",
    }
    for p in PROMPTS:
        args = {a.name: "x y" for a in p.arguments}
        text = p.render(args)
        assert "_codap_" in text and len(text) < 1200 and "{" not in text
        if any(a.name == "datasetName" for a in p.arguments):
            assert "codap://datasets/x%20y" in text or "x y" in text
    with pytest.raises(PromptError, match="xAttribute"):
        find_prompt("fit_line").render({"datasetName": "a", "yAttribute": "b"})
    with pytest.raises(PromptError, match="explore_dataset"):
        find_prompt("nope")


def test_prompts_text_lists_each_with_its_arguments() -> None:
    text = prompts_text()
    assert "- fit_line(datasetName, xAttribute, yAttribute): " in text
    assert "- explain_screen(graph?): " in text
