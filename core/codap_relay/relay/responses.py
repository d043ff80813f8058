"""Responses: the plugin's answers, and the LLM's reads of them (one request's state, a wait for its answer, and a
call that queues a request and waits)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..clock import Clock
from ..codes import hash_token
from ..errors import AlreadyAnswered, RequestExpired, RequestNotFound, SessionNotFound
from ..guard import GuessingGuard
from ..jsonvalues import check_finite
from ..notify import Listener, Notifier, answers_key
from ..observe import Observer
from ..records import Lookup, RequestRecord, ResponseRecord, SessionRecord
from ..settings import Settings
from ..store.base import Charge
from ..tool_content import check_result
from .outcomes import new_response
from .presence import Presence
from .queue import OWN_ID_PREFIX, RequestQueue, checked_request_id
from .sessions import Sessions
from .store_io import StoreIO


@dataclass(frozen=True)
class Answer:
    """What the LLM reads back: a response (done) or the request's current state (not yet)."""

    request: RequestRecord | None
    response: ResponseRecord | None

    @property
    def done(self) -> bool:
        return self.response is not None


class Responses:
    def __init__(
        self,
        settings: Settings,
        store_io: StoreIO,
        clock: Clock,
        *,
        guard: GuessingGuard,
        sessions: Sessions,
        presence: Presence,
        queue: RequestQueue,
        notifier: Notifier,
        observer: Observer,
    ) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.guard = guard
        self.sessions = sessions
        self.presence = presence
        self.queue = queue
        self.notifier = notifier
        self.observer = observer

    # --- the LLM's side ---------------------------------------------------------------------------------

    async def answer(self, code: str, request_id: str, *, client: str | None = None) -> Answer:
        """The LLM's view of one request. Results outlive the pairing code; a request still waiting does not:
        if its session expired or was ended it will never run, and the LLM is told so (404 with the reason)."""
        checked_request_id(request_id, "`id` must be the request id that POST /request returned.")
        self.guard.check(client)
        found: Lookup = await self.store_io.read(self.store.lookup, code, request_id)
        now = self.clock.now()
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
        self.sessions.live(found.session)
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
        deadline: float | None = None,
        started: float | None = None,
    ) -> Answer:
        """The whole view (``answer``) on the first read and the last; in between only the response is read,
        which is all that can end the wait early. ``known``: the state just created, which spares the first read.
        ``deadline``: when the wait ends (time.monotonic), if it started before this call; ``started``: when the
        caller began waiting (polls come further apart as the wait goes on: ``StoreIO.answer_slice``)."""
        if started is None:
            started = time.monotonic()
        if deadline is None:
            deadline = self._deadline(wait)
        current = known if known is not None else await self.answer(code, request_id, client=client)
        while not current.done:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                return await self.answer(code, request_id, client=client)
            woken = await listener.wait(self.store_io.answer_slice(remaining, waited=now - started))
            if not woken and self.store.pushes:  # every write is pushed here: no wake-up means the time is up
                continue
            response = await self.store_io.read(self.store.get_response, code, request_id)
            if response is not None:
                current = (
                    await self.answer(code, request_id, client=client)
                    if response.expires_at <= self.clock.now()
                    else Answer(None, response)
                )
        return current

    def _deadline(self, wait: float) -> float:
        return time.monotonic() + max(0.0, min(wait, self.settings.max_wait_seconds))

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
        charges: Sequence[Charge] = (),
    ) -> tuple[RequestRecord, Answer]:
        """Queue a tool request and wait up to ``wait`` s for its answer (``POST /request?wait``, MCP tools/call).
        A request created here has no answer yet, so waiting starts without reading: the first read is the one
        that can find the answer. ``on_wait``: called with the request as it stands (queued, delivered) once it
        is queued and then every ``every`` s while no answer has come (MCP progress). ``charges``: as for
        ``RequestQueue.submit``."""
        # The wait's time runs from before the submit: its writes and its publish to a push connection count
        # toward it, so a ?wait call ends within its wait (and API Gateway's 29 s) however slow they were.
        started = time.monotonic()
        deadline = self._deadline(wait)
        with self.notifier.listen(answers_key(code)) as listener:  # before the request exists: no wake-up missed
            record, created = await self.queue.submit(
                code, tool, args, request_id, client=client, session=session, charges=charges
            )
            known = Answer(record, None) if created else None
            if on_wait is None:
                return record, await self._wait(
                    code, record.id, wait, listener, client=client, known=known, deadline=deadline, started=started
                )
            current = known or await self.answer(code, record.id, client=client)
            while not current.done and current.request is not None:
                await on_wait(current.request)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # What is known now (just created, or the last slice's closing read) needs no read again.
                current = await self._wait(
                    code, record.id, min(every, remaining), listener, client=client, known=current, started=started
                )
            return record, current

    # --- the plugin's side ------------------------------------------------------------------------------

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
        """The plugin's answer, checked against its session's browser token by the write that stores it: the
        session is read only when the answer is refused, to say why (unknown code, wrong token, ended), so an
        answer costs a store one write (DynamoDB two: the request's item, then the session's). Without a token
        (REQUIRE_BROWSER_TOKEN=false) the session is checked first. The relay's own question (OAuth consent) is
        answered with the browser token in every mode: with REQUIRE_BROWSER_TOKEN=false a code alone is the plugin
        role, and must still never become a grant."""
        own = isinstance(request_id, str) and request_id.startswith(OWN_ID_PREFIX)
        if not token:
            await self.sessions.for_plugin(code, token, client=client, strict=own)  # TokenMissing, unless allowed
        checked_request_id(request_id, "`id` must be the id of the tool-request event being answered.")
        # Stored, an infinity would make every read of the answer fail (GET /response, MCP, the activity log).
        check_finite(result, "result")
        check_finite(error, "error")
        if error is None:
            check_result(result)
        response = new_response(
            code, request_id, self.clock.now(), self.settings.response_ttl_seconds, result=result, error=error
        )
        token_hash = hash_token(token) if token else None
        now = response.timestamp
        try:
            # The answer is the plugin's sign of life too, in the same write (the code's expiry slides with it).
            done = await self.store_io.run(
                self.store.complete_request,
                response,
                now=now,
                token_hash=token_hash,
                alive_until=now + self.settings.session_ttl_seconds,
            )
        except RequestExpired as exc:
            raise RequestExpired(
                f"Request {request_id!r} expired before it was answered; the LLM was told so.",
                request_id=request_id,
            ) from exc
        except SessionNotFound:
            await self.sessions.for_plugin(code, token, client=client, strict=own)  # raises it with what to do now
            raise
        except RequestNotFound as exc:
            if token_hash is not None:  # an unknown or ended code, or another session's token, says so first
                await self.sessions.for_plugin(code, token, client=client, strict=own)
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
        return stored
