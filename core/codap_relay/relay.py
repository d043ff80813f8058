"""The relay's behaviour, independent of HTTP, Lambda or storage backend.

LLM role (pairing code only): submit requests, read responses, metadata, session status.
Plugin role (code + browser token): stream, answer, read the activity log, end the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread

from .clock import Clock, IdFactory, SystemClock, uuid_ids
from .codes import CodeFactory, hash_token, new_code, new_token, token_matches
from .delivery import Delivery, StreamEvent, withdrawn_mark
from .errors import (
    AlreadyAnswered,
    BadInput,
    ByteBudgetExceeded,
    CodeCollision,
    DuplicateRequestId,
    PayloadTooLarge,
    PendingLimit,
    RateLimited,
    RelayError,
    RequestExpired,
    RequestNotFound,
    SessionNotFound,
    StoreUnavailable,
    TokenInvalid,
    TokenMissing,
)
from .guard import GuessingGuard
from .manifest import DEFAULT_TOOLS, MANIFEST_VERSION, check_manifest, find_tool, validate_args
from .notify import Listener, Notifier, answers_key, changes_key, stream_key
from .observe import NullObserver, Observer
from .records import (
    DETACHED,
    ChangeMarks,
    Lookup,
    NewRequest,
    RequestRecord,
    ResponseRecord,
    SessionRecord,
    fingerprint,
)
from .settings import Settings
from .store.base import Store, args_bytes
from .tool_content import check_result

T = TypeVar("T")
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # \Z: "$" would let a trailing newline through
CODE_ATTEMPTS = 8
RATE_WINDOW_SECONDS = 60
BYTES_WINDOW_SECONDS = 3600  # the window of REQUEST_BYTES_PER_IP_PER_HOUR
__all__ = ["Answer", "LogItem", "Metadata", "Relay", "SessionState"]
# A page of the log with answers (the trace, the full log) stops growing past this many bytes of JSON, so a long
# session is read in several answers that each fit Lambda's 6 MB response: the entry that crosses the mark adds at
# most MAX_REQUEST_BYTES of arguments and MAX_RESPONSE_BYTES of answer.
LOG_PAGE_BYTES = 1_000_000


def checked_request_id(request_id: Any, message: str) -> str:
    """A request id as ids must be (the caller's own, or ours); else BadInput on field ``id`` with ``message``."""
    if not isinstance(request_id, str) or not REQUEST_ID_RE.match(request_id):
        raise BadInput(message, field="id")
    return request_id


@dataclass(frozen=True)
class Metadata:
    """A session's tool manifest, and the version of the manifest format."""

    version: str
    tools: list[dict[str, Any]]


@dataclass(frozen=True)
class SessionState:
    """A session as the LLM may see it: whether the plugin is connected, how many requests wait."""

    session: SessionRecord
    connected: bool
    pending: int


@dataclass(frozen=True)
class LogItem:
    """One request as the activity log and the trace show it."""

    request: RequestRecord
    status: str  # the request's own, or "expired" for one that will never run
    answer: dict[str, Any] | None = None  # the response's body ({"result": …} or {"error": …}), where read


@contextlib.contextmanager
def store_failures_unavailable() -> Iterator[None]:
    """A store bug or outage must not become a 500: nothing was acknowledged, so it is a 503 to retry."""
    try:
        yield
    except RelayError:
        raise
    except Exception as exc:
        raise StoreUnavailable(
            "The relay's store is unavailable right now; nothing was changed. Retry in a moment.", retry_after=1
        ) from exc


@dataclass(frozen=True)
class Answer:
    """What the LLM reads back: a response (done) or the request's current state (not yet)."""

    request: RequestRecord | None
    response: ResponseRecord | None

    @property
    def done(self) -> bool:
        return self.response is not None


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
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock or SystemClock()
        self.ids = ids
        self.codes = codes
        self.tokens = tokens
        self.notifier = notifier or Notifier()
        self.observer: Observer = observer or NullObserver()
        self.guard = GuessingGuard(self.admit, self.now, settings.guess_limit_per_ip)

    # --- plumbing ---------------------------------------------------------------------------------------

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store call off the event loop when it blocks; map unexpected store failures to 503."""
        if self.store.blocking:
            with store_failures_unavailable():
                return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        with store_failures_unavailable():
            return fn(*args, **kwargs)

    async def _read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A store read: in a worker thread wherever reads can wait (a network, a file), else right here (memory)."""
        if self.store.blocking_reads:
            return await self.io(fn, *args, **kwargs)
        with store_failures_unavailable():
            return fn(*args, **kwargs)

    def now(self) -> float:
        return self.clock.now()

    def wait_slice(self, remaining: float, *, quiet_for: float = 0.0) -> float:
        """How long to sleep before re-reading: the full time if writes are pushed here, else one poll. Polls
        come every ``poll_interval_seconds`` while something happens, and every ``idle_poll_interval_seconds``
        once nothing has for ``poll_active_seconds`` (``quiet_for`` says how long that is)."""
        if self.store.pushes:
            return remaining
        s = self.settings
        interval = s.poll_interval_seconds if quiet_for < s.poll_active_seconds else s.idle_poll_interval_seconds
        return min(remaining, interval)

    def touch_due(self, session: SessionRecord) -> bool:
        """Whether a sign of life would change what anyone sees: the plugin shows as connected while it was seen
        within ``connected_grace_seconds``, so a third of that (and at least every heartbeat) keeps it so."""
        if session.last_seen is None:
            return True
        interval = min(self.settings.heartbeat_seconds, self.settings.connected_grace_seconds / 3)
        return self.now() - session.last_seen >= interval

    # --- rate limits ------------------------------------------------------------------------------------

    async def admit(self, scope: str, key: str, limit: int) -> None:
        """Fixed one-minute windows: exactly ``limit`` calls per window pass, the rest get RateLimited."""
        now = self.now()
        window = int(now // RATE_WINDOW_SECONDS)
        window_end = (window + 1) * RATE_WINDOW_SECONDS
        count = await self.io(self.store.incr_counter, f"rl:{scope}:{key}:{window}", float(window_end), now)
        if count > limit:
            self.observer.rate_limited(scope)
            retry = max(1, int(window_end - now + 0.999))
            raise RateLimited(
                f"Too many {scope} requests: the limit is {limit} per minute. Wait {retry} s and try again.",
                retry_after=retry,
                scope=scope,
            )

    # --- sessions ---------------------------------------------------------------------------------------

    async def create_session(
        self, tools: list[dict[str, Any]] | None = None, *, client: str | None = None
    ) -> tuple[SessionRecord, str]:
        """Returns the session and its browser token (shown once, stored only as a hash)."""
        if tools is not None:
            check_manifest(tools)
        if client is not None:
            await self.admit("session", client, self.settings.rate_limit_session_per_ip)
        token = self.tokens()
        now = self.now()
        for _ in range(CODE_ATTEMPTS):
            session = SessionRecord(
                code=self.codes(),
                token_hash=hash_token(token),
                created_at=now,
                expires_at=now + self.settings.session_ttl_seconds,
                tools=tools,
            )
            try:
                await self.io(self.store.create_session, session)
            except CodeCollision:
                continue
            self.observer.session_created()
            return session, token
        raise StoreUnavailable("Could not find a free pairing code; try again.", retry_after=1)

    async def _load(self, code: str, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord:
        return self.live(await self._read(self.store.get_session, code), allow_closed=allow_closed, grace=grace)

    def live(self, session: SessionRecord | None, *, allow_closed: bool = False, grace: float = 0) -> SessionRecord:
        """The session if it can be used now; else SessionNotFound with the reason and what to do.
        ``grace``: one that ended (closed or expired) less than this many seconds ago is still returned."""
        if session is None:
            raise SessionNotFound(
                "No CODAP session has this pairing code. Check the code, or open the codap-relay plugin "
                "in CODAP and use the code it shows.",
                reason="unknown",
            )
        now = self.now()
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
            return await self._load(code, **live)
        except SessionNotFound as exc:
            if exc.reason == "unknown":
                await self.guard.count_unknown(client)
            raise

    async def session_for_llm(self, code: str, *, client: str | None = None) -> SessionRecord:
        """The LLM role: the code alone."""
        return await self._load_guarded(code, client)

    async def session_for_plugin(
        self,
        code: str,
        token: str | None,
        *,
        client: str | None = None,
        allow_closed: bool = False,
        grace: float = 0,
    ) -> SessionRecord:
        """The plugin role: code plus browser token (unless REQUIRE_BROWSER_TOKEN=false).

        Unknown codes count towards the guessing guard here too: otherwise 404 (unknown) against 401/403
        (known, wrong token) would tell a guesser which codes are live, with no limit. A call that carries its
        session's own token passes the guard: a school behind one address keeps its live plugins when someone
        there guesses codes. An unknown code and a wrong token still meet the guard alike."""
        if token:
            try:
                mine = await self._load(code, allow_closed=allow_closed, grace=grace)
            except SessionNotFound:
                pass  # answered below, through the guard, as any unknown code is
            else:
                if token_matches(token, mine.token_hash):
                    return mine
        session = await self._load_guarded(code, client, allow_closed=allow_closed, grace=grace)
        if not self.settings.require_browser_token and not token:
            return session
        if not token:
            raise TokenMissing(
                "This endpoint is for the CODAP plugin and needs the session's browser token "
                "(Authorization: Bearer <browserToken>, or ?token= for EventSource)."
            )
        if not token_matches(token, session.token_hash):
            raise TokenInvalid("The browser token does not belong to this session. Open a new session in the plugin.")
        return session

    def manifest(self, session: SessionRecord) -> list[dict[str, Any]]:
        return session.tools if session.tools is not None else DEFAULT_TOOLS

    async def metadata(self, code: str, *, client: str | None = None) -> Metadata:
        session = await self.session_for_llm(code, client=client)
        return Metadata(MANIFEST_VERSION, self.manifest(session))

    def is_connected(self, session: SessionRecord) -> bool:
        """Seen within the grace, and not detached: a tab that said it left is gone at once, although its stream
        (on AWS it runs on after the client went) may have refreshed ``last_seen`` just before it ended."""
        if session.consumer == DETACHED or session.last_seen is None:
            return False
        return self.now() - session.last_seen <= self.settings.connected_grace_seconds

    async def status(self, code: str, *, client: str | None = None, token: str | None = None) -> SessionState:
        """The session as the LLM sees it. The pending requests are counted, never read (their arguments can be
        MAX_PENDING_BYTES_PER_SESSION), and each address gets RATE_LIMIT_STATUS_PER_IP status reads a minute.

        With the session's browser token it is also the plugin's sign of life while its stream cannot run (the
        stream function at its concurrency limit): the code's expiry slides, so waiting for room never costs the
        code. ``last_seen`` stays: a plugin that receives nothing is not connected."""
        if client is not None:
            await self.admit("status", client, self.settings.rate_limit_status_per_ip)
        session = await self.session_for_llm(code, client=client)
        if token and token_matches(token, session.token_hash):
            expires_at = self.now() + self.settings.session_ttl_seconds
            await self.io(self.store.update_session, code, expires_at=expires_at)
            session = session.with_(expires_at=max(expires_at, session.expires_at))
        pending = await self._read(self.store.count_pending, code, self.now())
        return SessionState(session, self.is_connected(session), pending.requests)

    async def touch(self, session: SessionRecord, *, consumer: str | None = None) -> None:
        """A sign of life from the plugin: slide the expiry and record when it was seen."""
        now = self.now()
        await self.io(
            self.store.update_session,
            session.code,
            expires_at=now + self.settings.session_ttl_seconds,
            last_seen=now,
            consumer=consumer,
        )

    async def close_session(self, code: str, token: str | None, *, client: str | None = None) -> int:
        """End the session: the stream gets ``closed`` and every pending request fails with session_closed."""
        # Closing is two writes (the mark, then each pending request failed). A retry after a store fault in
        # between must be able to finish the job, so an already-closed session is accepted here.
        session = await self.session_for_plugin(code, token, client=client, allow_closed=True)
        now = self.now()
        if session.closed_at is None:
            await self.io(self.store.update_session, code, closed_at=now)
        failed = 0
        for request in await self._read(self.store.pending_requests, code, 0, now):
            error = {"code": "session_closed", "message": "The CODAP session was ended before this request ran."}
            done = await self.io(self.store.complete_request, self._response(session, request.id, error=error))
            failed += int(done.fresh)
        self.notifier.notify(stream_key(code))
        self.notifier.notify(answers_key(code))
        return failed

    # --- requests (LLM) ---------------------------------------------------------------------------------

    async def submit(
        self,
        code: str,
        tool: str,
        args: Any,
        request_id: str | None = None,
        *,
        client: str | None = None,
        session: SessionRecord | None = None,
    ) -> tuple[RequestRecord, bool]:
        """Validate and durably queue a tool request. Returns (record, created); a retry returns (existing, False).
        ``session``: the session as the caller has just read it with ``session_for_llm`` (not read again)."""
        if request_id is not None:
            checked_request_id(
                request_id,
                "`id` must be a UUID or 1-64 letters, digits, '-' or '_'; leave it out to have one generated.",
            )
        limit = self.settings.rate_limit_request_per_code
        if session is None and client is not None and self.store.blocking_reads:
            # Independent calls to a store whose reads wait (DynamoDB's round trips, SQLite's worker threads), side by
            # side: one wait fewer per call. The memory store gains nothing (two tasks cost more than they save).
            found, admitted = await asyncio.gather(
                self.session_for_llm(code, client=client),
                self.admit("request", f"{client}:{code}", limit),
                return_exceptions=True,
            )
            for outcome in (found, admitted):  # an unknown or ended session says more than a rate limit
                if isinstance(outcome, BaseException):
                    raise outcome
            assert isinstance(found, SessionRecord)
            session = found
        else:
            if session is None:
                session = await self.session_for_llm(code, client=client)
            if client is not None:
                await self.admit("request", f"{client}:{code}", limit)
        spec = find_tool(self.manifest(session), tool)
        validate_args(spec, args)
        size = args_bytes(args)
        charged = await self._bounded(session, size, request_id, client)
        now = self.now()
        rid = request_id or self.ids()
        new = NewRequest(
            id=rid,
            tool=tool,
            args=args,
            fingerprint=fingerprint({"tool": tool, "args": args}),
            created_at=now,
            expires_at=now + self.settings.request_ttl_seconds,
        )
        try:
            record, created = await self.io(self.store.add_request, code, new, last_seq=session.last_seq)
        except SessionNotFound:
            await self._refund(charged)
            await self._load(code)  # ended or expired meanwhile: raise with the message that says what to do
            raise
        except BaseException:
            await self._refund(charged)
            raise
        if not created:
            await self._refund(charged)  # a retry stores nothing new
        if not created and record.fingerprint != new.fingerprint:
            raise DuplicateRequestId(
                f"Request id {rid!r} was already used for a different tool call in this session. "
                "Use a new id (or none) for a new request; resend identical content to retry.",
                request_id=rid,
            )
        if created:
            self.notifier.notify(stream_key(code))
            self.observer.request_queued(tool)
        return record, created

    async def _bounded(
        self, session: SessionRecord, size: int, request_id: str | None, client: str | None
    ) -> tuple[str, float, int] | None:
        """What a new request may add, checked before it is stored: a session holds at most
        MAX_PENDING_REQUESTS_PER_SESSION unanswered requests of MAX_PENDING_BYTES_PER_SESSION bytes together, and
        an address queues at most REQUEST_BYTES_PER_IP_PER_HOUR bytes across its sessions. A retry of a request
        already stored passes (it stores nothing). The pending count is read, then the request appended: requests
        sent at the same moment may each pass, so the count can overshoot by how many arrive at once (each session
        takes RATE_LIMIT_REQUEST_PER_CODE a minute). Returns the address's charge, for ``_refund``."""
        s = self.settings
        code = session.code
        for limit, name, what in (
            (s.max_pending_bytes_per_session, "MAX_PENDING_BYTES_PER_SESSION", "a session holds of pending requests"),
            (
                s.request_bytes_per_ip_per_hour if client is not None else size,
                "REQUEST_BYTES_PER_IP_PER_HOUR",
                "one address may queue in an hour",
            ),
        ):
            if size > limit:
                raise PayloadTooLarge(
                    f"This request's arguments are {size} bytes of JSON, more than the {limit} bytes {what} "
                    f"({name}): it can never be queued. Send smaller arguments (fewer cases or values per call).",
                    limit=limit,
                )
        pending = await self._read(self.store.count_pending, code, self.now())
        full = None
        if pending.requests >= s.max_pending_requests_per_session:
            full = (
                "pending_requests",
                s.max_pending_requests_per_session,
                f"This session already has {pending.requests} requests waiting for the CODAP plugin; it holds at "
                f"most {s.max_pending_requests_per_session} (MAX_PENDING_REQUESTS_PER_SESSION).",
            )
        elif pending.bytes + size > s.max_pending_bytes_per_session:
            full = (
                "pending_bytes",
                s.max_pending_bytes_per_session,
                f"This session's waiting requests hold {pending.bytes} bytes of arguments and this one {size} more; "
                f"a session holds at most {s.max_pending_bytes_per_session} (MAX_PENDING_BYTES_PER_SESSION).",
            )
        if full is not None and not await self._stored(code, request_id):
            scope, limit, said = full
            connected = self.is_connected(session)
            retry = 5 if connected else 60
            todo = (
                f"Wait for their answers, then send this again (in {retry} s)."
                if connected
                else "The CODAP plugin is not connected, so nothing runs them: ask the user to open the codap-relay "
                f"plugin in CODAP (they then run, or expire after {s.request_ttl_seconds} s), and send this again."
            )
            self.observer.rate_limited(scope)
            raise PendingLimit(f"{said} {todo}", retry_after=retry, scope=scope, limit=limit)
        if client is None:
            return None
        now = self.now()
        window = int(now // BYTES_WINDOW_SECONDS)
        window_end = (window + 1) * BYTES_WINDOW_SECONDS
        key = f"rl:bytes:{client}:{window}"
        total = await self.io(self.store.incr_counter, key, float(window_end), now, size)
        charged = (key, float(window_end), size)
        if total > s.request_bytes_per_ip_per_hour and not await self._stored(code, request_id):
            await self._refund(charged)  # what was refused takes nothing from the budget
            self.observer.rate_limited("request_bytes")
            retry = max(1, int(window_end - now + 0.999))
            raise ByteBudgetExceeded(
                f"This address has queued {total - size} bytes of requests this hour, across its sessions; "
                f"{s.request_bytes_per_ip_per_hour} is the most (REQUEST_BYTES_PER_IP_PER_HOUR), and this request "
                f"adds {size}. Send smaller arguments, or wait {retry} s for the next hour's budget.",
                retry_after=retry,
                scope="request_bytes",
                limit=s.request_bytes_per_ip_per_hour,
            )
        return charged

    async def _stored(self, code: str, request_id: str | None) -> bool:
        """Whether ``request_id`` is already a request of the session: then a send of it is a retry."""
        return request_id is not None and await self._read(self.store.get_request, code, request_id) is not None

    async def _refund(self, charged: tuple[str, float, int] | None) -> None:
        """Give back bytes charged to an address for a request that was not stored (best effort)."""
        if charged is not None:
            key, window_end, size = charged
            with contextlib.suppress(StoreUnavailable):
                await self.io(self.store.incr_counter, key, window_end, self.now(), -size)

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
        """Queue a tool request and wait up to ``wait`` s for its answer (``POST /request?wait``, MCP tools/call).
        A request created here has no answer yet, so waiting starts without reading: the first read is the one
        that can find the answer. ``on_wait``: called with the request as it stands (queued, delivered) once it
        is queued and then every ``every`` s while no answer has come (MCP progress)."""
        with self.notifier.listen(answers_key(code)) as listener:  # before the request exists: no wake-up missed
            record, created = await self.submit(code, tool, args, request_id, client=client, session=session)
            known = Answer(record, None) if created else None
            if on_wait is None:
                return record, await self._wait(code, record.id, wait, listener, client=client, known=known)
            deadline = time.monotonic() + max(0.0, min(wait, self.settings.max_wait_seconds))
            current = known or await self.answer(code, record.id, client=client)
            while not current.done and current.request is not None:
                await on_wait(current.request)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                current = await self._wait(code, record.id, min(every, remaining), listener, client=client)
            return record, current

    async def cancel(self, code: str, request_ids: list[str]) -> list[str]:
        """Withdraw requests the plugin has not received yet (MCP ``notifications/cancelled``): each one still
        queued is answered with the error ``cancelled``, so the stream never delivers it and a caller waiting on it
        learns so. One already delivered is left to finish (its answer is kept, the client drops it). Returns the
        ids withdrawn."""
        session = await self._load(code)
        withdrawn = []
        marks = []
        for request_id in request_ids:
            request = await self._read(self.store.get_request, code, request_id)
            if request is None or request.status != "queued":
                continue
            error = {
                "code": "cancelled",
                "message": "The MCP client cancelled this request before the CODAP plugin received it; it never ran.",
            }
            done = await self.io(self.store.complete_request, self._response(session, request_id, error=error))
            if done.fresh:
                withdrawn.append(request_id)
                marks.append(withdrawn_mark(request.tool, request_id))
        if marks:
            # for the plugin's activity log: its stream tells it (delivery.py), though it never received the request
            with contextlib.suppress(StoreUnavailable):
                await self.io(
                    self.store.note_changes, code, marks, session.expires_at + self.settings.session_ttl_seconds
                )
        if withdrawn:
            self.notifier.notify(stream_key(code))
            self.notifier.notify(answers_key(code))
        return withdrawn

    # --- change marks (the plugin says what changed in the document; subscriptions watch them) ---------------

    async def note_changes(
        self, code: str, token: str | None, *, datasets: list[str], listed: bool, client: str | None = None
    ) -> ChangeMarks:
        """The plugin heard CODAP say the document changed: record it for watchers (the MCP subscriptions of a
        long-lived server) and wake those in this process. ``listed``: datasets or components came or went."""
        session = await self.session_for_plugin(code, token, client=client)
        marks = (["list"] if listed else []) + [f"dataset:{name}" for name in dict.fromkeys(datasets)]
        noted = await self.io(
            self.store.note_changes, code, marks, session.expires_at + self.settings.session_ttl_seconds
        )
        self.notifier.notify(changes_key(code))
        return noted

    async def changes(self, code: str) -> ChangeMarks | None:
        return await self._read(self.store.get_changes, code)

    async def pending_ids(self, code: str, prefix: str) -> list[str]:
        """The ids of this session's pending requests that start with ``prefix``."""
        pending = await self._read(self.store.pending_requests, code, 0, self.now())
        return [r.id for r in pending if r.id.startswith(prefix)]

    async def answer(self, code: str, request_id: str, *, client: str | None = None) -> Answer:
        """The LLM's view of one request. Results outlive the pairing code; a request still waiting does not:
        if its session expired or was ended it will never run, and the LLM is told so (404 with the reason)."""
        checked_request_id(request_id, "`id` must be the request id that POST /request returned.")
        self.guard.check(client)
        found: Lookup = await self._read(self.store.lookup, code, request_id)
        now = self.now()
        if found.response is not None and found.response.expires_at > now:
            return Answer(None, found.response)
        request = found.request
        if request is None:  # unknown, or answered long enough ago that the answer has expired
            if found.session is None:
                await self.guard.count_unknown(client)
            raise RequestNotFound(
                f"No request {request_id!r} in this session (wrong id or code, or its result has expired).",
                request_id=request_id,
            )
        if request.expires_at <= now:
            raise RequestExpired(
                f"Request {request_id!r} expired after {self.settings.request_ttl_seconds} s without an answer: "
                "the CODAP plugin was not there to run it. Check GET /api/sessions/{code} and send it again.",
                request_id=request_id,
            )
        self.live(found.session)
        return Answer(request, None)

    async def wait_answer(self, code: str, request_id: str, wait: float, *, client: str | None = None) -> Answer:
        """Long-poll: return as soon as the answer lands, or the current state after ``wait`` seconds."""
        with self.notifier.listen(answers_key(code)) as listener:
            return await self._wait(code, request_id, wait, listener, client=client)

    async def _wait(
        self,
        code: str,
        request_id: str,
        wait: float,
        listener: Listener,
        *,
        client: str | None,
        known: Answer | None = None,
    ) -> Answer:
        """The whole view (``answer``) on the first read and the last; in between only the response is read,
        which is all that can end the wait early. ``known``: the state just created, which spares the first read."""
        deadline = time.monotonic() + max(0.0, min(wait, self.settings.max_wait_seconds))
        current = known if known is not None else await self.answer(code, request_id, client=client)
        while not current.done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return await self.answer(code, request_id, client=client)
            woken = await listener.wait(self.wait_slice(remaining))
            if not woken and self.store.pushes:  # every write is pushed here: no wake-up means the time is up
                continue
            response = await self._read(self.store.get_response, code, request_id)
            if response is not None:
                current = (
                    await self.answer(code, request_id, client=client)
                    if response.expires_at <= self.now()
                    else Answer(None, response)
                )
        return current

    # --- responses (plugin) -----------------------------------------------------------------------------

    def _response(
        self, session: SessionRecord, request_id: str, *, result: Any = None, error: dict[str, Any] | None = None
    ) -> ResponseRecord:
        now = self.now()
        body: dict[str, Any] = {"error": error} if error is not None else {"result": result}
        error_code = None
        if error is not None:
            raw = error.get("code")
            error_code = raw if isinstance(raw, str) and raw else "plugin_error"
        return ResponseRecord(
            code=session.code,
            id=request_id,
            status="failed" if error is not None else "completed",
            body=body,
            fingerprint=fingerprint(body),
            timestamp=now,
            expires_at=now + self.settings.response_ttl_seconds,
            error_code=error_code,
        )

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
        session = await self.session_for_plugin(code, token, client=client)
        checked_request_id(request_id, "`id` must be the id of the tool-request event being answered.")
        if error is None:
            check_result(result)
        response = self._response(session, request_id, result=result, error=error)
        try:
            done = await self.io(self.store.complete_request, response, now=response.timestamp)
        except RequestExpired as exc:
            raise RequestExpired(
                f"Request {request_id!r} expired before it was answered; the LLM was told so.",
                request_id=request_id,
            ) from exc
        except RequestNotFound as exc:
            raise RequestNotFound(
                f"This session has no request {request_id!r}; answer only the ids the stream delivered.",
                request_id=request_id,
            ) from exc
        stored = done.response
        if not done.fresh and stored.fingerprint != response.fingerprint:
            raise AlreadyAnswered(
                f"Request {request_id!r} was already answered with a different result; the first answer stands.",
                request_id=request_id,
            )
        if done.fresh:
            self.notifier.notify(answers_key(code))
            latency = None if done.queued_at is None else (stored.timestamp - done.queued_at) * 1000
            self.observer.response_completed(stored.status, latency)
        if self.touch_due(session):
            with contextlib.suppress(StoreUnavailable):  # the answer is durable; a missed sign of life is no failure
                await self.touch(session)
        return stored

    def _log_item(self, r: RequestRecord, answer: dict[str, Any] | None = None) -> LogItem:
        return LogItem(r, "expired" if r.pending and r.expires_at <= self.now() else r.status, answer)

    async def activity_log(self, code: str, token: str | None, *, client: str | None = None) -> list[LogItem]:
        """Every request, without arguments or answers (small: never paged). Readable by the plugin until
        LOG_GRACE_SECONDS after the session ended, so its trace can be saved."""
        await self.session_for_plugin(code, token, client=client, grace=self.settings.log_grace_seconds)
        return [self._log_item(r) for r in await self._read(self.store.list_requests, code)]

    async def log_page(
        self,
        code: str,
        token: str | None,
        *,
        size_of: Callable[[LogItem], int],
        after: int = 0,
        client: str | None = None,
    ) -> tuple[list[LogItem], int | None]:
        """The log from seq ``after`` on, each request with its answer (the trace view, the full log). Returns
        (items, the ``after`` of the next page or None at the end); a page holds about LOG_PAGE_BYTES as
        ``size_of`` (the entry point's own entry) counts."""
        await self.session_for_plugin(code, token, client=client, grace=self.settings.log_grace_seconds)
        items: list[LogItem] = []
        size = 0
        for r in await self._read(self.store.list_requests, code):
            if r.seq <= after:
                continue
            if items and size >= LOG_PAGE_BYTES:
                return items, items[-1].request.seq
            response = await self._read(self.store.get_response, code, r.id)
            item = self._log_item(r, None if response is None else response.body)
            size += size_of(item)
            items.append(item)
        return items, None

    # --- the stream (plugin) ----------------------------------------------------------------------------

    async def detach(self, code: str, token: str | None, tab: str, *, client: str | None = None) -> bool:
        """The plugin's tab ``tab`` is going away (pagehide): its stream ends at its next poll, and the LLM sees
        the plugin as not connected at once. A host that keeps a function running after its client left (AWS
        Lambda's response streaming) cannot tell otherwise. Returns whether a stream of that tab owned delivery;
        a newer tab's stream is never touched."""
        await self.session_for_plugin(code, token, client=client, allow_closed=True)
        detached = await self.io(self.store.detach, code, tab)
        self.notifier.notify(stream_key(code))  # a stream waiting in this process learns it now
        return detached

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
        """Authenticate first (errors raise before any byte is sent), then return the event iterator."""
        session = await self.session_for_plugin(code, token, client=client)
        # The tab's id leads the consumer so that the tab can detach its streams (``detach``); the suffix makes
        # each connection its own consumer, so a reconnect supersedes a stream the host kept running.
        consumer = self.ids() if tab is None else f"{tab}.{self.ids()}"
        await self.touch(session, consumer=consumer)
        self.notifier.notify(stream_key(code))  # an older stream of this session learns it is superseded
        return Delivery(self, session, consumer).events(cursor, poll=poll, max_seconds=max_seconds)
