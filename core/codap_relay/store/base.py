"""The storage interface. One implementation per backend; one contract test suite runs against all of them.

Methods are synchronous; the service runs them in a worker thread when ``blocking`` is true. Stores keep
what they are given and filter nothing by time except where a method says so: expiry is a rule of the
service, checked on every read, because real TTL deletion is lazy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..jsonvalues import dumps
from ..records import (
    AuthItem,
    ChangeMarks,
    Completion,
    ConnectionRecord,
    Lookup,
    NewRequest,
    RequestRecord,
    RequestStatus,
    ResponseRecord,
    SessionRecord,
)

#: Every backend keeps a record at least this long past its expiry (the SQLite purge, DynamoDB's TTL attribute),
#: so late readers get "expired" rather than "unknown" and an ended session's log stays readable for the
#: LOG_GRACE_SECONDS setting, which may not exceed it.
PURGE_GRACE_SECONDS = 86_400


def args_bytes(args: Any) -> int:
    """The size a request's arguments count for in the pending and per-address byte limits: their JSON (as
    ``json.dumps`` writes it, ASCII) in bytes. One definition, so every backend and the service agree."""
    return len(dumps(args).encode())


@dataclass(frozen=True)
class PendingRef:
    """A pending request as a cancel needs it: no arguments."""

    id: str
    tool: str
    status: RequestStatus


@dataclass(frozen=True)
class PendingTotals:
    """What a session's pending requests add up to: how many, and their arguments' bytes (``args_bytes``)."""

    requests: int
    bytes: int


#: The longest a stream polls on reads that may be stale (``deliver(fresh=False)``) before it reads fresh again: how
#: long a request can wait behind a replica that lags, whatever the lag.
STALE_POLL_SECONDS = 0.5


def pending_totals(entries: tuple[tuple[float, int], ...], now: float) -> PendingTotals:
    """What ``SessionRecord.pending`` says is pending at ``now``: the entries not yet expired, and their bytes."""
    live = [size for expires_at, size in entries if expires_at > now]
    return PendingTotals(len(live), sum(live))


#: A session keeps the newest this many change marks (dataset names); older ones are forgotten, which only means a
#: watcher that missed that many notes in between is told less precisely (it still sees ``seq`` move).
MAX_CHANGE_MARKS = 100


def merged_marks(marks: dict[str, int], noted: list[str], seq: int) -> dict[str, int]:
    """``marks`` with each of ``noted`` set to ``seq``, the newest MAX_CHANGE_MARKS kept. One rule for every store."""
    merged = {**marks, **{m: seq for m in noted}}
    if len(merged) > MAX_CHANGE_MARKS:
        merged = dict(sorted(merged.items(), key=lambda kv: kv[1])[-MAX_CHANGE_MARKS:])
    return merged


@dataclass(frozen=True)
class Charge:
    """A limit that an append counts against, in the same atomic step as the append: ``amount`` added to the
    counter ``key`` (whose name holds its window, so a new window is a new counter), refused when that would take
    it past ``limit``. The counter is kept until ``window_end``. ``session``: the counter is the session's own (a
    per-session window), which a store may keep with the session rather than in a counter of its own."""

    key: str
    amount: int
    limit: int
    window_end: float
    session: bool = False
    #: One of several counts the counter ``key`` keeps (``incr_counters``' ``names``: a caller's limits in one
    #: item); None: the counter's own count.
    field: str | None = None
    #: More than zero: the counter may be charged ahead, this much at a time for each session, the session keeping
    #: what its appends have not spent yet (an address's bytes: one write of the counter in many appends, not one in
    #: each). The counter then runs ahead of what was really queued by less than a block per session.
    block: int = 0

    @property
    def counter(self) -> str:
        """The count's name where each count is a counter of its own (``incr_counters``' naming)."""
        return self.key if self.field is None else f"{self.key}#{self.field}"


class ChargeRefused(Exception):
    """An append refused by one of its charges (``add_request``): nothing was stored and nothing counted.
    ``total`` is what the counter would have reached."""

    def __init__(self, charge: Charge, total: int) -> None:
        super().__init__(f"{charge.key}: {total} > {charge.limit}")
        self.charge = charge
        self.total = total


class StoreUrlError(ValueError):
    """A store URL (RELAY_STORE, --store) that names no usable store; the message shows the accepted forms."""


class Store(Protocol):
    #: True when every write happens in this process, so in-process notification is complete and
    #: waiters need not poll. False for shared stores (DynamoDB) written by other processes.
    pushes: bool
    #: True when calls do I/O and must not run on the event loop.
    blocking: bool
    #: True when reads can wait (a network round trip, a file), so they run in a worker thread, never on the event
    #: loop. False only where a read never waits: the memory store.
    blocking_reads: bool

    def create_session(self, session: SessionRecord, tools: list[dict[str, Any]] | None = None) -> None:
        """Store a new session. Raises CodeCollision if the code exists (expired or not).

        ``tools``: the session's manifest, whose ``records.manifest_id`` is ``session.manifest`` (None with it).
        It is stored once per distinct manifest, apart from the session, and shared by every session that has
        it: the session itself, read on every poll and written on every sign of life, holds only the address.
        The stored manifest is kept at least as long as any session that refers to it (``get_manifest``)."""

    def get_manifest(self, manifest: str) -> list[dict[str, Any]] | None:
        """The manifest stored under content address ``manifest``; None if none is (never, while a session that
        refers to it is kept)."""
        ...

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

    def detach(self, code: str, owner: str) -> bool:
        """A tab left: if the session's consumer is one of ``owner``'s streams (``records.owns``), set it to
        ``records.DETACHED`` and return True, atomically; else (another tab or a newer stream took over, an unknown
        session) change nothing and return False. The detached stream then ends at its next poll."""
        ...

    def add_request(
        self, code: str, new: NewRequest, *, last_seq: int | None = None, charges: Sequence[Charge] = ()
    ) -> tuple[RequestRecord, bool]:
        """Append with the next seq (gapless, strictly increasing) and return (record, True).

        If the session already has a request with ``new.id``, store nothing, count nothing and return (existing,
        False). Raises SessionNotFound if the session does not exist, or (reason "closed") if it was closed:
        checked in the same atomic step, so no request can slip into a session while it is being ended. Each of
        ``charges`` is counted in that same step; if one would pass its limit, nothing is stored or counted and
        ChargeRefused says which. The request is stored delivered to ``new.deliver_to`` if that consumer owns
        the session's delivery at that step, else queued (``NewRequest``).
        ``last_seq`` is the session's last_seq as the caller last read it: a hint that spares a store which must
        read it before appending that read. A stale hint costs a retry, never a wrong or repeated seq.
        """
        ...

    def get_request(self, code: str, request_id: str) -> RequestRecord | None: ...

    def lookup(self, code: str, request_id: str) -> Lookup:
        """The session, the response to ``request_id`` and, while it has no response, the request: one read."""
        ...

    def pending_requests(self, code: str, after_seq: int, now: float) -> list[RequestRecord]:
        """Unanswered requests with seq > after_seq and expires_at > now, in seq order."""
        ...

    def pending_refs(self, code: str, prefix: str, now: float) -> list[PendingRef]:
        """The requests ``pending_requests(code, 0, now)`` would return whose id starts with ``prefix`` (a whole id
        finds that one), as ids, tools and statuses: found by id, never reading their arguments (a cancel)."""
        ...

    def count_pending(self, code: str, now: float) -> PendingTotals:
        """How many requests ``pending_requests(code, 0, now)`` would return and their arguments' bytes, without
        reading the arguments themselves (a status read, the pending limits). A session read may carry the same
        (``SessionRecord.pending``), counted by ``pending_totals``."""
        ...

    def deliver(
        self, code: str, consumer: str, after_seq: int, now: float, *, fresh: bool = True
    ) -> tuple[SessionRecord | None, list[RequestRecord]]:
        """What the session's stream does next: the session, and the requests to send.

        The requests are those ``pending_requests(code, after_seq, now)`` returns, each queued one marked
        delivered at ``now`` (a first delivery time is kept; a request answered meanwhile is left alone), and
        returned as marked. They are read and marked only while the session is live at ``now`` (not closed, not
        expired) and ``consumer`` owns its delivery; otherwise the list is empty. When the session shows that no
        request came after ``after_seq`` (``last_seq <= after_seq``) nothing else is read: one read, which is
        what an idle stream's poll costs. Every write made before the call is seen, unless ``fresh`` is False:
        then that first read may lag the latest writes (DynamoDB's eventually consistent read, half the price,
        from a replica that may be behind by a moment or more) and find nothing new when there is something.
        Only a poll that reads fresh again soon may pass False (the stream does, at most STALE_POLL_SECONDS
        apart); whatever is done is decided on a current read.
        """
        ...

    def list_requests(self, code: str) -> list[RequestRecord]:
        """Every request of the session still kept, in seq order (the activity log)."""
        ...

    def complete_request(
        self,
        response: ResponseRecord,
        *,
        now: float | None = None,
        token_hash: str | None = None,
        alive_until: float | None = None,
    ) -> Completion:
        """First answer wins: store the response and mark the request answered, atomically.

        Returns the stored answer (fresh), or the earlier answer (not fresh) when one exists. Raises
        RequestNotFound when the session has no request ``response.id``, and, given ``now``, RequestExpired when
        the request is still unanswered and expired at ``now``: checked in the same atomic step. Given
        ``token_hash`` (the answering plugin's browser token, hashed), a request whose session has another token
        is not found either: the answer is checked against the session without the caller reading it. Given
        ``alive_until`` (with ``now``), the answer is the plugin's: it is taken only while its session is live at
        ``now`` (else SessionNotFound, reason "closed" or "expired", and nothing stays stored), and a fresh one is
        the plugin's sign of life too: the session's ``last_seen`` becomes ``now`` and its expiry slides to
        ``alive_until`` (never back).
        """
        ...

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None: ...

    def put_connection(self, record: ConnectionRecord) -> None:
        """Record a push connection's attach (replacing any earlier record of the same connection)."""
        ...

    def take_connection(self, connection_id: str, now: float) -> ConnectionRecord | None:
        """Remove a push connection's record and return it; None when there is none or it expired by ``now``."""
        ...

    def incr_counter(self, key: str, expires_at: float, now: float, amount: int = 1) -> int:
        """Atomically add ``amount`` (one, or a byte count; negative to give some back) to a counter and return the
        new value; an expired counter starts again from ``amount``."""
        ...

    def incr_counters(self, key: str, names: list[str], expires_at: float, now: float) -> list[int]:
        """Atomically add one to each of the named counts of one window (``key``) and return their new values, in
        ``names``' order: several limits of one caller checked in one write (an OAuth call's plugin and grant). An
        expired window starts again, all its counts from one."""
        ...

    def note_changes(self, code: str, marks: list[str], expires_at: float) -> ChangeMarks:
        """Record one change note naming ``marks``: the session's change ``seq`` goes up by one and each mark is set
        to it (``merged_marks``), atomically, so two notes at once get two seqs. The record is kept until
        ``expires_at`` (and the usual grace after it); the service checks the session before it notes."""
        ...

    def get_changes(self, code: str) -> ChangeMarks | None:
        """The session's change marks as last noted (None before the first note). Read fresh: a watcher re-reads
        it when woken or on its poll."""
        ...

    def put_auth(self, item: AuthItem, *, now: float | None = None) -> None:
        """Store an OAuth item (oauth/), replacing the one of the same kind and key. Given ``now``, a store that
        deletes by itself (SQLite, memory) may drop the OAuth items that ended before it, now and then: an item
        nobody finished (a pending authorization) is read by nobody after it ends, and must not pile up."""

    def get_auth(self, kind: str, key: str) -> AuthItem | None:
        """The item as last put, expired or not (the service checks ``expires_at``)."""
        ...

    def get_auths(self, keys: list[tuple[str, str]]) -> list[AuthItem | None]:
        """Several items by (kind, key) in one read, as ``get_auth`` gives each, in ``keys``' order (a token, its
        grant and its plugin, checked on every OAuth call). At most 25 keys."""
        ...

    def take_auth(self, kind: str, key: str) -> AuthItem | None:
        """Delete the item and return it, atomically: of two takes of one item, one gets it and the other None
        (an authorization code is used once; a refresh token is rotated once)."""
        ...

    def delete_auth(self, kind: str, key: str) -> bool:
        """Delete the item; True if there was one."""
        ...

    def list_auth(self, kind: str, owner: str) -> list[AuthItem]:
        """The items of ``kind`` whose owner is ``owner``, expired or not, in no particular order."""
        ...

    def close(self) -> None: ...
