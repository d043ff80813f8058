"""Fixtures shared by every layer of tests."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codap_relay.commands.local_api import FORKSERVER_ENV
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import system_packages, web
from codap_relay_tooling.testing.clock import FakeClock, counting_ids
from codap_relay_tooling.testing.commands import LOCAL_API_ENV, LocalApi, local_api_process
from codap_relay_tooling.testing.lanes import FileTimesRecorder, is_busy, load_file_times, make_lane_scheduler
from codap_relay_tooling.testing.real_parts import MissingParts
from codap_relay_tooling.testing.relay_settings import make_settings

# Each test file's wall seconds and the cores it kept busy when it ran alone (codap_relay_tooling.testing.lanes),
# written by `PYTEST_WORKERS=1 scripts/test --record-file-times tests/file_times.json`. pytest-xdist hands out whole
# files in the order they are collected (scripts/test turns its own reordering, by number of tests, off), so the
# longest go first: a long file handed out last keeps one worker busy while the others wait. With --busy-lanes,
# scripts/test runs a worker more than the machine has cores, and a file that kept a core busy waits for one.
FILE_TIMES = Path(__file__).with_name("file_times.json")
# Every local-api the suite starts (and the benchmark's smoke run) forks its buffered functions' processes from a
# prepared interpreter (localapi/forkserver.py): a run starts about 150 of them, each 1-2 CPU-seconds of imports
# when fresh. Each is still its own process; only local-api's own tests of a fresh start turn it off.
os.environ[FORKSERVER_ENV] = "1"
ROOT = Path(__file__).parent.parent
# A file the record does not know yet: a slow one is placed among the long files, any other among the short.
UNKNOWN_SLOW_SECONDS, UNKNOWN_SECONDS = 60.0, 5.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-file-times",
        type=Path,
        default=None,
        help="write each test file's seconds (and, in a run without workers, the cores it kept busy) to this JSON",
    )
    parser.addoption(
        "--busy-lanes",
        type=int,
        default=None,
        help="under pytest-xdist, run at most this many files that keep a core busy at once (by tests/file_times.json)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files longest first (a stable sort keeps each file's own order)."""
    known = load_file_times(FILE_TIMES)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def seconds(item: pytest.Item) -> float:
        recorded = known.get(item.path.relative_to(ROOT).as_posix())
        if recorded is not None:
            return recorded.seconds
        return UNKNOWN_SLOW_SECONDS if item.path in slow_files else UNKNOWN_SECONDS

    items.sort(key=lambda item: -seconds(item))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    lanes: int | None = config.getoption("--busy-lanes")
    if lanes is None:
        return None  # the scheduling --dist names
    known = load_file_times(FILE_TIMES)

    def later(path: str) -> bool:  # while apt still installs the browsers (a fresh machine), other files go first
        return system_packages.pending() and system_packages.needs_browsers(path)

    return make_lane_scheduler(config, log, lambda path: is_busy(known.get(path)), lanes, later)


# A fixture that takes longer than this to stop is named at the end of the run: time spent stopping servers at
# the end of a worker's run is time the whole run waits for. Workers attach what they saw to the teardown's report
# (user_properties travel to the controller under pytest-xdist).
SLOW_TEARDOWN_SECONDS = 5.0
SLOW_TEARDOWN = "slow teardown"


class SlowTeardowns:
    """Times each fixture's stop. A plugin, not hooks of this conftest: pytest calls the finalizer hook through the
    fixture's own node, and a session fixture's node (the session) is outside this folder's conftest."""

    def __init__(self) -> None:
        self.last: float | None = None
        self.slow: list[str] = []  # seen in this process, not yet on a report
        self.reported: list[str] = []  # every report's, workers' included (on the controller)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        self.last = time.perf_counter()
        try:
            return (yield)
        finally:
            self.last = None

    def pytest_fixture_post_finalizer(self, fixturedef: pytest.FixtureDef[Any]) -> None:
        """How long each fixture took to stop: the time since the previous one stopped (or the teardown began)."""
        if self.last is None:
            return
        now = time.perf_counter()
        took, self.last = now - self.last, now
        if took > SLOW_TEARDOWN_SECONDS:
            self.slow.append(f"stopping the {fixturedef.scope} fixture {fixturedef.argname!r} took {took:.1f} s")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown" and self.slow:
            report.user_properties.extend((SLOW_TEARDOWN, line) for line in self.slow)
            self.slow.clear()
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reported.extend(f"{report.nodeid}: {line}" for key, line in report.user_properties if key == SLOW_TEARDOWN)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.reported:
            terminalreporter.section("slow teardowns")
            for line in self.reported:
                terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SlowTeardowns(), "codap-relay-slow-teardowns")
    if not hasattr(config, "workerinput"):  # the controller: it sees every worker's reports
        config.pluginmanager.register(MissingParts(), "codap-relay-missing-parts")
    target: Path | None = config.getoption("--record-file-times")
    if target is not None and not hasattr(config, "workerinput"):  # the controller records, workers' reports included
        alone = not getattr(config.option, "numprocesses", None)  # without workers the machine is each file's
        config.pluginmanager.register(FileTimesRecorder(target, measure_cores=alone), "codap-relay-file-times")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def relay(settings: Settings, clock: FakeClock) -> Relay:
    return Relay(settings, MemoryStore(), clock=clock, ids=counting_ids())


@pytest.fixture
async def client(request: pytest.FixtureRequest, relay: Relay) -> AsyncIterator[httpx.AsyncClient]:
    """The relay in process (ASGI); or, where a module asks for it (``also_through_local_api`` in
    codap_relay_tooling.testing.commands), the deployed shape: local-api on DynamoDB Local."""
    if getattr(request, "param", "asgi") == "local_api":
        async with web.AsyncClient(base_url=request.getfixturevalue("local_api").base, timeout=30) as c:
            yield c
        return
    app = build_app(relay)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 5555))
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as c:
        yield c


@pytest.fixture
async def session(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.post("/api/sessions", json={})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


# --- the deployed shape: codap-relay local-api on DynamoDB Local, shared by the suites that take a base URL ------


@pytest.fixture(scope="session")
def local_api() -> Iterator[LocalApi]:
    """One ``codap-relay local-api`` (the real command, a child process) on one DynamoDB Local table for the
    whole test session: every function in processes of its own, the stream behind the adapter-style proxy, the
    WebSocket push channel on its own port."""
    from codap_relay_tooling.testing.dynamodb_shared import env_for, fresh_table, store_url

    with fresh_table() as (dynamo, table):
        env = {**env_for(dynamo), **LOCAL_API_ENV}
        # With the push channel on (PushChannel=websocket): the plugin, its test stand-in and the suites that go
        # through here use it, as a deployment that offers it is used. SSE through local-api has tests of its own
        # (test_local_api_relay.py, test_deployed_streams.py, test_custom_domain.py).
        args = ("--store", store_url(dynamo, table), "--push-channel", "websocket")
        with local_api_process(*args, env=env) as (base, process):
            yield LocalApi(base, process)


#: How far behind DynamoDB's replica runs for ``lagging_local_api``: far more than AWS's usual fraction of a second
#: and more than the second a call may take to reach the plugin, so a read that waits for the replica shows.
REPLICA_LAG_SECONDS = 2.0


@pytest.fixture(scope="session")
def lagging_local_api() -> Iterator[LocalApi]:
    """``local_api`` as DynamoDB really behaves: every function reaches DynamoDB Local through one lagging replica's
    proxy (lagging_dynamodb.py), which answers each read that does not ask for consistency from a copy of the table
    ``REPLICA_LAG_SECONDS`` behind."""
    from codap_relay_tooling.testing.dynamodb_shared import env_for, fresh_table
    from codap_relay_tooling.testing.lagging_dynamodb import lagging_proxy_process

    with fresh_table() as (dynamo, table), lagging_proxy_process(dynamo.endpoint, REPLICA_LAG_SECONDS) as replica:
        env = {**env_for(dynamo), **LOCAL_API_ENV}
        store = f"dynamodb://{table}?endpoint_url={replica}&region=us-east-1"
        with local_api_process("--store", store, "--push-channel", "websocket", env=env) as (base, process):
            yield LocalApi(base, process, replica)
