"""Records to DynamoDB items and back: attribute values, payloads (compressed, chunked when large), and one
encoder and decoder per kind of item (``table.py`` lists them).

Payloads (tool args, response bodies, manifests) are stored as zlib-compressed JSON; above ``INLINE_LIMIT``
compressed bytes they go to chunk items that the store writes *before* the transaction that references them, so a
failed or lost commit leaves only unreferenced chunks that nobody reads and TTL removes. Nothing here does I/O: a
decoder is given ``unpack``, which reads a payload attribute back (from the item, or from its chunks).
"""

from __future__ import annotations

import json
import math
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...jsonvalues import dumps
from ...records import ChangeMarks, NewRequest, RequestRecord, ResponseRecord, SessionRecord
from ..base import PendingTotals
from .table import TTL_ATTRIBUTE, key, req_sk

Item = dict[str, dict[str, Any]]
#: Reads payload attribute ``name`` of an item back (``Connection._unpack``).
Unpack = Callable[[str, Item], Any]

#: The manifest "address" of a session stored by an earlier version, whose META item holds the manifest itself.
INLINE_MANIFEST = "inline:"

# Compressed payloads up to this size stay inside their item; larger ones are split into chunks.
INLINE_LIMIT = 300_000
CHUNK_BYTES = 350_000


# --- attribute values --------------------------------------------------------------------------------------


def s(value: str) -> dict[str, Any]:
    return {"S": value}


def n(value: float | int) -> dict[str, Any]:
    if isinstance(value, int):
        return {"N": str(value)}
    # repr is the shortest exact decimal of a float; fixed-point because exponents are not accepted everywhere.
    return {"N": format(Decimal(repr(float(value))), "f")}


def f(item: Item, name: str) -> float | None:
    attr = item.get(name)
    return None if attr is None else float(attr["N"])


def opt_str(item: Item, name: str) -> str | None:
    attr = item.get(name)
    return None if attr is None else str(attr["S"])


# --- payloads ----------------------------------------------------------------------------------------------


def compress(value: Any) -> bytes:
    return zlib.compress(dumps(value, separators=(",", ":")).encode(), 6)


def decompress(raw: bytes) -> Any:
    return json.loads(zlib.decompress(raw))


def pack(name: str, value: Any, partition: str, purge: int) -> tuple[Item, list[Item]]:
    """Attributes that hold ``value`` in the owning item, plus any chunk items to write first."""
    raw = compress(value)
    if len(raw) <= INLINE_LIMIT:
        return {name: {"B": raw}}, []
    nonce = uuid.uuid4().hex
    parts = [raw[i : i + CHUNK_BYTES] for i in range(0, len(raw), CHUNK_BYTES)]
    chunks = [
        {**key(partition, f"BLOB#{nonce}#{i:04d}"), "z": {"B": part}, TTL_ATTRIBUTE: n(purge)}
        for i, part in enumerate(parts)
    ]
    return {f"{name}_ref": s(f"{nonce}:{len(parts)}")}, chunks


def chunk_ref(name: str, item: Item) -> tuple[str, int]:
    """(nonce, how many chunks) of payload ``name``, stored in chunks."""
    nonce, count = item[f"{name}_ref"]["S"].split(":")
    return nonce, int(count)


# --- items -------------------------------------------------------------------------------------------------


def session_item(session: SessionRecord, partition: str, purge: int, manifest_purge: int | None) -> Item:
    """A new session's META item: its manifest by address only (manifests.py), with how long that is kept.
    Its seq counter is ``seq`` (``SEQ``), which marks the layout of its requests (requests.py); an earlier
    version's ``last_seq`` marks the earlier one (legacy.py)."""
    item: Item = {
        **key(partition, "META"),
        "token_hash": s(session.token_hash),
        "created_at": n(session.created_at),
        "expires_at": n(session.expires_at),
        SEQ: n(0),
        TTL_ATTRIBUTE: n(purge),
    }
    if session.manifest is not None and manifest_purge is not None:
        item["manifest"] = s(session.manifest)
        item["manifest_purge"] = n(manifest_purge)
    return item


def session_of(code: str, item: Item) -> SessionRecord:
    current = is_current(item)
    return SessionRecord(
        code=code,
        token_hash=item["token_hash"]["S"],
        created_at=float(item["created_at"]["N"]),
        expires_at=float(item["expires_at"]["N"]),
        # A session stored by an earlier version holds its manifest itself: it is read from there (manifests.py).
        manifest=opt_str(item, "manifest") or (INLINE_MANIFEST + code if "tools" in item else None),
        last_seq=int(item[SEQ if current else "last_seq"]["N"]),
        last_seen=f(item, "last_seen"),
        consumer=opt_str(item, "consumer"),
        closed_at=f(item, "closed_at"),
        pending=tuple((e.expires_at, e.size) for e in pending_entries(item)) if current else None,
    )


# --- the current layout: a session's pending requests and its own rate windows in its META item ----------------

#: The META attribute that counts a session's requests in the current layout (``last_seq`` in an earlier one).
SEQ = "seq"
#: Prefixes of META attributes: an unanswered request (``q#<id>``: its seq, expiry and argument bytes) and one of
#: the session's own rate windows (``r#<window end>#<key>``: its count).
PENDING_PREFIX = "q#"
WINDOW_PREFIX = "r#"
#: A META attribute holding what the session has charged ahead to a counter of its own and not spent yet
#: (``Charge.block``): ``k#<window end>#<key>``.
CREDIT_PREFIX = "k#"


def is_current(meta: Item) -> bool:
    """Whether a session's META item is of the current layout (requests.py) rather than an earlier one (legacy.py)."""
    return SEQ in meta


@dataclass(frozen=True)
class PendingEntry:
    """An unanswered request as its session's META item lists it."""

    id: str
    seq: int
    expires_at: float
    size: int


def pending_attribute(request_id: str) -> str:
    return PENDING_PREFIX + request_id


def pending_entry_value(seq: int, expires_at: float, size: int) -> dict[str, Any]:
    return {"L": [n(seq), n(expires_at), n(size)]}


def pending_entries(meta: Item) -> list[PendingEntry]:
    """The META item's unanswered requests, in seq order (expired ones included: the caller knows the time)."""
    out = []
    for name, value in meta.items():
        if name.startswith(PENDING_PREFIX):
            seq, expires_at, size = (v["N"] for v in value["L"])
            out.append(PendingEntry(name[len(PENDING_PREFIX) :], int(seq), float(expires_at), int(size)))
    return sorted(out, key=lambda e: e.seq)


def window_attribute(window_end: float, key: str) -> str:
    return f"{WINDOW_PREFIX}{math.ceil(window_end)}#{key}"


def credit_attribute(window_end: float, key: str) -> str:
    return f"{CREDIT_PREFIX}{math.ceil(window_end)}#{key}"


def credits_of(meta: Item) -> dict[str, int]:
    """What the session has charged ahead and not spent, by attribute (``credit_attribute``)."""
    return {name: int(value["N"]) for name, value in meta.items() if name.startswith(CREDIT_PREFIX)}


def counter_value(value: dict[str, Any] | None) -> int:
    """A count as stored (a number attribute), 0 where there is none yet."""
    return 0 if value is None else int(value["N"])


def counter_purge(window_end: float) -> int:
    """A counter's TTL: its window's end (it is never read after)."""
    return math.ceil(window_end)


def lapsing_attributes(meta: Item) -> dict[str, float]:
    """The META item's attributes that lapse, and when: each pending entry at its request's expiry, each rate
    window at its end. An append removes those whose time has passed (requests.py)."""
    out: dict[str, float] = {}
    for name in meta:
        for prefix in (WINDOW_PREFIX, CREDIT_PREFIX):
            if name.startswith(prefix):
                out[name] = float(name[len(prefix) :].split("#", 1)[0])
    for entry in pending_entries(meta):
        out[pending_attribute(entry.id)] = entry.expires_at
    return out


def request_item_v2(
    new: NewRequest, partition: str, seq: int, purge: int, args: Item, size: int, delivered: bool
) -> Item:
    """Request ``new`` as number ``seq`` in the current layout: one item by its id (``RID#<id>``) that holds the
    request and, once answered, its answer (``answered``); ``delivered``: stored as delivered to ``new.deliver_to``
    at its creation (the caller posts it at once). It keeps the session's token hash an answer must match."""
    item: Item = {
        **key(partition, f"RID#{new.id}"),
        "id": s(new.id),
        "seq": n(seq),
        "tool": s(new.tool),
        **args,
        "fingerprint": s(new.fingerprint),
        "created_at": n(new.created_at),
        "expires_at": n(new.expires_at),
        "status": s("delivered" if delivered else "queued"),
        "arg_bytes": n(size),
        TTL_ATTRIBUTE: n(purge),
    }
    if delivered:
        item["delivered_at"] = n(new.created_at)
    if new.token_hash is not None:
        item["tok"] = s(new.token_hash)
    return item


def is_current_request(item: Item) -> bool:
    """Whether a ``RID#<id>`` item holds its request (the current layout) or only where it is (an earlier one)."""
    return "tool" in item


def answer_of(code: str, item: Item, unpack: Unpack) -> ResponseRecord | None:
    """The answer a current-layout request item holds, if it has one."""
    if "r_timestamp" not in item:
        return None
    return ResponseRecord(
        code=code,
        id=item["id"]["S"],
        status=item["status"]["S"],  # type: ignore[arg-type]
        body=unpack("body", item),
        fingerprint=item["r_fingerprint"]["S"],
        timestamp=float(item["r_timestamp"]["N"]),
        expires_at=float(item["r_expires_at"]["N"]),
        error_code=opt_str(item, "error_code"),
    )


def answering(response: ResponseRecord, body: Item, purge: int) -> tuple[str, dict[str, str], Item]:
    """(SET expression, names, values) that store ``response`` in its request's item, ``body`` its packed body."""
    values: Item = {
        ":status": s(response.status),
        ":at": n(response.timestamp),
        ":fingerprint": s(response.fingerprint),
        ":expires": n(response.expires_at),
        ":purge": n(purge),
    }
    names = {"#status": "status", "#purge": TTL_ATTRIBUTE}
    sets = [
        "#status = :status",
        "completed_at = :at",
        "r_fingerprint = :fingerprint",
        "r_timestamp = :at",
        "r_expires_at = :expires",
        "#purge = :purge",
    ]
    for i, (name, value) in enumerate(body.items()):
        names[f"#b{i}"] = name
        values[f":b{i}"] = value
        sets.append(f"#b{i} = :b{i}")
    if response.error_code is not None:
        values[":error"] = s(response.error_code)
        sets.append("error_code = :error")
    return "SET " + ", ".join(sets), names, values


def request_item(new: NewRequest, partition: str, seq: int, purge: int, args: Item, size: int) -> Item:
    """Request ``new`` as number ``seq``, queued; ``args`` its packed arguments, ``size`` their ``args_bytes``."""
    return {
        **key(partition, req_sk(seq)),
        "seq": n(seq),
        "id": s(new.id),
        "tool": s(new.tool),
        **args,
        "fingerprint": s(new.fingerprint),
        "created_at": n(new.created_at),
        "expires_at": n(new.expires_at),
        "status": s("queued"),
        "arg_bytes": n(size),
        TTL_ATTRIBUTE: n(purge),
    }


def request_of(code: str, item: Item, unpack: Unpack) -> RequestRecord:
    return RequestRecord(
        code=code,
        seq=int(item["seq"]["N"]),
        id=item["id"]["S"],
        tool=item["tool"]["S"],
        args=unpack("args", item),
        fingerprint=item["fingerprint"]["S"],
        created_at=float(item["created_at"]["N"]),
        expires_at=float(item["expires_at"]["N"]),
        status=item["status"]["S"],  # type: ignore[arg-type]
        delivered_at=f(item, "delivered_at"),
        completed_at=f(item, "completed_at"),
        error_code=opt_str(item, "error_code"),
    )


def pending_entry(seq: int) -> str:
    """The attribute of the session's PENDING item that stands for unanswered request ``seq``."""
    return f"q{seq}"


def pending_value(expires_at: float, size: int) -> dict[str, Any]:
    """A PENDING entry's value: when the request expires and its ``args_bytes``."""
    return {"L": [n(expires_at), n(size)]}


def pending_totals(item: Item, now: float) -> tuple[PendingTotals, list[str]]:
    """What a PENDING item says is pending at ``now``, and its entries already expired."""
    count = size = 0
    expired = []
    for name, value in item.items():
        if name[:1] != "q" or not name[1:].isdigit():
            continue
        expires_at, nbytes = (float(v["N"]) for v in value["L"])
        if expires_at > now:
            count += 1
            size += int(nbytes)
        else:
            expired.append(name)
    return PendingTotals(count, size), expired


def rid_item(partition: str, request_id: str, seq: int, created_at: float, purge: int) -> Item:
    """The id item: where request ``request_id`` is (its seq) and when it was queued."""
    return {**key(partition, f"RID#{request_id}"), "seq": n(seq), "created_at": n(created_at), TTL_ATTRIBUTE: n(purge)}


def response_item(response: ResponseRecord, partition: str, purge: int, body: Item) -> Item:
    """The answer's item; ``body`` its packed body."""
    item: Item = {
        **key(partition, f"RESP#{response.id}"),
        "id": s(response.id),
        "status": s(response.status),
        **body,
        "fingerprint": s(response.fingerprint),
        "timestamp": n(response.timestamp),
        "expires_at": n(response.expires_at),
        TTL_ATTRIBUTE: n(purge),
    }
    if response.error_code is not None:
        item["error_code"] = s(response.error_code)
    return item


def response_of(code: str, request_id: str, item: Item, unpack: Unpack) -> ResponseRecord:
    return ResponseRecord(
        code=code,
        id=request_id,
        status=item["status"]["S"],  # type: ignore[arg-type]
        body=unpack("body", item),
        fingerprint=item["fingerprint"]["S"],
        timestamp=float(item["timestamp"]["N"]),
        expires_at=float(item["expires_at"]["N"]),
        error_code=opt_str(item, "error_code"),
    )


def changes_item(partition: str, seq: int, marks: dict[str, int], expires_at: float, purge: int) -> Item:
    return {
        **key(partition, "CHANGES"),
        "seq": n(seq),
        "marks": s(dumps(marks)),
        "expires_at": n(expires_at),
        TTL_ATTRIBUTE: n(purge),
    }


def changes_of(code: str, item: Item) -> ChangeMarks:
    marks = json.loads(item["marks"]["S"])
    return ChangeMarks(code=code, seq=int(item["seq"]["N"]), marks={k: int(v) for k, v in marks.items()})
