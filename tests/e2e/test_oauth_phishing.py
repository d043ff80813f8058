"""The consent cannot be phished, and everyone can use it: the real plugin in the real CODAP build (Chromium), a
second browser context as the attacker.

The attack (the fourth security round's high finding): a stranger registers an app named "Claude" with Claude's
callback, or uses the genuine metadata document of a real app, starts /authorize in their own browser with their
own PKCE challenge and types a victim's live code on the consent page. The victim's plugin asks; the victim, who
started nothing, has no page and so no number, and presses Allow anyway, then guesses. The stranger's page must
never redirect with a code.

Then the person's own flow, by keyboard, with axe-core in every state of the consent page and of the plugin's
question: nothing refreshes itself, Allow never has the focus by default, and a wrong number is said in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.axe import axe_violations, describe
from codap_relay_tooling.testing.oauth_flow import authorize_params
from codap_relay_tooling.testing.plugin_page import wait_until
from codap_relay_tooling.testing.real_codap import CodapPage
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import serve_app

CLAUDE_CALLBACK = "https://claude.ai/api/mcp/auth_callback"
OWN_CALLBACK = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def full_browser() -> bool:
    """The browser itself, not its headless shell: the consent page's redirect to the app (a 302 after a script's
    navigation) is caught by a Playwright route, and the shell lets that redirect past the route (tried here: the
    browser recorded it, the shell went to the network)."""
    return True


@pytest.fixture(scope="module")
def real_app_document() -> Iterator[str]:
    """A real app's client metadata document, as its vendor publishes it (served here on loopback, which the
    relay's test setting lets it fetch): its client_id is the document's URL."""
    url = ""

    async def document(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "client_id": url,
                "client_name": "Claude",
                "redirect_uris": [CLAUDE_CALLBACK],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        )

    with serve_app(Starlette(routes=[Route("/oauth/mcp-oauth-client-metadata", document)])) as base:
        url = f"{base}/oauth/mcp-oauth-client-metadata"
        yield url


@pytest.fixture(scope="module")
def relay() -> Iterator[str]:
    settings = e2e_settings(oauth_client_documents_allow_loopback=True)
    with serve_app(build_app(Relay(settings, MemoryStore())), wait_for_stop=False) as url:
        yield url


@pytest.fixture(scope="module")
def victim(pages: Callable[..., CodapPage], relay: str) -> CodapPage:
    return pages(f"{relay}/plugin/")


def register(relay: str, name: str, callback: str) -> str:
    body = {"redirect_uris": [callback], "client_name": name, "token_endpoint_auth_method": "none"}
    r = web.post(f"{relay}/register", json=body, timeout=10)
    assert r.status_code == 201, r.text
    client_id: str = r.json()["client_id"]
    return client_id


def authorize_url(relay: str, client_id: str, callback: str) -> str:
    return f"{relay}/authorize?{urlencode(authorize_params(client_id, f'{relay}/mcp', callback))}"


class Callback:
    """The app's redirect URI in one browser page: each navigation to it is recorded, never followed."""

    def __init__(self, page: Any, prefix: str) -> None:
        self.page = page
        self.urls: list[str] = []
        page.route(f"{prefix}**", self._record)

    def _record(self, route: Any) -> None:
        self.urls.append(route.request.url)
        route.fulfill(body="ok")

    def query(self) -> dict[str, str]:
        # Playwright runs route handlers only while this thread is inside one of its calls
        wait_until(lambda: self.urls or self.page.wait_for_timeout(50), "the redirect to the app", timeout=30)
        return {k: v[0] for k, v in parse_qs(urlsplit(self.urls[-1]).query).items()}


def no_violations(target: Any, what: str) -> None:
    found = axe_violations(target)
    assert not found, f"axe, {what}:\n{describe(found)}"


def question_shown(frame: Any) -> bool:
    return bool(frame.evaluate("() => !document.getElementById('consent').hidden"))


@pytest.mark.parametrize("client", ["registered as Claude", "a real app's metadata document"])
def test_a_stranger_who_types_a_victims_code_never_gets_a_code(
    browser: Any, relay: str, victim: CodapPage, real_app_document: str, client: str
) -> None:
    code = victim.wait_paired()
    registered = client == "registered as Claude"
    client_id = register(relay, "Claude", CLAUDE_CALLBACK) if registered else real_app_document
    attacker = browser.new_context()  # another browser profile: the stranger's own
    try:
        page = attacker.new_page()
        callback = Callback(page, CLAUDE_CALLBACK)
        page.goto(authorize_url(relay, client_id, CLAUDE_CALLBACK))
        page.fill("#code", code)
        page.click("button[type=submit]")  # the stranger's page now shows them a number the victim never sees

        frame = victim.frame
        wait_until(lambda: victim._safe(lambda: question_shown(frame)), "the question in the victim's plugin")
        question = " ".join(frame.text_content("#consent").split())  # as written (the heading is shown in capitals)
        assert "Claude" in question and "claude.ai" in question
        # The victim presses Allow: without the number from a page they opened, that approves nothing.
        frame.click("#consent-allow")
        page.wait_for_timeout(3000)  # the stranger's page looks every second, and would be sent on with a code
        assert callback.urls == [], f"the stranger's page was sent on: {callback.urls}"
        if registered:
            assert "Unverified" in question  # a registration is the registrant's own say
        else:
            published = urlsplit(real_app_document).netloc  # where the document is published: all that is proven
            assert f"Verified: its registration is published at {published}." in question
        assert "number" in frame.inner_text("#consent-error") and question_shown(frame)
        # Guesses (never the stranger's number, which the victim cannot know): each is refused in place, and after
        # three the question answers Deny by itself.
        theirs = page.wait_for_selector("#number").inner_text()
        for guess in [g for g in ("11", "22", "33", "44") if g != theirs][:3]:
            frame.fill("#consent-number", guess)
            frame.click("#consent-allow")
        wait_until(lambda: victim._safe(lambda: not question_shown(frame)), "the question to give up")
        redirect = callback.query()
        assert "code" not in redirect and redirect["error"] == "access_denied", redirect
        assert frame.locator("#apps li").count() == 0
    finally:
        attacker.close()


def start_own_flow(relay: str, victim: CodapPage, name: str) -> tuple[Any, Callback, str]:
    """The person's own flow in their own browser (where their CODAP is): (the consent page, its callback, the
    consent page's URL), the page showing its form."""
    client_id = register(relay, name, OWN_CALLBACK)
    page = victim.page.context.new_page()
    callback = Callback(page, OWN_CALLBACK)
    page.goto(authorize_url(relay, client_id, OWN_CALLBACK))
    return page, callback, page.url


def test_the_plugins_question_takes_no_key_meant_for_something_else_and_is_answered_by_keyboard(
    relay: str, victim: CodapPage
) -> None:
    """Finding: the question put the focus on Allow as it appeared, so Enter or space pressed for something else
    approved an app nobody read about. Now the focus goes to the question itself; its number field, Allow and
    Deny follow in that order; a wrong number is said in place; axe finds nothing in either state."""
    code = victim.wait_paired()
    page, callback, _ = start_own_flow(relay, victim, "Keyboard app")
    try:
        page.fill("#code", code)
        page.keyboard.press("Enter")
        frame = victim.frame
        wait_until(lambda: victim._safe(lambda: question_shown(frame)), "the question in the plugin")
        assert frame.evaluate("() => document.activeElement.id") != "consent-allow"
        # a key meant for something else approves nothing
        victim.page.keyboard.press("Enter")
        victim.page.keyboard.press("Space")
        page.wait_for_timeout(1500)
        assert question_shown(frame) and callback.urls == [], callback.urls
        no_violations(frame, "the plugin's question")
        # by keyboard: the number field, then Allow, then Deny
        frame.focus("#consent-number")
        order = []
        for _ in range(3):
            order.append(frame.evaluate("() => document.activeElement.id"))
            victim.page.keyboard.press("Tab")
        assert order == ["consent-number", "consent-allow", "consent-deny"], order
        # a wrong number, sent by keyboard: said in place, the question stays
        number = page.wait_for_selector("#number").inner_text()
        frame.focus("#consent-number")
        victim.page.keyboard.type("10" if number != "10" else "11")
        victim.page.keyboard.press("Enter")
        assert "not the number" in frame.inner_text("#consent-error") and question_shown(frame)
        no_violations(frame, "the plugin's question after a wrong number")
        # Deny by keyboard: the app is told so
        frame.focus("#consent-deny")
        victim.page.keyboard.press("Enter")
        redirect = callback.query()
        assert "code" not in redirect and redirect["error"] == "access_denied", redirect
    finally:
        page.close()


def test_the_consent_page_moves_on_by_itself_without_refreshing_and_is_axe_clean_in_every_state(
    relay: str, victim: CodapPage
) -> None:
    """Finding: the waiting state reloaded itself with <meta http-equiv="refresh">, a page that moves under a
    screen reader (axe: critical). Now a script asks, a polite live region says, and the page goes on by itself;
    axe finds nothing in the form, an error, the wait, and a used link. The whole page works by keyboard."""
    code = victim.wait_paired()
    page, callback, consent_url = start_own_flow(relay, victim, "Test app")
    try:
        assert page.evaluate("() => document.activeElement.id") == "code"
        no_violations(page, "the consent page's form")
        # an unknown code, typed and sent by keyboard: said, in an alert
        page.keyboard.type("ZZZZ-2222")
        page.keyboard.press("Enter")
        page.wait_for_selector("[role=alert]")
        assert "No CODAP session has this pairing code" in page.inner_text("[role=alert]")
        no_violations(page, "the consent page with an error")
        # the right code: the page waits with a number and a polite live region, never a refresh
        page.fill("#code", code)
        page.keyboard.press("Enter")
        page.wait_for_url(consent_url)
        assert page.locator("meta[http-equiv=refresh]").count() == 0
        number = page.wait_for_selector("#number").inner_text()
        assert len(number) == 2 and number.isdigit()
        assert page.locator("[aria-live=polite]").count() >= 1
        no_violations(page, "the consent page waiting, with its number")
        # the person types the number in the plugin and allows: the page goes on by itself, with a code
        frame = victim.frame
        wait_until(lambda: victim._safe(lambda: question_shown(frame)), "the question in the plugin")
        frame.fill("#consent-number", number)
        frame.click("#consent-allow")
        redirect = callback.query()
        assert "code" in redirect and redirect["state"] == "s1", redirect
        wait_until(lambda: victim._safe(lambda: "Test app" in frame.inner_text("#apps")), "the app in the list")
        no_violations(frame, "the plugin with a connected app")
        # the used link: said plainly
        page.goto(consent_url)
        assert "expired or was already used" in page.inner_text("main")
        no_violations(page, "the consent page once used")
    finally:
        page.close()
