"""Sessions: opening one (its pairing code and browser token), finding it by code for each role, its manifest,
and ending it."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..catalog import plugin_manifest_id
from ..clock import Clock
from ..codes import CodeFactory, hash_token, token_matches
from ..errors import CodeCollision, SessionNotFound, StoreUnavailable, TokenInvalid, TokenMissing
from ..guard import GuessingGuard
from ..manifest import DEFAULT_TOOLS, MANIFEST_VERSION, check_manifest
from ..notify import Notifier, answers_key, stream_key
from ..observe import Observer
from ..records import SessionRecord, manifest_id
from ..settings import Settings
from .limits import RateLimits
from .outcomes import new_response
from .push_out import PushSender
from .store_io import StoreIO

CODE_ATTEMPTS = 8
#: How many distinct manifests a process keeps read (a district's tabs register one or a few).
MANIFESTS_KEPT = 16


@dataclass(frozen=True)
class Metadata:
    """A session's tool manifest, and the version of the manifest format."""

    version: str
    tools: list[dict[str, Any]]


class Sessions:
    def __init__(
        self,
        settings: Settings,
        store_io: StoreIO,
        clock: Clock,
        *,
        codes: CodeFactory,
        tokens: Callable[[], str],
        guard: GuessingGuard,
        limits: RateLimits,
        notifier: Notifier,
        observer: Observer,
        push: PushSender,
    ) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.codes = codes
        self.tokens = tokens
        self.guard = guard
        self.limits = limits
        self.notifier = notifier
        self.observer = observer
        self.push = push  # its publisher None: no push channel
        self._manifests: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()  # by address, newest used last

    async def create(
        self, tools: list[dict[str, Any]] | None = None, *, client: str | None = None
    ) -> tuple[SessionRecord, str]:
        """Returns the session and its browser token (shown once, stored only as a hash)."""
        address = None if tools is None else manifest_id(tools)
        # The plugin's own manifest, as this relay ships it, is known valid (tests check it): a cold function need
        # not spend 0.7 s of CPU checking its schemas against the metaschema on each tab's registration.
        if tools is not None and address != plugin_manifest_id():
            check_manifest(tools)
        if client is not None:
            await self.limits.admit("session", client, self.settings.rate_limit_session_per_ip)
        token = self.tokens()
        now = self.clock.now()
        for _ in range(CODE_ATTEMPTS):
            session = SessionRecord(
                code=self.codes(),
                token_hash=hash_token(token),
                created_at=now,
                expires_at=now + self.settings.session_ttl_seconds,
                manifest=address,
            )
            try:
                await self.store_io.run(self.store.create_session, session, tools)
            except CodeCollision:
                continue
            self.observer.session_created()
            return session, token
        raise StoreUnavailable("Could not find a free pairing code; try again.", retry_after=1)

    async def load(self, code: str, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord:
        return self.live(await self.store_io.read(self.store.get_session, code), allow_closed=allow_closed, grace=grace)

    def live(
        self,
        session: SessionRecord | None,
        *,
        allow_closed: bool = False,
        grace: float = 0,
        now: float | None = None,
    ) -> SessionRecord:
        """The session if it can be used now (or at ``now``); else SessionNotFound with the reason and what to do.
        ``grace``: one that ended (closed or expired) less than this many seconds ago is still returned."""
        if session is None:
            raise SessionNotFound(
                "No CODAP session has this pairing code. Check the code, or open the codap-relay plugin "
                "in CODAP and use the code it shows.",
                reason="unknown",
            )
        if now is None:
            now = self.clock.now()
        if session.closed_at is not None and not allow_closed and session.closed_at + grace <= now:
            raise SessionNotFound(
                "This CODAP session was ended in the plugin. Ask the user for the new code the plugin shows.",
                reason="closed",
            )
        if session.expires_at + grace <= now:
            raise SessionNotFound(
                "This pairing code has expired (the plugin was closed or lost its connection). Ask the user "
                "to open the codap-relay plugin in CODAP and share the new code.",
                reason="expired",
            )
        return session

    async def _load_guarded(self, code: str, client: str | None, **live: Any) -> SessionRecord:
        """A session looked up by its code; an unknown code counts towards the guessing guard."""
        self.guard.check(client)
        try:
            return await self.load(code, **live)
        except SessionNotFound as exc:
            if exc.reason == "unknown":
                await self.guard.count_unknown(client)
            raise

    async def for_llm(self, code: str, *, client: str | None = None) -> SessionRecord:
        """The LLM role: the code alone."""
        return await self._load_guarded(code, client)

    async def for_plugin(
        self,
        code: str,
        token: str | None,
        *,
        client: str | None = None,
        allow_closed: bool = False,
        grace: float = 0,
        strict: bool = False,
    ) -> SessionRecord:
        """The plugin role: code plus browser token (unless REQUIRE_BROWSER_TOKEN=false and not ``strict``: what
        only the person at the plugin may do, the OAuth consent and its apps, needs the token in every mode).

        Unknown codes count towards the guessing guard here too: otherwise 404 (unknown) against 401/403
        (known, wrong token) would tell a guesser which codes are live, with no limit. A call that carries its
        session's own token passes the guard: a school behind one address keeps its live plugins when someone
        there guesses codes. An unknown code and a wrong token still meet the guard alike."""
        if token:
            try:
                mine = await self.load(code, allow_closed=allow_closed, grace=grace)
            except SessionNotFound:
                pass  # answered below, through the guard, as any unknown code is
            else:
                if token_matches(token, mine.token_hash):
                    return mine
        session = await self._load_guarded(code, client, allow_closed=allow_closed, grace=grace)
        if not self.settings.require_browser_token and not token and not strict:
            return session
        if not token:
            raise TokenMissing(
                "This endpoint is for the CODAP plugin and needs the session's browser token "
                "(Authorization: Bearer <browserToken>, or ?token= for EventSource)."
            )
        if not token_matches(token, session.token_hash):
            raise TokenInvalid("The browser token does not belong to this session. Open a new session in the plugin.")
        return session

    async def manifest(self, session: SessionRecord) -> list[dict[str, Any]]:
        """The session's tool manifest. A stored manifest never changes under its address, so each process keeps
        the few it has read: a tool call reads none."""
        if session.manifest is None:
            return DEFAULT_TOOLS
        tools = self._manifests.get(session.manifest)
        if tools is None:
            tools = await self.store_io.read(self.store.get_manifest, session.manifest)
            if tools is None:
                raise StoreUnavailable(
                    "This session's tool manifest could not be read; retry in a moment.", retry_after=1
                )
            self._manifests[session.manifest] = tools
            while len(self._manifests) > MANIFESTS_KEPT:
                self._manifests.popitem(last=False)
        self._manifests.move_to_end(session.manifest)
        return tools

    async def metadata(self, code: str, *, client: str | None = None) -> Metadata:
        session = await self.for_llm(code, client=client)
        return Metadata(MANIFEST_VERSION, await self.manifest(session))

    async def close(self, code: str, token: str | None, *, client: str | None = None) -> int:
        """End the session: the stream gets ``closed`` and every pending request fails with session_closed.
        Returns how many requests it failed."""
        # Closing is two writes (the mark, then each pending request failed). A retry after a store fault in
        # between must be able to finish the job, so an already-closed session is accepted here.
        session = await self.for_plugin(code, token, client=client, allow_closed=True)
        now = self.clock.now()
        if session.closed_at is None:
            await self.store_io.run(self.store.update_session, code, closed_at=now)
        failed = 0
        for request in await self.store_io.read(self.store.pending_requests, code, 0, now):
            error = {"code": "session_closed", "message": "The CODAP session was ended before this request ran."}
            response = new_response(
                session.code, request.id, self.clock.now(), self.settings.response_ttl_seconds, error=error
            )
            done = await self.store_io.run(self.store.complete_request, response)
            failed += int(done.fresh)
        self.notifier.notify(stream_key(code))
        self.notifier.notify(answers_key(code))
        await self.push.ended(session.consumer, "closed")
        return failed
