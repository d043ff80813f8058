"""The session's activity log, for the plugin: every request with its status, and pages of it with answers (the
trace, the full log)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..clock import Clock
from ..records import RequestRecord
from ..settings import Settings
from .sessions import Sessions
from .store_io import StoreIO

# A page of the log with answers (the trace, the full log) stops growing past this many bytes of JSON, so a long
# session is read in several answers that each fit Lambda's 6 MB response: the entry that crosses the mark adds at
# most MAX_REQUEST_BYTES of arguments and MAX_RESPONSE_BYTES of answer.
LOG_PAGE_BYTES = 1_000_000


@dataclass(frozen=True)
class LogItem:
    """One request as the activity log and the trace show it."""

    request: RequestRecord
    status: str  # the request's own, or "expired" for one that will never run
    answer: dict[str, Any] | None = None  # the response's body ({"result": …} or {"error": …}), where read


class ActivityLog:
    def __init__(self, settings: Settings, store_io: StoreIO, clock: Clock, *, sessions: Sessions) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.clock = clock
        self.sessions = sessions

    def _item(self, r: RequestRecord, answer: dict[str, Any] | None = None) -> LogItem:
        return LogItem(r, "expired" if r.pending and r.expires_at <= self.clock.now() else r.status, answer)

    async def items(self, code: str, token: str | None, *, client: str | None = None) -> list[LogItem]:
        """Every request, without arguments or answers (small: never paged). Readable by the plugin until
        LOG_GRACE_SECONDS after the session ended, so its trace can be saved."""
        await self.sessions.for_plugin(code, token, client=client, grace=self.settings.log_grace_seconds)
        return [self._item(r) for r in await self.store_io.read(self.store.list_requests, code)]

    async def recent(
        self, code: str, *, keep: Callable[[RequestRecord], bool], limit: int
    ) -> tuple[list[LogItem], int]:
        """The last ``limit`` requests ``keep`` picks, each with its answer, and how many it picks in all. For the
        LLM side (the MCP App's codap://activity), whose caller was let in by the live code: no plugin token."""
        kept = [r for r in await self.store_io.read(self.store.list_requests, code) if keep(r)]
        items: list[LogItem] = []
        for r in kept[-limit:] if limit > 0 else []:
            response = await self.store_io.read(self.store.get_response, code, r.id)
            items.append(self._item(r, None if response is None else response.body))
        return items, len(kept)

    async def page(
        self,
        code: str,
        token: str | None,
        *,
        size_of: Callable[[LogItem], int],
        after: int = 0,
        client: str | None = None,
        page_bytes: int | None = None,
    ) -> tuple[list[LogItem], int | None]:
        """The log from seq ``after`` on, each request with its answer (the trace view, the full log). Returns
        (items, the ``after`` of the next page or None at the end); a page holds about ``page_bytes`` (by default
        LOG_PAGE_BYTES, read at call time: a test sets it on this module for small pages) as ``size_of`` (the
        entry point's own entry) counts."""
        page_bytes = LOG_PAGE_BYTES if page_bytes is None else page_bytes
        await self.sessions.for_plugin(code, token, client=client, grace=self.settings.log_grace_seconds)
        items: list[LogItem] = []
        size = 0
        for r in await self.store_io.read(self.store.list_requests, code):
            if r.seq <= after:
                continue
            if items and size >= page_bytes:
                return items, items[-1].request.seq
            response = await self.store_io.read(self.store.get_response, code, r.id)
            item = self._item(r, None if response is None else response.body)
            size += size_of(item)
            items.append(item)
        return items, None
