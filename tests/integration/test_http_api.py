"""The HTTP contract: every status code, every error body, the edge validation. Each test that takes ``client``
runs against the ASGI app in process and, unless marked in_process, through local-api (API Gateway's stage, one
process per Lambda function, DynamoDB Local): the shape that ships."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import Message

from codap_relay.catalog import plugin_tools
from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay.tool_content import MAX_IMAGE_BYTES
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.commands import also_through_local_api
from codap_relay_tooling.testing.plugin_bundle import page_files
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import serve_app
from codap_relay_tooling.testing.sse_client import iter_events

DATASET = {"datasetName": "s", "dataType": "random_numbers", "recordCount": 5}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    also_through_local_api(metafunc, "client", "asgi")


def deployed(client: httpx.AsyncClient) -> bool:
    return client.base_url.host != "relay.test"


def auth(session: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {session['browserToken']}"}


def assert_error(r: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert body["error"] == error and body["code"] == status
    assert body["message"] and body["correlationId"] == r.headers["x-correlation-id"]
    return body


async def test_create_session_contract(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/sessions", json={})
    assert r.status_code == 201
    body = r.json()
    assert set(body) - {"changes", "push"} == {"code", "ttl", "expiresAt", "browserToken"}
    assert body.get("push", "ws://").startswith(("ws://", "wss://"))  # offered where the push channel is on
    # only a long-lived server (every group in one process) takes the plugin's change notes
    assert body.get("changes") in (None, f"/api/sessions/{body['code']}/changes")
    assert len(body["code"]) == 8 and body["ttl"] == 600 and body["expiresAt"].endswith("Z")
    empty = await client.post("/api/sessions", content=b"", headers={"content-type": "application/json"})
    assert empty.status_code == 201


async def test_answers_bearing_tokens_or_results_are_never_cached_and_never_sniffed(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    created = await client.post("/api/sessions", json={})
    code = session["code"]
    queued = await client.post("/request", json={"code": code, "tool": "get_codap_datasets", "args": {}})
    answers = [
        created,
        queued,
        await client.get("/response", params={"code": code, "id": queued.json()["id"]}),
        await client.get(f"/api/sessions/{code}/log", headers=auth(session)),
        await client.get("/metadata", params={"code": code}),
        await client.get(f"/api/sessions/{code}"),
        await client.get("/api/sessions/ZZZZZZZZ"),
    ]
    for r in answers:
        assert r.headers["cache-control"] == "no-store", (r.request.url, r.headers)
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
    page = await client.get("/plugin/")
    assert page.status_code == 200 and page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-cache"  # the plugin's files may be cached (test_plugin_bundle.py)


@pytest.mark.in_process  # deployed, the correlation id is API Gateway's request id (test_lambda_handlers.py)
async def test_every_response_has_a_correlation_id_and_keeps_a_valid_incoming_one(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz", headers={"X-Correlation-Id": "abc-123"})
    assert r.headers["x-correlation-id"] == "abc-123"
    r = await client.get("/healthz", headers={"X-Correlation-Id": "bad id;<script>"})
    assert r.headers["x-correlation-id"] != "bad id;<script>"
    assert (await client.get("/nope")).headers["x-correlation-id"]


async def test_request_queue_and_read_back(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    r = await client.post(
        "/request", json={"code": f" {code.lower()} ", "tool": "create_codap_dataset", "args": DATASET}
    )
    rid = r.json()["id"]  # req-1 from the test's id factory in process, a UUID deployed
    assert r.status_code == 202 and r.json() == {"id": rid, "status": "queued", "seq": 1}
    assert deployed(client) or rid == "req-1"
    r = await client.get("/response", params={"code": code, "id": rid})
    assert r.status_code == 202 and r.json() == {"id": rid, "status": "queued"}
    r = await client.post("/response", json={"code": code, "id": rid, "result": {"ok": 1}}, headers=auth(session))
    assert r.status_code == 202 and r.json() == {"id": rid, "status": "completed"}
    r = await client.get("/response", params={"code": code, "id": rid})
    assert r.status_code == 200
    body = r.json()
    assert (body["id"], body["status"], body["result"]) == (rid, "completed", {"ok": 1})
    assert body["timestamp"].endswith("Z")


async def test_wait_returns_200_when_done_and_202_when_not(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    r = await client.post("/request?wait=0.05", json={"code": code, "id": "w1", "tool": "get_codap_datasets"})
    assert r.status_code == 202 and r.json()["status"] == "queued"
    await client.post("/response", json={"code": code, "id": "w1", "error": {"message": "boom"}}, headers=auth(session))
    r = await client.post("/request?wait=1", json={"code": code, "id": "w1", "tool": "get_codap_datasets"})
    assert r.status_code == 200 and r.json()["status"] == "failed" and r.json()["error"]["message"] == "boom"
    r = await client.get("/response", params={"code": code, "id": "w1", "wait": "2"})
    assert r.status_code == 200
    for bad in ["-1", "26", "soon"]:
        assert_error(
            await client.get("/response", params={"code": code, "id": "w1", "wait": bad}), 400, "invalid_request"
        )


async def test_an_unexpected_argument_is_answered_with_the_ones_the_tool_takes(client: httpx.AsyncClient) -> None:
    opened = await client.post("/api/sessions", json={"tools": list(plugin_tools())})
    code = opened.json()["code"]
    args = {"datasetName": "People", "attribute": "age", "direction": "descending"}
    body = assert_error(
        await client.post("/request", json={"code": code, "tool": "sort_codap_cases", "args": args}),
        400,
        "invalid_arguments",
    )
    assert body["closest"] == "descending" and "did you mean 'descending'" in body["message"]
    assert set(body["available"]) == {"datasetName", "attribute", "descending", "maxCases"}
    assert "It takes: " in body["message"] and "maxCases" in body["message"]
    body = assert_error(
        await client.post("/request", json={"code": code, "tool": "sort_codap_cases", "args": {**args, "zz": 1}}),
        400,
        "invalid_arguments",
    )
    assert "'direction', 'zz' are not arguments" in body["message"] and body["closest"] == "descending"


async def test_validation_errors_name_the_problem(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    body = assert_error(await client.post("/request", json={"code": code, "tool": "nope"}), 400, "unknown_tool")
    assert "get_codap_datasets" in body["available"]
    args = {**DATASET, "dataType": "weird"}
    body = assert_error(
        await client.post("/request", json={"code": code, "tool": "create_codap_dataset", "args": args}),
        400,
        "invalid_arguments",
    )
    assert body["path"] == "args.dataType"
    body = assert_error(await client.post("/request", json={"code": code}), 400, "invalid_request")
    assert body["path"] == "tool"
    body = assert_error(
        await client.post("/request", json={"code": code, "tool": "x", "bogus": 1}), 400, "invalid_request"
    )
    assert body["path"] == "bogus"
    assert_error(await client.post("/request", json={"code": "12345678", "tool": "x"}), 400, "invalid_code")
    assert_error(await client.post("/request", json=[1, 2]), 400, "invalid_request")
    assert_error(await client.get("/metadata"), 400, "invalid_code")
    assert_error(await client.get("/response", params={"code": code}), 400, "invalid_request")


async def test_malformed_bodies(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    body = assert_error(
        await client.post("/request", content=b"{not json", headers={"content-type": "application/json"}),
        400,
        "invalid_request",
    )
    assert "not valid JSON" in body["message"]
    if not deployed(client):  # API Gateway carries a text body as a JSON string: bytes not UTF-8 cannot travel
        body = assert_error(
            await client.post("/request", content=b'{"code": "\xff"}', headers={"content-type": "application/json"}),
            400,
            "invalid_request",
        )
        assert "UTF-8" in body["message"]
    body = assert_error(
        await client.post("/request", content=b"code=x", headers={"content-type": "application/x-www-form-urlencoded"}),
        400,
        "invalid_request",
    )
    assert "Content-Type" in body["message"]
    r = await client.post(
        "/request",
        content=json.dumps({"code": session["code"], "tool": "get_codap_datasets"}).encode(),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert r.status_code == 202


async def test_size_limits_exact_limit_passes_one_byte_more_is_413(clock: FakeClock) -> None:
    limit = 4096
    relay = Relay(make_settings(max_request_bytes=limit, max_response_bytes=limit), MemoryStore(), clock=clock)
    transport = httpx.ASGITransport(app=build_app(relay))
    async with web.AsyncClient(transport=transport, base_url="http://t") as c:
        s = (await c.post("/api/sessions", json={})).json()
        prefix = {"code": s["code"], "id": "big", "tool": "add_codap_cases", "args": {"datasetName": "d", "cases": []}}

        def padded(target: int) -> bytes:
            base = json.dumps({**prefix, "args": {**prefix["args"], "cases": [{"t": ""}]}})
            fill = target - len(base.encode())
            return json.dumps({**prefix, "args": {**prefix["args"], "cases": [{"t": "x" * fill}]}}).encode()

        exact, over = padded(limit), padded(limit + 1)
        assert (len(exact), len(over)) == (limit, limit + 1)
        r = await c.post("/request", content=over, headers={"content-type": "application/json"})
        body = assert_error(r, 413, "payload_too_large")
        assert body["limit"] == limit
        assert relay.store.get_request(s["code"], "big") is None
        r = await c.post("/request", content=exact, headers={"content-type": "application/json"})
        assert r.status_code == 202
        # The same edge on the plugin's answer.
        head = {"code": s["code"], "id": "big", "result": ""}
        fill = limit - len(json.dumps(head).encode())
        answer = json.dumps({**head, "result": "y" * fill}).encode()
        headers = {"content-type": "application/json", "Authorization": f"Bearer {s['browserToken']}"}
        too_big = answer[:-2] + b'y"}'
        assert (len(answer), len(too_big)) == (limit, limit + 1)
        assert_error(await c.post("/response", content=too_big, headers=headers), 413, "payload_too_large")
        assert relay.store.get_response(s["code"], "big") is None
        assert (await c.post("/response", content=answer, headers=headers)).status_code == 202


async def test_auth_statuses(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    await client.post("/request", json={"code": code, "id": "a", "tool": "get_codap_datasets"})
    other = (await client.post("/api/sessions", json={})).json()
    assert_error(await client.post("/response", json={"code": code, "id": "a", "result": 1}), 401, "token_required")
    assert_error(
        await client.post("/response", json={"code": code, "id": "a", "result": 1}, headers=auth(other)),
        403,
        "token_invalid",
    )
    assert_error(await client.get("/stream", params={"code": code}), 401, "token_required")
    assert_error(await client.get("/stream", params={"code": code, "token": "x"}), 403, "token_invalid")
    assert_error(await client.get(f"/api/sessions/{code}/log"), 401, "token_required")
    assert_error(await client.delete(f"/api/sessions/{code}"), 401, "token_required")
    assert_error(await client.delete(f"/api/sessions/{code}", headers=auth(other)), 403, "token_invalid")
    log = await client.get(f"/api/sessions/{code}/log", headers=auth(session))
    assert log.status_code == 200 and [e["id"] for e in log.json()["entries"]] == ["a"]


async def test_not_found_and_conflicts(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    body = assert_error(await client.get("/metadata", params={"code": "ZZZZ2222"}), 404, "session_not_found")
    assert "plugin" in body["message"]
    await client.post("/request", json={"code": code, "id": "dup", "tool": "get_codap_datasets"})
    r = await client.post("/request", json={"code": code, "id": "dup", "tool": "get_codap_datasets"})
    assert r.status_code == 202 and r.json()["seq"] == 1
    duplicate = assert_error(
        await client.post("/request", json={"code": code, "id": "dup", "tool": "get_codap_status"}),
        409,
        "duplicate_request_id",
    )
    assert duplicate["requestId"] == "dup"  # the fields a client sees are the same over HTTP and MCP
    assert_error(
        await client.post("/response", json={"code": code, "id": "nope", "result": 1}, headers=auth(session)),
        404,
        "request_not_found",
    )
    await client.post("/response", json={"code": code, "id": "dup", "result": 1}, headers=auth(session))
    again = await client.post("/response", json={"code": code, "id": "dup", "result": 1}, headers=auth(session))
    assert again.status_code == 202
    assert_error(
        await client.post("/response", json={"code": code, "id": "dup", "result": 2}, headers=auth(session)),
        409,
        "already_answered",
    )
    assert_error(
        await client.post("/response", json={"code": code, "id": "dup"}, headers=auth(session)), 400, "invalid_request"
    )
    assert_error(await client.get("/response", params={"code": code, "id": "nope"}), 404, "request_not_found")
    assert_error(await client.put("/request"), 405, "method_not_allowed")


async def test_session_status_and_delete(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    code = session["code"]
    await client.post("/request", json={"code": code, "id": "p", "tool": "get_codap_datasets"})
    r = await client.get(f"/api/sessions/{code.lower()}")
    assert r.status_code == 200
    status = r.json()
    assert 598 <= status.pop("ttl") <= 600  # the remaining lifetime: exactly 600 on the in-process fake clock
    assert status == {
        "code": code,
        "expiresAt": session["expiresAt"],
        "connected": False,
        "lastSeen": None,
        "pending": 1,
    }
    r = await client.delete(f"/api/sessions/{code}", headers=auth(session))
    assert r.status_code == 200 and r.json() == {"code": code, "status": "closed", "failedRequests": 1}
    body = assert_error(await client.get(f"/api/sessions/{code}"), 404, "session_not_found")
    assert body["reason"] == "closed"
    r = await client.get("/response", params={"code": code, "id": "p"})
    assert r.status_code == 200 and r.json()["error"]["code"] == "session_closed"


async def test_the_plugins_own_calls_at_a_deployed_relay_check_detach_and_keep_alive(
    client: httpx.AsyncClient, session: dict[str, Any], clock: FakeClock
) -> None:
    """What the plugin needs where its stream may be refused (a full stream function) or outlive its tab (AWS):
    a check whether a stream could start, a detach on pagehide, and a status call that keeps the code alive."""
    code, token = session["code"], session["browserToken"]
    check = await client.get("/stream", params={"code": code, "token": token, "mode": "check"})
    assert check.status_code == 204 and check.content == b""
    assert_error(await client.get("/stream", params={"code": code, "mode": "check"}), 401, "token_required")
    bad_tab = await client.get("/stream", params={"code": code, "token": token, "tab": "no good"})
    assert assert_error(bad_tab, 400, "invalid_request")["field"] == "tab"

    detach = f"/api/sessions/{code}/detach"
    assert assert_error(await client.post(detach, params={"token": token}), 400, "invalid_request")["field"] == "tab"
    assert_error(await client.post(detach, params={"tab": "tab-0123456789"}), 401, "token_required")
    wrong = {"tab": "tab-0123456789", "token": "not-the-token"}
    assert_error(await client.post(detach, params=wrong), 403, "token_invalid")
    r = await client.post(detach, params={"tab": "tab-0123456789", "token": token})  # no stream of that tab
    assert r.status_code == 200 and r.json() == {"code": code, "detached": False}

    # The status call slides the expiry only with the browser token (the pairing code alone reads it).
    if deployed(client):
        await asyncio.sleep(1.1)
    else:
        clock.advance(5)
    plain = (await client.get(f"/api/sessions/{code}")).json()
    assert plain["expiresAt"] == session["expiresAt"]
    alive = (await client.get(f"/api/sessions/{code}", headers=auth(session))).json()
    assert alive["expiresAt"] > session["expiresAt"] and alive["connected"] is False
    assert (await client.get(f"/api/sessions/{code}")).json()["expiresAt"] == alive["expiresAt"]


async def test_an_ended_sessions_trace_can_still_be_read_page_by_page(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    code = session["code"]
    for n in range(3):
        await client.post("/request", json={"code": code, "id": f"t{n}", "tool": "get_codap_status", "args": {}})
    text = {"content": [{"type": "text", "text": "CODAP is connected.\nMore."}]}
    await client.post("/response", json={"code": code, "id": "t0", "result": text}, headers=auth(session))
    await client.delete(f"/api/sessions/{code}", headers=auth(session))
    assert_error(await client.get(f"/api/sessions/{code}"), 404, "session_not_found")  # ended for the LLM
    page = await client.get(f"/api/sessions/{code}/log", params={"view": "trace"}, headers=auth(session))
    assert page.status_code == 200, page.text
    body = page.json()
    assert body["next"] is None and [e["id"] for e in body["entries"]] == ["t0", "t1", "t2"]
    assert [(e["args"], e["summary"]) for e in body["entries"]] == [
        ({}, "CODAP is connected."),
        ({}, "The CODAP session was ended before this request ran."),
        ({}, "The CODAP session was ended before this request ran."),
    ]
    later = await client.get(f"/api/sessions/{code}/log", params={"view": "trace", "after": 2}, headers=auth(session))
    assert [e["id"] for e in later.json()["entries"]] == ["t2"]
    activity = await client.get(f"/api/sessions/{code}/log", headers=auth(session))
    assert activity.status_code == 200 and "next" not in activity.json()
    for bad in ({"view": "everything"}, {"view": "trace", "after": "-1"}, {"view": "trace", "after": "²"}):
        r = await client.get(f"/api/sessions/{code}/log", params=bad, headers=auth(session))
        assert assert_error(r, 400, "invalid_request")["field"] in ("view", "after")


async def test_a_picture_in_a_result_is_checked_then_passed_on_byte_for_byte(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    """An image item near the size limit goes through the deployed path (Lambda events, DynamoDB chunks) intact;
    one that is not the picture it claims is refused and nothing is stored."""
    code = session["code"]
    await client.post("/request", json={"code": code, "id": "img", "tool": "get_codap_status", "args": {}})
    picture = b"\x89PNG\r\n\x1a\n" + os.urandom(MAX_IMAGE_BYTES - 8)  # incompressible
    data = base64.b64encode(picture).decode()
    lie = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(b"GIF89a" + bytes(50)).decode()}
    bad = {"content": [{"type": "text", "text": "A graph."}, lie]}
    r = await client.post("/response", json={"code": code, "id": "img", "result": bad}, headers=auth(session))
    assert assert_error(r, 400, "invalid_result")["field"] == "result.content[1].data"
    assert (await client.get("/response", params={"code": code, "id": "img"})).status_code == 202
    good = {"content": [{"type": "text", "text": "A graph."}, {"type": "image", "mimeType": "image/png", "data": data}]}
    # ?code=: the token is checked before the body is read, so the answer may be larger than a request
    r = await client.post(
        "/response", params={"code": code}, json={"code": code, "id": "img", "result": good}, headers=auth(session)
    )
    assert r.status_code == 202, r.text
    back = await client.get("/response", params={"code": code, "id": "img"})
    assert back.status_code == 200 and base64.b64decode(back.json()["result"]["content"][1]["data"]) == picture


@pytest.mark.in_process
async def test_expired_session_is_404_with_reason(
    client: httpx.AsyncClient, session: dict[str, Any], clock: FakeClock
) -> None:
    clock.advance(600)
    body = assert_error(await client.get("/metadata", params={"code": session["code"]}), 404, "session_not_found")
    assert body["reason"] == "expired"


async def test_rate_limit_is_429_with_retry_after(clock: FakeClock) -> None:
    relay = Relay(make_settings(rate_limit_session_per_ip=2), MemoryStore(), clock=clock)
    transport = httpx.ASGITransport(app=build_app(relay), client=("198.51.100.1", 1))
    async with web.AsyncClient(transport=transport, base_url="http://t") as c:
        assert [(await c.post("/api/sessions", json={})).status_code for _ in range(2)] == [201, 201]
        r = await c.post("/api/sessions", json={})
        body = assert_error(r, 429, "rate_limited")
        assert 1 <= int(r.headers["retry-after"]) <= 60 and body["retryAfter"] == int(r.headers["retry-after"])
        assert "scope" not in body  # a rate limit's scope is for the relay's logs


# In process only: the shared local-api stack runs with roomy caps (tests/conftest.py LOCAL_API_ENV), which the
# chaos storm through it needs; the cap's code path is the same relay code in both shapes.
@pytest.mark.in_process
async def test_a_session_full_of_pending_requests_is_429_with_retry_after(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    """MAX_PENDING_REQUESTS_PER_SESSION at its default (50)."""
    code = session["code"]
    call = {"code": code, "tool": "get_codap_datasets", "args": {}}
    statuses = await asyncio.gather(*(client.post("/request", json=call) for _ in range(10)))
    statuses += [await client.post("/request", json=call) for _ in range(40)]
    assert [r.status_code for r in statuses] == [202] * 50
    r = await client.post("/request", json=call)
    body = assert_error(r, 429, "too_many_pending")
    assert body["limit"] == 50 and body["retryAfter"] == int(r.headers["retry-after"]) == 60
    assert "not connected" in body["message"]
    status = await client.get(f"/api/sessions/{code}")
    assert status.status_code == 200 and status.json()["pending"] == 50


async def test_bounded_work_is_429_with_retry_after_or_413(clock: FakeClock) -> None:
    """Status reads per address, pending requests and bytes per session, request bytes per address (issue 24)."""
    settings = make_settings(
        rate_limit_status_per_ip=2,
        max_pending_requests_per_session=2,
        max_pending_bytes_per_session=4096,
        request_bytes_per_ip_per_hour=6000,
    )
    relay = Relay(settings, MemoryStore(), clock=clock)
    transport = httpx.ASGITransport(app=build_app(relay), client=("198.51.100.1", 1))
    async with web.AsyncClient(transport=transport, base_url="http://t") as c:
        code = (await c.post("/api/sessions", json={})).json()["code"]
        assert [(await c.get(f"/api/sessions/{code}")).status_code for _ in range(2)] == [200, 200]
        r = await c.get(f"/api/sessions/{code}")
        body = assert_error(r, 429, "rate_limited")
        assert body["retryAfter"] == int(r.headers["retry-after"]) and "per minute" in body["message"]

        def call(n: int) -> dict[str, Any]:
            return {"code": code, "tool": "create_codap_dataset", **{"args": {**DATASET, "datasetName": "d" * n}}}

        assert [(await c.post("/request", json=call(10))).status_code for _ in range(2)] == [202, 202]
        r = await c.post("/request", json=call(10))
        body = assert_error(r, 429, "too_many_pending")
        assert body["limit"] == 2 and body["retryAfter"] == int(r.headers["retry-after"]) == 60
        assert "MAX_PENDING_REQUESTS_PER_SESSION" in body["message"]

        other = (await c.post("/api/sessions", json={})).json()["code"]
        r = await c.post("/request", json={**call(5000), "code": other})
        body = assert_error(r, 413, "payload_too_large")
        assert body["limit"] == 4096 and "retry-after" not in r.headers
        assert (await c.post("/request", json={**call(2500), "code": other})).status_code == 202
        second = (await c.post("/api/sessions", json={})).json()["code"]
        assert (await c.post("/request", json={**call(2500), "code": second})).status_code == 202
        third = (await c.post("/api/sessions", json={})).json()["code"]
        r = await c.post("/request", json={**call(2500), "code": third})
        body = assert_error(r, 429, "request_bytes_exceeded")
        assert body["limit"] == 6000 and 1 <= int(r.headers["retry-after"]) <= 3600
        assert "REQUEST_BYTES_PER_IP_PER_HOUR" in body["message"]


async def test_trust_proxy_uses_forwarded_for(clock: FakeClock) -> None:
    relay = Relay(make_settings(rate_limit_session_per_ip=1, trust_proxy=True), MemoryStore(), clock=clock)
    transport = httpx.ASGITransport(app=build_app(relay), client=("10.0.0.1", 1))
    async with web.AsyncClient(transport=transport, base_url="http://t") as c:
        for ip in ["192.0.2.1", "192.0.2.2"]:
            assert (
                await c.post("/api/sessions", json={}, headers={"X-Forwarded-For": f"{ip}, 10.0.0.1"})
            ).status_code == 201
        r = await c.post("/api/sessions", json={}, headers={"X-Forwarded-For": "192.0.2.1"})
        assert r.status_code == 429


class DownStore(MemoryStore):
    def get_session(self, code: str) -> Any:
        raise TimeoutError("store timed out")


async def test_store_outage_is_503_with_retry_after(clock: FakeClock) -> None:
    relay = Relay(make_settings(), DownStore(), clock=clock)
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(relay)), base_url="http://t") as c:
        r = await c.get("/metadata", params={"code": "ABCDEFGH"})
        assert_error(r, 503, "store_unavailable")
        assert r.headers["retry-after"] == "1"


async def test_without_the_mcp_extra_the_mcp_paths_say_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the MCP extra were not installed
    app = build_app(Relay(make_settings(), MemoryStore()))
    async with web.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        for path in ("/mcp", "/mcp/ABCD2345"):
            body = assert_error(await c.post(path, json={}), 501, "extra_not_installed")
            assert "pip install 'codap-relay[mcp]'" in body["message"]
        assert (await c.get("/healthz")).status_code == 200  # the rest of the relay is unaffected


def test_an_import_bug_in_an_entry_point_fails_the_build_instead_of_dropping_its_routes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "codap_relay.http.mcp_endpoint", None)  # the module itself cannot be imported
    with pytest.raises(ImportError):
        build_app(Relay(make_settings(), MemoryStore()), ["mcp"])


async def test_cors_only_for_configured_origins(client: httpx.AsyncClient) -> None:
    ok = await client.get("/healthz", headers={"Origin": "https://codap.concord.org"})
    assert ok.headers["access-control-allow-origin"] == "https://codap.concord.org"
    evil = await client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in evil.headers
    pre = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,authorization"}
    r = await client.options("/request", headers={"Origin": "https://codap3.concord.org", **pre})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://codap3.concord.org"
    r = await client.options("/request", headers={"Origin": "https://evil.example", **pre})
    assert r.status_code == 400 and "access-control-allow-origin" not in r.headers


def test_private_network_access_preflights_are_answered_for_allowed_origins() -> None:
    """Browsers that still send Private Network Access preflights (a public page reaching this relay on loopback
    or the LAN: the plugin's frame, or its calls with ?relay=) get the opt-in for allowed origins, on uvicorn."""
    pna = {"Access-Control-Request-Private-Network": "true"}
    with serve_app(build_app(Relay(make_settings(), MemoryStore()))) as url:
        navigation = {"Origin": "https://codap.concord.org", "Access-Control-Request-Method": "GET", **pna}
        frame = web.options(f"{url}/plugin/", headers=navigation)
        assert frame.status_code == 200, frame.text
        assert frame.headers["access-control-allow-private-network"] == "true"
        assert frame.headers["access-control-allow-origin"] == "https://codap.concord.org"
        call = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type", **pna}
        r = web.options(f"{url}/api/sessions", headers={"Origin": "https://codap3.concord.org", **call})
        assert r.status_code == 200 and r.headers["access-control-allow-private-network"] == "true"
        evil = web.options(f"{url}/api/sessions", headers={"Origin": "https://evil.example", **call})
        assert evil.status_code == 400 and "access-control-allow-origin" not in evil.headers


async def test_metadata_is_the_seed_manifest(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    r = await client.get("/metadata", params={"code": session["code"]})
    body = r.json()
    assert body["version"] == "1.0.0"
    assert [t["name"] for t in body["tools"]] == [
        "create_codap_dataset",
        "create_codap_graph",
        "add_codap_cases",
        "get_codap_datasets",
        "get_codap_status",
        "export_codap_data",
    ]
    graph = body["tools"][1]["inputSchema"]
    assert graph["required"] == ["datasetName", "graphType", "xAttribute"]


async def test_openapi_document_is_valid_and_complete(client: httpx.AsyncClient) -> None:
    from openapi_spec_validator import validate

    doc = (await client.get("/openapi.json")).json()
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert {
        "/api/sessions",
        "/stream",
        "/request",
        "/response",
        "/metadata",
        "/api/sessions/{code}/log",
        "/resources",
        "/resources/read",
        # the authorization server of /mcp, discovery and the plugin's connected apps
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/register",
        "/authorize",
        "/oauth/consent",
        "/token",
        "/revoke",
        "/api/sessions/{code}/grants",
        "/api/sessions/{code}/grants/{grant}",
    } <= set(doc["paths"])
    # the plugin's change notes: only where a long-lived server takes them (the session answer names the path)
    offered = "changes" in (await client.post("/api/sessions", json={})).json()
    assert ("/api/sessions/{code}/changes" in doc["paths"]) is offered


async def stream_events(client: httpx.AsyncClient, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """Each event of GET /stream as an EventSource parses it (the fields schemathesis checks against the document):
    event, data, the last id seen, retry. The bare ``retry:`` frame that opens a stream carries no event."""
    async with client.stream("GET", "/stream", params=params) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        async for ev in iter_events(r):
            if ev.data or ev.event != "message":
                yield {
                    "event": ev.event,
                    "data": ev.data,
                    **({"id": ev.id} if ev.id is not None else {}),
                    **({"retry": ev.retry} if ev.retry is not None else {}),
                }


async def test_the_stream_sends_what_the_openapi_document_describes(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    """Every event is one of GET /stream's documented kinds and its data as that kind's contentSchema says: a
    cursor reset, tool requests (numbered), a heartbeat, and the session's end."""
    from jsonschema import Draft202012Validator

    doc = (await client.get("/openapi.json")).json()
    documented = doc["paths"]["/stream"]["get"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    data_of = {k["properties"]["event"]["const"]: k["properties"]["data"]["contentSchema"] for k in documented["oneOf"]}
    code, token = session["code"], session["browserToken"]
    queued = await client.post(
        "/request", json={"code": code, "tool": "get_codap_status", "args": {"includeDatasets": False}}
    )
    assert queued.status_code == 202, queued.text
    plugin = {"code": code, "token": token, "mode": "poll"}
    seen = [ev async for ev in stream_events(client, {**plugin, "lastEventId": "99"})]  # beyond the last seq
    seen += [ev async for ev in stream_events(client, {**plugin, "lastEventId": "1"})]  # nothing new: a heartbeat

    async def until_closed() -> list[dict[str, Any]]:
        return [ev async for ev in stream_events(client, {"code": code, "token": token})]

    reading = asyncio.create_task(until_closed())
    await asyncio.sleep(0.5)  # the stream is open
    assert (await client.delete(f"/api/sessions/{code}", headers=auth(session))).status_code == 200
    seen += await asyncio.wait_for(reading, 30)

    kinds = [ev["event"] for ev in seen]
    assert kinds[:4] == ["cursor-reset", "tool-request", "heartbeat", "tool-request"], kinds
    assert kinds[-1] == "closed" and set(kinds[4:-1]) <= {"heartbeat"}, kinds
    for ev in seen:
        Draft202012Validator(documented).validate(ev)
        Draft202012Validator(data_of[ev["event"]]).validate(json.loads(ev["data"]))
    assert seen[1]["id"] == "1" and json.loads(seen[1]["data"])["args"] == {"includeDatasets": False}


@pytest.mark.in_process
async def test_access_logs_never_carry_tokens_or_full_codes(
    client: httpx.AsyncClient, session: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="codap_relay.access")
    code, token = session["code"], session["browserToken"]
    await client.post("/request", json={"code": code, "id": "x", "tool": "get_codap_datasets"})
    await client.get(f"/api/sessions/{code}/log", params={"token": token})
    await client.get("/response", params={"code": code, "id": "x"})
    text = caplog.text
    assert caplog.records and "/api/sessions/{code}/log" in text
    assert code not in text and token not in text


async def test_index_lists_where_everything_is(client: httpx.AsyncClient) -> None:
    base = str(client.base_url).rstrip("/")  # deployed, with the stage: http://127.0.0.1:PORT/v1
    body = (await client.get("/")).json()
    assert body["plugin"] == f"{base}/plugin/"
    assert body["mcp"] == f"{base}/mcp/{{code}}" and body["llms"] == f"{base}/llms.txt?code={{code}}"
    assert body["openapi"] == f"{base}/openapi.json" and body["version"] == "1.0.0"


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
async def test_stream_ends_when_its_client_disconnects(spec_version: str) -> None:
    """Whatever ASGI version the server speaks (from 2.4 Starlette waits for a failing send, which an idle stream
    makes only at its next heartbeat), the stream's loop ends with the client, and with it the refreshing of the
    session's last sign of life."""
    relay = Relay(make_settings(heartbeat_seconds=30), MemoryStore())
    session, token = await relay.sessions.create()
    gone = asyncio.Event()
    first_request = True
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal first_request
        if first_request:
            first_request = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:  # never fails: a server that buffers, or a peer that vanished
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": spec_version},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/stream",
        "raw_path": b"/stream",
        "root_path": "",
        "query_string": f"code={session.code}&token={token}".encode(),
        "headers": [(b"host", b"relay.test")],
        "client": ("127.0.0.1", 5000),
        "server": ("relay.test", 80),
    }
    task = asyncio.create_task(build_app(relay)(scope, receive, send))
    while not any(m["type"] == "http.response.body" for m in sent):
        await asyncio.sleep(0.01)
    gone.set()
    await asyncio.wait_for(task, 2)  # without the disconnect check, 2.4 runs on until its heartbeat fails


# --- security issue 24: Host checks on every route, the plugin page's CSP, the token before the body ----------


async def test_every_route_refuses_a_host_outside_allowed_hosts() -> None:
    """DNS rebinding (evil.example resolving to 127.0.0.1) reaches no route of a relay with ALLOWED_HOSTS, and
    no answer writes the attacker's host name into a URL; the relay's own names pass on any port."""
    relay = Relay(make_settings(allowed_hosts="localhost,127.0.0.1,[::1]"), MemoryStore())
    transport = httpx.ASGITransport(app=build_app(relay))
    async with web.AsyncClient(transport=transport, base_url="http://localhost:8080") as c:
        evil = {"Host": "evil.example:8080"}
        for method, path in [
            ("GET", "/"),
            ("GET", "/plugin"),
            ("GET", "/plugin/"),
            ("GET", "/llms.txt"),
            ("GET", "/openapi.json"),
            ("GET", "/healthz"),
            ("POST", "/api/sessions"),
            ("GET", "/stream?code=ABCD2345"),
            ("POST", "/request"),
            ("POST", "/mcp"),
        ]:
            r = await c.request(method, path, headers=evil)
            body = assert_error(r, 421, "host_not_allowed")
            assert "ALLOWED_HOSTS" in body["message"] and "evil" not in r.text, (path, r.text)
        for host in ("localhost:8080", "127.0.0.1:9999", "[::1]:8080", "localhost"):
            r = await c.get("/", headers={"Host": host})
            assert r.status_code == 200 and r.json()["plugin"] == f"http://{host}/plugin/", r.text
        redirect = await c.get("/plugin", headers={"Host": "127.0.0.1:8080"})
        assert redirect.status_code in (307, 308) and redirect.headers["location"].startswith("http://127.0.0.1:8080/")


async def test_the_plugin_page_has_a_csp_that_names_codap_as_its_only_framers() -> None:
    relay = Relay(make_settings(), MemoryStore())
    transport = httpx.ASGITransport(app=build_app(relay))
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as c:
        files = page_files((await c.get("/plugin/")).text)
        for path in ("/plugin/", *(f"/plugin/{name}" for name in files)):
            r = await c.get(path)
            assert r.status_code == 200
            policy = {d.split()[0]: d.split()[1:] for d in r.headers["content-security-policy"].split("; ")}
            assert policy["frame-ancestors"] == ["'self'", "https://codap.concord.org", "https://codap3.concord.org"]
            assert policy["script-src"] == ["'self'"] and policy["default-src"] == ["'none'"]
            assert "'unsafe-inline'" not in r.headers["content-security-policy"]
            assert policy["connect-src"][0] == "'self'"
        page = (await c.get("/plugin/")).text
        # nothing inline: no script element without src, no on… handler attribute in any tag
        tags = re.sub(r"<!--.*?-->", "", page, flags=re.S)
        assert "<script>" not in page and not re.search(r"<[^>]*\son[a-z]+\s*=", tags)
        assert "content-security-policy" not in (await c.get("/healthz")).headers  # the API answers JSON only
    settings = make_settings(frame_ancestors="http://localhost:*", public_base_url="https://r.example/v1")
    framed = Relay(settings, MemoryStore())
    async with web.AsyncClient(transport=httpx.ASGITransport(app=build_app(framed)), base_url="http://t") as c:
        csp = (await c.get("/plugin/")).headers["content-security-policy"]
        assert "frame-ancestors 'self' http://localhost:* https://r.example" in csp


def test_frame_ancestors_must_be_origins() -> None:
    from codap_relay.settings import Settings, SettingsError

    for bad in ("https://codap.concord.org; script-src *", "codap.concord.org", "https://x.org/app", "*"):
        with pytest.raises(SettingsError, match="FRAME_ANCESTORS"):
            Settings.from_env({"FRAME_ANCESTORS": bad, "RELAY_STORE": "memory:"})


@pytest.mark.in_process  # the same route in every function; local-api's functions load the installed core
async def test_post_response_checks_the_token_before_reading_the_body(
    client: httpx.AsyncClient, session: dict[str, Any]
) -> None:
    """A caller without the session's token never gets its body read (up to 3 MB): refused before the JSON is
    even looked at, with ?code= (what the plugin sends) wholly, without it at least for a missing token; and a
    body read before the check is no larger than a request's."""
    code = session["code"]
    not_json = b"{" * 1000
    json_headers = {"content-type": "application/json"}
    wrong = {**json_headers, "Authorization": "Bearer not-the-token"}
    r = await client.post("/response", params={"code": code}, content=not_json, headers=wrong)
    assert_error(r, 403, "token_invalid")
    assert_error(await client.post("/response", content=not_json, headers=json_headers), 401, "token_required")
    big = json.dumps({"code": code, "id": "x", "result": "y" * 300_000}).encode()  # over a request's 256 KiB
    too_big = assert_error(await client.post("/response", content=big, headers=wrong), 413, "payload_too_large")
    assert "?code=" in too_big["message"]
    # the plugin's way: ?code= and the token, then any answer up to MAX_RESPONSE_BYTES
    await client.post("/request", json={"code": code, "id": "x", "tool": "get_codap_datasets"})
    ok = await client.post("/response", params={"code": code}, content=big, headers={**json_headers, **auth(session)})
    assert ok.status_code == 202, ok.text[:300]
    other = await client.post(
        "/response", params={"code": "ABCD2345"}, content=big, headers={**json_headers, **auth(session)}
    )
    assert other.status_code in (403, 404), other.text[:300]
