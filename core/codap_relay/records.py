"""What the stores keep: sessions, requests and responses, as plain dataclasses."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from .jsonvalues import dumps

RequestStatus = Literal["queued", "delivered", "completed", "failed"]
PENDING: tuple[RequestStatus, ...] = ("queued", "delivered")


def canonical_json(value: Any) -> str:
    return dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(value: Any) -> str:
    """Stable hash of a JSON value: how idempotent retries are told from conflicting reuse of an id."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def manifest_id(tools: list[dict[str, Any]]) -> str:
    """A tool manifest's content address: every session registering the same manifest refers to one stored copy
    (the plugin's is about 60 KB of JSON, too much to read on every poll of every tab)."""
    return fingerprint(tools)


#: The consumer a session gets when its tab detaches (``Store.detach``): no stream owns delivery, and the plugin
#: does not count as connected, until a stream attaches again. Streams' own consumers never take this value.
DETACHED = "detached"


def owns(consumer: str | None, owner: str) -> bool:
    """Whether ``consumer`` is one of ``owner``'s streams: ``owner`` itself or ``owner`` + "." + a suffix."""
    return consumer is not None and (consumer == owner or consumer.startswith(owner + "."))


#: A plugin page's own id (its tab), which leads the consumer ids of its streams and push connections.
TAB_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")

#: What marks a consumer as a push connection: ``f"{tab}.push:{connectionId}"`` (an SSE stream's is
#: ``f"{tab}.{uuid}"``), so ``owns`` and detach on pagehide cover both, and the relay knows where to publish.
PUSH_MARK = ".push:"


def push_consumer(tab: str, connection_id: str) -> str:
    """The consumer id of the plugin tab ``tab``'s push connection ``connection_id``."""
    return f"{tab}{PUSH_MARK}{connection_id}"


def push_connection(consumer: str | None) -> str | None:
    """The push connection id of a consumer, or None when it is not a push consumer (an SSE stream, detached)."""
    if consumer is None or PUSH_MARK not in consumer:
        return None
    connection = consumer.rsplit(PUSH_MARK, 1)[1]
    return connection or None


@dataclass(frozen=True)
class SessionRecord:
    code: str
    token_hash: str
    created_at: float
    expires_at: float
    manifest: str | None = None  # the manifest's content address (``manifest_id``), None: the default manifest
    last_seq: int = 0  # highest seq handed out; seqs are 1..last_seq with no gaps
    last_seen: float | None = None  # last sign of life from the plugin
    consumer: str | None = None  # id of the stream that owns delivery (newest wins)
    closed_at: float | None = None
    #: The session's unanswered requests as (expires_at, args_bytes), where the store reads them with the session
    #: (DynamoDB keeps them in its item): the pending limits need no read of their own. None: ask count_pending.
    pending: tuple[tuple[float, int], ...] | None = None

    def with_(self, **changes: Any) -> SessionRecord:
        return replace(self, **changes)


@dataclass(frozen=True)
class RequestRecord:
    code: str
    seq: int
    id: str
    tool: str
    args: dict[str, Any]
    fingerprint: str
    created_at: float
    expires_at: float
    status: RequestStatus = "queued"
    delivered_at: float | None = None
    completed_at: float | None = None
    error_code: str | None = None

    @property
    def pending(self) -> bool:
        return self.status in PENDING

    def with_(self, **changes: Any) -> RequestRecord:
        return replace(self, **changes)


@dataclass(frozen=True)
class ResponseRecord:
    code: str
    id: str
    status: Literal["completed", "failed"]
    body: dict[str, Any]  # {"result": ...} or {"error": {...}}
    fingerprint: str
    timestamp: float
    expires_at: float
    error_code: str | None = None


@dataclass(frozen=True)
class NewRequest:
    """What the service asks a store to append; the store assigns ``seq``.

    ``deliver_to``: the push consumer the caller posts the request to the moment it is stored. If that consumer
    still owns the session's delivery when the request is appended, it is stored as delivered at ``created_at``
    (the post follows at once; no read, no second write); if another consumer took over meanwhile, it is stored
    queued, for whoever owns it now. ``token_hash``: the session's browser token hash, which an answer to this
    request must match (``complete_request``): a store may keep it with the request, so an answer is checked
    without reading the session."""

    id: str
    tool: str
    args: dict[str, Any]
    fingerprint: str
    created_at: float
    expires_at: float
    deliver_to: str | None = None
    token_hash: str | None = None


@dataclass(frozen=True)
class Completion:
    """What storing an answer did: the answer that stands (this one if ``fresh``, else the first one) and when
    the request was queued (None where a store cannot tell)."""

    response: ResponseRecord
    fresh: bool
    queued_at: float | None = None


@dataclass(frozen=True)
class Lookup:
    """One read of everything the LLM's view of a request needs: its session, its response if it has one, and
    the request itself while it has none (an answered request is said all about by its response)."""

    session: SessionRecord | None
    request: RequestRecord | None
    response: ResponseRecord | None


@dataclass(frozen=True)
class ChangeMarks:
    """What the plugin said changed in a session's CODAP document (it hears CODAP's change notices). ``seq``
    counts the session's change notes; ``marks`` maps each thing noted (``"list"``: datasets or components came,
    went or were renamed; ``"dataset:<name>"``: that dataset's cases or attributes changed) to the seq of the
    latest note that named it. A watcher compares two reads to learn what changed in between."""

    code: str
    seq: int
    marks: dict[str, int]


@dataclass(frozen=True)
class AuthItem:
    """One record of the relay's OAuth server (oauth/): a registered client, a pending consent, an authorization
    code, an access or refresh token (keyed by its hash, never the token), a grant, or a plugin's identity.
    ``owner`` is what it belongs to (a grant's plugin identity, a token's grant), so the items of one owner can
    be listed; ``data`` is the item's own JSON. Like every record, it counts as gone from ``expires_at``: the
    service checks that on every read."""

    kind: str
    key: str
    owner: str | None
    data: dict[str, Any]
    expires_at: float


#: How long a push connection's record is kept: API Gateway closes any connection after 2 hours.
CONNECTION_RECORD_SECONDS = 7200


@dataclass(frozen=True)
class ConnectionRecord:
    """A push connection's attach (the push channel): which session and consumer it took, so its ``$disconnect``
    (which names only the connection) detaches that consumer at once. Kept until ``expires_at`` (written
    CONNECTION_RECORD_SECONDS after the attach)."""

    connection_id: str
    code: str
    consumer: str
    expires_at: float
