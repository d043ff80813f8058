"""The relay's behaviour, independent of HTTP, Lambda or storage backend.

LLM role (pairing code only): submit requests, read responses, metadata, session status.
Plugin role (code + browser token): stream, answer, read the activity log, end the session.

``Relay`` is the one front the entry points use. Each job is a unit of its own, given what it needs:
sessions.py (open, find by role, end), presence.py (signs of life, status), queue.py (submit, cancel),
responses.py (answers, waits, calls), stream.py (the plugin's stream), log.py (the activity log), changes.py
(document change marks), limits.py (rate windows, byte budget), push.py (the push channel's attach, resume and
ping), push_out.py (what the relay posts to a push connection; publisher.py posts it through API Gateway);
store_io.py and outcomes.py serve them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..clock import Clock, IdFactory, SystemClock, uuid_ids
from ..codes import CodeFactory, new_code, new_token
from ..delivery import StreamEvent
from ..guard import GuessingGuard
from ..notify import Notifier
from ..observe import NullObserver, Observer
from ..records import ChangeMarks, RequestRecord, ResponseRecord, SessionRecord
from ..settings import Settings
from ..store.base import Store
from .changes import DocumentChanges
from .grants import Grants
from .limits import BYTES_WINDOW_SECONDS, RATE_WINDOW_SECONDS, RateLimits
from .log import LOG_PAGE_BYTES, ActivityLog, LogItem
from .presence import Presence, SessionState
from .publisher import Publisher
from .push import PushChannel
from .push_out import PushSender
from .queue import REQUEST_ID_RE, RequestQueue, checked_request_id
from .responses import Answer, Responses
from .sessions import CODE_ATTEMPTS, Metadata, Sessions
from .store_io import StoreIO, store_failures_unavailable
from .stream import PluginStream

T = TypeVar("T")
__all__ = [
    "BYTES_WINDOW_SECONDS",
    "CODE_ATTEMPTS",
    "LOG_PAGE_BYTES",
    "RATE_WINDOW_SECONDS",
    "REQUEST_ID_RE",
    "Answer",
    "LogItem",
    "Metadata",
    "Relay",
    "RelayDeps",
    "SessionState",
    "checked_request_id",
    "store_failures_unavailable",
]


@dataclass(frozen=True)
class RelayDeps:
    """What the relay is built from, in one bundle: the entry points pass theirs, tests build their own (see
    codap_relay_tooling.testing.relays)."""

    settings: Settings
    store: Store
    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = uuid_ids
    codes: CodeFactory = new_code
    tokens: Callable[[], str] = new_token
    notifier: Notifier = field(default_factory=Notifier)
    observer: Observer = field(default_factory=NullObserver)
    publisher: Publisher | None = None  # None: no push channel


class Relay:
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
        publisher: Publisher | None = None,
    ) -> None:
        self.deps = RelayDeps(
            settings,
            store,
            clock or SystemClock(),
            ids,
            codes,
            tokens,
            notifier or Notifier(),
            observer or NullObserver(),
            publisher,
        )
        # Built once: its refusals live in this process, whatever is reconfigured later.
        self.guard = GuessingGuard(self.admit, self.now, settings.guess_limit_per_ip)
        self._wire()

    @classmethod
    def from_deps(cls, deps: RelayDeps) -> Relay:
        return cls(
            deps.settings,
            deps.store,
            clock=deps.clock,
            ids=deps.ids,
            codes=deps.codes,
            tokens=deps.tokens,
            notifier=deps.notifier,
            observer=deps.observer,
            publisher=deps.publisher,
        )

    def reconfigure(self, *, settings: Settings | None = None, observer: Observer | None = None) -> None:
        """New settings or a new observer for a relay already serving (a test's shorter timeout on a running
        server): every unit is wired again. A stream already running keeps the units it opened with."""
        self.deps = replace(self.deps, settings=settings or self.deps.settings, observer=observer or self.deps.observer)
        self._wire()

    # The dependencies, read-only: a new one comes through reconfigure() or a new Relay.
    @property
    def settings(self) -> Settings:
        return self.deps.settings

    @property
    def store(self) -> Store:
        return self.deps.store

    @property
    def clock(self) -> Clock:
        return self.deps.clock

    @property
    def ids(self) -> IdFactory:
        return self.deps.ids

    @property
    def codes(self) -> CodeFactory:
        return self.deps.codes

    @property
    def tokens(self) -> Callable[[], str]:
        return self.deps.tokens

    @property
    def notifier(self) -> Notifier:
        return self.deps.notifier

    @property
    def observer(self) -> Observer:
        return self.deps.observer

    @property
    def publisher(self) -> Publisher | None:
        return self.deps.publisher

    def _wire(self) -> None:
        s, clock, notifier, observer = self.settings, self.clock, self.notifier, self.observer
        self.store_io = io = StoreIO(self.store, s)
        self.limits = limits = RateLimits(io, clock, observer)
        self.push_out = push_out = PushSender(io, clock, self.publisher, timeout=s.push_publish_seconds)
        self.sessions = sessions = Sessions(
            s,
            io,
            clock,
            codes=self.codes,
            tokens=self.tokens,
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
            self.ids,
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
            s, io, clock, self.ids, sessions=sessions, presence=presence, notifier=notifier, push=push_out
        )
        self.push = PushChannel(
            s, io, clock, sender=push_out, sessions=sessions, presence=presence, notifier=notifier, observer=observer
        )
        self.grants = Grants(io, clock, access_ttl=s.oauth_access_ttl_seconds, refresh_ttl=s.oauth_refresh_ttl_seconds)

    # --- plumbing, and rate limits ----------------------------------------------------------------------

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self.store_io.run(fn, *args, **kwargs)

    def now(self) -> float:
        return self.clock.now()

    def wait_slice(self, remaining: float, *, quiet_for: float = 0.0) -> float:
        return self.store_io.wait_slice(remaining, quiet_for=quiet_for)

    async def admit(self, scope: str, key: str, limit: int) -> None:
        await self.limits.admit(scope, key, limit)

    # --- sessions, presence -----------------------------------------------------------------------------

    async def create_session(
        self, tools: list[dict[str, Any]] | None = None, *, client: str | None = None
    ) -> tuple[SessionRecord, str]:
        return await self.sessions.create(tools, client=client)

    def live(self, session: SessionRecord | None, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord:
        return self.sessions.live(session, allow_closed=allow_closed, grace=grace)

    async def session_for_llm(self, code: str, *, client: str | None = None) -> SessionRecord:
        return await self.sessions.for_llm(code, client=client)

    async def session_for_plugin(
        self, code: str, token: str | None, *, client: str | None = None, allow_closed: bool = False, grace: float = 0
    ) -> SessionRecord:
        return await self.sessions.for_plugin(code, token, client=client, allow_closed=allow_closed, grace=grace)

    async def manifest(self, session: SessionRecord) -> list[dict[str, Any]]:
        return await self.sessions.manifest(session)

    async def metadata(self, code: str, *, client: str | None = None) -> Metadata:
        return await self.sessions.metadata(code, client=client)

    async def close_session(self, code: str, token: str | None, *, client: str | None = None) -> int:
        return await self.sessions.close(code, token, client=client)

    def is_connected(self, session: SessionRecord) -> bool:
        return self.presence.is_connected(session)

    def touch_due(self, session: SessionRecord) -> bool:
        return self.presence.touch_due(session)

    async def touch(self, session: SessionRecord, *, consumer: str | None = None) -> None:
        await self.presence.touch(session, consumer=consumer)

    async def status(self, code: str, *, client: str | None = None, token: str | None = None) -> SessionState:
        return await self.presence.status(code, client=client, token=token)

    # --- requests and answers (LLM) ---------------------------------------------------------------------

    async def submit(
        self,
        code: str,
        tool: str,
        args: Any,
        request_id: str | None = None,
        *,
        client: str | None = None,
        session: SessionRecord | None = None,
        own: bool = False,
    ) -> tuple[RequestRecord, bool]:
        return await self.queue.submit(code, tool, args, request_id, client=client, session=session, own=own)

    async def call(
        self,
        code: str,
        tool: str,
        args: Any,
        request_id: str | None = None,
        *,
        wait: float,
        client: str | None = None,
        session: SessionRecord | None = None,
        on_wait: Callable[[RequestRecord], Awaitable[None]] | None = None,
        every: float = 2.0,
    ) -> tuple[RequestRecord, Answer]:
        return await self.responses.call(
            code, tool, args, request_id, wait=wait, client=client, session=session, on_wait=on_wait, every=every
        )

    async def cancel(self, code: str, request_ids: list[str], *, client: str | None = None) -> list[str]:
        return await self.queue.cancel(code, request_ids, client=client)

    async def pending_ids(self, code: str, prefix: str) -> list[str]:
        return await self.queue.pending_ids(code, prefix)

    async def answer(self, code: str, request_id: str, *, client: str | None = None) -> Answer:
        return await self.responses.answer(code, request_id, client=client)

    async def wait_answer(self, code: str, request_id: str, wait: float, *, client: str | None = None) -> Answer:
        return await self.responses.wait_answer(code, request_id, wait, client=client)

    # --- the plugin: answers, the log, change marks, the stream -----------------------------------------

    async def respond(
        self,
        code: str,
        token: str | None,
        request_id: str,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
        client: str | None = None,
    ) -> ResponseRecord:
        return await self.responses.respond(code, token, request_id, result=result, error=error, client=client)

    async def activity_log(self, code: str, token: str | None, *, client: str | None = None) -> list[LogItem]:
        return await self.log.items(code, token, client=client)

    async def recent_activity(
        self, code: str, *, keep: Callable[[RequestRecord], bool], limit: int
    ) -> tuple[list[LogItem], int]:
        return await self.log.recent(code, keep=keep, limit=limit)

    async def log_page(
        self,
        code: str,
        token: str | None,
        *,
        size_of: Callable[[LogItem], int],
        after: int = 0,
        client: str | None = None,
    ) -> tuple[list[LogItem], int | None]:
        # LOG_PAGE_BYTES read here, at call time: a test sets it on this module for small pages.
        return await self.log.page(code, token, size_of=size_of, after=after, client=client, page_bytes=LOG_PAGE_BYTES)

    async def note_changes(
        self, code: str, token: str | None, *, datasets: list[str], listed: bool, client: str | None = None
    ) -> ChangeMarks:
        return await self.doc_changes.note(code, token, datasets=datasets, listed=listed, client=client)

    async def changes(self, code: str) -> ChangeMarks | None:
        return await self.doc_changes.get(code)

    async def detach(self, code: str, token: str | None, tab: str, *, client: str | None = None) -> bool:
        return await self.streams.detach(code, token, tab, client=client)

    async def stream(
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
        return await self.streams.open(code, token, cursor, poll=poll, max_seconds=max_seconds, client=client, tab=tab)

    # --- the push channel ---------------------------------------------------------------------------------

    async def push_message(self, connection_id: str, body: str | None, *, client: str | None = None) -> None:
        await self.push.message(connection_id, body, client=client)

    async def push_disconnected(self, connection_id: str) -> bool:
        return await self.push.disconnected(connection_id)

    async def pushed_request(
        self, code: str, token: str | None, request_id: str, *, client: str | None = None
    ) -> RequestRecord:
        return await self.push.fetch(code, token, request_id, client=client)
