"""The consent is the pairing, in two halves (docs/threat-model.md, "One connector per relay"):

1. on the relay's page, the person types the pairing code their plugin shows: that finds the plugin (and, like
   any code lookup, an unknown code counts towards the guessing guard of the caller's address);
2. in that plugin, the person who sees that CODAP answers "APP asks to use this CODAP: Allow / Deny": the relay
   asks it as a request of its own (``CONSENT_TOOL``), which the plugin answers with its browser token.

Only then is a grant made, bound to the plugin's identity, and a one-time code sent to the client's redirect URI.
A code read over a shoulder or phished therefore grants nothing without a click in the plugin itself.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri

from ..codes import normalise_code
from ..errors import RelayError
from ..records import AuthItem
from ..relay import Relay
from ..relay.grants import PENDING, PENDING_TTL_SECONDS
from .provider import RelayOAuthProvider

CONSENT_TOOL = "codap_relay_consent"


def app_host(redirect_uri: str) -> str:
    """Where the app sends the person back: its host (or scheme, for an app's own scheme such as cursor://)."""
    parts = urlsplit(redirect_uri)
    return parts.hostname or f"{parts.scheme}:"


@dataclass(frozen=True)
class Step:
    """What the consent page shows next: ``redirect`` (the flow is over), else a page ``state``: ``code`` (type
    the code; ``error`` says what was wrong), ``waiting`` (approve in the plugin), ``gone`` (start again)."""

    state: str
    pending: dict[str, Any] | None = None
    redirect: str | None = None
    error: str | None = None


async def load(relay: Relay, request: str | None) -> AuthItem | None:
    return None if not request else await relay.grants.get(PENDING, request)


async def ask_plugin(relay: Relay, request: str, item: AuthItem, raw_code: str, client: str | None) -> Step:
    """The code typed: find its plugin and ask it. A bad or unknown code shows the form again with why."""
    pending = item.data
    try:
        code = normalise_code(raw_code)
        session = await relay.sessions.for_llm(code, client=client)
        ask = f"consent-{secrets.token_hex(12)}"
        args = {"app": pending["client_name"], "redirect": app_host(str(pending["redirect_uri"]))}
        await relay.queue.submit(code, CONSENT_TOOL, args, ask, client=client, session=session, own=True)
    except RelayError as exc:
        if exc.data.get("scope"):  # rate limited: the page says so and when to try again
            raise
        return Step("code", pending, error=exc.message)
    identity = await relay.grants.identity_of(code)
    asked = {**pending, "code": code, "identity": identity, "ask": ask}
    await relay.grants.put(PENDING, request, asked, PENDING_TTL_SECONDS)
    return Step("waiting", asked)


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
    state = pending.get("state")
    uri = str(pending["redirect_uri"])
    if not (isinstance(result, dict) and result.get("allow") is True):
        denied = "The person at this CODAP denied the request."
        return Step(
            "done", pending, construct_redirect_uri(uri, error="access_denied", error_description=denied, state=state)
        )
    grant = await relay.grants.grant(str(pending["identity"]), str(pending["client_id"]), str(pending["client_name"]))
    code = await provider.approve(pending, grant)
    return Step("done", pending, construct_redirect_uri(uri, code=code, state=state))
