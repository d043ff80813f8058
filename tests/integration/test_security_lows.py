"""The low findings of security issue 31, each as it was reproduced: resource URIs with digits ``int`` refuses
(500, and over MCP error code 0 with Python's text), the access log's code hint that a plain hash made reversible,
a deeply nested push message (an ``internal_error`` with a stack trace), and ``serve`` off loopback answering any
Host header."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from codap_relay.codes import redact_code
from codap_relay.commands.serve import default_hosts
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.settings import Settings, SettingsError
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.fake_publisher import FakePublisher
from codap_relay_tooling.testing.plugin_page import MCP_ANSWER_SECONDS
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import free_port, serve_app

BAD_URIS = [
    "codap://datasets/a/cases?page=²",  # str.isdigit() is true, int() refuses it
    "codap://datasets/a/cases?page=" + "9" * 5000,  # over int()'s 4,300 digits
    "codap://graphs/" + "7" * 5000 + "/image",
    "codap://graphs/9007199254740992/image",  # 2**53: JavaScript cannot hold it exactly
    "codap://datasets/" + "a" * 3000,  # over the URI length cap
]


@pytest.mark.parametrize(
    "uri", BAD_URIS, ids=["superscript page", "long page", "long graph id", "graph id past 2**53", "long uri"]
)
async def test_a_bad_resource_uri_is_a_400_naming_it(
    client: httpx.AsyncClient, session: dict[str, Any], uri: str
) -> None:
    r = await client.get("/resources/read", params={"code": session["code"], "uri": uri})
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid" and r.json()["message"]


async def test_a_graph_id_as_large_as_codaps_own_reaches_the_tool(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    # CODAP 3.1.0 gives components ids of 15 digits (111128409776518 seen in a real document)
    r = await client.get(
        "/resources/read", params={"code": session["code"], "uri": "codap://graphs/111128409776518/image"}
    )
    assert (r.status_code, r.json()["error"]) == (502, "codap_error") and "get_codap_graph_image" in r.text


async def test_a_graph_named_with_other_digits_is_read_by_name_not_a_crash(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    r = await client.get("/resources/read", params={"code": session["code"], "uri": "codap://graphs/²/image"})
    # past the URI: it got as far as the tool that reads a graph by name (not offered by this session's plugin)
    assert (r.status_code, r.json()["error"]) == (502, "codap_error") and "get_codap_graph_image" in r.text


@pytest.fixture
def served(relay: Relay) -> Iterator[str]:
    with serve_app(build_app(relay)) as url:
        yield url


async def test_over_mcp_a_bad_resource_uri_is_invalid_params(served: str) -> None:
    code = web.post(f"{served}/api/sessions", json={}).json()["code"]
    async with Client(f"{served}/mcp/{code}", read_timeout_seconds=MCP_ANSWER_SECONDS) as client:
        for uri in BAD_URIS:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == -32602, (uri[:60], refused.value.error)
            assert "int()" not in refused.value.error.message


# --- the access log's code hint -------------------------------------------------------------------------


def test_the_code_hint_is_keyed_so_a_plain_hash_cannot_reverse_it() -> None:
    code = "ABCD2345"
    plain = f"AB…#{hashlib.sha256(code.encode()).hexdigest()[:8]}"  # what issue 31 reversed in 51 s
    one, other = redact_code(code, b"k" * 32), redact_code(code, b"q" * 32)
    assert one.startswith("AB…#") and one != plain and one != other and code not in one
    assert redact_code(code, b"k" * 32) == one  # stable under one key: a session's log lines share it


def test_the_hint_key_is_a_setting_drawn_at_start_when_unset() -> None:
    a, b = Settings.from_env({}), Settings.from_env({})
    assert a.log_hint_key.get_secret_value() != b.log_hint_key.get_secret_value()
    assert len(a.log_hint_key.get_secret_value()) >= 32 and a.log_hint_key.get_secret_value() not in repr(a)
    assert Settings.from_env({"LOG_HINT_KEY": "x" * 20}).log_hint_key.get_secret_value() == "x" * 20
    with pytest.raises(SettingsError, match="LOG_HINT_KEY"):
        Settings.from_env({"LOG_HINT_KEY": "short"})


async def test_the_access_log_carries_the_keyed_hint(caplog: pytest.LogCaptureFixture) -> None:
    relay = Relay(make_settings(log_hint_key="k" * 32), _store())
    transport = httpx.ASGITransport(app=build_app(relay))
    caplog.set_level(logging.INFO, logger="codap_relay.access")
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as client:
        code = (await client.post("/api/sessions", json={})).json()["code"]
        await client.get(f"/api/sessions/{code}")
    hints = [json.loads(r.getMessage()).get("code") for r in caplog.records]
    assert redact_code(code, b"k" * 32) in hints
    assert hashlib.sha256(code.encode()).hexdigest()[:8] not in caplog.text and code not in caplog.text


def _store() -> MemoryStore:
    return MemoryStore()


# --- a deeply nested push message -----------------------------------------------------------------------


async def test_a_deeply_nested_push_message_gets_bad_input_not_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    publisher = FakePublisher()
    relay = Relay(make_settings(), _store(), publisher=publisher)
    caplog.set_level(logging.ERROR, logger="codap_relay.push")
    # Each on a connection of its own: a bad message closes the socket it came on.
    bodies = ('{"action": "ping", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"action": "attach", "v": 1e999}')
    for n, body in enumerate(bodies):
        await relay.push.message(f"C{n}", body)
    errors = [*publisher.take("C0"), *publisher.take("C1")]
    assert [(m["event"], m["code"]) for m in errors] == [("error", "bad_input")] * 2, errors
    assert "nested too deeply" in errors[0]["message"] and errors[1]["field"] == "v"
    assert not caplog.records  # no stack trace: it is the client's mistake, told to it


# --- serve off loopback ---------------------------------------------------------------------------------


def test_serve_on_every_address_without_allowed_hosts_refuses_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ALLOWED_HOSTS"}
    port = str(free_port())
    cmd = [sys.executable, "-m", "codap_relay.cli", "serve", "--host", "0.0.0.0", "--port", port, "--store", "memory:"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "ALLOWED_HOSTS" in done.stderr


def test_allowed_hosts_default_to_the_bound_address_off_loopback() -> None:
    assert default_hosts("127.0.0.1", "") == "localhost,127.0.0.1,[::1]"
    assert default_hosts("192.0.2.10", "") == "192.0.2.10"
    assert default_hosts("2001:db8::1", "") == "[2001:db8::1]"
    assert default_hosts("0.0.0.0", "relay.example") is None  # set: Settings reads it
    for everywhere in ("0.0.0.0", "::"):
        with pytest.raises(SettingsError, match="ALLOWED_HOSTS"):
            default_hosts(everywhere, " ")
