"""Limits of the OAuth path that cannot be minted, and what it costs.

- Budgets: each grant a window of its own, and each plugin (the key in its browser, one tenant) one window over all
  its grants, so a tenant that approves many apps gets no more calls, and no counter is shared by every tenant
  (finding: one plugin approving 50 clients spent the 6,000-a-minute ceiling of all grants).
- Throttles where no grant exists yet: /register and /authorize per address and per client, the questions a code
  may bring to its plugin, the grants an address may make; sizes capped; pending items short-lived and purged.
- Bodies limited before parsing on every route that reads one (finding: one consent POST took ``serve`` from
  95 MB to 1,096 MB).
- An OAuth call costs at most one DynamoDB request more than a call through /mcp/CODE, counted on DynamoDB Local by
  the benchmark's counting proxy.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.relay.grants import PENDING, PENDING_TTL_SECONDS
from codap_relay.settings import Settings
from codap_relay.store.base import Store
from codap_relay.store.dynamodb import DynamoStore
from codap_relay.store.memory import MemoryStore
from codap_relay.store.sqlite import SqliteStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.oauth_flow import CALLBACK, World, authorize_params, pkce
from codap_relay_tooling.testing.relay_settings import clear_of_rate_window, make_settings
from codap_relay_tooling.testing.servers import serve_app


def settings_of(**limits: Any) -> Settings:
    """Settings with the limits this relay has (a test written for the new limits runs against the old too)."""
    result: Settings = make_settings(**{k: v for k, v in limits.items() if k in Settings.model_fields})
    return result


@contextlib.asynccontextmanager
async def running(relay: Relay) -> AsyncIterator[World]:
    with serve_app(build_app(relay)) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            yield World(base, http)


def key(n: int) -> str:
    return f"{n:043d}"


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = SqliteStore(tmp_path / "relay.db") if request.param == "sqlite" else MemoryStore()
    yield s
    s.close()


# --- budgets that cannot be minted ----------------------------------------------------------------------------


def outcome(r: httpx.Response) -> str:
    """A tools/call through OAuth: "ran", or the limit that refused it. Its grant's and its plugin's windows are
    counted with the call's append (one transaction, as a call by code counts its own), so a refusal is the tool
    call's error result, as the per-code limit's is."""
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    if not result.get("isError"):
        return "ran"
    assert result["structuredContent"]["error"] == "rate_limited", result
    text = result["content"][0]["text"]
    return "grant" if "this app" in text else "plugin" if "connected to this CODAP" in text else text


async def test_a_tenant_approving_many_apps_gets_no_more_calls_and_spends_nobody_elses(store: Store) -> None:
    """One plugin approves ten apps (over ten codes of its browser, as ten lessons would) and calls through each:
    together they get the plugin's budget, not ten grants' worth; another tenant's grant is never refused
    meanwhile, whatever the first one does (finding: 50 grants spent the ceiling of all grants)."""
    limits = settings_of(
        rate_limit_request_per_grant=4,
        rate_limit_request_per_plugin=6,
        rate_limit_grants_global=20,  # the old ceiling of all grants, where the relay still has one
        rate_limit_grants_per_ip_per_hour=100,
    )
    async with running(Relay(limits, store)) as world:
        tokens = []
        for i in range(9):
            async with world.plugin(f"tenant {i}", key(1)) as lesson:
                tokens.append(await (await world.app(f"App {i}")).grant(lesson["code"], world.resource))
        async with world.plugin("tenant", key(1)) as tenant, world.plugin("victim", key(2)) as victim:
            tokens.append(await (await world.app("App 9")).grant(tenant["code"], world.resource))
            mine = await (await world.app("Mine")).grant(victim["code"], world.resource)
            clear_of_rate_window()
            outcomes = [outcome(await world.raw_call(t["access_token"])) for t in tokens for _ in range(4)]
            assert outcomes.count("ran") == 6 and outcomes.count("plugin") == 34, outcomes
            # the first grant spent its own four, the second the plugin's last two; the rest are refused
            assert outcomes[:6] == ["ran"] * 6
            for _ in range(4):
                r = await world.raw_call(mine["access_token"])
                assert outcome(r) == "ran", r.text


async def test_a_grant_over_its_own_budget_is_refused_with_retry_after_and_the_plugins_other_app_goes_on() -> None:
    limits = settings_of(rate_limit_request_per_grant=3, rate_limit_request_per_plugin=10)
    async with running(Relay(limits, MemoryStore())) as world:
        async with world.plugin("A", key(3)) as a:
            first = await (await world.app("First")).grant(a["code"], world.resource)
            second = await (await world.app("Second")).grant(a["code"], world.resource)
            clear_of_rate_window()
            assert [outcome(await world.raw_call(first["access_token"])) for _ in range(3)] == ["ran"] * 3
            over = (await world.raw_call(first["access_token"])).json()["result"]  # a tool call: the model reads why
            assert over["isError"] and over["structuredContent"]["error"] == "rate_limited"
            assert 1 <= over["structuredContent"]["retryAfter"] <= 60 and "this app" in over["content"][0]["text"]
            assert outcome(await world.raw_call(second["access_token"])) == "ran"
            # Any other method over the budget is refused by HTTP, before the SDK reads it.
            listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            headers = {
                "Authorization": f"Bearer {first['access_token']}",
                "Accept": "application/json, text/event-stream",
            }
            over_http = await world.http.post("/mcp", json=listed, headers=headers)
            assert over_http.status_code == 429 and 1 <= int(over_http.headers["retry-after"]) <= 60
            assert over_http.json()["error"] == "rate_limited" and "this app" in over_http.json()["message"]


async def test_an_address_makes_a_few_grants_an_hour() -> None:
    """Grants are what budgets hang on: an address that makes grant after grant (each a plugin key it controls)
    is stopped, with the consent page saying when to try again."""
    limits = settings_of(rate_limit_grants_per_ip_per_hour=3)
    async with running(Relay(limits, MemoryStore())) as world:
        app = await world.app()
        for n in range(3):
            async with world.plugin(f"P{n}", key(10 + n)) as p:
                await app.grant(p["code"], world.resource)
        async with world.plugin("P3", key(13)) as p:
            _, challenge = pkce()
            consent_url = await app.authorize(challenge, world.resource)
            r = await app.type_code(consent_url, p["code"])
            assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1 and "hour" in r.text


async def test_a_code_brings_its_plugin_a_few_questions_a_minute() -> None:
    """Typing a victim's code again and again on consent pages does not bury their plugin in questions."""
    async with running(Relay(settings_of(), MemoryStore())) as world:
        app = await world.app()
        session = await world.session(key(20))  # no plugin connected: the questions wait for it
        clear_of_rate_window()
        statuses = []
        for _ in range(5):
            _, challenge = pkce()
            consent_url = await app.authorize(challenge, world.resource)
            statuses.append((await app.type_code(consent_url, session["code"])).status_code)
        assert statuses[:3] == [303] * 3 and statuses[3:] == [429] * 2, statuses


# --- throttles and sizes where no grant exists yet --------------------------------------------------------------


def registration(name: str = "App", **more: Any) -> dict[str, Any]:
    return {"redirect_uris": [CALLBACK], "client_name": name, "token_endpoint_auth_method": "none", **more}


async def test_registration_is_throttled_per_address() -> None:
    async with running(Relay(settings_of(rate_limit_register_per_ip=5), MemoryStore())) as world:
        clear_of_rate_window()
        statuses = [(await world.http.post("/register", json=registration())).status_code for _ in range(7)]
        assert statuses == [201] * 5 + [429] * 2, statuses
        r = await world.http.post("/register", json=registration())
        assert r.json()["error"] == "rate_limited" and int(r.headers["retry-after"]) >= 1


async def test_authorization_is_throttled_per_address_and_per_registered_client() -> None:
    limits = settings_of(rate_limit_authorize_per_ip=6, rate_limit_authorize_per_client=4)
    async with running(Relay(limits, MemoryStore())) as world:
        one, two = await world.app("One"), await world.app("Two")
        clear_of_rate_window()

        async def authorize(client_id: str) -> int:
            return (await world.http.get("/authorize", params=authorize_params(client_id, world.resource))).status_code

        by_one = [await authorize(one.client_id) for _ in range(5)]
        assert by_one == [302] * 4 + [429], by_one  # the client's own limit
        by_two = [await authorize(two.client_id) for _ in range(3)]
        assert by_two == [302, 429, 429], by_two  # the address's: 6 in all, the refused one included


@pytest.mark.parametrize(
    ("change", "error", "said"),
    [
        ({"client_name": "n" * 101}, "invalid_client_metadata", "client_name"),
        (
            {"redirect_uris": [f"http://127.0.0.1:{9000 + i}/cb" for i in range(11)]},
            "invalid_client_metadata",
            "redirect_uris",
        ),
        ({"redirect_uris": ["https://claude.ai/" + "a" * 600]}, "invalid_redirect_uri", "at most 512"),
        ({"client_uri": "https://claude.ai/" + "a" * 600}, "invalid_client_metadata", "client_uri"),
        ({"contacts": [f"a{i}@example.org" for i in range(11)]}, "invalid_client_metadata", "contacts"),
    ],
)
async def test_a_registration_is_small(change: dict[str, Any], error: str, said: str) -> None:
    """Finding: any client of up to 4 MiB was kept 365 days, its name copied into every pending authorization."""
    async with running(Relay(settings_of(), MemoryStore())) as world:
        r = await world.http.post("/register", json={**registration(), **change})
        assert r.status_code == 400 and r.json()["error"] == error, r.text
        assert said in r.json()["error_description"]


async def test_pending_authorizations_keep_little_and_the_store_stays_small(tmp_path: Path) -> None:
    """Finding: 20 GETs of /authorize (6.9 KB sent) grew the SQLite store by 20 MB. Now a registration is small,
    an authorization's state is bounded, and an address gets a few a minute: what the store keeps stays small."""
    store = SqliteStore(tmp_path / "relay.db")
    try:
        async with running(Relay(settings_of(rate_limit_authorize_per_ip=10), store)) as world:
            r = await world.http.post("/register", json=registration("n" * 100))
            client_id = r.json()["client_id"]
            clear_of_rate_window()
            statuses = []
            for _ in range(15):
                params = authorize_params(client_id, world.resource, state="s" * 1000)
                statuses.append((await world.http.get("/authorize", params=params)).status_code)
            kept = store._all("SELECT SUM(LENGTH(data) + LENGTH(key)) AS n FROM auth", ())[0]["n"]
            assert statuses == [302] * 10 + [429] * 5 and kept < 32 * 1024, (statuses, kept)
    finally:
        store.close()


async def test_an_authorizations_state_is_bounded() -> None:
    async with running(Relay(settings_of(), MemoryStore())) as world:
        app = await world.app()
        _, challenge = pkce()
        params = {"response_type": "code", "client_id": app.client_id, "code_challenge": challenge, "state": "s" * 5000}
        r = await world.http.get("/authorize", params=params)
        assert r.status_code == 400 and "location" not in r.headers and "state" in r.text, r.text


async def test_pending_items_live_ten_minutes_and_are_purged_when_they_end(tmp_path: Path) -> None:
    """A pending authorization nobody finished is gone from the store soon after it ends (finding: purged a day
    after), and registrations no grant ever used go within a day, not a year."""
    clock = FakeClock()
    store = SqliteStore(tmp_path / "relay.db")
    try:
        relay = Relay(settings_of(), store, clock=clock)
        await relay.grants.put(PENDING, "p1", {"client_name": "x"}, PENDING_TTL_SECONDS)
        assert PENDING_TTL_SECONDS <= 600
        clock.advance(PENDING_TTL_SECONDS + 1)
        await relay.grants.put(PENDING, "p2", {"client_name": "y"}, PENDING_TTL_SECONDS)
        store.purge(clock.now())
        rows = store._all("SELECT kind, key FROM auth", ())
        assert [(r["kind"], r["key"]) for r in rows] == [(PENDING, "p2")]
    finally:
        store.close()


# --- bodies limited before parsing ------------------------------------------------------------------------------

# Each route that reads a body, and the most it may read of one: the OAuth forms are small, the JSON routes take
# MAX_REQUEST_BYTES (262,144 by default). The server hands the body on in pieces of up to 256 KiB (what asyncio's
# transport reads at once), so a route reads at most its limit and one piece.
PIECE = 256 * 1024
BODY_ROUTES = {
    "/oauth/consent": 4 * 1024,
    "/token": 16 * 1024,
    "/revoke": 16 * 1024,
    "/authorize": 16 * 1024,
    "/register": 16 * 1024,
    "/api/sessions": 262_144,
    "/request": 262_144,
    "/response": 262_144,
}


# /response checks the browser token before it reads a body: with none, 401 and nothing read.
REFUSED_BEFORE_READING = {"/response": (401, 413)}


class BodyMeter:
    """ASGI middleware: how many body bytes the app took from the connection."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.read = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                self.read += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@pytest.mark.parametrize("path", list(BODY_ROUTES))
async def test_every_route_that_reads_a_body_stops_at_its_limit(path: str) -> None:
    """An endless body: the relay answers 413 once past the route's limit and takes no more of it (finding: the
    consent form was parsed whole, 1,000 fields of 1 MiB, and /register and /token read 4 MiB)."""
    meter = BodyMeter(build_app(Relay(settings_of(), MemoryStore())))
    kind = (
        "application/json"
        if BODY_ROUTES[path] > 16 * 1024 or path == "/register"
        else "application/x-www-form-urlencoded"
    )

    async def endless() -> AsyncIterator[bytes]:
        chunk = b"a=" + b"x" * (64 * 1024 - 3) + b"&"
        for _ in range(500):  # 32 MB, far more than any limit
            yield chunk
            await asyncio.sleep(0)

    with serve_app(meter) as base:
        async with web.AsyncClient(base_url=base, timeout=30) as http:
            with contextlib.suppress(httpx.HTTPError):  # the relay may close the connection once it answered
                r = await http.post(path, content=endless(), headers={"Content-Type": kind})
                assert r.status_code in REFUSED_BEFORE_READING.get(path, (413,)), r.text
        assert meter.read <= BODY_ROUTES[path] + PIECE, meter.read
        # a declared length over the limit: 413 before a byte of the body is sent
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {kind}\r\n"
            f"Content-Length: {64 * 1024 * 1024}\r\n\r\n".encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
        assert int(status.split()[1]) in REFUSED_BEFORE_READING.get(path, (413,)), status


# --- what an OAuth call costs, on DynamoDB Local ------------------------------------------------------------------


class RequestLog:
    """Every DynamoDB request one boto3 client sends, by operation, and which of them read a request's answer (the
    reads a call repeats while it waits for the plugin, as many as the wait takes)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bool]] = []

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb.*", self._seen)

    def _seen(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        keys = [params.get("Key") or {}] + [k for t in (params.get("RequestItems") or {}).values() for k in t["Keys"]]
        # The answer is read from the request's own item (RID#<id>; RESP#<id> in the earlier layout). The callers'
        # relay reads that item for nothing else: it knows a request it appended without reading it back.
        waits = any(str(k.get("sk", {}).get("S", "")).startswith(("RID#", "RESP#")) for k in keys)
        self.requests.append((model.name, waits))

    def per_call(self, calls: int) -> tuple[float, dict[str, int]]:
        """Requests per call with the answer read once a call, and the operations' counts (waits apart)."""
        ops = collections.Counter(op for op, waits in self.requests if not waits)
        return (sum(ops.values()) + calls) / calls, dict(ops)


@pytest.mark.dynamodb_local
async def test_an_oauth_call_costs_at_most_one_dynamodb_request_more_than_a_call_by_code() -> None:
    """The same tools/call, five times through /mcp/CODE and five times through /mcp with a token, on DynamoDB
    Local. Two relays share the table as two Lambda functions would: the callers' (counted) and the plugin's (its
    stream and answers, not counted). The reads that wait for the answer are counted as one a call, whatever the
    wait. Finding: 20 requests against 15, and one counter item for everyone."""
    from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, fresh_table

    calls = 5
    log = RequestLog()
    with fresh_table() as (local, table):
        counted = boto3.client("dynamodb", endpoint_url=local.endpoint, **CREDENTIALS)
        log.attach(counted)
        plugin_side = DynamoStore(boto3.client("dynamodb", endpoint_url=local.endpoint, **CREDENTIALS), table)
        with serve_app(build_app(Relay(settings_of(), plugin_side))) as plugin_base:
            async with running(Relay(settings_of(), DynamoStore(counted, table))) as world:
                plugins = World(plugin_base, world.http)
                plugins.person = world.person
                async with plugins.plugin("A", key(30)) as a:
                    tokens = await (await world.app()).grant(a["code"], world.resource)
                    figures: dict[str, tuple[float, dict[str, int]]] = {}
                    for path, auth in (("code", None), ("oauth", tokens["access_token"])):
                        for _ in range(2):  # warm: the manifest read once per process, the first windows made
                            assert (await call(world, a["code"], auth)).status_code == 200
                        log.requests.clear()
                        for _ in range(calls):
                            r = await call(world, a["code"], auth)
                            assert r.status_code == 200 and "error" not in r.json(), r.text
                        figures[path] = log.per_call(calls)
    (code, code_ops), (oauth, oauth_ops) = figures["code"], figures["oauth"]
    print(
        f"\nDynamoDB requests per tools/call, the answer read once: by code {code:g} {code_ops}, "
        f"by OAuth token {oauth:g} {oauth_ops}"
    )
    assert oauth <= code + 1, figures


async def call(world: World, code: str, token: str | None) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_codap_datasets", "arguments": {}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    if token is None:
        return await world.http.post(f"/mcp/{code}", json=body, headers=headers)
    return await world.http.post("/mcp", json=body, headers={**headers, "Authorization": f"Bearer {token}"})
