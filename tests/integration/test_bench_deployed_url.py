"""``python -m bench --only deployed --url …`` measures a stack it did not start: here a ``codap-relay local-api``
this module starts (on a SQLite file its function processes share), reached only through its URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.commands import local_api_process

pytestmark = pytest.mark.slow

ENV = {"RATE_LIMIT_SESSION_PER_IP": "10000", "RATE_LIMIT_REQUEST_PER_CODE": "10000"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("bench-url") / "relay.db"
    args = ("--store", f"sqlite:///{store}", "--push-channel", "websocket")  # a stack that offers both channels
    with local_api_process(*args, env={**os.environ, **ENV}) as (url, _process):
        yield url


def test_the_deployed_section_measures_a_stack_by_url(base: str, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = ["--only", "deployed", "--url", base, "--deployed-calls", "3", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "starting DynamoDB Local" not in proc.stderr and "local-api on DynamoDB Local" not in proc.stderr
    deployed = json.loads(out.read_text())["deployed"]
    assert deployed["url"] == base and deployed["floor"]["n"] == 3
    assert set(deployed["channels"]) == {"sse", "websocket"}
    for kinds in deployed["channels"].values():
        assert set(kinds) == {"http_wait", "http", "mcp"}
        for figures in kinds.values():  # every call came back answered by the fake plugin through the URL
            assert figures["call_errors"] == 0 and figures["latency"]["n"] == 3 and figures["latency"]["p50"] > 0
        assert kinds["http"]["delivery"]["n"] == 3
    assert f"## Deployed stack at {base}" in proc.stdout
    assert "sse: HTTP `?wait`" in proc.stdout and "websocket: HTTP `?wait`" in proc.stdout
