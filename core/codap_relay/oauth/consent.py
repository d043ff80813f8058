"""The consent is the pairing, in two halves, bound together by a number (docs/threat-model.md, "The consent"):

1. on the relay's page, in the browser where the app sent them, the person types the pairing code their plugin
   shows: that finds the plugin (an unknown code counts towards the guessing guard of the caller's address). The
   page then shows a two-digit number;
2. in that plugin, the person answers "APP asks to use this CODAP" by typing that number and pressing Allow: the
   relay asks it as a request of its own (``CONSENT_TOOL``), which the plugin answers with its browser token.

Only an Allow carrying the page's number makes a grant, bound to the plugin's identity, and a one-time code sent
to the client's redirect URI. Someone who types a stranger's code on a consent page they opened themselves has the
number; the stranger at the plugin, who started nothing, has none: the code alone, or a phished Allow, grants
nothing. The question also says what the relay can prove of the app: the host its metadata document is published
at, or that a registered app is unverified (its name and redirect host are its own say).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri

from ..codes import normalise_code
from ..errors import RelayError
from ..records import AuthItem
from ..relay import Relay
from ..relay.grants import MAX_GRANTS_PER_PLUGIN, PENDING, PENDING_TTL_SECONDS
from ..relay.queue import OWN_ID_PREFIX
from .provider import RelayOAuthProvider, issuer_of
from .redirects import is_loopback_http

CONSENT_TOOL = "codap_relay_consent"
DENIED = "The person at this CODAP denied the request."
NO_NUMBER = "The number typed in the plugin was not the one on the consent page, so nothing was connected."


def app_host(redirect_uri: str) -> str:
    """Where the app sends the person back: its host (or scheme, for an app's own scheme such as cursor://)."""
    parts = urlsplit(redirect_uri)
    return parts.hostname or f"{parts.scheme}:"


def number_check(salt: str, number: str) -> str:
    """What the plugin compares a typed number with, to say at once that it is not the page's."""
    return hashlib.sha256(f"{salt}:{number}".encode()).hexdigest()


@dataclass(frozen=True)
class Step:
    """What the consent page shows next: ``redirect`` (the flow is over), else a page ``state``: ``code`` (type
    the code; ``error`` says what was wrong), ``waiting`` (type the number in the plugin), ``gone`` (start again)."""

    state: str
    pending: dict[str, Any] | None = None
    redirect: str | None = None
    error: str | None = None


async def load(relay: Relay, request: str | None) -> AuthItem | None:
    return None if not request else await relay.grants.get(PENDING, request)


async def ask_plugin(relay: Relay, request: str, item: AuthItem, raw_code: str, client: str | None) -> Step:
    """The code typed: find its plugin and ask it. A bad or unknown code shows the form again with why; a limit
    raises (RateLimited, which the page says with when to try again)."""
    pending = item.data
    s = relay.settings
    try:
        code = normalise_code(raw_code)
        session = await relay.sessions.for_llm(code, client=client)
        await relay.limits.admit("consent", code, s.rate_limit_consent_per_code)
        identity = await relay.grants.identity_of(code)
        others = [g for g in await relay.grants.grants_of(identity) if g.client_id != pending["client_id"]]
        if len(others) >= MAX_GRANTS_PER_PLUGIN:
            return Step(
                "code",
                pending,
                error=f"This CODAP has {len(others)} connected apps, the most it may have. Disconnect one in the "
                "plugin (under Connected apps), then try again.",
            )
        if client is not None:  # each question may make a grant, and grants are what budgets hang on
            await relay.limits.admit("consent-ip", client, s.rate_limit_grants_per_ip_per_hour, window=3600)
        number = str(10 + secrets.randbelow(90))
        salt = secrets.token_hex(8)
        redirect = str(pending["redirect_uri"])
        args = {
            "app": pending["client_name"],
            "verified": pending.get("verified"),
            "redirect": app_host(redirect),
            "loopback": is_loopback_http(redirect),
            "salt": salt,
            "check": number_check(salt, number),
        }
        ask = f"{OWN_ID_PREFIX}{secrets.token_hex(12)}"
        await relay.queue.submit(code, CONSENT_TOOL, args, ask, client=client, session=session, own=True)
    except RelayError as exc:
        if exc.data.get("scope"):  # rate limited: the page says so and when to try again
            raise
        return Step("code", pending, error=exc.message)
    asked = {**pending, "code": code, "identity": identity, "ask": ask, "number": number}
    await relay.grants.put(PENDING, request, asked, PENDING_TTL_SECONDS)
    return Step("waiting", asked)


def _allowed(result: Any, number: str) -> bool:
    typed = result.get("number") if isinstance(result, dict) else None
    return (
        isinstance(result, dict)
        and result.get("allow") is True
        and isinstance(typed, str)
        and typed.isascii()
        and hmac.compare_digest(typed, number)
    )


async def answered(relay: Relay, pending: dict[str, Any]) -> bool | None:
    """Whether the plugin has answered the question (None: it can no longer, the session ended)."""
    try:
        answer = await relay.responses.answer(str(pending["code"]), str(pending["ask"]))
    except RelayError:
        return None
    return answer.response is not None


async def next_step(relay: Relay, provider: RelayOAuthProvider, request: str, item: AuthItem) -> Step:
    """Where the flow is: no code yet, waiting for the plugin, or decided (the redirect, once only)."""
    pending = item.data
    if "ask" not in pending:
        return Step("code", pending)
    try:
        answer = await relay.responses.answer(str(pending["code"]), str(pending["ask"]))
    except RelayError:  # the session ended or the question expired before an answer
        await relay.grants.take(PENDING, request)
        return Step("gone", pending, error="The plugin closed before it answered. Start again from your app.")
    if answer.response is None:
        return Step("waiting", pending)
    if await relay.grants.take(PENDING, request) is None:  # another load of this page finished the flow
        return Step("gone", pending, error="This approval was already used. Go back to your app.")
    result = answer.response.body.get("result")
    uri = str(pending["redirect_uri"])
    back = {"state": pending.get("state"), "iss": issuer_of(provider.base)}
    if not _allowed(result, str(pending["number"])):
        number_wrong = isinstance(result, dict) and (result.get("allow") is True or result.get("reason") == "number")
        why = NO_NUMBER if number_wrong else DENIED
        return Step("done", pending, construct_redirect_uri(uri, error="access_denied", error_description=why, **back))
    grant = await relay.grants.grant(
        str(pending["identity"]), str(pending["client_id"]), str(pending["client_name"]), pending.get("verified")
    )
    code = await provider.approve(pending, grant)
    return Step("done", pending, construct_redirect_uri(uri, code=code, **back))
