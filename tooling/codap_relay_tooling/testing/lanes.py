"""How the test files share a machine's cores: each file's recorded time and CPU, and a pytest-xdist scheduler that
runs one more worker than the machine has cores while never more files that keep a core busy than there are cores.

Many test files mostly wait (a rate limit's minute, a socket trickling a body, a stream's heartbeat): a worker on one
of them leaves its core idle. With a worker per core, the two cores here were 83% busy over a whole run (1,224
CPU-seconds in 734 s) and 60-70% in its last minutes. A third worker taking files like the others pushed the load
to 10-14 and real-browser tests into their timeouts. So the files are told apart by the CPU they used when they
last ran alone (``cores``: the machine's busy CPU-seconds over the file's wall seconds): a *busy* file takes a core,
a *waiting* one does not, and a worker that may not start a busy file takes a waiting one instead, or ends when
none is left.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# A file that kept less than half a core busy while it ran alone mostly waits: the school bell (0.41: a minute of
# paced windows), the trickling sockets (0.09), most of local-api's own tests.
WAITING_CORES = 0.5


@dataclass(frozen=True)
class FileTime:
    seconds: float  # wall time of its setup, calls and teardowns
    cores: float | None  # busy CPU-seconds of the whole machine per wall second, when it ran alone; else None


def load_file_times(path: Path) -> dict[str, FileTime]:
    """The record ``--record-file-times`` wrote, keyed by the file's path from the checkout; empty if none."""
    if not path.exists():
        return {}
    raw: dict[str, dict[str, float | None]] = json.loads(path.read_text())
    return {name: FileTime(float(t["seconds"] or 0.0), t.get("cores")) for name, t in raw.items()}


def machine_busy_seconds() -> float | None:
    """CPU-seconds every core of this machine has spent busy since boot (Linux); None elsewhere. A steal from the
    host is not counted: it is time this machine did not run."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


class FileTimesRecorder:
    """A plugin that writes each file's seconds (its tests' setups, calls and teardowns) and, in a run without workers
    (the machine is then the file's alone), the cores it kept busy meanwhile."""

    def __init__(self, target: Path, *, measure_cores: bool) -> None:
        self.target, self.measure_cores = target, measure_cores
        self.seconds: dict[str, float] = {}
        self.busy: dict[str, float] = {}
        self._busy_at_start: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] = self.seconds.get(path, 0.0) + report.duration

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        busy = machine_busy_seconds() if self.measure_cores else None
        if busy is not None:
            self._busy_at_start[nodeid] = busy

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        began = self._busy_at_start.pop(nodeid, None)
        now = machine_busy_seconds() if began is not None else None  # read only where the start was
        if began is not None and now is not None:
            path = nodeid.split("::", 1)[0]
            self.busy[path] = self.busy.get(path, 0.0) + now - began

    def record(self) -> dict[str, dict[str, float | None]]:
        return {
            path: {
                "seconds": round(sec, 1),
                "cores": round(self.busy[path] / sec, 2) if path in self.busy and sec > 0 else None,
            }
            for path, sec in sorted(self.seconds.items())
        }

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.target.write_text(json.dumps(self.record(), indent=1) + "\n")


def is_busy(file_time: FileTime | None) -> bool:
    """A file keeps a core busy unless its record says it used less than WAITING_CORES (a new file counts as busy)."""
    return file_time is None or file_time.cores is None or file_time.cores >= WAITING_CORES


def make_lane_scheduler(
    config: pytest.Config,
    log: Any,
    busy: Callable[[str], bool],
    busy_lanes: int,
    later: Callable[[str], bool] = lambda path: False,
) -> Any:
    """pytest-xdist's file-by-file scheduling, except that at most ``busy_lanes`` workers run busy files at once.
    ``busy(path)`` tells a busy file from a waiting one by its path (as in a test id, from the rootdir). A file for
    which ``later(path)`` holds at hand-out time (one that needs a browser apt is still installing) goes to a worker
    only when no other file may."""
    # Imported here: the recorder and is_busy are of use without pytest-xdist.
    from xdist.scheduler import LoadFileScheduling

    class LaneScheduling(LoadFileScheduling):  # type: ignore[misc]
        """Hands each free worker the first file in the queue (longest first) it may run: a busy file while fewer
        than ``busy_lanes`` other workers have one unfinished, else a waiting file. A worker with neither to run is
        shut down rather than left waiting: it holds the last test of its file until it is sent more work or
        stopped, so a worker kept waiting for a busy lane would hold that test back."""

        def _assign_work_unit(self, node: Any) -> None:
            others_busy = sum(
                1
                for other, workload in self.assigned_work.items()
                if other is not node and any(busy(s) and not all(done.values()) for s, done in workload.items())
            )
            may_take_busy = others_busy < busy_lanes
            allowed = [s for s in self.workqueue if may_take_busy or not busy(s)]
            scope = next((s for s in allowed if not later(s)), allowed[0] if allowed else None)
            if scope is None:
                node.shutdown()
                return
            work_unit = self.workqueue.pop(scope)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    return LaneScheduling(config, log)
