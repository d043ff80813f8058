"""schemathesis against /openapi.json on a live local server: for every documented operation, generated valid
and invalid inputs never produce a 5xx, and every response matches the documented status codes and schemas.

Each case's setting is its own: a live-session case gets a session opened for it alone (so one that ends its
session, DELETE /api/sessions/{code}, leaves every other case a live one), and an anonymous case never names a
live session's code (the codes are random, as deployed, and a case that names one anyway is rejected).

(The schemathesis pytest plugin's lazy ``from_fixture`` does not run under this pytest version, so each
operation is driven through hypothesis directly: ``operation.as_strategy()`` and ``case.call_and_validate``.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from codap_relay.codes import new_code
from codap_relay.http.app import build_app
from codap_relay.http.openapi import document
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.relays import make_relay
from codap_relay_tooling.testing.servers import serve_app

# What the issue asks: no 5xx, and every response as documented (status, content type, headers, body schema).
# Not "positive data acceptance": the document is deliberately looser than the server in places (a code
# pattern that also admits spaces and lower case, then normalised), and a 400 there is documented.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
OPERATIONS = [(method.upper(), path) for path, item in document()["paths"].items() for method in item]
# The relay waits at most this long for CODAP (?wait, a resource read), well inside the client's timeout: a case
# that waits is answered, never cut off.
WAIT_SECONDS = 1.0
CLIENT_TIMEOUT = 10.0
PLACEHOLDER = "PLACE2ER"  # stands for the case's own session until the case is sent


@pytest.fixture(scope="module")
def live_url() -> Iterator[str]:
    relay = make_relay(
        MemoryStore(),
        None,
        codes=new_code,
        heartbeat_seconds=0.05,  # a stream that opens (poll mode) ends at its first heartbeat
        max_wait_seconds=WAIT_SECONDS,
        mcp_tool_timeout_seconds=WAIT_SECONDS,
    )
    with serve_app(build_app(relay)) as base:
        yield base


@pytest.fixture(scope="module")
def api(live_url: str) -> Any:
    return schemathesis.openapi.from_url(f"{live_url}/openapi.json")


class Sessions:
    """The sessions the cases open, one each: a live-session case's own, and every code an anonymous case must
    not name."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http  # one connection for them all: a session costs a round trip, not a handshake
        self.codes: set[str] = set()

    def open(self) -> dict[str, Any]:
        r = self.http.post("/api/sessions", json={})
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        self.codes.add(body["code"])
        return body

    def names_one(self, case: Any) -> bool:
        given = [*(case.path_parameters or {}).values(), *(case.query or {}).values()]
        auth = (case.headers or {}).get("Authorization") or (case.headers or {}).get("authorization")
        if isinstance(auth, str):
            given.append(auth.removeprefix("Bearer ").removeprefix("bearer "))
        if isinstance(case.body, dict):
            given.append(case.body.get("code"))
        # As the relay reads a code: URL-decoded, spaces and dashes dropped, upper-cased.
        return any(isinstance(v, str) and re.sub(r"[\s-]", "", unquote(v)).upper() in self.codes for v in given)


@pytest.fixture(scope="module")
def sessions(live_url: str) -> Iterator[Sessions]:
    with web.Client(base_url=live_url, timeout=CLIENT_TIMEOUT) as http:
        yield Sessions(http)


def uses_code(path: str, method: str) -> tuple[bool, bool]:
    """(the code is in the path, the code is a query parameter) of this operation."""
    params = {p["name"]: p["in"] for p in document()["paths"][path][method.lower()].get("parameters", [])}
    return params.get("code") == "path", params.get("code") == "query"


@pytest.mark.parametrize("credentials", ["anonymous", "live-session"])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_conforms_and_never_fails_server_side(
    api: Any,
    live_url: str,
    sessions: Sessions,
    method: str,
    path: str,
    mode: GenerationMode,
    credentials: str,
) -> None:
    operation = api[path][method]
    in_path, in_query = uses_code(path, method)
    live = credentials == "live-session"
    overrides: dict[str, Any] = {}
    # Reach past the code check: a real code (and its token) lets the fuzzer exercise tools, args, answers.
    if live and in_path:
        overrides["path_parameters"] = {"code": PLACEHOLDER}
    query: dict[str, Any] = {"code": PLACEHOLDER} if live and in_query else {}
    if path == "/stream":
        query["mode"] = "poll"  # so a stream that does open ends after its first heartbeat
    if query:
        overrides["query"] = query
    if live:
        overrides["headers"] = {"Authorization": f"Bearer {PLACEHOLDER}"}

    @given(case=operation.as_strategy(mode, **overrides))
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: Any) -> None:
        if live:
            own = sessions.open()
            if in_path:
                case.path_parameters = {**case.path_parameters, "code": own["code"]}
            if in_query:
                case.query = {**case.query, "code": own["code"]}
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {own['browserToken']}"}
        else:
            assume(not sessions.names_one(case))
        case.call_and_validate(base_url=live_url, timeout=CLIENT_TIMEOUT, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        # Every input of this operation is pinned (or unconstrained): there is no invalid variant to send.
        assert mode is GenerationMode.NEGATIVE
        pytest.skip("no schema-invalid input exists for this operation with these overrides")
