"""Hostile and broken input against a live server: always a 4xx that says what was wrong, never a 5xx, and the
server keeps serving. Several of these were 500s (or poisoned the stream) before the fixes noted inline."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.relays import make_relay
from codap_relay_tooling.testing.servers import bearer, serve_app

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def live() -> Iterator[str]:
    with serve_app(build_app(make_relay(MemoryStore()))) as base:
        yield base


@pytest.fixture
def client(live: str) -> Iterator[httpx.Client]:
    with web.Client(base_url=live, timeout=10) as c:
        yield c


@pytest.fixture
def session(client: httpx.Client) -> dict[str, Any]:
    body: dict[str, Any] = client.post("/api/sessions", json={}).json()
    return body


def assert_clear_4xx(r: httpx.Response, status: int | None = None) -> dict[str, Any]:
    assert 400 <= r.status_code < 500, f"{r.status_code} {r.text[:300]}"
    if status is not None:
        assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert body["error"] and len(body["message"]) > 20 and body["code"] == r.status_code
    return body


def request_body(code: str, args_json: str, rid: str = "x") -> bytes:
    return f'{{"code": "{code}", "id": "{rid}", "tool": "add_codap_cases", "args": {args_json}}}'.encode()


BROKEN_BODIES: dict[str, tuple[bytes, dict[str, str], str]] = {
    "truncated JSON": (b'{"code": "ABCDEFGH", "tool": ', JSON, "not valid JSON"),
    "trailing garbage": (b'{"code": "ABCDEFGH", "tool": "x"} x', JSON, "not valid JSON"),
    "not UTF-8 (latin-1)": ('{"code": "ABCDEFGH", "tool": "caf\xe9"}'.encode("latin-1"), JSON, "UTF-8"),
    "UTF-16": ('{"code": "ABCDEFGH"}'.encode("utf-16"), JSON, "UTF-8"),
    "form-encoded": (b"code=ABCDEFGH&tool=x", {"content-type": "application/x-www-form-urlencoded"}, "Content-Type"),
    "text/plain": (b'{"code": "ABCDEFGH"}', {"content-type": "text/plain"}, "Content-Type"),
    "multipart": (b"--x\r\n\r\n--x--", {"content-type": "multipart/form-data; boundary=x"}, "Content-Type"),
    "JSON string": (b'"hello"', JSON, "Invalid"),
    "JSON array": (b"[1, 2]", JSON, "Invalid"),
    "null": (b"null", JSON, "Invalid"),
}


@pytest.mark.parametrize("name", list(BROKEN_BODIES))
@pytest.mark.parametrize("path", ["/request", "/response", "/api/sessions"])
def test_broken_bodies_are_4xx_with_a_clear_message(client: httpx.Client, name: str, path: str) -> None:
    content, headers, hint = BROKEN_BODIES[name]
    r = client.post(path, content=content, headers={**headers, **bearer("t")})
    body = assert_clear_4xx(r)
    if r.status_code == 400:
        assert hint.lower() in body["message"].lower() or body["error"] != "invalid_request", body


# Each of these was a 500 (or stored a value that broke every later reader) before the fix in http/bodies.py.
POISON: dict[str, str] = {
    "nested 100000 deep": "[" * 100_000 + "]" * 100_000,
    "5000-digit integer": "1" * 5000,
    "NaN": "NaN",
    "Infinity": "-Infinity",
    "lone surrogate": '"\\ud800"',
    "lone low surrogate": '"a\\udc00b"',
}


@pytest.mark.parametrize("name", list(POISON))
def test_json_that_python_accepts_but_json_does_not_is_refused(
    client: httpx.Client, session: dict[str, Any], name: str
) -> None:
    code = session["code"]
    args = f'{{"datasetName": "d", "cases": [{{"v": {POISON[name]}}}]}}'
    body = assert_clear_4xx(client.post("/request", content=request_body(code, args), headers=JSON), 400)
    assert body["error"] == "invalid_request"
    # Nothing was stored, and the plugin's answer path refuses the same values.
    assert client.get("/response", params={"code": code, "id": "x"}).status_code == 404
    answer = f'{{"code": "{code}", "id": "x", "result": {POISON[name]}}}'.encode()
    assert_clear_4xx(client.post("/response", content=answer, headers={**JSON, **bearer(session["browserToken"])}))


def test_valid_surrogate_pairs_and_moderate_nesting_still_pass_end_to_end(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    code, auth = session["code"], bearer(session["browserToken"])
    deep = "[" * 500 + "]" * 500
    args = f'{{"datasetName": "d", "cases": [{{"emoji": "\\ud83d\\ude00", "deep": {deep}, "sep": "a\\u2028b"}}]}}'
    assert client.post("/request", content=request_body(code, args), headers=JSON).status_code == 202
    stream = client.get("/stream", params={"code": code, "mode": "poll"}, headers=auth)
    assert stream.status_code == 200
    lines = re.split(r"\r\n|\r|\n", stream.text)  # as EventSource splits; str.splitlines() would cut at U+2028
    [data] = [line[6:] for line in lines if line.startswith('data: {"id"')]
    assert json.loads(data)["args"]["cases"][0]["emoji"] == "\U0001f600"
    result = f'{{"code": "{code}", "id": "x", "result": {{"deep": {deep}, "t": "\\ud83d\\ude00"}}}}'.encode()
    assert client.post("/response", content=result, headers={**JSON, **auth}).status_code == 202
    r = client.get("/response", params={"code": code, "id": "x"})
    assert r.status_code == 200 and r.json()["result"]["t"] == "\U0001f600"
    assert client.get(f"/api/sessions/{code}/log", params={"full": "1"}, headers=auth).status_code == 200


@pytest.mark.parametrize("cursor", ["\u00b2", "\u0663", "-1", "1.5", "1e3", "9" * 19, "0x10", " 7 ", "\u2167"])
def test_odd_cursors_are_400_or_accepted_never_500(client: httpx.Client, session: dict[str, Any], cursor: str) -> None:
    # '\u00b2' (superscript two) passes str.isdigit() but int() refuses it: that was a 500 before the fix.
    params = {"code": session["code"], "mode": "poll", "lastEventId": cursor}
    r = client.get("/stream", params=params, headers=bearer(session["browserToken"]))
    if cursor.strip().isascii() and cursor.strip().isdigit() and len(cursor.strip()) <= 18:
        assert r.status_code == 200
    else:
        assert "Last-Event-ID" in assert_clear_4xx(r, 400)["message"]


@pytest.mark.parametrize("rid", ["abc\n", "abc\r\n", "a b", "a" * 65, "é", "a/b", "../x"])
def test_request_ids_outside_the_documented_set_are_refused(
    client: httpx.Client, session: dict[str, Any], rid: str
) -> None:
    # "abc\n" passed the old `$`-anchored pattern and was stored as a distinct id.
    r = client.post("/request", json={"code": session["code"], "id": rid, "tool": "get_codap_datasets"})
    assert assert_clear_4xx(r, 400).get("field") == "id"


def test_huge_headers_and_query_strings_are_4xx_and_the_server_survives(
    client: httpx.Client, session: dict[str, Any]
) -> None:
    code = session["code"]
    # Over the server's header limit: refused by the HTTP layer (uvicorn answers before the app).
    r = client.get("/healthz", headers={"X-Filler": "a" * 200_000})
    assert 400 <= r.status_code < 500
    # Large but admissible headers reach the app and get the app's own clear errors.
    assert_clear_4xx(client.get("/stream", params={"code": code}, headers=bearer("t" * 8000)), 403)
    r = client.get("/healthz", headers={"X-Correlation-Id": "c" * 8000})
    assert r.status_code == 200 and len(r.headers["x-correlation-id"]) <= 100
    assert_clear_4xx(
        client.get(
            "/stream", params={"code": code}, headers={**bearer(session["browserToken"]), "Last-Event-ID": "9" * 5000}
        ),
        400,
    )
    assert_clear_4xx(client.get("/metadata", params={"code": "A" * 6000}), 400)
    assert_clear_4xx(client.get("/response", params={"code": code, "id": "i" * 6000}), 400)
    assert client.get("/metadata", params={"code": code}).status_code == 200


def test_wrong_methods_and_unknown_paths_are_clear_4xx(client: httpx.Client) -> None:
    assert_clear_4xx(client.put("/request", json={}), 405)
    assert_clear_4xx(client.patch("/api/sessions", json={}), 405)
    assert_clear_4xx(client.get("/nope/../../etc/passwd"), 404)
    assert_clear_4xx(client.get("/api/sessions/%00%ff"), None)
