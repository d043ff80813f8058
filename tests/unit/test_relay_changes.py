"""DocumentChanges on its own, on the memory store and a fake clock: the plugin's change marks and their watchers."""

from __future__ import annotations

import pytest

from codap_relay.errors import TokenInvalid
from codap_relay.notify import Notifier, changes_key
from codap_relay.relay.changes import DocumentChanges
from codap_relay.relay.sessions import Sessions
from codap_relay.settings import Settings
from codap_relay_tooling.testing.clock import FakeClock
from codap_relay_tooling.testing.relays import unit_relay


def changes_of(settings: Settings, clock: FakeClock) -> tuple[DocumentChanges, Sessions, Notifier]:
    relay = unit_relay(settings, clock)
    return relay.doc_changes, relay.sessions, relay.notifier


async def test_the_plugin_notes_what_changed_and_watchers_wake(settings: Settings, clock: FakeClock) -> None:
    changes, sessions, notifier = changes_of(settings, clock)
    session, token = await sessions.create()
    code = session.code
    assert await changes.get(code) is None
    with notifier.listen(changes_key(code)) as watcher:
        first = await changes.note(code, token, datasets=["a", "b", "a"], listed=True)
        assert await watcher.wait(0)
    assert (first.seq, first.marks) == (1, {"list": 1, "dataset:a": 1, "dataset:b": 1})
    second = await changes.note(code, token, datasets=["b"], listed=False)
    assert second.marks == {"list": 1, "dataset:a": 1, "dataset:b": 2}  # each mark: the latest note that named it
    assert await changes.get(code) == second
    _, other_token = await sessions.create()
    with pytest.raises(TokenInvalid):  # the plugin role only
        await changes.note(code, other_token, datasets=["a"], listed=False)
