"""Property-based tests (hypothesis) for the pure parts that face untrusted input.

Each property states what must hold for *every* input: codes normalise to one canonical form or fail with
InvalidCode; SSE frames survive any payload as a browser's EventSource would parse them; manifest and argument
validation either accept or raise the domain error, never crash; request ids are exactly the documented set.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from codap_relay.codes import ALPHABET, CODE_RE, normalise_code, redact_code
from codap_relay.delivery import StreamEvent
from codap_relay.errors import BadInput, InvalidArguments, InvalidCode, InvalidManifest, UnknownTool
from codap_relay.http.sse import encode
from codap_relay.manifest import DEFAULT_TOOLS, check_manifest, find_tool, validate_args
from codap_relay.relay.queue import REQUEST_ID_RE
from codap_relay_tooling.testing.sse_client import SSEDecoder, iter_events

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"]))
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# Characters that break naive line handling: every Unicode line separator, CR/LF, NUL, and SSE field names.
nasty_text = st.lists(
    st.sampled_from(["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\0"])
    | st.sampled_from(["data:", "id:", "event:", "retry:", ":", " "])
    | st.characters(exclude_categories=["Cs"]),  # lone surrogates are refused at the edge (test_bad_input)
    max_size=12,
).map("".join)


# --- pairing codes ------------------------------------------------------------------------------------------


@FAST
@given(st.text(max_size=30) | st.from_regex(r"\s*[a-zA-Z2-7]{4}[- ]?[a-zA-Z2-7]{4}\s*", fullmatch=True))
def test_code_normalisation_is_canonical_or_invalid(raw: str) -> None:
    try:
        code = normalise_code(raw)
    except InvalidCode as exc:
        assert exc.message and "CODAP plugin" in exc.message
        return
    assert CODE_RE.fullmatch(code) and set(code) <= set(ALPHABET)
    # Only separators (whitespace, the hyphen of ABCD-EFGH) are dropped and case is folded; nothing else.
    assert code == re.sub(r"[\s-]", "", raw).upper()
    assert normalise_code(code) == code and normalise_code(f"  {code[:4].lower()}-{code[4:]} ") == code
    hint = redact_code(code, b"k" * 32)
    assert code not in hint and hint.startswith(code[:2])


@FAST
@given(st.from_regex(r"[A-Z2-7]{8}", fullmatch=True), st.sampled_from(["\n", "\r\n", "x", "\x00", "A", "-", "2"]))
def test_a_code_with_anything_appended_is_not_the_code(code: str, tail: str) -> None:
    try:
        got = normalise_code(code + tail)
    except InvalidCode:
        return
    assert (tail.isspace() or tail == "-") and got == code  # only separators may be dropped


# --- request ids ---------------------------------------------------------------------------------------------


@FAST
@given(st.text(max_size=70) | st.from_regex(r"[A-Za-z0-9_-]{1,66}\n?", fullmatch=True))
@example("abc\n")
def test_request_ids_are_exactly_the_documented_set(rid: str) -> None:
    documented = re.fullmatch(r"[A-Za-z0-9_-]{1,64}", rid, flags=re.ASCII) is not None
    assert bool(REQUEST_ID_RE.match(rid)) == documented


# --- SSE framing ---------------------------------------------------------------------------------------------


def browser_lines(raw: bytes) -> list[str]:
    """Split as the WHATWG EventSource parser does: CRLF, CR or LF, and nothing else."""
    return re.split(r"\r\n|\r|\n", raw.decode("utf-8"))


def parse_like_a_browser(raw: bytes) -> list[tuple[str, str | None, str]]:
    decoder = SSEDecoder()
    out = []
    for line in browser_lines(raw):
        event = decoder.feed(line)
        if event is not None:
            out.append((event.event, event.id, event.data))
    return out


@FAST
@given(
    st.dictionaries(nasty_text, json_values | nasty_text, max_size=5),
    st.integers(min_value=1, max_value=10**12),
)
def test_sse_frame_roundtrips_any_payload_as_a_browser_parses_it(args: dict[str, Any], seq: int) -> None:
    data = {"id": "r", "tool": "t", "args": args}
    frame = encode(StreamEvent("tool-request", data, id=str(seq)))
    [(event, eid, payload)] = parse_like_a_browser(frame)
    assert (event, eid) == ("tool-request", str(seq))
    assert json.loads(payload) == data


@FAST
@given(
    st.lists(st.dictionaries(nasty_text, nasty_text, max_size=3), min_size=1, max_size=4),
    st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=30),
)
def test_python_sse_client_reads_any_payload_in_any_chunking(payloads: list[dict[str, str]], cuts: list[int]) -> None:
    """The fake plugin, the tests and the benchmark read the stream through codap_relay_tooling.testing.sse_client;
    arbitrary TCP chunking and every Unicode line separator inside payloads must not change what they see."""
    body = b"".join(encode(StreamEvent("tool-request", p, id=str(i + 1))) for i, p in enumerate(payloads))
    chunks, pos = [], 0
    for n in cuts:
        chunks.append(body[pos : pos + n])
        pos += n
    chunks.append(body[pos:])

    async def read() -> list[Any]:
        async def stream() -> Any:
            for c in chunks:
                yield c

        response = httpx.Response(200, content=stream())
        return [e.json() async for e in iter_events(response)]

    assert asyncio.run(read()) == payloads


# --- manifests and arguments -------------------------------------------------------------------------------------


schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "array", "string", 3])},
    optional={
        "properties": st.dictionaries(
            st.text(max_size=5),
            st.fixed_dictionaries({"type": st.sampled_from(["string", "number", "nope"])}),
            max_size=3,
        ),
        "required": st.lists(st.text(max_size=5), max_size=3) | st.integers(),
        "additionalProperties": st.booleans() | st.integers(),
    },
)
tools = st.fixed_dictionaries(
    {
        "name": st.text(max_size=70) | st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
        "inputSchema": schemas | json_values,
    },
    optional={"description": st.text(max_size=10) | st.integers()},
)


@FAST
@given(st.lists(tools, max_size=4) | json_values)
def test_manifest_check_accepts_or_says_what_to_fix(manifest: Any) -> None:
    try:
        checked = check_manifest(manifest)
    except InvalidManifest as exc:
        assert exc.message
        return
    assert checked is manifest
    for tool in checked:
        assert re.fullmatch(r"[A-Za-z0-9_]{1,64}", tool["name"], flags=re.ASCII)
        assert tool["inputSchema"]["type"] == "object"
        try:  # an accepted schema must be usable: validation either passes or names the failing path
            validate_args(tool, {})
        except InvalidArguments as exc:
            assert exc.path.startswith("args")


@FAST
@given(st.sampled_from([t["name"] for t in DEFAULT_TOOLS] + ["nope"]), json_values)
def test_argument_validation_accepts_or_names_the_path(name: str, args: Any) -> None:
    try:
        tool = find_tool(DEFAULT_TOOLS, name)
        validate_args(tool, args)
    except UnknownTool as exc:
        assert name == "nope" and exc.available
        return
    except InvalidArguments as exc:
        assert exc.path.startswith("args") and exc.tool == name and "inputSchema" in exc.message
        return
    assert isinstance(args, dict)
    from jsonschema import Draft202012Validator

    assert Draft202012Validator(tool["inputSchema"]).is_valid(args)


@pytest.mark.parametrize("bad", ["abc\n", "a" * 65, "", "ab c", "ä", "a/b", "1\r"])
def test_bad_request_ids_are_rejected_by_the_relay(bad: str) -> None:
    assert not REQUEST_ID_RE.match(bad)
    assert issubclass(InvalidCode, BadInput)
