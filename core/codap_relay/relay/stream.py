"""The plugin's event stream: opening it for a tab (after the plugin role is checked), and detaching a tab that
left. Delivery (delivery.py) runs the stream itself, reading through this unit as its ``StreamHost``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

from ..clock import Clock, IdFactory
from ..delivery import Delivery, StreamEvent
from ..notify import Notifier, stream_key
from ..records import SessionRecord
from ..settings import Settings
from .presence import Presence
from .push_out import PushSender
from .sessions import Sessions
from .store_io import StoreIO

T = TypeVar("T")


class PluginStream:
    def __init__(
        self,
        settings: Settings,
        store_io: StoreIO,
        clock: Clock,
        ids: IdFactory,
        *,
        sessions: Sessions,
        presence: Presence,
        notifier: Notifier,
        push: PushSender,
    ) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.ids = ids
        self.sessions = sessions
        self.presence = presence
        self.notifier = notifier
        self.push = push  # its publisher None: no push channel

    async def detach(self, code: str, token: str | None, tab: str, *, client: str | None = None) -> bool:
        """The plugin's tab ``tab`` is going away (pagehide): its stream ends at its next poll, and the LLM sees
        the plugin as not connected at once. A host that keeps a function running after its client left (AWS
        Lambda's response streaming) cannot tell otherwise. Returns whether a stream of that tab owned delivery;
        a newer tab's stream is never touched."""
        await self.sessions.for_plugin(code, token, client=client, allow_closed=True)
        detached = await self.store_io.run(self.store.detach, code, tab)
        self.notifier.notify(stream_key(code))  # a stream waiting in this process learns it now
        return detached

    async def open(
        self,
        code: str,
        token: str | None,
        cursor: int | None,
        *,
        poll: bool = False,
        max_seconds: float | None = None,
        client: str | None = None,
        tab: str | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Authenticate first (errors raise before any byte is sent), then return the event iterator."""
        session = await self.sessions.for_plugin(code, token, client=client)
        # The tab's id leads the consumer so that the tab can detach its streams (``detach``); the suffix makes
        # each connection its own consumer, so a reconnect supersedes a stream the host kept running.
        consumer = self.ids() if tab is None else f"{tab}.{self.ids()}"
        await self.presence.touch(session, consumer=consumer)
        self.notifier.notify(stream_key(code))  # an older stream of this session learns it is superseded
        await self.push.ended(session.consumer, "superseded")  # as does a push connection, told and closed
        return Delivery(self, session, consumer).events(cursor, poll=poll, max_seconds=max_seconds)

    # --- what Delivery reads through (delivery.StreamHost) ----------------------------------------------

    def now(self) -> float:
        return self.clock.now()

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self.store_io.run(fn, *args, **kwargs)

    def live(self, session: SessionRecord | None, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord:
        return self.sessions.live(session, allow_closed=allow_closed, grace=grace)

    def touch_due(self, session: SessionRecord) -> bool:
        return self.presence.touch_due(session)

    async def touch(self, session: SessionRecord, *, consumer: str | None = None) -> None:
        await self.presence.touch(session, consumer=consumer)

    def wait_slice(self, remaining: float, *, quiet_for: float = 0.0) -> float:
        return self.store_io.wait_slice(remaining, quiet_for=quiet_for)
