"""A histogram's numeric axis in the real CODAP app. CODAP 3.1.0 draws it from 0 and stretches it back there whenever
the cases change or the document is read (its count axis's clampPosMinAtZero), so the tools refuse to zoom it, change
nothing, and name what keeps a closer look: a binned dot plot, whose bounds hold through later calls. Every bound is
read back from CODAP (``get component``), never from the tool's answer alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]

HEIGHTS = [149, 198, *(150 + (i * 7) % 48 for i in range(28))]


@pytest.fixture(autouse=True)
def drop_the_tests_datasets(codap: CodapPage) -> Iterator[None]:
    before, components = set(codap.dataset_names()), codap.component_ids()
    yield
    codap.drop_what_was_made(before, components)


def x_bounds(codap: CodapPage, gid: int) -> tuple[float, float]:
    held: dict[str, Any] = codap.ok({"action": "get", "resource": f"component[{gid}]"})
    return held["xLowerBound"], held["xUpperBound"]


def histogram(codap: CodapPage, name: str, **more: Any) -> dict[str, Any]:
    rows = [{"name": f"s{i}", "height_cm": h} for i, h in enumerate(HEIGHTS)]
    codap.done("create_codap_dataset", {"datasetName": name, "dataType": "custom", "customData": rows})
    return {"datasetName": name, "graphType": "histogram", "xAttribute": "height_cm", "binWidth": 5, "binAlignment": 0,
            **more}  # fmt: skip


def test_a_histograms_zoom_is_refused_with_what_to_do_instead(codap: CodapPage) -> None:
    made = codap.done("create_codap_graph", histogram(codap, "heights", adornments=["mean", "median"]))
    gid = int(made["structuredContent"]["graphId"])
    drawn = x_bounds(codap, gid)
    assert drawn[0] == 0  # CODAP's own: heights 149..198 in bins of 5, drawn from 0
    assert made["structuredContent"]["state"]["x"]["min"] == drawn[0]

    refused = codap.failed("update_codap_graph", {"graph": gid, "xAxisMin": 140, "xAxisMax": 200, "title": "Zoomed"})
    assert refused["code"] == "invalid_arguments" and "binned_dot_plot" in refused["message"]
    assert "xAxisMin and xAxisMax" in refused["message"] and "nothing was changed" in refused["message"]
    held = codap.ok({"action": "get", "resource": f"component[{gid}]"})
    assert (held["xLowerBound"], held["xUpperBound"]) == drawn and held["title"] != "Zoomed"

    # what the refusal offers keeps the bounds, through later calls that read the document
    codap.done("update_codap_graph", {"graph": gid, "plotType": "binned_dot_plot", "xAxisMin": 140, "xAxisMax": 200})
    codap.done("update_codap_graph", {"graph": gid, "title": "Heights"})
    codap.done("get_codap_status", {})
    assert x_bounds(codap, gid) == (140, 200)


def test_a_new_histogram_with_bounds_is_refused_before_anything_is_made(codap: CodapPage) -> None:
    args = histogram(codap, "refused", xAxisMin=140)
    components = codap.component_ids()
    refused = codap.failed("create_codap_graph", args)
    assert refused["code"] == "invalid_arguments" and "xAxisMin:" in refused["message"]
    assert codap.component_ids() == components
