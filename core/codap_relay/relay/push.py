"""The push channel (a WebSocket per plugin tab, API Gateway's on AWS): the plugin's ``attach``, ``resume`` and
``ping`` messages, and the fetch of a request too large to push. What the relay posts is push_out.py's.

Each message is authenticated with the browser token like every plugin-role call: a Lambda function keeps nothing
between messages, so the message names the session and the session's consumer names the connection that owns its
delivery. An attach also stores which session the connection took, which is all its $disconnect needs to detach it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..clock import Clock
from ..codes import normalise_code
from ..delivery import withdrawn_of
from ..errors import (
    BadInput,
    NotAttached,
    RateLimited,
    RelayError,
    RequestNotFound,
    SessionNotFound,
    StoreUnavailable,
    Superseded,
    TokenInvalid,
    TokenMissing,
    client_fields,
)
from ..jsonvalues import dumps, loads
from ..notify import Notifier, stream_key
from ..observe import Observer
from ..records import (
    CONNECTION_RECORD_SECONDS,
    DETACHED,
    TAB_RE,
    ConnectionRecord,
    RequestRecord,
    SessionRecord,
    push_connection,
    push_consumer,
)
from ..settings import Settings
from .limits import LocalRate
from .presence import Presence
from .publisher import Outcome
from .push_out import PushSender
from .responses import Responses
from .sessions import Sessions
from .store_io import StoreIO

log = logging.getLogger("codap_relay.push")


class PushChannel:
    def __init__(
        self,
        settings: Settings,
        store_io: StoreIO,
        clock: Clock,
        *,
        sender: PushSender,
        sessions: Sessions,
        responses: Responses,
        presence: Presence,
        notifier: Notifier,
        observer: Observer,
    ) -> None:
        self.settings = settings
        self.rate = LocalRate(clock, observer, "push message")
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.sender = sender
        self.sessions = sessions
        self.responses = responses
        self.presence = presence
        self.notifier = notifier

    async def message(self, connection_id: str, body: str | None, *, client: str | None = None) -> None:
        """One message from a connection. Every reply is posted; nothing raises. A bad message, or one past the
        connection's rate, gets an error and the connection is closed: the plugin never sends one, and a client
        that does must not hold a socket that costs every message it sends."""
        if self.sender.publisher is None:
            raise RuntimeError("the push channel needs PUSH_URL and PUSH_ENDPOINT set")
        try:
            self.rate.admit(connection_id, self.settings.rate_limit_push_messages_per_connection)
            message = parse_message(body)
            action = message["action"]
            if action == "attach":
                await self.attach(connection_id, message, client=client)
            elif action == "answer":
                await self.answer(connection_id, message, client=client)
            else:
                session = await self._session(message, client)
                if action == "resume":
                    await self.resume(connection_id, session, after_of(message))
                else:
                    await self.ping(connection_id, session, after_of(message))
        except RelayError as exc:
            await self._refuse(connection_id, exc)
        except Exception as exc:  # never crash on a message; the plugin's watchdog reconnects if it must
            log.exception(dumps({"push": "message_failed", "fault": type(exc).__name__}))
            said = "The relay could not handle this message (its log says why); send it again or reconnect."
            await self.sender.post(connection_id, {"event": "error", "code": "internal_error", "message": said})

    async def _refuse(self, connection_id: str, exc: RelayError) -> None:
        """A domain error as the connection hears it; those that end its delivery also close it."""
        if isinstance(exc, BadInput):
            await self.sender.end(connection_id, error_event("bad_input", exc))
        elif isinstance(exc, StoreUnavailable):  # stays open: the next ping tries again
            await self.sender.post(connection_id, error_event(exc.error, exc))
        elif isinstance(exc, Superseded):
            await self.sender.end(connection_id, {"event": "superseded"})
        elif isinstance(exc, SessionNotFound) and exc.reason in ("closed", "expired"):
            await self.sender.end(connection_id, {"event": exc.reason})
        elif isinstance(exc, (NotAttached, SessionNotFound, TokenMissing, TokenInvalid, RateLimited)):
            await self.sender.end(connection_id, error_event(exc.error, exc))
        else:
            await self.sender.post(connection_id, error_event(exc.error, exc))

    async def _session(self, message: dict[str, Any], client: str | None) -> SessionRecord:
        if "code" not in message:
            raise BadInput(
                f'"{message["action"]}" carries the session\'s "code" and "token", as "attach" does: the relay keeps '
                "nothing per connection, so each message names its session.",
                field="code",
            )
        code = normalise_code(message.get("code"))
        token = message.get("token")
        return await self.sessions.for_plugin(code, token if isinstance(token, str) else None, client=client)

    async def attach(self, connection_id: str, message: dict[str, Any], *, client: str | None = None) -> None:
        """Authenticate, make this connection the session's consumer (superseding any other), touch presence,
        then resume from ``after``, sending every withdrawn mark as an opening SSE stream does."""
        tab = message.get("tab")
        if not isinstance(tab, str) or not TAB_RE.fullmatch(tab):
            raise BadInput("`tab` must be the plugin page's id: 8 to 64 letters, digits, `-` or `_`.", field="tab")
        after = after_of(message)
        session = await self._session(message, client)
        consumer = push_consumer(tab, connection_id)
        await self.presence.touch(session, consumer=consumer)
        # Which session this connection took, for its $disconnect (which names nothing else): one small write per
        # attach, so a closed tab shows as gone at once instead of after its missed pings.
        record = ConnectionRecord(connection_id, session.code, consumer, self.clock.now() + CONNECTION_RECORD_SECONDS)
        await self.store_io.run(self.store.put_connection, record)
        self.notifier.notify(stream_key(session.code))  # an SSE stream of this session in this process ends now
        old = push_connection(session.consumer)
        if old is not None and old != connection_id:
            await self.sender.end(old, {"event": "superseded"})
        await self._send_from(connection_id, session, consumer, after, attach=True)

    async def answer(self, connection_id: str, message: dict[str, Any], *, client: str | None = None) -> None:
        """The plugin's answer to a request, over its socket rather than ``POST /response`` (a WebSocket message
        costs less than a REST request): the same checks and the same store write (``Responses.respond``), told
        back as ``answered`` or ``answer-refused`` (with the HTTP status ``POST /response`` would have had, so the
        plugin treats both alike). A refusal is about this answer only: the connection stays."""
        request_id = message.get("id")
        try:
            if not isinstance(request_id, str):
                raise BadInput('An answer names the request it answers: "id".', field="id")
            error = message.get("error")
            if ("result" in message) == (error is not None) or not (error is None or isinstance(error, dict)):
                raise BadInput('An answer carries exactly one of "result" or "error" (an object).', field="result")
            token = message.get("token")
            await self.responses.respond(
                normalise_code(message.get("code")),
                token if isinstance(token, str) else None,
                request_id,
                result=message.get("result"),
                error=error,
                client=client,
            )
        except RelayError as exc:
            refusal = {"event": "answer-refused", "id": request_id, "status": status_of(exc)}
            await self.sender.post(connection_id, {**error_event(exc.error, exc), **refusal})
            return
        await self.sender.post(connection_id, {"event": "answered", "id": request_id})

    async def disconnected(self, connection_id: str) -> bool:
        """The connection closed ($disconnect): detach the consumer it attached as, if that one still owns its
        session (a newer tab's is never touched). True when it did."""
        record = await self.store_io.run(self.store.take_connection, connection_id, self.clock.now())
        if record is None:
            return False
        detached = await self.store_io.run(self.store.detach, record.code, record.consumer)
        self.notifier.notify(stream_key(record.code))
        return detached

    async def resume(self, connection_id: str, session: SessionRecord, after: int) -> None:
        await self._send_from(connection_id, session, self._owner(session, connection_id), after, attach=False)

    async def ping(self, connection_id: str, session: SessionRecord, after: int) -> None:
        """A sign of life: presence when due, a heartbeat, and a resume if requests came that it did not hear of."""
        consumer = self._owner(session, connection_id)
        if self.presence.touch_due(session):
            await self.presence.touch(session)
        await self.sender.post(connection_id, {"event": "heartbeat"})
        if session.last_seq > after:
            await self._send_from(connection_id, session, consumer, after, attach=False)

    def _owner(self, session: SessionRecord, connection_id: str) -> str:
        """This connection's consumer, if it owns the session's delivery; else NotAttached (Superseded when another
        consumer owns it)."""
        if push_connection(session.consumer) == connection_id:
            assert session.consumer is not None
            return session.consumer
        raise lost(session.consumer)

    async def _send_from(
        self, connection_id: str, session: SessionRecord, consumer: str, after: int, *, attach: bool
    ) -> None:
        """Every unanswered request after ``after`` in seq order (marked delivered), then ``resumed``. Withdrawn
        marks first: all of them on attach (the plugin shows each once, by id), else those past ``after``."""
        code = session.code
        if after > session.last_seq:  # the plugin remembers more than this session issued: start over, and say so
            await self.sender.post(
                connection_id, {"event": "cursor-reset", "lastEventId": after, "lastSeq": session.last_seq}
            )
            after = 0
        current, pending = await self.store_io.run(self.store.deliver, code, consumer, after, self.clock.now())
        current = self.sessions.live(current)
        if current.consumer != consumer:
            raise lost(current.consumer)
        for withdrawn in await self._withdrawn(code, None if attach else after):
            if await self.sender.post(connection_id, withdrawn) is Outcome.GONE:
                await self.sender.gone(code, consumer)
                return
        outcome, unsent = await self.sender.requests(code, consumer, pending)
        if outcome is Outcome.GONE:
            return
        # upTo vouches that nothing up to it is still to come: never past a request whose post is unknown (the
        # plugin would move its cursor past it, and it would wait delivered and never run). The next ping, from
        # the cursor this sets, sends it again.
        up_to = unsent.seq - 1 if unsent is not None else max([current.last_seq, *(r.seq for r in pending)])
        resumed: dict[str, Any] = {"event": "resumed", "after": after, "upTo": up_to}
        if attach:
            resumed["pingSeconds"] = self.settings.push_ping_seconds
        if await self.sender.post(connection_id, resumed) is Outcome.GONE:
            await self.sender.gone(code, consumer)

    async def _withdrawn(self, code: str, after: int | None) -> list[dict[str, Any]]:
        """Withdrawn messages for the session's withdrawn marks (``after``: only requests with a later seq)."""
        marks = await self.store_io.read(self.store.get_changes, code)
        found = []
        for mark in sorted(marks.marks, key=marks.marks.__getitem__) if marks else ():
            gone = withdrawn_of(mark)
            if gone is None:
                continue
            request = await self.store_io.read(self.store.get_request, code, gone["id"])
            if after is not None and (request is None or request.seq <= after):
                continue
            found.append({"event": "withdrawn", **gone, "args": request.args if request is not None else {}})
        return found

    async def fetch(self, code: str, token: str | None, request_id: str, *, client: str | None = None) -> RequestRecord:
        """A request the plugin was pointed at (too large to push): plugin role; served even once answered."""
        await self.sessions.for_plugin(code, token, client=client)
        request = await self.store_io.read(self.store.get_request, code, request_id)
        if request is None:
            raise RequestNotFound(f"This session has no request {request_id!r}.", request_id=request_id)
        return request


ACTIONS = ("attach", "resume", "ping", "answer")


def parse_message(body: str | None) -> dict[str, Any]:
    """A plugin message: a JSON object whose ``action`` is attach, resume, ping or answer; else BadInput."""
    # Any parse failure (not JSON, nested too deeply, a number JSON cannot hold) is bad input the plugin is told.
    message = loads(body) if body else None
    said = '"action" must be "attach", "resume", "ping" or "answer".'
    if not isinstance(message, dict):
        raise BadInput(f"A message is a JSON object with an action: {said}", field="action")
    if message.get("action") not in ACTIONS:
        raise BadInput(said, field="action")
    return message


def after_of(message: dict[str, Any]) -> int:
    """The plugin's cursor: the seq of the last request it has; null (or absent) means none yet."""
    after = message.get("after")
    if after is None:
        return 0
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < 10**18:
        raise BadInput(
            '"after" must be the seq of the last tool request received (a whole number) or null.', field="after"
        )
    return after


def lost(consumer: str | None) -> NotAttached:
    """What a connection that does not own its session is told: superseded if another consumer owns it."""
    if consumer is None or consumer == DETACHED:
        return NotAttached("This connection is not attached to the session: send `attach` again.")
    return Superseded("This session is now served by another tab.")


def status_of(exc: RelayError) -> int:
    """The HTTP status ``POST /response`` answers an answer's refusal with (http/errors.py), which the plugin's
    answers read whichever way they travel."""
    from ..http.errors import status_for  # the one mapping of errors to statuses; nothing of HTTP is run here

    return status_for(exc)


def error_event(code: str, exc: RelayError) -> dict[str, Any]:
    return {"event": "error", "code": code, "message": exc.message, **client_fields(exc)}
