"""The school bell of tests/integration/test_school_bell.py against the gateway's throttles alone, on a fake clock:
template.yaml's buckets as local-api applies them, each window's requests all at the moment it opens (the worst
case). The built page (the page and three files, then a session) passes; the unbundled page's 53 files would not."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codap_relay.http.plugin_files import PLUGIN_DIST
from codap_relay_tooling.localapi import throttle
from codap_relay_tooling.localapi.gateway import Gateway
from codap_relay_tooling.localapi.routing import Router
from codap_relay_tooling.localapi.template import read_stack
from codap_relay_tooling.testing.plugin_bundle import page_files

WINDOWS, MINUTE = 300, 60.0


def refused_at_the_bell(files_per_page: int, monkeypatch: pytest.MonkeyPatch) -> int:
    now = [0.0]
    monkeypatch.setattr(f"{throttle.__name__}.time.monotonic", lambda: now[0])
    stack = read_stack(Path(__file__).resolve().parents[2] / "template.yaml")
    gateway, router = Gateway(stack, {}, io.StringIO()), Router(stack.routes)
    window = [("GET", "/plugin/"), *[("GET", f"/plugin/file-{i}.js") for i in range(files_per_page)]]
    window.append(("POST", "/api/sessions"))
    refused = 0
    for i in range(WINDOWS):
        now[0] = MINUTE * (i / WINDOWS) ** 2
        for method, path in window:
            bucket = gateway.bucket_for(method, router.match(method, path))
            refused += bucket is not None and not bucket.take()
    return refused


def test_the_built_page_meets_no_throttle_at_the_bell(monkeypatch: pytest.MonkeyPatch) -> None:
    files = len(page_files((PLUGIN_DIST / "index.html").read_text()))
    assert files == 3 and refused_at_the_bell(files, monkeypatch) == 0


def test_the_unbundled_page_would_have_been_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    assert refused_at_the_bell(52, monkeypatch) > 1000
