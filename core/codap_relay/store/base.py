"""The storage interface. One implementation per backend; one contract test suite runs against all of them.

Methods are synchronous; the service runs them in a worker thread when ``blocking`` is true. Stores keep
what they are given and filter nothing by time except where a method says so: expiry is a rule of the
service, checked on every read, because real TTL deletion is lazy.
"""

from __future__ import annotations

from typing import Protocol

from ..records import NewRequest, RequestRecord, ResponseRecord, SessionRecord

#: Every backend keeps a record at least this long past its expiry (the SQLite purge, DynamoDB's TTL attribute),
#: so late readers get "expired" rather than "unknown" and an ended session's log stays readable for the
#: LOG_GRACE_SECONDS setting, which may not exceed it.
PURGE_GRACE_SECONDS = 86_400


class Store(Protocol):
    #: True when every write happens in this process, so in-process notification is complete and
    #: waiters need not poll. False for shared stores (DynamoDB) written by other processes.
    pushes: bool
    #: True when calls do I/O and must not run on the event loop.
    blocking: bool

    def create_session(self, session: SessionRecord) -> None:
        """Store a new session. Raises CodeCollision if the code exists (expired or not)."""

    def get_session(self, code: str) -> SessionRecord | None: ...

    def update_session(
        self,
        code: str,
        *,
        expires_at: float | None = None,
        last_seen: float | None = None,
        consumer: str | None = None,
        closed_at: float | None = None,
    ) -> None:
        """Set the given fields (None leaves a field as it is). Never moves expires_at backwards."""

    def add_request(self, code: str, new: NewRequest) -> tuple[RequestRecord, bool]:
        """Append with the next seq (gapless, strictly increasing) and return (record, True).

        If the session already has a request with ``new.id``, store nothing and return (existing, False).
        Raises SessionNotFound if the session does not exist, or (reason "closed") if it was closed: checked in
        the same atomic step, so no request can slip into a session while it is being ended.
        """
        ...

    def get_request(self, code: str, request_id: str) -> RequestRecord | None: ...

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        """Unanswered requests with seq > after_seq and expires_at > now, in seq order."""
        ...

    def list_requests(self, code: str) -> list[RequestRecord]:
        """Every request of the session still kept, in seq order (the activity log)."""
        ...

    def mark_delivered(self, code: str, request_id: str, at: float) -> None:
        """queued -> delivered (first delivery time is kept); answered requests are left alone."""

    def complete_request(self, response: ResponseRecord) -> tuple[ResponseRecord, bool]:
        """First answer wins: store the response and mark the request answered, atomically.

        Returns (stored, True), or (the earlier answer, False) when one exists.
        """
        ...

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None: ...

    def incr_counter(self, key: str, expires_at: float, now: float) -> int:
        """Atomically add one to a counter and return the new value; an expired counter starts again at 1."""
        ...

    def close(self) -> None: ...
