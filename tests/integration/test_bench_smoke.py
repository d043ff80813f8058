"""A tiny run of the benchmark (python -m bench --quick) so it cannot rot. Numbers are never asserted: speed
belongs to the benchmark itself; this checks that every section runs end to end and reports what it should."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codap_relay.catalog import plugin_tools
from codap_relay_tooling.testing import CHECKOUT

pytestmark = pytest.mark.slow


def run_bench(tmp_path: Path, *args: str) -> tuple[str, dict]:  # type: ignore[type-arg]
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(out), *args],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text())


def test_quick_run_reports_every_section(tmp_path: Path) -> None:
    plot = tmp_path / "latency.png"
    # DynamoDB Local is left out to keep this in seconds; the stores section still runs memory and SQLite. The
    # real-CODAP section has a test of its own (below).
    sections = "roundtrip,ops,stores,throughput,pressure,idle,coldstart,deployed,cpushare"
    stdout, figures = run_bench(
        tmp_path, "--only", sections, "--no-dynamodb", "--stores", "memory,sqlite", "--functions", "request",
        "--plot", str(plot),
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in (
        "## Round trips",
        "## Store operations per relayed call",
        "## Stores",
        "## Throughput",
        "## Bounded work",
        "## Idle streams",
        "## Cold start",
        "## Deployed shape",
    ):
        assert heading in stdout

    levels = figures["round_trip"]["levels"]
    assert [lvl["concurrency"] for lvl in levels] == [1, 4]
    for level in levels:
        assert level["errors"] == 0
        for key in ("baseline", "floor", "http_wait", "http", "delivery", "mcp"):
            assert set(level[key]) >= {"n", "p50", "p95", "p99", "max"} and level[key]["n"] > 0
        assert set(level["http_ratio"]) == {"p50", "p95", "p99", "max"} and level["http_wait_floor"] > 0

    for store in ("memory", "sqlite"):
        kinds = figures["ops"]["stores"][store]
        assert set(kinds) == {"http_wait", "http", "mcp"}
        for counted in kinds.values():  # every call type reaches the store, and nothing failed
            assert counted["errors"] == 0 and counted["by_method"]["add_request"] == 1

    assert {row["store"] for row in figures["stores"]["rows"]} == {"memory", "sqlite"}
    assert figures["throughput"]["round_trips_per_second"] > 0 and figures["throughput"]["errors"] == 0

    pressure = figures["pressure"]  # a session at its pending limits, bursts of status reads, /healthz timed
    assert pressure["pending_requests"] == pressure["held_requests"] == 50 and pressure["errors"] == 0
    assert pressure["healthz_alone"]["n"] > 0 and pressure["healthz_under_reads"]["n"] > 0 and pressure["bursts"] > 0

    idle = figures["idle"]
    assert idle["relay"]["connected"] == idle["baseline"]["connected"] == 20
    assert idle["relay"]["failed"] == 0 and idle["relay"]["heartbeats"] > 0

    request = figures["coldstart"]["functions"]["request"]
    assert "error" not in request and request["import_ms"] > 0 and request["top"]
    assert request["invocation"]["statuses"][0] is not None, request["invocation"]
    assert figures["coldstart"]["baseline"]["init_ms"] > 0

    assert "--no-dynamodb" in figures["deployed"]["skipped"]  # the deployed shape needs DynamoDB Local
    assert "skipped" in figures["cpushare"] and "## The stream function at Lambda's CPU share" in stdout


@pytest.mark.browser
def test_quick_run_times_every_tool_inside_real_codap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The codap section at a tiny size (3 datasets of 50 cases, no WebGL timing): every tool is timed in the
    plugin, and the message counts are the tools' fixed handful."""
    monkeypatch.syspath_prepend(str(CHECKOUT / "tests" / "e2e"))
    from codap_relay_tooling.testing.real_codap import HOW_TO_GET, codap_dist, codap_required

    if codap_dist() is None:
        if codap_required():
            pytest.fail(f"CODAP_REQUIRED is set but {HOW_TO_GET}")
        pytest.skip(HOW_TO_GET)
    stdout, figures = run_bench(tmp_path, "--only", "codap")
    assert "## Tool time in the real CODAP" in stdout
    codap = figures["codap"]
    assert "skipped" not in codap, codap
    rows = {r["label"].split(" (")[0]: r for r in codap["rows"]}
    assert set(rows) == {t["name"] for t in plugin_tools()}
    messages = {r["label"]: r["messages"] for r in codap["rows"]}
    assert messages["get_codap_status"] == messages["get_codap_datasets"] == 3
    # a changing tool: its own messages, the digest's two, and the two restore points of the journal (the one after
    # the call is sent before the digest's, so it falls within the call)
    assert messages["create_codap_dataset"] == 3 + 2 + 2 and messages["create_codap_graph"] == 5 + 2 + 2
    assert messages["codap_api (get dataContextList)"] == 1
    for row in codap["rows"]:
        asks_codap = not row["label"].startswith("codap_api_help")  # the reference is the plugin's own text
        assert row["first_ms"] > 0 and row["llm_p50_ms"] > 0 and (row["codap_share"] > 0) == asks_codap, row
        assert row["codap_share"] <= 1, row
    assert codap["baseline_one_message_ms"] > 0
    read = codap["mcp_read"]  # MCP resources/read of the big dataset's cases, through the official SDK client
    assert read["p50_ms"] > 0 and read["pages"] == 1 and read["bytes"] > 0
    assert "MCP resources/read codap://datasets/big/cases" in stdout


def test_unknown_section_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "roundtrip,warp"], cwd=CHECKOUT, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "unknown section(s) warp" in proc.stderr


@pytest.mark.dynamodb_local
def test_quick_run_on_dynamodb_local(tmp_path: Path) -> None:
    from codap_relay_tooling.testing.dynamodb_shared import find_jar

    if find_jar() is None:
        pytest.skip("DynamoDB Local is not installed: run scripts/install-test-deps")
    stdout, figures = run_bench(tmp_path, "--only", "stores,deployed", "--stores", "dynamodb", "--no-mcp")
    assert {row["store"] for row in figures["stores"]["rows"]} == {"dynamodb-local"}
    assert all(row["errors"] == 0 for row in figures["stores"]["rows"])
    deployed = figures["deployed"]
    assert set(deployed["kinds"]) == {"http_wait", "http"}  # --no-mcp
    for call in deployed["kinds"].values():
        assert call["call_errors"] == 0 and call["latency"]["n"] == 3
        assert call["dynamodb_by_operation"]["TransactWriteItems"] == 2  # a request queued, an answer stored
        assert call["api_requests"] >= 2 and call["write_units"] > 0
    assert deployed["idle"]["dynamodb_requests"] > 0 and deployed["resume"]["first"]["n"] == 1
    assert deployed["max_memory_used_mb"]["StreamFunction"] > 0
    cost = deployed["cost"]
    for key in ("idle_plugin_hour", "per_1000_http_wait", "per_1000_http"):
        assert {"read_units", "write_units", "lambda_gb_seconds", "total_usd"} <= set(cost[key])
    assert "### Cost model" in stdout
    assert set(cost["channels"]) == {"sse", "websocket"}  # both plugin channels, every scenario, every goal
    for channel in cost["channels"].values():
        assert set(channel["scenarios"]) == {"idle_plugin_hour", "class_hour", "district_day", "thousand_calls"}
        assert all(s["total_usd"] > 0 for s in channel["scenarios"].values())
    assert len(cost["goals"]) == 4 and all(g["why"] for g in cost["goals"])
    assert "### Cost by channel" in stdout and "Goals (issue 23):" in stdout
