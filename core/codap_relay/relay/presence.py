"""Whether the plugin is there: its signs of life (which keep its code alive), and the session as the LLM sees it."""

from __future__ import annotations

from dataclasses import dataclass

from ..clock import Clock
from ..codes import token_matches
from ..records import DETACHED, SessionRecord, push_connection
from ..settings import Settings
from .limits import RateLimits
from .sessions import Sessions
from .store_io import StoreIO


@dataclass(frozen=True)
class SessionState:
    """A session as the LLM may see it: whether the plugin is connected, how many requests wait."""

    session: SessionRecord
    connected: bool
    pending: int


class Presence:
    def __init__(
        self, settings: Settings, store_io: StoreIO, clock: Clock, *, sessions: Sessions, limits: RateLimits
    ) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.sessions = sessions
        self.limits = limits

    def is_connected(self, session: SessionRecord) -> bool:
        """Seen within the grace, and not detached: a tab that said it left is gone at once, although its stream
        (on AWS it runs on after the client went) may have refreshed ``last_seen`` just before it ended."""
        if session.consumer == DETACHED or session.last_seen is None:
            return False
        return self.clock.now() - session.last_seen <= self._grace(session)

    def _grace(self, session: SessionRecord) -> float:
        """A push plugin is seen only when it pings (every PUSH_PING_SECONDS); a streaming one at every poll."""
        if push_connection(session.consumer) is not None:
            return self.settings.push_grace_seconds
        return self.settings.connected_grace_seconds

    def touch_due(self, session: SessionRecord) -> bool:
        """Whether a sign of life would change what anyone sees: the plugin shows as connected while it was seen
        within ``connected_grace_seconds``, so a third of that (and at least every heartbeat) keeps it so."""
        if session.last_seen is None:
            return True
        if push_connection(session.consumer) is not None:
            # Every ping refreshes (half a ping's slack for timers that fire early): the grace is 2.5 pings.
            return self.clock.now() - session.last_seen >= self.settings.push_ping_seconds / 2
        interval = min(self.settings.heartbeat_seconds, self.settings.connected_grace_seconds / 3)
        return self.clock.now() - session.last_seen >= interval

    async def touch(self, session: SessionRecord, *, consumer: str | None = None) -> None:
        """A sign of life from the plugin: slide the expiry and record when it was seen. A code that expired since
        ``session`` was read raises SessionNotFound (expired) instead (``_now_if_live``)."""
        now = self._now_if_live(session)
        await self.store_io.run(
            self.store.update_session,
            session.code,
            expires_at=now + self.settings.session_ttl_seconds,
            last_seen=now,
            consumer=consumer,
        )

    def _now_if_live(self, session: SessionRecord) -> float:
        """The clock reading a sign of life writes with, once ``session`` (as read) is checked against that same
        reading. A code that expired since it was read raises SessionNotFound (expired) rather than being revived
        when the clock jumped between the read and the write (a machine that slept with a stream open); a jump after
        this reading leaves the written expiry in the past, so the code still expires."""
        now = self.clock.now()
        self.sessions.live(session, allow_closed=True, now=now)
        return now

    async def status(self, code: str, *, client: str | None = None, token: str | None = None) -> SessionState:
        """The session as the LLM sees it. The pending requests are counted, never read (their arguments can be
        MAX_PENDING_BYTES_PER_SESSION), and each address gets RATE_LIMIT_STATUS_PER_IP status reads a minute.

        With the session's browser token it is also the plugin's sign of life while its stream cannot run (the
        stream function at its concurrency limit): the code's expiry slides, so waiting for room never costs the
        code. ``last_seen`` stays: a plugin that receives nothing is not connected."""
        if client is not None:
            await self.limits.admit("status", client, self.settings.rate_limit_status_per_ip)
        session = await self.sessions.for_llm(code, client=client)
        if token and token_matches(token, session.token_hash):
            expires_at = self._now_if_live(session) + self.settings.session_ttl_seconds
            await self.store_io.run(self.store.update_session, code, expires_at=expires_at)
            session = session.with_(expires_at=max(expires_at, session.expires_at))
        pending = await self.store_io.read(self.store.count_pending, code, self.clock.now())
        return SessionState(session, self.is_connected(session), pending.requests)
