"""The consent page's routes: ``GET /oauth/consent`` (the form, the wait, or the redirect once the plugin
answered; as JSON, only where the flow is, for the page's own script) and ``POST /oauth/consent`` (the code).

Its form carries a token bound to the consent, and the page sets the same value as an ``HttpOnly``,
``SameSite=Strict`` cookie: a post needs both, so another site's page (whose post carries no such cookie) and
another browser get 403, and so does a look at the wait from another browser.
"""

from __future__ import annotations

import hmac
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import request_response
from starlette.types import ASGIApp

from ...errors import RateLimited
from ...oauth import consent
from ..bodies import BodyLimit
from ..context import client_ip, public_base, relay_of
from . import page
from .discovery import provider_for

CSRF_COOKIE = "codap_relay_consent"
CONSENT_FORM_LIMIT = 4 * 1024  # three short fields
ELSEWHERE = "Finish this in the browser where you typed the code."


def _csrf_ok(request: Request, pending: dict[str, Any], given: str | None) -> bool:
    """The form's token and the cookie this page set must both be the consent's own: a post from another site
    carries neither (the cookie is SameSite=Strict), and another browser has no cookie."""
    expected = str(pending["csrf"])
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return hmac.compare_digest(cookie, expected) and (given is None or hmac.compare_digest(given, expected))


def _with_cookie(response: Response, request: Request, pending: dict[str, Any]) -> Response:
    response.set_cookie(
        CSRF_COOKIE,
        str(pending["csrf"]),
        max_age=600,
        path="/",
        httponly=True,
        samesite="strict",
        secure=public_base(request).startswith("https:"),
    )
    return response


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


async def consent_get(request: Request) -> Response:
    relay = relay_of(request)
    request_id = request.query_params.get("request")
    item = await consent.load(relay, request_id)
    if _wants_json(request):  # the waiting page's script: where the flow is, nothing taken
        if item is None:
            return JSONResponse({"state": "gone"}, headers=page.PAGE_HEADERS)
        if "ask" not in item.data:
            return JSONResponse({"state": "code"}, headers=page.PAGE_HEADERS)
        if not _csrf_ok(request, item.data, None):
            return JSONResponse({"state": "elsewhere", "message": ELSEWHERE}, 403, headers=page.PAGE_HEADERS)
        answered = await consent.answered(relay, item.data)
        state = "gone" if answered is None else "answered" if answered else "waiting"
        return JSONResponse({"state": state}, headers=page.PAGE_HEADERS)
    if item is None or request_id is None:
        return page.message(page.GONE, status=404)
    if "ask" in item.data and not _csrf_ok(request, item.data, None):
        return page.message(ELSEWHERE, status=403)
    step = await consent.next_step(relay, provider_for(request), request_id, item)
    return _render(request, request_id, step)


async def consent_post(request: Request) -> Response:
    relay = relay_of(request)
    form = await request.form()
    request_id, csrf, code = (str(form.get(k) or "") for k in ("request", "csrf", "code"))
    item = await consent.load(relay, request_id)
    if item is None:
        return page.message(page.GONE, status=404)
    if not _csrf_ok(request, item.data, csrf):
        return page.message("This form was not sent from its own page. Reload it and type the code again.", status=403)
    try:
        step = await consent.ask_plugin(relay, request_id, item, code, client_ip(request))
    except RateLimited as exc:  # the guessing guard or a limit refused: the page says so, and when to try again
        refused = page.message(exc.message, status=429)
        refused.headers["Retry-After"] = str(exc.retry_after)
        return refused
    if step.state == "waiting":  # the page that waits, by GET: a reload does not post the code again
        return RedirectResponse(f"consent?request={request_id}", status_code=303, headers=page.PAGE_HEADERS)
    return _render(request, request_id, step)


def _render(request: Request, request_id: str, step: consent.Step) -> Response:
    if step.redirect is not None:
        return RedirectResponse(step.redirect, status_code=302, headers=page.PAGE_HEADERS)
    if step.state == "gone" or step.pending is None:
        return page.message(step.error or page.GONE, status=410)
    if step.state == "waiting":
        return page.page(page.waiting(request_id, step.pending), script=True)
    form = page.page(page.code_form(request_id, step.pending, step.error))
    return _with_cookie(form, request, step.pending)


def consent_post_app() -> ASGIApp:
    return BodyLimit(request_response(consent_post), CONSENT_FORM_LIMIT)
