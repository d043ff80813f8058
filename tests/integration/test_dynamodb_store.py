"""What only the DynamoDB store has to get right: payloads past the item size, throttling without half-written
state, the TTL attribute, the table from template.yaml, the store URL, and the HTTP flow on DynamoDB Local."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from codap_relay.errors import RequestNotFound, StoreUnavailable
from codap_relay.http.app import build_app
from codap_relay.records import NewRequest, ResponseRecord, SessionRecord, fingerprint
from codap_relay.relay import Relay
from codap_relay.store import StoreUrlError, open_store
from codap_relay.store.base import PURGE_GRACE_SECONDS, PendingTotals
from codap_relay.store.dynamodb import INLINE_LIMIT, DynamoStore
from codap_relay_tooling.testing import CHECKOUT, web
from codap_relay_tooling.testing.commands import serve_process
from codap_relay_tooling.testing.dynamodb_shared import CREDENTIALS, env_for, fresh_table, new_table, shared, store_url
from codap_relay_tooling.testing.fake_plugin import FakePlugin
from codap_relay_tooling.testing.relay_settings import make_settings
from codap_relay_tooling.testing.servers import bearer
from codap_relay_tooling.testing.store_backends import SerializedClient

T0 = 1_800_000_000.0
CODE = "ABCD2345"
LIMIT = 4 * 1024 * 1024


@pytest.fixture
def moto_client() -> Iterator[Any]:
    with mock_aws():
        yield SerializedClient(boto3.client("dynamodb", **CREDENTIALS))


@pytest.fixture
def store(moto_client: Any) -> DynamoStore:
    s = DynamoStore(moto_client, new_table(moto_client))
    s.create_session(SessionRecord(CODE, "h" * 64, T0, T0 + 600))
    return s


def items(store: DynamoStore) -> list[dict[str, Any]]:
    pages = store._client.get_paginator("scan").paginate(TableName=store.table)
    return [item for page in pages for item in page["Items"]]


def incompressible(n: int) -> str:
    """Text that zlib cannot shrink much (base64 of random bytes), so chunking is really exercised."""
    rng = random.Random(7)
    return base64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode()[:n]


def new(rid: str, args: dict[str, Any] | None = None) -> NewRequest:
    args = args or {}
    return NewRequest(rid, "get_codap_datasets", args, fingerprint(args), T0, T0 + 3600)


class Flaky:
    """Wraps a client; the named operations fail with ``code`` until ``heal()``."""

    def __init__(self, client: Any, ops: set[str], code: str = "ProvisionedThroughputExceededException") -> None:
        self._client, self.ops, self.code = client, ops, code
        self.exceptions = client.exceptions

    def heal(self) -> None:
        self.ops = set()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if name not in self.ops:
            return target

        def fail(**kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": self.code, "Message": "injected"}}, name)

        return fail


# --- polling: what an idle stream's poll costs, and what a lagging read may not change -----------------------


class Lagging:
    """Wraps a client: eventually consistent GetItems answer from a snapshot taken by ``freeze()`` (a replica that
    has not seen the writes since), strongly consistent ones from the table. Counts GetItems by consistency."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.exceptions = client.exceptions
        self.snapshot: dict[str, Any] | None = None
        self.reads = {"consistent": 0, "eventual": 0}

    def freeze(self, store: DynamoStore) -> None:
        self.snapshot = {item["sk"]["S"]: item for item in items(store)}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if name != "get_item":
            return target

        def get_item(**kwargs: Any) -> Any:
            eventual = not kwargs.get("ConsistentRead")
            self.reads["eventual" if eventual else "consistent"] += 1
            if eventual and self.snapshot is not None:
                found = self.snapshot.get(kwargs["Key"]["sk"]["S"])
                return {"Item": found} if found else {}
            return target(**kwargs)

        return get_item


def test_an_idle_poll_is_one_eventually_consistent_read(store: DynamoStore) -> None:
    store.update_session(CODE, consumer="tab-1")
    store.add_request(CODE, new("a"))
    assert [r.id for r in store.deliver(CODE, "tab-1", 0, T0)[1]] == ["a"]
    lagging = Lagging(store._client)
    store._client = lagging
    for _ in range(3):
        current, out = store.deliver(CODE, "tab-1", 1, T0, fresh=False)
        assert current is not None and current.last_seq == 1 and out == []
    assert lagging.reads == {"consistent": 0, "eventual": 3}
    current, out = store.deliver(CODE, "tab-1", 1, T0)  # a fresh poll (the stream's, every half second at most)
    assert current is not None and out == [] and lagging.reads == {"consistent": 1, "eventual": 3}


def test_a_lagging_read_never_delivers_to_a_stream_that_was_taken_over(store: DynamoStore) -> None:
    store.update_session(CODE, consumer="tab-1")
    store.add_request(CODE, new("a"))
    lagging = Lagging(store._client)
    lagging.freeze(store)  # this replica still has tab-1 as the consumer
    store._client = lagging
    store.update_session(CODE, consumer="tab-2")  # another tab took over
    current, out = store.deliver(CODE, "tab-1", 0, T0, fresh=False)
    assert current is not None and current.consumer == "tab-2" and out == []
    a = store.get_request(CODE, "a")
    assert a is not None and a.status == "queued"
    assert [r.id for r in store.deliver(CODE, "tab-2", 0, T0)[1]] == ["a"]


# --- payload size -----------------------------------------------------------------------------------------


def test_incompressible_response_is_chunked_and_reads_back(store: DynamoStore) -> None:
    store.add_request(CODE, new("big"))
    text = incompressible(LIMIT - 200)
    body = {"result": {"text": text}}
    done = store.complete_request(ResponseRecord(CODE, "big", "completed", body, fingerprint(body), T0 + 1, T0 + 3600))
    assert done.fresh
    blobs = [i for i in items(store) if i["sk"]["S"].startswith("BLOB#")]
    assert len(blobs) >= 8  # ~3 MB compressed: several chunk items, each under DynamoDB's 400 KB
    got = store.get_response(CODE, "big")
    assert got is not None and got.body == body


async def test_http_response_at_the_limit_is_stored_and_one_byte_over_is_refused(store: DynamoStore) -> None:
    relay = Relay(make_settings(max_response_bytes=LIMIT, require_browser_token=False), store)
    transport = httpx.ASGITransport(app=build_app(relay), client=("203.0.113.7", 5555))
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as client:
        created = (await client.post("/api/sessions", json={})).json()
        code = created["code"]
        r = await client.post("/request", json={"code": code, "tool": "get_codap_datasets", "args": {}, "id": "a"})
        assert r.status_code == 202
        envelope = json.dumps({"code": code, "id": "a", "result": {"text": ""}}, separators=(",", ":"))
        text = incompressible(LIMIT - len(envelope.encode()))
        payload = json.dumps({"code": code, "id": "a", "result": {"text": text}}, separators=(",", ":")).encode()
        assert len(payload) == LIMIT
        headers = {**bearer(created["browserToken"]), "Content-Type": "application/json"}
        over = await client.post("/response", params={"code": code}, content=payload + b" ", headers=headers)
        assert over.status_code == 413 and over.json()["error"] == "payload_too_large"
        exact = await client.post("/response", params={"code": code}, content=payload, headers=headers)
        assert exact.status_code == 202, exact.text
        read = await client.get("/response", params={"code": code, "id": "a"})
        assert read.status_code == 200 and read.json()["result"]["text"] == text


def test_large_request_args_are_chunked_too(store: DynamoStore) -> None:
    args = {"values": incompressible(INLINE_LIMIT * 2)}
    _, created = store.add_request(CODE, new("wide", args))
    assert created
    got = store.get_request(CODE, "wide")
    assert got is not None and got.args == args
    assert [r.args for r in store.pending_requests(CODE, 0, T0)] == [args]


# --- failures ---------------------------------------------------------------------------------------------


def test_throttled_append_stores_nothing_then_recovers_gapless(store: DynamoStore) -> None:
    real = store._client
    flaky = Flaky(real, {"transact_write_items"})
    store._client = flaky
    with pytest.raises(StoreUnavailable) as exc:
        store.add_request(CODE, new("a", {"values": incompressible(INLINE_LIMIT * 2)}))
    assert exc.value.retry_after >= 1
    store._client = real
    assert store.list_requests(CODE) == []
    assert not [i for i in items(store) if i["sk"]["S"].startswith(("BLOB#", "RID#", "REQ#"))]  # chunks removed
    session = store.get_session(CODE)
    assert session is not None and session.last_seq == 0
    store._client = flaky
    flaky.heal()
    record, created = store.add_request(CODE, new("a"))
    assert created and record.seq == 1


def test_throttled_answer_leaves_request_pending_and_retry_wins(store: DynamoStore) -> None:
    store.add_request(CODE, new("a"))
    real = store._client
    body = {"result": {"text": incompressible(INLINE_LIMIT * 2)}}
    response = ResponseRecord(CODE, "a", "completed", body, fingerprint(body), T0 + 1, T0 + 3600)
    store._client = Flaky(real, {"update_item"}, code="ThrottlingException")  # an answer is one conditional write
    with pytest.raises(StoreUnavailable):
        store.complete_request(response)
    assert not [i for i in items(store) if i["sk"]["S"].startswith("BLOB#")]  # its chunks removed
    store._client = real
    assert store.get_response(CODE, "a") is None
    assert [r.id for r in store.pending_requests(CODE, 0, T0)] == ["a"]
    done = store.complete_request(response)
    assert done.fresh and store.get_response(CODE, "a") == done.response


def test_throttled_transaction_reason_is_unavailable_not_a_conflict(store: DynamoStore) -> None:
    class CancelledByThrottle(Flaky):
        def __getattr__(self, name: str) -> Any:
            if name != "transact_write_items":
                return getattr(self._client, name)

            def fail(**kwargs: Any) -> Any:
                raise ClientError(
                    {
                        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                        "CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}, {"Code": "None"}],
                    },
                    name,
                )

            return fail

    real = store._client
    store._client = CancelledByThrottle(real, set())
    with pytest.raises(StoreUnavailable):
        store.add_request(CODE, new("a"))


def test_missing_table_says_what_to_do(moto_client: Any) -> None:
    store = DynamoStore(moto_client, "no-such-table")
    with pytest.raises(StoreUnavailable) as exc:
        store.get_session(CODE)
    assert "create-table" in exc.value.message


def test_unreachable_endpoint_is_unavailable() -> None:
    from codap_relay_tooling.testing.servers import free_port

    store = open_store(f"dynamodb://relay?endpoint_url=http://127.0.0.1:{free_port()}&region=us-east-1")
    assert isinstance(store, DynamoStore)
    with pytest.raises(StoreUnavailable):
        store.get_session(CODE)


# --- layout, TTL and configuration ------------------------------------------------------------------------


def test_every_item_carries_the_ttl_attribute_in_epoch_seconds(store: DynamoStore) -> None:
    store.add_request(CODE, new("a"))
    body = {"result": {"text": incompressible(INLINE_LIMIT * 2)}}
    store.complete_request(ResponseRecord(CODE, "a", "completed", body, fingerprint(body), T0 + 1, T0 + 7200))
    store.update_session(CODE, expires_at=T0 + 900)
    store.incr_counter("rl:x", T0 + 60, T0)
    for item in items(store):
        purge = item["purge_at"]["N"]
        assert purge.isdigit(), item["sk"]
        if item["sk"]["S"] == "META":
            assert int(purge) == T0 + 900 + PURGE_GRACE_SECONDS
        elif item["sk"]["S"].startswith(("RESP#", "BLOB#")):
            assert int(purge) == T0 + 7200 + PURGE_GRACE_SECONDS


def test_code_stays_taken_while_any_item_of_it_remains(store: DynamoStore) -> None:
    from codap_relay.errors import CodeCollision

    store.add_request(CODE, new("a"))
    # TTL removed the session item first (deletion order is not guaranteed); its request is still there.
    store._client.delete_item(TableName=store.table, Key={"pk": {"S": f"SESSION#{CODE}"}, "sk": {"S": "META"}})
    with pytest.raises(CodeCollision):
        store.create_session(SessionRecord(CODE, "h" * 64, T0, T0 + 600))


def test_table_from_template_has_keys_and_ttl(moto_client: Any) -> None:
    name = new_table(moto_client)
    table = moto_client.describe_table(TableName=name)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    ttl = moto_client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "purge_at")


@pytest.mark.parametrize(
    "url",
    ["dynamodb://", "dynamodb://ab", "dynamodb://t?colour=blue"],
)
def test_bad_store_urls_explain_themselves(url: str) -> None:
    with pytest.raises(StoreUrlError):
        open_store(url)


def test_template_passes_cfn_lint() -> None:
    from pathlib import Path

    cfn_lint = Path(sys.executable).parent / "cfn-lint"  # installed with the dev extras
    template = str(CHECKOUT / "template.yaml")
    result = subprocess.run([str(cfn_lint), template], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr  # no errors and no warnings


# --- DynamoDB Local: the command, the real server, the whole flow ------------------------------------------


@pytest.mark.dynamodb_local
def test_create_table_command_against_dynamodb_local() -> None:
    local = shared()
    name = "relay-cli-made"
    cmd = [sys.executable, "-m", "codap_relay.cli", "dynamodb", "create-table", "--table", name]
    cmd += ["--endpoint-url", local.endpoint, "--template", str(CHECKOUT / "template.yaml")]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env_for(local), timeout=120)
    assert first.returncode == 0, first.stderr
    assert f"dynamodb://{name}?endpoint_url=" in first.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, env=env_for(local), timeout=120)
    assert again.returncode == 0 and "already exists" in again.stdout
    ttl = local.client().describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "purge_at"
    local.client().delete_table(TableName=name)


@pytest.mark.dynamodb_local
async def test_serve_on_dynamodb_local_end_to_end() -> None:
    with (
        fresh_table() as (local, table),
        serve_process("--store", store_url(local, table), env=env_for(local)) as (
            base,
            _proc,
        ),
    ):
        async with web.AsyncClient(base_url=base, timeout=30) as client:
            created = await client.post("/api/sessions", json={})
            assert created.status_code == 201, created.text
            answer = created.json()
            code = answer["code"]

            async with FakePlugin.for_session(base, answer) as plugin:
                r = await client.post(
                    "/request", params={"wait": 15}, json={"code": code, "tool": "get_codap_datasets", "args": {}}
                )
                assert r.status_code == 200, r.text
                assert r.json()["status"] == "completed" and r.json()["result"]["tool"] == "get_codap_datasets"
                first_id = r.json()["id"]

                # Reconnect with the cursor: only what came after it is delivered, nothing runs twice.
                await plugin.wait_cursor("1")
                await plugin.drop()
                queued = await client.post(
                    "/request", json={"code": code, "tool": "get_codap_datasets", "args": {}, "id": "after-drop"}
                )
                assert queued.status_code == 202
                done = await client.get("/response", params={"code": code, "id": "after-drop", "wait": 15})
                assert done.status_code == 200 and done.json()["status"] == "completed"
                assert plugin.executed == [first_id, "after-drop"]
                await plugin.wait_cursor("2")
                assert [e.id for e in plugin.events if e.event == "tool-request"] == ["1", "2"]

            status = await client.get(f"/api/sessions/{code}")
            assert status.status_code == 200 and status.json()["pending"] == 0
            await asyncio.sleep(0)  # let the plugin's client close before the server stops


# --- the session item every poll reads -------------------------------------------------------------------


@pytest.mark.dynamodb_local
async def test_the_real_plugins_session_item_stays_under_1_kb_on_dynamodb_local() -> None:
    """The plugin's own manifest (built by its loader in Node) is registered through the HTTP API; the session's
    item, which every poll reads and every sign of life writes, stays under 1 KB (measured as DynamoDB sizes an
    item), so a poll costs half a read unit and a sign of life one write unit; the manifest is stored once, apart,
    whatever the number of tabs, and /metadata still serves it whole."""
    from bench.dynamo_proxy import item_size

    from codap_relay.records import manifest_id, push_consumer
    from codap_relay.store.dynamodb.manifests import manifest_key
    from codap_relay_tooling.testing.plugin_manifest import plugin_manifest

    tools = plugin_manifest()
    assert len(tools) >= 30
    with fresh_table() as (local, table):
        client = local.client()
        store = DynamoStore(client, table)
        relay = Relay(make_settings(), store)
        transport = httpx.ASGITransport(app=build_app(relay), client=("203.0.113.7", 5555))
        async with web.AsyncClient(transport=transport, base_url="http://relay.test") as http:
            codes = []
            for _ in range(3):  # three tabs of one class
                created = await http.post("/api/sessions", json={"tools": tools})
                assert created.status_code == 201, created.text
                codes.append(created.json()["code"])
            metadata = await http.get("/metadata", params={"code": codes[0]})
            assert metadata.status_code == 200 and metadata.json()["tools"] == tools
        code = codes[0]
        # The longest consumer a session takes (a push connection) and every field a sign of life writes.
        now = relay.clock.now()
        store.update_session(
            code, expires_at=now + 900, last_seen=now, consumer=push_consumer("t" * 64, "ZmFrZUNvbm5lY3Rpb25JZA=")
        )
        meta_key = {"pk": {"S": f"SESSION#{code}"}, "sk": {"S": "META"}}
        poll = client.get_item(TableName=table, Key=meta_key, ReturnConsumedCapacity="TOTAL")
        size = item_size(poll["Item"])
        assert size < 1024, (size, sorted(poll["Item"]))
        assert poll["ConsumedCapacity"]["CapacityUnits"] == 0.5  # the idle poll's eventually consistent read
        touch = client.update_item(
            TableName=table,
            Key=meta_key,
            UpdateExpression="SET last_seen = :t",
            ExpressionAttributeValues={":t": {"N": str(now + 1)}},
            ReturnConsumedCapacity="TOTAL",
        )
        assert touch["ConsumedCapacity"]["CapacityUnits"] == 1.0  # a sign of life: one write unit
        manifests = [i for i in client.scan(TableName=table)["Items"] if i["pk"]["S"].startswith("MANIFEST#")]
        assert [m["pk"] for m in manifests] == [manifest_key(manifest_id(tools))["pk"]]  # one for the three tabs
        wire = {k: {"B": base64.b64encode(v["B"]).decode()} if "B" in v else v for k, v in manifests[0].items()}
        print(f"\nsession item {size} bytes; manifest item {item_size(wire)} bytes, stored once")


# --- a session an earlier version opened ------------------------------------------------------------------------


def test_a_session_of_the_earlier_layout_keeps_working_with_every_request_it_holds(store: DynamoStore) -> None:
    """A session open while a new version is deployed: its META item counts in ``last_seq``, its requests are
    ``REQ#<seq>`` items (with ``RID#`` and ``RESP#`` ones and a PENDING item). Every operation serves it in that
    layout: append, count, deliver, cancel's lookup, answer (checked by token, a sign of life), the log."""
    old = "OLDV1ABC"
    store._client.put_item(
        TableName=store.table,
        Item={
            "pk": {"S": f"SESSION#{old}"},
            "sk": {"S": "META"},
            "token_hash": {"S": "h" * 64},
            "created_at": {"N": str(T0)},
            "expires_at": {"N": str(T0 + 600)},
            "last_seq": {"N": "0"},
            "purge_at": {"N": str(int(T0) + 600 + PURGE_GRACE_SECONDS)},
        },
    )
    store.update_session(old, consumer="tab-1")
    for rid in ("a", "b"):
        record, created = store.add_request(old, new(rid, {"n": rid}))
        assert created and record.status == "queued"
    sorts = {i["sk"]["S"] for i in items(store) if i["pk"]["S"] == f"SESSION#{old}"}
    assert {"REQ#000000000001", "REQ#000000000002", "RID#a", "RID#b", "PENDING"} <= sorts
    session = store.get_session(old)
    assert session is not None and session.last_seq == 2 and session.pending is None
    assert store.count_pending(old, T0) == PendingTotals(2, 2 * len('{"n": "a"}'))
    assert [r.id for r in store.deliver(old, "tab-1", 0, T0 + 1)[1]] == ["a", "b"]
    assert [ref.id for ref in store.pending_refs(old, "b", T0 + 1)] == ["b"]
    answer = ResponseRecord(old, "a", "completed", {"result": 1}, fingerprint({"result": 1}), T0 + 2, T0 + 3600)
    with pytest.raises(RequestNotFound):
        store.complete_request(answer, now=T0 + 2, token_hash="x" * 64)
    done = store.complete_request(answer, now=T0 + 2, token_hash="h" * 64, alive_until=T0 + 602)
    assert done.fresh and done.queued_at == T0
    seen = store.get_session(old)
    assert seen is not None and (seen.last_seen, seen.expires_at) == (T0 + 2, T0 + 602)
    found = store.lookup(old, "a")
    assert found.response is not None and found.response.body == {"result": 1}
    assert store.get_response(old, "a") == done.response
    assert store.count_pending(old, T0 + 2) == PendingTotals(1, len('{"n": "b"}'))
    assert [(r.id, r.status) for r in store.list_requests(old)] == [("a", "completed"), ("b", "delivered")]
