"""The deployed stack behind a custom domain whose base path mapping (/codap) points at the stage, as local-api
serves it with ``--base-path``: API Gateway keeps /codap in the path it hands the functions, the PublicBasePath
parameter tells them so. The plugin loads from /codap/plugin/ in a browser, pairs and runs a tool."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.commands import local_api_process
from codap_relay_tooling.testing.plugin_page import call_tool, ok_result
from codap_relay_tooling.testing.relay_settings import TEST_FRAME_ANCESTORS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def custom_domain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("custom-domain") / "relay.db"
    args = ["--store", f"sqlite:///{store}", "--base-path", "codap", "--parameter", "PublicBasePath=/codap"]
    env = {**os.environ, "HEARTBEAT_SECONDS": "1", "FRAME_ANCESTORS": TEST_FRAME_ANCESTORS}
    with local_api_process(*args, env=env, prefix="/codap") as (base, _process):
        yield base


def test_plugin_under_a_custom_domains_base_path(open_plugin: Any, custom_domain: str) -> None:
    plugin = open_plugin(custom_domain)
    code = plugin.code()
    created = call_tool(
        custom_domain,
        code,
        "create_codap_dataset",
        {"datasetName": "d", "dataType": "random_numbers", "recordCount": 3},
    )
    assert ok_result(created)["structuredContent"]["recordCount"] == 3
    llms = web.get(f"{custom_domain}/llms.txt", params={"code": code}, timeout=30).text
    assert f"POST {custom_domain}/request?wait=15" in llms and f"{custom_domain}/mcp/{code}" in llms
    index = web.get(f"{custom_domain}/", timeout=30).json()
    assert index["plugin"] == f"{custom_domain}/plugin/"
    redirect = web.get(f"{custom_domain}/plugin", timeout=30)
    assert redirect.status_code == 307 and redirect.headers["location"] == f"{custom_domain}/plugin/"
    assert re.search(r"/codap/plugin/", plugin.frame.url)
