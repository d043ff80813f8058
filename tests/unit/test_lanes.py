"""The lane scheduler (codap_relay_tooling.testing.lanes) against a simulated pytest-xdist: workers that run what they
are sent in order and, as real ones do, hold their last test until more work or a shutdown comes."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from codap_relay_tooling.testing.lanes import (
    WAITING_CORES,
    FileTime,
    FileTimesRecorder,
    is_busy,
    load_file_times,
    make_lane_scheduler,
)


@dataclass(eq=False)
class Worker:
    name: str
    queue: list[int] = field(default_factory=list)  # indexes into the collection, in the order sent
    ran: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        assert not self.shutting_down, f"{self.name} was sent work after its shutdown"
        self.queue.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        # A real worker holds its last test back until it knows the next one (pytest's nextitem) or is told to stop.
        return len(self.queue) > 1 or (len(self.queue) == 1 and self.shutting_down)

    def done(self) -> bool:
        return self.shutting_down and not self.queue


def config_for(workers: int) -> Any:
    return SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=False))


def collection(files: dict[str, int]) -> list[str]:
    return [f"{path}::test_{n}" for path, count in files.items() for n in range(count)]


def simulate(
    files: dict[str, int],
    busy_files: set[str],
    *,
    workers: int,
    lanes: int,
    seed: int,
    later: Any = lambda path: False,
) -> tuple[list[Worker], list[str], int]:
    """Runs every test, one step at a time on a random worker that can go on; returns the workers, the collection,
    and the most workers seen running a busy file at once."""
    rng = random.Random(seed)
    tests = collection(files)
    scheduler = make_lane_scheduler(config_for(workers), None, lambda path: path in busy_files, lanes, later)
    nodes = [Worker(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, tests)
    scheduler.schedule()
    most_busy = 0
    for _ in range(10 * len(tests)):
        runnable = [n for n in nodes if n.can_run()]
        if not runnable:
            break
        node = rng.choice(runnable)
        index = node.queue.pop(0)
        node.ran.append(index)
        # Every worker with a busy test sent and not yet finished (the one running now included) may be on it.
        busy_now = {n.name for n in nodes if any(tests[i].split("::")[0] in busy_files for i in n.queue)}
        if tests[index].split("::")[0] in busy_files:
            busy_now.add(node.name)
        most_busy = max(most_busy, len(busy_now))
        scheduler.mark_test_complete(node, index)
    return nodes, tests, most_busy


@pytest.mark.parametrize("seed", range(40))
def test_every_test_runs_once_and_no_worker_is_left_holding_one(seed: int) -> None:
    rng = random.Random(seed)
    files = {f"tests/test_{n}.py": rng.randint(1, 6) for n in range(rng.randint(3, 14))}
    busy = {path for path in files if rng.random() < 0.6}
    nodes, tests, most_busy = simulate(files, busy, workers=3, lanes=2, seed=seed)
    assert sorted(i for n in nodes for i in n.ran) == list(range(len(tests)))
    assert all(n.done() for n in nodes), [(n.name, n.queue, n.shutting_down) for n in nodes]
    assert most_busy <= 2


def test_a_third_worker_takes_the_waiting_files_while_two_run_the_busy_ones() -> None:
    files = {"tests/busy_a.py": 4, "tests/busy_b.py": 4, "tests/busy_c.py": 4, "tests/wait_a.py": 2}
    busy = {"tests/busy_a.py", "tests/busy_b.py", "tests/busy_c.py"}
    nodes, tests, most_busy = simulate(files, busy, workers=3, lanes=2, seed=1)
    ran_by = {tests[i].split("::")[0]: n.name for n in nodes for i in n.ran}
    assert ran_by["tests/busy_a.py"] == "gw0" and ran_by["tests/busy_b.py"] == "gw1"
    assert ran_by["tests/wait_a.py"] == "gw2"
    assert ran_by["tests/busy_c.py"] in {"gw0", "gw1"}, "a busy file waits for a busy lane, not the third worker"
    assert most_busy == 2


def test_one_busy_lane_runs_busy_files_one_after_another() -> None:
    files = {f"tests/busy_{n}.py": 3 for n in range(4)} | {f"tests/wait_{n}.py": 3 for n in range(4)}
    busy = {p for p in files if "busy" in p}
    for seed in range(20):
        nodes, tests, most_busy = simulate(files, busy, workers=3, lanes=1, seed=seed)
        assert most_busy == 1
        assert sorted(i for n in nodes for i in n.ran) == list(range(len(tests)))


def test_files_that_need_browsers_wait_while_apt_installs_them_unless_nothing_else_is_left() -> None:
    files = {"tests/e2e/long.py": 6, "tests/e2e/short.py": 2, "tests/unit/a.py": 3, "tests/unit/b.py": 2}
    nodes, tests, _ = simulate(
        files, set(files), workers=2, lanes=2, seed=3, later=lambda path: path.startswith("tests/e2e/")
    )
    ran_first = [tests[n.ran[0]].split("::")[0] for n in nodes]
    assert sorted(ran_first) == ["tests/unit/a.py", "tests/unit/b.py"], "the files that need no browser go first"
    assert sorted(i for n in nodes for i in n.ran) == list(range(len(tests))), "the browser files still run, once"
    assert all(n.done() for n in nodes)


def test_a_file_is_busy_unless_its_record_says_it_waited() -> None:
    assert is_busy(None), "a file the record does not know yet"
    assert is_busy(FileTime(10.0, None)), "recorded in a run with workers: its cores were not measured"
    assert is_busy(FileTime(10.0, WAITING_CORES))
    assert not is_busy(FileTime(60.0, WAITING_CORES - 0.01))


def test_the_record_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "times.json"
    recorder = FileTimesRecorder(target, measure_cores=True)
    for nodeid in ("tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t"):
        recorder.pytest_runtest_logstart(nodeid, ("", None, ""))
        for when in ("setup", "call", "teardown"):
            recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=0.5, when=when))  # type: ignore[arg-type]
        recorder.pytest_runtest_logfinish(nodeid, ("", None, ""))
    recorder.pytest_sessionfinish(SimpleNamespace())  # type: ignore[arg-type]
    raw = json.loads(target.read_text())
    assert raw["tests/a.py"]["seconds"] == 3.0 and raw["tests/b.py"]["seconds"] == 1.5
    assert all(isinstance(t["cores"], float) and t["cores"] >= 0 for t in raw.values())
    loaded = load_file_times(target)
    assert loaded["tests/a.py"] == FileTime(3.0, raw["tests/a.py"]["cores"])
    assert load_file_times(tmp_path / "absent.json") == {}
