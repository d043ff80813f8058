"""The lanes (codap_relay_tooling.testing.lanes) under the real pytest: small suites in folders of their own. On three
pytest-xdist workers with one busy lane, each test writes when it ran, and where: the busy files must never overlap,
and the waiting ones must run beside them. Run alone, the recorder writes what a file took."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from codap_relay_tooling.testing.lanes import is_busy, load_file_times

CONFTEST = """
from pathlib import Path

from codap_relay_tooling.testing.lanes import is_busy, load_file_times, make_lane_scheduler

def pytest_xdist_make_scheduler(config, log):
    known = load_file_times(Path(__file__).with_name("file_times.json"))
    return make_lane_scheduler(config, log, lambda path: is_busy(known.get(path)), 1)
"""

TEST_FILE = """
import json, os, time

def ran(name):
    start = time.monotonic()
    time.sleep(0.4)
    line = {"file": __name__, "test": name, "worker": os.environ["PYTEST_XDIST_WORKER"], "start": start,
            "end": time.monotonic()}
    with open(os.environ["LANES_LOG"], "a") as log:
        log.write(json.dumps(line) + "\\n")

def test_one():
    ran("one")

def test_two():
    ran("two")
"""

BUSY, WAITING = ("test_busy_a", "test_busy_b", "test_busy_c"), ("test_wait_a", "test_wait_b")


def test_three_workers_one_busy_lane(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "conftest.py").write_text(CONFTEST)
    times = {f"{name}.py": {"seconds": 10.0, "cores": 1.0 if name in BUSY else 0.05} for name in BUSY + WAITING}
    (suite / "file_times.json").write_text(json.dumps(times))
    for name in BUSY + WAITING:
        (suite / f"{name}.py").write_text(TEST_FILE)
    log = tmp_path / "ran.jsonl"
    # Only xdist among the installed plugins: each worker would import every one of them (seconds of CPU each).
    env = {**os.environ, "LANES_LOG": str(log), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "xdist",
        "-n",
        "3",
        "--dist",
        "loadfile",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "10 passed" in proc.stdout, proc.stdout

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted((r["file"], r["test"]) for r in lines) == sorted(
        (name, test) for name in BUSY + WAITING for test in ("one", "two")
    ), "each test ran once"
    spans = {
        name: (min(r["start"] for r in lines if r["file"] == name), max(r["end"] for r in lines if r["file"] == name))
        for name in BUSY + WAITING
    }
    busy = sorted(spans[name] for name in BUSY)
    for (_, end), (start, _) in itertools.pairwise(busy):
        assert end <= start, f"two busy files ran at once: {spans}"

    def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return a[0] < b[1] and b[0] < a[1]

    assert any(overlaps(spans[w], spans[b]) for w in WAITING for b in BUSY), f"nothing ran beside a busy file: {spans}"
    assert len({r["worker"] for r in lines}) == 3


RECORDING_CONFTEST = """
from pathlib import Path

from codap_relay_tooling.testing.lanes import FileTimesRecorder

def pytest_configure(config):
    config.pluginmanager.register(FileTimesRecorder(Path("times.json"), measure_cores=True), "file-times")
"""

BUSY_TEST = """
import time

def test_spins():
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        pass
"""

IDLE_TEST = """
import time

def test_sleeps():
    time.sleep(0.6)
"""


def test_the_recorder_writes_each_files_seconds_and_cores(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(RECORDING_CONFTEST)
    (tmp_path / "test_spins.py").write_text(BUSY_TEST)
    (tmp_path / "test_sleeps.py").write_text(IDLE_TEST)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = load_file_times(tmp_path / "times.json")
    assert set(record) == {"test_spins.py", "test_sleeps.py"}
    for name, took in record.items():
        assert took.seconds >= 0.6 and took.cores is not None, (name, took)
    # The machine's busy CPU is counted, other processes' included: a spinning test keeps at least its own core
    # busy, and what the sleeping one measures depends on what else runs here.
    assert record["test_spins.py"].cores is not None and record["test_spins.py"].cores >= 0.5
    assert is_busy(record["test_spins.py"])
