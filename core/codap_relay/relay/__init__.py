"""The relay's behaviour, independent of HTTP, Lambda or storage backend, as units that the entry points reach
as themselves: ``relay.queue.submit(...)``, ``relay.sessions.for_plugin(...)``.

LLM role (pairing code only): submit requests, read responses, metadata, session status.
Plugin role (code + browser token): stream, answer, read the activity log, end the session.

Each job is a unit of its own, given what it needs: sessions.py (open, find by role, end), presence.py (signs of
life, status), queue.py (submit, cancel), responses.py (answers, waits, calls), stream.py (the plugin's stream),
log.py (the activity log), changes.py (document change marks), limits.py (rate windows, byte budget), push.py
(the push channel's attach, resume and ping), push_out.py (what the relay posts to a push connection;
publisher.py posts it through API Gateway), grants.py (the OAuth grants of connected apps); store_io.py and
outcomes.py serve them.

``Relay`` composes them, once, and is nothing else: it has no method that hands a call on. A front of one-line
methods added nothing that the units do not already say (each unit checks the role and maps its own store
faults), and made every use case be written and read twice; the one thing a front gave, a single object for the
entry points to hold, the composition gives too. A transaction across units lives in the unit that leads it
(``Responses.call`` submits through the queue and waits on answers), never in a layer above them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..clock import Clock, IdFactory, SystemClock, uuid_ids
from ..codes import CodeFactory, new_code, new_token
from ..guard import GuessingGuard
from ..notify import Notifier
from ..observe import NullObserver, Observer
from ..settings import Settings
from ..store.base import Store
from .changes import DocumentChanges
from .grants import Grants
from .limits import RateLimits
from .log import ActivityLog
from .presence import Presence
from .publisher import Publisher
from .push import PushChannel
from .push_out import PushSender
from .queue import RequestQueue
from .responses import Responses
from .sessions import Sessions
from .store_io import StoreIO
from .stream import PluginStream

__all__ = ["Relay"]


class Relay:
    """The relay's units, wired to one store, clock, settings and observer. The dependencies are read-only: a new
    one comes through ``reconfigure`` (which wires every unit again) or a new ``Relay``."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        clock: Clock | None = None,
        ids: IdFactory = uuid_ids,
        codes: CodeFactory = new_code,
        tokens: Callable[[], str] = new_token,
        notifier: Notifier | None = None,
        observer: Observer | None = None,
        publisher: Publisher | None = None,  # None: no push channel
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock or SystemClock()
        self._ids = ids
        self._codes = codes
        self._tokens = tokens
        self._notifier = notifier or Notifier()
        self._observer = observer or NullObserver()
        self._publisher = publisher

        async def admit(scope: str, key: str, limit: int) -> None:
            await self.limits.admit(scope, key, limit)  # the rate windows of the relay as wired now

        # Built once: its refusals live in this process, whatever is reconfigured later.
        self.guard = GuessingGuard(admit, self._clock.now, settings.guess_limit_per_ip)
        self._wire()

    def reconfigure(self, *, settings: Settings | None = None, observer: Observer | None = None) -> None:
        """New settings or a new observer for a relay already serving (a test's shorter timeout on a running
        server): every unit is wired again. A stream already running keeps the units it opened with."""
        self._settings = settings or self._settings
        self._observer = observer or self._observer
        self._wire()

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def store(self) -> Store:
        return self._store

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def notifier(self) -> Notifier:
        return self._notifier

    def _wire(self) -> None:
        s, clock, ids, notifier, observer = self._settings, self._clock, self._ids, self._notifier, self._observer
        self.store_io = io = StoreIO(self._store, s)
        self.limits = limits = RateLimits(io, clock, observer)
        self.push_out = push_out = PushSender(io, clock, self._publisher, timeout=s.push_publish_seconds)
        self.sessions = sessions = Sessions(
            s,
            io,
            clock,
            codes=self._codes,
            tokens=self._tokens,
            guard=self.guard,
            limits=limits,
            notifier=notifier,
            observer=observer,
            push=push_out,
        )
        self.presence = presence = Presence(s, io, clock, sessions=sessions, limits=limits)
        self.queue = queue = RequestQueue(
            s,
            io,
            clock,
            ids,
            sessions=sessions,
            presence=presence,
            limits=limits,
            notifier=notifier,
            observer=observer,
            push=push_out,
        )
        self.responses = Responses(
            s,
            io,
            clock,
            guard=self.guard,
            sessions=sessions,
            presence=presence,
            queue=queue,
            notifier=notifier,
            observer=observer,
        )
        self.log = ActivityLog(s, io, clock, sessions=sessions)
        self.doc_changes = DocumentChanges(s, io, sessions=sessions, notifier=notifier)
        self.streams = PluginStream(
            s, io, clock, ids, sessions=sessions, presence=presence, notifier=notifier, push=push_out
        )
        self.push = PushChannel(
            s,
            io,
            clock,
            sender=push_out,
            sessions=sessions,
            responses=self.responses,
            presence=presence,
            notifier=notifier,
            observer=observer,
        )
        self.grants = Grants(io, clock, access_ttl=s.oauth_access_ttl_seconds, refresh_ttl=s.oauth_refresh_ttl_seconds)
