"""Endpoint functions, grouped so each Lambda handler mounts only its own group."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .. import __version__
from ..clock import iso
from ..codes import normalise_code
from ..errors import BadInput, PayloadTooLarge, TokenMissing
from ..records import TAB_RE
from ..relay.responses import Answer
from . import schemas as s
from .bodies import parse, read_json
from .context import bearer_token, client_ip, public_base, relay_of
from .sse import EventStreamResponse, encode


def wait_param(request: Request) -> float | None:
    raw = request.query_params.get("wait")
    if raw is None or raw == "":
        return None
    longest = relay_of(request).settings.max_wait_seconds
    try:
        value = float(raw)
    except ValueError:
        raise BadInput(f"`wait` must be a number of seconds (0 to {longest:g}).", field="wait") from None
    if not 0 <= value <= longest:
        raise BadInput(f"`wait` must be between 0 and {longest:g} seconds.", field="wait")
    return value


def json_model(model: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status)


def answer_response(answer: Answer) -> JSONResponse:
    if answer.response is not None:
        r = answer.response
        return JSONResponse({"id": r.id, "status": r.status, **r.body, "timestamp": iso(r.timestamp)}, status_code=200)
    assert answer.request is not None
    return JSONResponse({"id": answer.request.id, "status": answer.request.status}, status_code=202)


# --- sessions --------------------------------------------------------------------------------------------


async def create_session(request: Request) -> Response:
    relay = relay_of(request)
    body = parse(s.SessionCreate, await read_json(request, relay.settings.max_request_bytes))
    tools = None if body.tools is None else [t.model_dump(exclude_none=True) for t in body.tools]
    session, token = await relay.sessions.create(tools, client=client_ip(request))
    await relay.grants.plugin_opened(session.code, body.identity)  # its connected apps now reach this code
    long_lived = getattr(request.app.state, "long_lived", False)
    created = s.SessionCreated(
        code=session.code,
        ttl=relay.settings.session_ttl_seconds,
        expiresAt=iso(session.expires_at),
        browserToken=token,
        changes=f"/api/sessions/{session.code}/changes" if long_lived else None,
        push=relay.settings.push_url or None,
    )
    # `changes` only where it is offered: elsewhere the answer is as it always was
    return JSONResponse(created.model_dump(mode="json", exclude_none=True), status_code=201)


async def session_status(request: Request) -> Response:
    relay = relay_of(request)
    code = normalise_code(request.path_params["code"])
    state = await relay.presence.status(code, client=client_ip(request), token=bearer_token(request))
    session = state.session
    return json_model(
        s.SessionStatus(
            code=code,
            ttl=max(0, int(session.expires_at - relay.clock.now())),
            expiresAt=iso(session.expires_at),
            connected=state.connected,
            lastSeen=None if session.last_seen is None else iso(session.last_seen),
            pending=state.pending,
        )
    )


async def delete_session(request: Request) -> Response:
    code = normalise_code(request.path_params["code"])
    failed = await relay_of(request).sessions.close(code, bearer_token(request), client=client_ip(request))
    return json_model(s.SessionClosed(code=code, status="closed", failedRequests=failed))


TAB_ID = TAB_RE


def tab_param(request: Request, *, required: bool) -> str | None:
    """The plugin page's own id (``?tab=``), which leads its streams' consumer ids so that it can detach them."""
    raw = request.query_params.get("tab")
    if raw is None or raw == "":
        if required:
            raise BadInput("`tab` is required: the id the plugin page opened its stream with.", field="tab")
        return None
    if not TAB_ID.fullmatch(raw):
        raise BadInput("`tab` must be 8 to 64 letters, digits, `-` or `_`.", field="tab")
    return raw


async def detach_session(request: Request) -> Response:
    """The plugin's pagehide: a bodiless POST with ``?tab=`` and the token (header or ``?token=``), so that a
    keepalive fetch or sendBeacon can send it without a CORS preflight while the page unloads."""
    code = normalise_code(request.path_params["code"])
    tab = tab_param(request, required=True)
    assert tab is not None
    detached = await relay_of(request).streams.detach(code, bearer_token(request), tab, client=client_ip(request))
    return json_model(s.SessionDetached(code=code, detached=detached))


async def session_log(request: Request) -> Response:
    code = normalise_code(request.path_params["code"])
    view = request.query_params.get("view", "activity")
    if view not in ("activity", "trace"):
        raise BadInput("`view` must be `activity` (default) or `trace`.", field="view")
    full = request.query_params.get("full") in ("1", "true", "yes")
    if view == "trace" or full:  # entries with answers, which add up past Lambda's 6 MB: read page by page
        after = whole_number(request.query_params.get("after", "0"))
        if after is None:
            raise BadInput("`after` must be the previous page's `next` (0 for the first page).", field="after")
        entry = s.trace_entry if view == "trace" else s.full_entry
        page, following = await relay_of(request).log.page(
            code, bearer_token(request), size_of=s.entry_size(entry), after=after, client=client_ip(request)
        )
        return JSONResponse({"code": code, "entries": [entry(item) for item in page], "next": following})
    items = await relay_of(request).log.items(code, bearer_token(request), client=client_ip(request))
    return JSONResponse({"code": code, "entries": [s.log_entry(item) for item in items]})


async def pushed_request(request: Request) -> Response:
    """A tool request too large to push whole: the plugin fetches it by the pointer the push message carried."""
    code = normalise_code(request.path_params["code"])
    found = await relay_of(request).push.fetch(
        code, bearer_token(request), request.path_params["id"], client=client_ip(request)
    )
    return json_model(s.PushedRequest(id=found.id, tool=found.tool, args=found.args, seq=found.seq))


async def session_changes(request: Request) -> Response:
    """The plugin says what CODAP reported changed (coalesced); a long-lived server's MCP subscriptions watch it."""
    relay = relay_of(request)
    code = normalise_code(request.path_params["code"])
    token = bearer_token(request)
    await relay.sessions.for_plugin(code, token, client=client_ip(request))  # the token before the body
    body = parse(s.ChangesNote, await read_json(request, relay.settings.max_request_bytes))
    noted = await relay.doc_changes.note(
        code, token, datasets=body.datasets, listed=body.listChanged, client=client_ip(request)
    )
    return json_model(s.ChangesNoted(seq=noted.seq), 202)


# --- stream ----------------------------------------------------------------------------------------------


def whole_number(raw: str) -> int | None:
    """A count or seq written in ASCII digits, else None (isdigit() alone admits '²', which int() refuses)."""
    raw = raw.strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None


def cursor_param(request: Request) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
    if raw is None or raw.strip() == "":
        return None
    cursor = whole_number(raw)
    if cursor is None:
        raise BadInput("Last-Event-ID must be the numeric id of the last tool-request event received.")
    return cursor


async def stream(request: Request) -> Response:
    relay = relay_of(request)
    code = normalise_code(request.query_params.get("code"))
    mode = request.query_params.get("mode", "stream")
    if mode not in ("stream", "poll", "check"):
        raise BadInput("`mode` must be `stream` (default), `poll` or `check`.", field="mode")
    tab = tab_param(request, required=False)
    if mode == "check":
        # Whether a stream could start now: the plugin asks before reopening one after a failure, because
        # EventSource hides the status. On AWS a full stream function never runs this: the gateway answers 503
        # with Retry-After (template.yaml's INTEGRATION_FAILURE response), which fetch can read.
        await relay.sessions.for_plugin(code, bearer_token(request), client=client_ip(request))
        return Response(status_code=204, headers={"Cache-Control": "no-store"})
    cursor = cursor_param(request)
    events = await relay.streams.open(
        code, bearer_token(request), cursor, poll=mode == "poll", client=client_ip(request), tab=tab
    )

    async def body() -> Any:
        async for event in events:
            yield encode(event)

    return EventStreamResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
    )


# --- requests and responses ------------------------------------------------------------------------------


async def post_request(request: Request) -> Response:
    relay = relay_of(request)
    wait = wait_param(request)
    body = parse(s.ToolRequest, await read_json(request, relay.settings.max_request_bytes))
    code = normalise_code(body.code)
    client = client_ip(request)
    if wait:
        record, answer = await relay.responses.call(code, body.tool, body.args, body.id, wait=wait, client=client)
        if answer.done:
            return answer_response(answer)
        assert answer.request is not None
        record = answer.request
    else:
        record, _created = await relay.queue.submit(code, body.tool, body.args, body.id, client=client)
    return JSONResponse({"id": record.id, "status": record.status, "seq": record.seq}, status_code=202)


async def post_response(request: Request) -> Response:
    """The browser token is checked before the body is read: with ``?code=`` (the plugin sends it) the whole
    check, else at least that a token is there; and a body read before the check (no ``?code=``) may be no
    larger than a request's, so a caller without the token never gets the relay to read up to 3 MB."""
    relay = relay_of(request)
    token = bearer_token(request)
    client = client_ip(request)
    early = request.query_params.get("code")
    if early is not None:
        checked = normalise_code(early)
        await relay.sessions.for_plugin(checked, token, client=client)
        limit = relay.settings.max_response_bytes
    else:
        if not token and relay.settings.require_browser_token:
            raise TokenMissing(
                "This endpoint is for the CODAP plugin and needs the session's browser token "
                "(Authorization: Bearer <browserToken>)."
            )
        limit = min(relay.settings.max_request_bytes, relay.settings.max_response_bytes)
    try:
        raw = await read_json(request, limit)
    except PayloadTooLarge as exc:
        if early is None and limit < relay.settings.max_response_bytes:
            raise PayloadTooLarge(
                f"{exc.message} Add ?code=<pairing code> to the URL: the token is then checked before the body "
                f"is read, and an answer may have up to {relay.settings.max_response_bytes} bytes.",
                limit=limit,
            ) from exc
        raise
    body = parse(s.ToolResponse, raw)
    code = normalise_code(body.code)
    if early is not None and code != checked:
        raise BadInput("The body's `code` differs from ?code=; send one session's code in both.", field="code")
    error = None if body.error is None else body.error.model_dump(exclude_none=True)
    stored = await relay.responses.respond(code, token, body.id, result=body.result, error=error, client=client)
    return JSONResponse({"id": stored.id, "status": stored.status}, status_code=202)


async def get_response(request: Request) -> Response:
    relay = relay_of(request)
    code = normalise_code(request.query_params.get("code"))
    request_id = request.query_params.get("id")
    if not request_id:
        raise BadInput("`id` is required: the request id that POST /request returned.", field="id")
    wait = wait_param(request)
    client = client_ip(request)
    if wait:
        answer = await relay.responses.wait_answer(code, request_id, wait, client=client)
    else:
        answer = await relay.responses.answer(code, request_id, client=client)
    return answer_response(answer)


async def metadata(request: Request) -> Response:
    code = normalise_code(request.query_params.get("code"))
    found = await relay_of(request).sessions.metadata(code, client=client_ip(request))
    return JSONResponse({"version": found.version, "tools": found.tools})


# --- misc ------------------------------------------------------------------------------------------------


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok", "version": __version__})


async def openapi(request: Request) -> Response:
    from .openapi import document

    long_lived = getattr(request.app.state, "long_lived", False)
    settings = relay_of(request).settings
    return JSONResponse(
        document(
            public_base(request),
            settings.max_wait_seconds,
            tool_timeout_seconds=settings.mcp_tool_timeout_seconds,
            long_lived=long_lived,
        )
    )


async def index(request: Request) -> Response:
    base = public_base(request)
    return JSONResponse(
        {
            "name": "codap-relay",
            "version": __version__,
            "plugin": f"{base}/plugin/",
            "mcp": f"{base}/mcp/{{code}}",
            "llms": f"{base}/llms.txt?code={{code}}",
            "openapi": f"{base}/openapi.json",
            "health": f"{base}/healthz",
        }
    )


GROUPS: dict[str, list[BaseRoute]] = {
    "sessions": [
        Route("/api/sessions", create_session, methods=["POST"]),
        Route("/api/sessions/{code}", session_status, methods=["GET"]),
        Route("/api/sessions/{code}", delete_session, methods=["DELETE"]),
        Route("/api/sessions/{code}/log", session_log, methods=["GET"]),
        Route("/api/sessions/{code}/detach", detach_session, methods=["POST"]),
        Route("/api/sessions/{code}/requests/{id}", pushed_request, methods=["GET"]),
    ],
    "stream": [Route("/stream", stream, methods=["GET"])],
    "request": [Route("/request", post_request, methods=["POST"])],
    "response": [
        Route("/response", post_response, methods=["POST"]),
        Route("/response", get_response, methods=["GET"]),
    ],
    "metadata": [Route("/metadata", metadata, methods=["GET"])],
    # Only where a long-lived process serves MCP subscriptions (codap-relay serve): no Lambda function mounts it.
    "changes": [Route("/api/sessions/{code}/changes", session_changes, methods=["POST"])],
    "meta": [
        Route("/", index, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ],
}
