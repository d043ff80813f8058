"""Sessions on its own, on the memory store and a fake clock: opening, finding by role, ending."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from codap_relay.codes import token_matches
from codap_relay.errors import (
    InvalidManifest,
    RateLimited,
    SessionNotFound,
    StoreUnavailable,
    TokenInvalid,
    TokenMissing,
)
from codap_relay.manifest import DEFAULT_TOOLS, MANIFEST_VERSION
from codap_relay.notify import Notifier, answers_key, stream_key
from codap_relay.records import NewRequest
from codap_relay.relay.sessions import Metadata, Sessions
from codap_relay.settings import Settings
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay


def sessions_of(
    settings: Settings, clock: FakeClock, codes: Callable[[], str] | None = None
) -> tuple[Sessions, MemoryStore, Notifier]:
    store = MemoryStore()
    relay = unit_relay(settings, clock, store, codes=codes)
    return relay.sessions, store, relay.notifier


def queue(store: MemoryStore, code: str, rid: str, now: float) -> None:
    store.add_request(code, NewRequest(rid, "get_codap_datasets", {}, "f", now, now + 3600))


async def test_a_session_keeps_only_its_token_hash_and_lives_its_ttl(settings: Settings, clock: FakeClock) -> None:
    sessions, store, _ = sessions_of(settings, clock)
    session, token = await sessions.create()
    stored = store.get_session(session.code)
    assert stored is not None and token not in repr(stored) and token_matches(token, stored.token_hash)
    assert session.expires_at - clock.now() == settings.session_ttl_seconds
    assert await sessions.metadata(session.code) == Metadata(MANIFEST_VERSION, DEFAULT_TOOLS)


async def test_a_taken_code_is_drawn_again_an_exhausted_space_is_a_503(settings: Settings, clock: FakeClock) -> None:
    sessions, _, _ = sessions_of(settings, clock, codes=iter(["AAAAAAAA", "AAAAAAAA", "BBBBBBBB"]).__next__)
    assert [(await sessions.create())[0].code for _ in range(2)] == ["AAAAAAAA", "BBBBBBBB"]
    full, _, _ = sessions_of(settings, clock, codes=itertools.repeat("AAAAAAAA").__next__)
    await full.create()
    with pytest.raises(StoreUnavailable):
        await full.create()


async def test_a_manifest_is_checked_an_address_opens_a_limited_number(settings: Settings, clock: FakeClock) -> None:
    sessions, _, _ = sessions_of(settings.model_copy(update={"rate_limit_session_per_ip": 2}), clock)
    with pytest.raises(InvalidManifest):
        await sessions.create([{"name": "x", "inputSchema": {"type": "string"}}])
    await sessions.create(client="1.2.3.4")
    await sessions.create(client="1.2.3.4")
    with pytest.raises(RateLimited):
        await sessions.create(client="1.2.3.4")
    await sessions.create()  # no address (the CLI, tests): no limit


async def test_live_says_why_a_session_cannot_be_used(settings: Settings, clock: FakeClock) -> None:
    sessions, store, _ = sessions_of(settings, clock)
    session, _ = await sessions.create()
    with pytest.raises(SessionNotFound) as unknown:
        sessions.live(None)
    assert unknown.value.reason == "unknown"
    clock.advance(settings.session_ttl_seconds)
    with pytest.raises(SessionNotFound) as expired:
        await sessions.load(session.code)
    assert expired.value.reason == "expired"
    assert (await sessions.load(session.code, grace=1)).code == session.code
    closed = session.with_(closed_at=clock.now(), expires_at=clock.now() + 600)
    with pytest.raises(SessionNotFound) as ended:
        sessions.live(closed)
    assert ended.value.reason == "closed"
    assert sessions.live(closed, allow_closed=True) is closed
    assert sessions.live(closed, grace=5) is closed
    assert store.get_session(session.code) is not None


async def test_the_plugin_role_needs_the_sessions_own_token(settings: Settings, clock: FakeClock) -> None:
    sessions, _, _ = sessions_of(settings, clock)
    session, token = await sessions.create()
    other, other_token = await sessions.create()
    assert (await sessions.for_plugin(session.code, token)).code == session.code
    with pytest.raises(TokenMissing):
        await sessions.for_plugin(session.code, None)
    with pytest.raises(TokenInvalid):
        await sessions.for_plugin(session.code, other_token)
    assert (await sessions.for_llm(other.code)).code == other.code
    relaxed, _, _ = sessions_of(settings.model_copy(update={"require_browser_token": False}), clock)
    mine, _ = await relaxed.create()
    assert (await relaxed.for_plugin(mine.code, None)).code == mine.code


async def test_unknown_codes_count_towards_the_guard_for_both_roles(settings: Settings, clock: FakeClock) -> None:
    sessions, _, _ = sessions_of(settings.model_copy(update={"guess_limit_per_ip": 2}), clock)
    session, token = await sessions.create()
    with pytest.raises(SessionNotFound):
        await sessions.for_llm("NOSUCH01", client="6.6.6.6")
    with pytest.raises(SessionNotFound):
        await sessions.for_plugin("NOSUCH02", "a-token", client="6.6.6.6")
    with pytest.raises(RateLimited):
        await sessions.for_llm("NOSUCH03", client="6.6.6.6")
    with pytest.raises(RateLimited):  # refused now for known codes too: no oracle for a guesser
        await sessions.for_llm(session.code, client="6.6.6.6")
    assert (await sessions.for_plugin(session.code, token, client="6.6.6.6")).code == session.code  # its own token
    assert (await sessions.for_llm(session.code, client="7.7.7.7")).code == session.code


async def test_closing_fails_every_pending_request_once_and_wakes_stream_and_waiters(
    settings: Settings, clock: FakeClock
) -> None:
    sessions, store, notifier = sessions_of(settings, clock)
    session, token = await sessions.create()
    queue(store, session.code, "a", clock.now())
    queue(store, session.code, "b", clock.now())
    with notifier.listen(stream_key(session.code)) as stream, notifier.listen(answers_key(session.code)) as answers:
        assert await sessions.close(session.code, token) == 2
        assert await stream.wait(0) and await answers.wait(0)
    response = store.get_response(session.code, "a")
    assert response is not None and response.error_code == "session_closed" and response.status == "failed"
    assert response.expires_at == clock.now() + settings.response_ttl_seconds
    stored = store.get_session(session.code)
    assert stored is not None and stored.closed_at == clock.now()
    assert await sessions.close(session.code, token) == 0  # a retry finishes the job, failing nothing twice
    with pytest.raises(SessionNotFound):
        await sessions.for_llm(session.code)
