"""A real part hidden from the suite: the tests that need it skip, and the run's end lists them with how to get each
part; with REAL_PARTS_REQUIRED=1 (.ci/run) the same tests fail. Hidden for real: no Node and no Java on PATH, and
CODAP_DIST naming a folder without CODAP, for one test of each in a pytest run of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codap_relay_tooling.testing import CHECKOUT

NEEDS = {
    "Node": "tests/unit/test_plugin_js.py::test_the_plugin_reports_the_relays_version",
    "Java 17": "tests/integration/test_dynamodb_store.py::test_create_table_command_against_dynamodb_local",
    "the CODAP build": (
        "tests/e2e/test_real_codap_engines.py::test_the_plugin_scenario_in_real_codap[firefox-same_origin]"
    ),
}


def run_without_parts(tmp_path: Path, *, required: bool) -> tuple[subprocess.CompletedProcess[str], str]:
    """pytest on NEEDS's tests with nothing on PATH (no node, no java) and CODAP_DIST naming an empty folder; what it
    printed, and the report it left for scripts/test."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    report = tmp_path / f"report-{required}.txt"
    env = {
        **os.environ,
        "PATH": str(empty),
        "CODAP_DIST": str(empty),
        "REAL_PARTS_REQUIRED": "1" if required else "",
        "REAL_PARTS_REPORT": str(report),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *NEEDS.values()],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run, report.read_text() if report.exists() else ""


def test_a_hidden_part_skips_its_tests_and_the_run_says_what_it_could_not_run(tmp_path: Path) -> None:
    run, report = run_without_parts(tmp_path, required=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and f"{len(NEEDS)} skipped" in output, output
    assert report.startswith(f"NOT RUN: {len(NEEDS)} test(s) skipped because a real part is missing"), report
    for part, test in NEEDS.items():
        assert f"  - {part}: 1 test(s), e.g. {test}\n    how to get it: " in report, report
    assert "how to get it: Node 20 or newer with npm on PATH" in report
    assert "real parts missing" in output  # pytest's own summary shows it too


def test_under_real_parts_required_a_hidden_part_fails_its_tests(tmp_path: Path) -> None:
    run, report = run_without_parts(tmp_path, required=True)
    output = run.stdout + run.stderr
    last = output.splitlines()[-1]
    assert run.returncode == 1 and "skipped" not in last, output  # failed or errored (a fixture's setup), not one skip
    for part in NEEDS:
        assert (
            f"REAL_PARTS_REQUIRED is set, and this test needs a part this machine lacks: missing real part [{part}]"
            in output
        )
    assert report == ""  # nothing was skipped
