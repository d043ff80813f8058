"""A tiny run of the benchmark (python -m bench --quick) so it cannot rot. Numbers are never asserted: speed
belongs to the benchmark itself; this checks that every section runs end to end and reports what it should.

One quick run of every section (DynamoDB Local and the real CODAP included where installed), in three processes side
by side, serves the tests of the sections; a second, in seconds, checks the switches that leave parts out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bench.relay_bench import SECTIONS

from codap_relay.catalog import plugin_tools
from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.real_parts import missing, need

pytestmark = pytest.mark.slow


def bench_command(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "bench", "--quick", "--json", str(out), *args]


def run_bench(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "bench.json"
    proc = subprocess.run(bench_command(out, *args), cwd=CHECKOUT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures: dict[str, Any] = json.loads(out.read_text())
    return proc.stdout, figures


@dataclass(frozen=True)
class Run:
    stdout: str
    figures: dict[str, Any]
    plot: Path
    dynamodb: bool  # DynamoDB Local is installed, so the run measured it
    codap: bool  # the real CODAP build is there, so the run timed the tools in it


# Every section, in three processes that run side by side: each section starts its own servers (and mostly waits
# on them, on DynamoDB Local or on CODAP in a browser), so together they take about as long as the longest part,
# not the sum. What each proves is what one process running them all would.
PARTS = (
    ("roundtrip", "throughput", "ops", "pressure", "idle", "coldstart"),
    ("stores", "deployed", "cpushare"),
    ("codap",),
)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    from codap_relay_tooling.testing.dynamodb_shared import find_jar
    from codap_relay_tooling.testing.real_codap import codap_dist

    tmp_path = tmp_path_factory.mktemp("bench")
    plot = tmp_path / "latency.png"
    dynamodb = find_jar() is not None and shutil.which("java") is not None
    codap = codap_dist() is not None
    # The cold-start section times one function (request): the others are imported the same way.
    common = ["--stores", "memory,sqlite,dynamodb", "--functions", "request"]
    if not dynamodb:
        common.append("--no-dynamodb")
    assert sorted(section for part in PARTS for section in part) == sorted(SECTIONS)
    procs = []
    for n, sections in enumerate(PARTS):
        args = [*common, "--only", ",".join(sections), *(["--plot", str(plot)] if "roundtrip" in sections else [])]
        # Files, not pipes: a part must never block on a full pipe while the fixture waits on another.
        out, log, err = (tmp_path / f"part{n}.{ext}" for ext in ("json", "out", "err"))
        with log.open("w") as stdout_file, err.open("w") as stderr_file:
            popen = subprocess.Popen(bench_command(out, *args), cwd=CHECKOUT, stdout=stdout_file, stderr=stderr_file)
        procs.append((popen, out, log, err))
    stdout, figures = "", dict[str, Any]()
    for popen, out, log, err in procs:
        try:
            popen.wait(timeout=600)
        finally:
            popen.kill()
        assert popen.returncode == 0, err.read_text()[-3000:]
        stdout += log.read_text()
        part: dict[str, Any] = json.loads(out.read_text())
        shared = {"machine", "settings", "wall_seconds", "section_seconds", "samples_ms"}
        assert not set(part) & set(figures) - shared, part.keys()
        assert part["section_seconds"], "each part says how long each of its sections took"
        figures |= part
    return Run(stdout, figures, plot, dynamodb, codap)


def test_quick_run_reports_every_section(quick_run: Run) -> None:
    stdout, figures = quick_run.stdout, quick_run.figures
    assert quick_run.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in (
        "## Round trips",
        "## Store operations per relayed call",
        "## Stores",
        "## Throughput",
        "## Bounded work",
        "## Idle streams",
        "## Cold start",
        "## Deployed shape",
        "## Tool time in the real CODAP",
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

    assert {row["store"] for row in figures["stores"]["rows"]} >= {"memory", "sqlite"}
    assert all(row["errors"] == 0 for row in figures["stores"]["rows"])
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


def test_switches_leave_out_mcp_and_dynamodb(tmp_path: Path) -> None:
    _, figures = run_bench(tmp_path, "--only", "roundtrip,deployed", "--no-mcp", "--no-dynamodb")
    assert all("mcp" not in level for level in figures["round_trip"]["levels"])
    assert "--no-dynamodb" in figures["deployed"]["skipped"]  # the deployed shape needs DynamoDB Local


@pytest.mark.browser
def test_quick_run_times_every_tool_inside_real_codap(quick_run: Run) -> None:
    """The codap section at a tiny size (3 datasets of 50 cases, each tool called once, no WebGL timing): every
    tool is timed in the plugin, and the message counts are the tools' fixed handful."""
    from codap_relay_tooling.testing.real_codap import HOW_TO_GET

    if not quick_run.codap:
        missing("the CODAP build", HOW_TO_GET)
    stdout, figures = quick_run.stdout, quick_run.figures
    assert "## Tool time in the real CODAP" in stdout
    codap = figures["codap"]
    assert "skipped" not in codap, codap
    rows = {r["label"].split(" (")[0]: r for r in codap["rows"]}
    assert set(rows) == {t["name"] for t in plugin_tools()}
    messages = {r["label"]: r["messages"] for r in codap["rows"]}
    counts = json.dumps(messages)
    # the status reads its graphs' states and the document (their settings) besides the list and the datasets
    assert (messages["get_codap_status"], messages["get_codap_datasets"]) == (5, 3), counts
    # a changing tool: its own messages, the digest's two, and the restore points of the journal (the one after the
    # call is sent before the digest's, so it falls within the call); a graph's also where it lands (the components'
    # list and places, and its move off those CODAP put it on; a new dataset's table too). Counted in the quick run of
    # 2026-12-07.
    assert (messages["create_codap_dataset"], messages["create_codap_graph"]) == (10, 15), counts
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
def test_quick_run_on_dynamodb_local(quick_run: Run) -> None:
    if not quick_run.dynamodb:
        from codap_relay_tooling.testing.dynamodb_shared import find_jar

        need(find_jar(), "DynamoDB Local")
        missing("Java 17")
    stdout, figures = quick_run.stdout, quick_run.figures
    assert {row["store"] for row in figures["stores"]["rows"]} == {"memory", "sqlite", "dynamodb-local"}
    deployed = figures["deployed"]
    assert set(deployed["kinds"]) == {"http_wait", "http", "mcp"}
    for call in deployed["kinds"].values():
        assert call["call_errors"] == 0 and call["latency"]["n"] == 3
        # the request queued in one transaction; the answer stored by two plain writes (its item, the session's)
        assert call["dynamodb_by_operation"]["TransactWriteItems"] == 1
        assert call["dynamodb_by_operation"]["UpdateItem"] >= 2
        assert call["api_requests"] >= 2 and call["write_units"] > 0
    assert deployed["idle"]["dynamodb_requests"] > 0 and deployed["resume"]["first"]["n"] == 1
    assert deployed["max_memory_used_mb"]["StreamFunction"] > 0
    push = deployed["push"]  # the push channel counted as the stream is: per call, per ping, per reconnect
    assert set(push["kinds"]) == {"http_wait", "http", "mcp", "mcp_oauth"}
    for call in push["kinds"].values():  # a pushed request is one message out, the answer one message in
        assert call["call_errors"] == 0 and call["websocket_by_kind"]["out:tool-request"] == 1
        assert call["websocket_by_kind"]["in:answer"] == 1 and call["websocket_by_kind"]["out:answered"] == 1
        assert call["dynamodb_by_operation"]["TransactWriteItems"] == 1 and call["api_requests"] >= 1
    ping = push["ping"]
    assert ping["pings"] > 0 and ping["push_invocations"] > 0 and ping["read_units"] > 0 and ping["write_units"] > 0
    assert push["reconnect"]["websocket_by_kind"]["in:attach"] == 1
    assert deployed["channels"]["websocket"]["http_wait"]["latency"]["n"] == 3
    shares = figures["cpushare"]["rows"]  # the stream at each memory size's CPU share, and unthrottled
    assert shares[0]["memory_mb"] is None and all(r["polls"] > 0 and r["errors"] == 0 for r in shares)
    assert "## The stream function at Lambda's CPU share" in stdout
    cost = deployed["cost"]
    for key in ("idle_plugin_hour", "per_1000_http_wait", "per_1000_http", "per_1000_mcp"):
        assert {"read_units", "write_units", "lambda_gb_seconds", "total_usd"} <= set(cost[key])
    assert "### Cost model" in stdout
    assert set(cost["channels"]) == {"sse", "websocket"}  # both plugin channels, every scenario, every goal
    for channel in cost["channels"].values():
        assert set(channel["scenarios"]) == {
            "idle_plugin_hour",
            "class_hour",
            "district_day",
            "district_class_day",
            "thousand_calls",
        }
        assert all(s["total_usd"] > 0 for s in channel["scenarios"].values())
    assert len(cost["goals"]) == 5 and all(g["why"] for g in cost["goals"])
    assert "### Cost by channel" in stdout and "Goals (issue 23):" in stdout
    assert cost["push_source"] == "measured" and "| a ping (" in stdout and "| a reconnect (" in stdout
