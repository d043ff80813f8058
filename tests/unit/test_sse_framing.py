from __future__ import annotations

from codap_relay.delivery import StreamEvent
from codap_relay.http.sse import encode
from codap_relay_tooling.testing.sse_client import SSEDecoder


def decode(raw: bytes) -> list[tuple[str, str, str | None]]:
    d = SSEDecoder()
    out = []
    for line in raw.decode().split("\n"):
        ev = d.feed(line)
        if ev is not None:
            out.append((ev.event, ev.data, ev.id))
    return out


def test_tool_request_frame_roundtrips_newlines_and_data_prefixes() -> None:
    ev = StreamEvent("tool-request", {"id": "r1", "args": {"text": "a\nb\r\ndata: x\n\nid: 9"}}, id="7")
    raw = encode(ev)
    assert raw.endswith(b"\n\n") and raw.count(b"\n\n") == 1
    [(event, data, eid)] = decode(raw)
    assert event == "tool-request" and eid == "7"
    assert data == '{"id":"r1","args":{"text":"a\\nb\\r\\ndata: x\\n\\nid: 9"}}'


def test_retry_preamble_and_heartbeat() -> None:
    assert encode(StreamEvent(None, retry_ms=1000)) == b"retry: 1000\n\n"
    assert decode(encode(StreamEvent("heartbeat", {}))) == [("heartbeat", "{}", None)]


def test_decoder_joins_multiline_data_and_ignores_comments() -> None:
    d = SSEDecoder()
    for line in [": comment", "event: x", "data: a", "data:b", "id: 3"]:
        assert d.feed(line) is None
    ev = d.feed("")
    assert ev is not None and (ev.event, ev.data, ev.id) == ("x", "a\nb", "3")
