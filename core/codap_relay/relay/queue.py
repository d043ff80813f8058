"""The request queue: the LLM's tool requests, validated, bounded and durably queued in order; the ones still
pending listed; and the ones the plugin has not received yet withdrawn (cancel)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

from ..clock import Clock, IdFactory
from ..delivery import withdrawn_mark
from ..errors import BadInput, DuplicateRequestId, PayloadTooLarge, PendingLimit, SessionNotFound, StoreUnavailable
from ..jsonvalues import check_finite
from ..manifest import find_tool, validate_args
from ..notify import Notifier, answers_key, stream_key
from ..observe import Observer
from ..records import NewRequest, RequestRecord, SessionRecord, fingerprint, push_connection
from ..settings import Settings
from ..store.base import Charge, ChargeRefused, args_bytes, pending_totals
from .limits import RateLimits
from .outcomes import new_response
from .presence import Presence
from .push_out import PushSender
from .sessions import Sessions
from .store_io import StoreIO

REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # \Z: "$" would let a trailing newline through
# The ids of the relay's own requests to the plugin (the OAuth consent question): no caller may use one, and an
# answer to one needs the browser token whatever REQUIRE_BROWSER_TOKEN says (responses.py).
OWN_ID_PREFIX = "consent-"


def checked_request_id(request_id: Any, message: str) -> str:
    """A request id as ids must be (the caller's own, or ours); else BadInput on field ``id`` with ``message``."""
    if not isinstance(request_id, str) or not REQUEST_ID_RE.match(request_id):
        raise BadInput(message, field="id")
    return request_id


class RequestQueue:
    def __init__(
        self,
        settings: Settings,
        store_io: StoreIO,
        clock: Clock,
        ids: IdFactory,
        *,
        sessions: Sessions,
        presence: Presence,
        limits: RateLimits,
        notifier: Notifier,
        observer: Observer,
        push: PushSender,
    ) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.ids = ids
        self.sessions = sessions
        self.presence = presence
        self.limits = limits
        self.notifier = notifier
        self.observer = observer
        self.push = push  # its publisher None: no push channel

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
        charges: Sequence[Charge] = (),
    ) -> tuple[RequestRecord, bool]:
        """Validate and durably queue a tool request. Returns (record, created); a retry returns (existing, False).
        ``session``: the session as the caller has just read it with ``session_for_llm`` (not read again).
        ``own``: a request of the relay's own to the plugin (the OAuth consent question), named by no manifest, so
        no caller can send one. ``charges``: what else it counts against with its append (an OAuth call's windows:
        ``RateLimits.grant_charges``)."""
        if request_id is not None:
            checked_request_id(
                request_id,
                "`id` must be a UUID or 1-64 letters, digits, '-' or '_'; leave it out to have one generated.",
            )
            if not own and request_id.startswith(OWN_ID_PREFIX):
                raise BadInput(
                    f"Request ids starting with {OWN_ID_PREFIX!r} are the relay's own; use another.", field="id"
                )
        if session is None:
            session = await self.sessions.for_llm(code, client=client)
        check_finite(args, "args")  # an infinity stored would reach the plugin as `Infinity`, which it cannot parse
        if not own:
            validate_args(find_tool(await self.sessions.manifest(session), tool), args)
        size = args_bytes(args)
        await self._bounded(session, size, request_id, client)
        s = self.settings
        counted = [*charges]
        if client is not None:
            per_code, per_hour = s.rate_limit_request_per_code, s.request_bytes_per_ip_per_hour
            counted += self.limits.request_charges(client, size, per_code=per_code, bytes_per_hour=per_hour)
        now = self.clock.now()
        rid = request_id or self.ids()
        new = NewRequest(
            id=rid,
            tool=tool,
            args=args,
            fingerprint=fingerprint({"tool": tool, "args": args}),
            created_at=now,
            expires_at=now + s.request_ttl_seconds,
            # Posted to a push plugin at once, so stored as delivered to it if it still has the session then: the
            # post needs no read and no write of its own (push_out.py).
            deliver_to=session.consumer if self.push.can_post(session) else None,
            token_hash=session.token_hash,
        )
        try:
            record, created = await self.store_io.run(
                self.store.add_request, code, new, last_seq=session.last_seq, charges=counted
            )
        except SessionNotFound:
            await self.sessions.load(code)  # ended or expired meanwhile: raise with the message that says what to do
            raise
        except ChargeRefused as exc:
            raise self.limits.refused(exc) from None
        if not created and record.fingerprint != new.fingerprint:
            raise DuplicateRequestId(
                f"Request id {rid!r} was already used for a different tool call in this session. "
                "Use a new id (or none) for a new request; resend identical content to retry.",
                request_id=rid,
            )
        if created:
            self.notifier.notify(stream_key(code))
            self.observer.request_queued(tool)
            # Before the 202 (a Lambda function cannot work after it answers); nothing to do, and no read, unless
            # the session is delivered over push.
            await self.push.new_request(session, record)
        return record, created

    async def _bounded(self, session: SessionRecord, size: int, request_id: str | None, client: str | None) -> None:
        """What a new request may add, checked before it is stored: a session holds at most
        MAX_PENDING_REQUESTS_PER_SESSION unanswered requests of MAX_PENDING_BYTES_PER_SESSION bytes together, and
        no request can be larger than what an address may queue in an hour (REQUEST_BYTES_PER_IP_PER_HOUR, counted
        with the append). A retry of a request already stored passes (it stores nothing). The pending requests
        are those the session read lists (DynamoDB), else counted: requests sent at the same moment may each pass,
        so the count can overshoot by how many arrive at once (each session takes RATE_LIMIT_REQUEST_PER_CODE a
        minute)."""
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
        now = self.clock.now()
        if session.pending is not None:
            pending = pending_totals(session.pending, now)
        else:
            pending = await self.store_io.read(self.store.count_pending, code, now)
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
            connected = self.presence.is_connected(session)
            retry = 5 if connected else 60
            todo = (
                f"Wait for their answers, then send this again (in {retry} s)."
                if connected
                else "The CODAP plugin is not connected, so nothing runs them: ask the user to open the codap-relay "
                f"plugin in CODAP (they then run, or expire after {s.request_ttl_seconds} s), and send this again."
            )
            self.observer.rate_limited(scope)
            raise PendingLimit(f"{said} {todo}", retry_after=retry, scope=scope, limit=limit)

    async def _stored(self, code: str, request_id: str | None) -> bool:
        """Whether ``request_id`` is already a request of the session: then a send of it is a retry."""
        return request_id is not None and await self.store_io.read(self.store.get_request, code, request_id) is not None

    async def pending_ids(self, code: str, prefix: str) -> list[str]:
        """The ids of this session's pending requests that start with ``prefix`` (their arguments unread)."""
        return [r.id for r in await self.store_io.read(self.store.pending_refs, code, prefix, self.clock.now())]

    async def cancel(self, code: str, request_ids: list[str], *, client: str | None = None) -> list[str]:
        """Withdraw requests the plugin has not received yet (MCP ``notifications/cancelled``): each one still
        queued is answered with the error ``cancelled``, so the stream never delivers it and a caller waiting on it
        learns so. One already delivered is left to finish (its answer is kept, the client drops it). Returns the
        ids withdrawn. Each request is found by its id, its arguments unread; a ``client``'s cancels count against
        the same per-minute allowance as its requests (RATE_LIMIT_REQUEST_PER_CODE), in a window of their own."""
        if client is not None:
            await self.limits.admit("cancel", f"{client}:{code}", self.settings.rate_limit_request_per_code)
        session = await self.sessions.load(code)
        withdrawn = []
        marks = []
        now = self.clock.now()
        for request_id in request_ids:
            found = await self.store_io.read(self.store.pending_refs, code, request_id, now)
            request = next((r for r in found if r.id == request_id), None)
            if request is None or request.status != "queued":
                continue
            error = {
                "code": "cancelled",
                "message": "The MCP client cancelled this request before the CODAP plugin received it; it never ran.",
            }
            response = new_response(code, request_id, self.clock.now(), self.settings.response_ttl_seconds, error=error)
            done = await self.store_io.run(self.store.complete_request, response)
            if done.fresh:
                withdrawn.append(request_id)
                marks.append(withdrawn_mark(request.tool, request_id))
        if marks:
            # for the plugin's activity log: its stream tells it (delivery.py), though it never received the request
            with contextlib.suppress(StoreUnavailable):
                await self.store_io.run(
                    self.store.note_changes, code, marks, session.expires_at + self.settings.session_ttl_seconds
                )
        if withdrawn:
            self.notifier.notify(stream_key(code))
            self.notifier.notify(answers_key(code))
            if push_connection(session.consumer) is not None:  # a push plugin's log shows the arguments too
                told = [await self.store_io.read(self.store.get_request, code, rid) for rid in withdrawn]
                await self.push.withdrawn(session, [r for r in told if r is not None])
        return withdrawn
