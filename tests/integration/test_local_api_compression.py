"""The template's payload compression (``MinimumCompressionSize``) through ``codap-relay local-api``, as API Gateway
applies it: a buffered answer of 8 KB or more goes out gzip-compressed to a client that accepts gzip, a small one
and one to a client that does not as they are, and the plugin's stream never (it is streamed). The MCP App's page
(about 400 KB) is the answer it is there for: a host that reads it again pays for about a quarter of it."""

from __future__ import annotations

import httpx

from codap_relay.mcp.app import APP_FILE, APP_URI
from codap_relay_tooling.localapi.events import GatewayAnswer, compressed
from codap_relay_tooling.localapi.template import read_stack
from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.commands import LocalApi

READ_APP = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": APP_URI}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def test_the_template_compresses_answers_from_8_kb() -> None:
    assert read_stack(CHECKOUT / "template.yaml").compress_from == 8192


def test_compression_as_api_gateway_applies_it() -> None:
    big = GatewayAnswer(200, [("Content-Type", "application/json")], b"x" * 9000)
    assert dict(compressed(big, "gzip, deflate, br", 8192).headers)["Content-Encoding"] == "gzip"
    assert dict(compressed(big, "deflate", 8192).headers)["Content-Encoding"] == "deflate"
    assert compressed(big, "br", 8192) is big  # API Gateway offers gzip and deflate only
    assert compressed(big, None, 8192) is big
    assert compressed(big, "gzip", None) is big  # no MinimumCompressionSize: never
    assert compressed(GatewayAnswer(200, [], b"x" * 100), "gzip", 8192).body == b"x" * 100
    own = GatewayAnswer(200, [("Content-Encoding", "gzip")], b"x" * 9000)
    assert compressed(own, "gzip", 8192) is own  # already encoded by the function


def test_the_mcp_apps_page_goes_out_compressed_and_small_answers_as_they_are(local_api: LocalApi) -> None:
    page = len(APP_FILE.read_bytes())
    with httpx.Client(timeout=30) as http:
        r = http.post(
            f"{local_api.base}/mcp/ZZZZ2345", json=READ_APP, headers={**MCP_HEADERS, "Accept-Encoding": "gzip"}
        )
        assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
        assert r.json()["result"]["contents"][0]["uri"] == APP_URI
        assert r.num_bytes_downloaded < page / 3, (r.num_bytes_downloaded, page)
        plain = http.post(
            f"{local_api.base}/mcp/ZZZZ2345", json=READ_APP, headers={**MCP_HEADERS, "Accept-Encoding": "identity"}
        )
        assert "content-encoding" not in plain.headers and plain.num_bytes_downloaded > page
        small = http.get(f"{local_api.base}/healthz", headers={"Accept-Encoding": "gzip"})
        assert small.status_code == 200 and "content-encoding" not in small.headers
