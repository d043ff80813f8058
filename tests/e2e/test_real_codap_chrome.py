"""The plugin in the real CODAP build, in chromium with Chrome's own defaults (third-party storage partitioned,
not blocked) and with CODAP served the way codap.concord.org is: over https from an address Chrome counts as
public. There Local Network Access guards the README's local path (the plugin on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codap_relay_tooling.testing import ARTIFACTS
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.plugin_page import call_tool, ok_result, wait_until
from codap_relay_tooling.testing.real_codap import (
    CHROME_DEFAULT_STORAGE,
    LNA_BLOCKED,
    CodapPage,
    blocked_then_allowed,
    other_site,
    public_origin,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser_args(codap_https_url: str) -> list[str]:
    return [*CHROME_DEFAULT_STORAGE, *public_origin(codap_https_url)]


@pytest.fixture(scope="module")
def full_browser() -> bool:
    """The browser itself, not its headless shell: what is tested here is what a person's Chrome does."""
    return True


def assert_partitioned(codap: CodapPage) -> None:
    """The plugin's frame has storage, but not its own site's (first-party) storage: Chrome partitions it."""
    probe = codap.frame_storage()
    assert probe == {"sessionStorage": "ok", "firstParty": False}, f"storage is not partitioned here: {probe}"


def test_public_codap_reaches_the_local_plugin_once_the_site_may_access_this_device(
    open_codap: Any, relay_url: str, codap_https_url: str
) -> None:
    codap = blocked_then_allowed(open_codap, f"{relay_url}/plugin/", codap_https_url)
    code = codap.code()
    assert_partitioned(codap)
    assert codap.shown("storage-note") == ""
    args = {"datasetName": "public", "dataType": "random_numbers", "recordCount": 4}
    ok_result(call_tool(relay_url, code, "create_codap_dataset", args))
    assert len(codap.items("public")) == 4
    codap.screenshot(ARTIFACTS / "real-codap-public-allowed.png")
    codap.reload_plugin()
    assert codap.wait_paired() == code  # partitioned storage keeps the session across a reload of the frame


def test_partitioned_third_party_storage_keeps_the_code_across_reloads(
    open_codap: Any, relay_url: str, codap_url: str
) -> None:
    codap = open_codap(f"{relay_url}/plugin/", codap=other_site(codap_url))
    assert_partitioned(codap)
    code = codap.code()
    assert codap.shown("storage-note") == ""
    codap.reload_plugin()
    assert codap.wait_paired() == code
    ok_result(call_tool(relay_url, code, "get_codap_status", {}))


@pytest.fixture(scope="module")
def relay_with_codap(codap_build: Path) -> Iterator[str]:
    """``codap-relay serve --codap-dir``: the command a person runs, serving the CODAP build beside the plugin."""
    with serve_process("--store", "memory:", "--codap-dir", str(codap_build)) as (url, proc):
        assert f"CODAP:  {url}/codap/?di={url}/plugin/" in proc.output()
        yield url


def test_codap_served_by_the_relay_needs_no_permission(
    open_codap: Any, relay_with_codap: str, codap_https_url: str
) -> None:
    relay = relay_with_codap
    # The same browser profile in which the public CODAP is blocked from the plugin ...
    public = open_codap(f"{relay}/plugin/", codap=codap_https_url, wait=False)
    wait_until(lambda: public.plugin_failed(LNA_BLOCKED), "Chrome to block the plugin's frame", 30)
    # ... opens CODAP from the relay (one loopback origin with the plugin): no question, first-party storage.
    codap = open_codap(f"{relay}/plugin/", codap=f"{relay}/codap")
    assert codap.frame_storage() == {"sessionStorage": "ok", "firstParty": True}
    code = codap.code()
    args = {"datasetName": "local", "dataType": "time_series", "recordCount": 5}
    ok_result(call_tool(relay, code, "create_codap_dataset", args))
    assert len(codap.items("local")) == 5
    codap.screenshot(ARTIFACTS / "real-codap-served-by-relay.png")
    codap.reload_plugin()
    assert codap.wait_paired() == code
