"""MCP subscriptions, on a long-lived server only (``codap-relay serve``): ``subscriptions/listen`` (2026-07-28).

A listen request's answer is a stream that stays open: ``notifications/resources/updated`` for each subscribed
``codap://`` URI whose data changed and ``notifications/resources/list_changed`` when datasets or components came,
went or were renamed. What changed comes from the plugin, which hears CODAP's change notices and posts them,
coalesced, to ``POST /api/sessions/{code}/changes``; the relay keeps them as the session's change marks in the store
(``DocumentChanges.note``) and wakes watchers in this process. A watcher also re-reads the marks now and then, so a
store written by another process (DynamoDB) is seen too.

Not on AWS: a Lambda function's answer is buffered until it ends, so a stream that never ends would never reach
the client. The deployed MCP function therefore does not serve ``subscriptions/listen`` and does not declare
``resources.subscribe`` or ``listChanged``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    event_to_notification,
)

from codap_relay.bursts import Burst
from codap_relay.errors import RelayError
from codap_relay.mcp.resources import Call
from codap_relay.mcp.tools import RATE_LIMITED
from codap_relay.notify import changes_key
from codap_relay.records import ChangeMarks

Ctx = ServerRequestContext[Any, Any]
#: How often a watcher re-reads the marks with no wake-up on a store that wakes it, and checks its session.
RECHECK_SECONDS = 30.0
#: Open listen streams one session may hold: a client needs one (two while it replaces it); each holds a
#: connection and a watcher, so without a cap one pairing code could hold every connection the server has.
MAX_LISTENS_PER_SESSION = 4
log = logging.getLogger("codap_relay.mcp")


class ListenSlots:
    """Open listen streams per session, in this process (subscriptions live on one long-lived server only)."""

    def __init__(self, limit: int = MAX_LISTENS_PER_SESSION) -> None:
        self.limit = limit
        self.open: dict[str, int] = {}
        self.burst = Burst(
            log,
            f"a session has {limit} subscriptions/listen streams open, the limit: refusing more until one ends "
            "(no line per refusal; %(refused)d refused so far since start)",
        )

    @contextlib.contextmanager
    def hold(self, code: str) -> Iterator[None]:
        held = self.open.get(code, 0)
        if held >= self.limit:
            self.burst.refuse(code)  # the key stays in memory only, never in the line: it is a pairing code
            raise MCPError(
                RATE_LIMITED,
                f"This session already has {self.limit} subscriptions/listen streams open, the most it may hold; "
                "end one (close its response stream) before opening another.",
                {"error": "too_many_listens", "limit": self.limit},
            )
        self.burst.admitted(code)
        self.open[code] = held + 1
        try:
            yield
        finally:
            left = self.open[code] - 1
            if left:
                self.open[code] = left
            else:
                del self.open[code]


def affected(uri: str, datasets: set[str], listed: bool) -> bool:
    """Whether the resource ``uri`` may read differently after changes to ``datasets`` (names) and, if ``listed``,
    to which datasets and components exist."""
    parts = urlsplit(uri)
    if parts.scheme != "codap":
        return False
    path = [unquote(p) for p in (parts.netloc + parts.path).split("/") if p]
    if path == ["datasets"]:
        return listed or bool(datasets)  # it holds every dataset's counts
    if path == ["components"]:
        return listed
    if len(path) in (2, 3) and path[0] == "datasets":
        return path[1] in datasets
    if path[:1] == ["graphs"]:
        return listed or bool(datasets)  # a graph draws some dataset's cases
    return False


def events_between(
    before: ChangeMarks | None, after: ChangeMarks, uris: frozenset[str], list_wanted: bool
) -> list[ServerEvent]:
    since = before.seq if before is not None else 0
    noted = {mark for mark, seq in after.marks.items() if seq > since}
    datasets = {mark.removeprefix("dataset:") for mark in noted if mark.startswith("dataset:")}
    listed = "list" in noted
    events: list[ServerEvent] = [ResourcesListChanged()] if listed and list_wanted else []
    events.extend(ResourceUpdated(uri) for uri in sorted(uris) if affected(uri, datasets, listed))
    return events


def listen_handler(
    call_of: Callable[[Ctx], Call], slots: ListenSlots | None = None
) -> Callable[[Ctx, types.SubscriptionsListenRequestParams], Any]:
    held = slots if slots is not None else ListenSlots()

    async def on_listen(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        if ctx.request_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        call = call_of(ctx)
        assert call.session is not None  # require_session ran first
        relay, code = call.relay, call.session.code
        asked = params.notifications
        # Tools and prompts never change during a session: honoured, and never sent (as the spec allows).
        honored = types.SubscriptionFilter(
            tools_list_changed=True if asked.tools_list_changed else None,
            prompts_list_changed=True if asked.prompts_list_changed else None,
            resources_list_changed=True if asked.resources_list_changed else None,
            resource_subscriptions=list(asked.resource_subscriptions) if asked.resource_subscriptions else None,
        )
        uris = frozenset(asked.resource_subscriptions or ())
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        every = RECHECK_SECONDS if relay.store.pushes else relay.settings.idle_poll_interval_seconds
        with held.hold(code), relay.notifier.listen(changes_key(code)) as listener:  # listen first: no note missed
            seen = await relay.doc_changes.get(code)
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                ),
                related_request_id=ctx.request_id,
            )
            checked = time.monotonic()
            while True:
                await listener.wait(every)
                if time.monotonic() - checked >= RECHECK_SECONDS:
                    checked = time.monotonic()
                    try:  # a session that ended or expired ends its subscriptions (gracefully: the result)
                        await relay.sessions.for_llm(code, client=call.client)
                    except RelayError:
                        return types.SubscriptionsListenResult(_meta=meta)
                now = await relay.doc_changes.get(code)
                if now is None or (seen is not None and now.seq == seen.seq):
                    continue
                events = events_between(seen, now, uris, bool(asked.resources_list_changed))
                seen = now
                for event in events:
                    await ctx.session.send_notification(
                        event_to_notification(event, meta), related_request_id=ctx.request_id
                    )

    return on_listen
