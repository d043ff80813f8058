"""Browser fixtures: one Debian chromium per test module, a real relay and a static CODAP test host on loopback.

Every test that takes ``relay_url`` runs twice: against the relay in process, and through local-api (the deployed
shape on DynamoDB Local), the plugin loaded from /<stage>/plugin/; tests marked in_process or tools only against
the first (see ``also_through_local_api``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from codap_relay.http.app import build_app
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing.chromium import CHROMIUM_ARGS, chromium_path, headless_shell_path
from codap_relay_tooling.testing.commands import also_through_local_api
from codap_relay_tooling.testing.plugin_page import PluginPage, close_tabs, new_page
from codap_relay_tooling.testing.real_codap import (
    HOW_TO_GET,
    CodapPage,
    codap_dist,
    codap_pages,
    self_signed_certificate,
)
from codap_relay_tooling.testing.real_parts import missing
from codap_relay_tooling.testing.relay_settings import e2e_settings
from codap_relay_tooling.testing.servers import serve_app

HOST_DIR = Path(__file__).resolve().parent / "codap_host"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser_args() -> list[str]:
    """Extra command-line switches for this module's chromium. A module that needs another variant (a public
    origin, Chrome's own storage defaults) overrides this fixture; see real_codap.py for the switches."""
    return []


@pytest.fixture(scope="module")
def full_browser() -> bool:
    """Whether this module's chromium is the browser itself rather than its headless shell (chromium.py says
    why the shell is the default). A module about what a person's Chrome does (its storage defaults, Local Network
    Access) overrides this fixture."""
    return False


@pytest.fixture(scope="module")
def browser(browser_args: list[str], full_browser: bool) -> Iterator[Any]:
    """One chromium per test module. Not per session: Playwright's sync API keeps an event loop running in this
    thread while it is open, and pytest-asyncio cannot start its own loop for the async tests collected after."""
    executable = chromium_path() if full_browser else headless_shell_path()
    if executable is None:
        missing("Chromium" if full_browser else "Chromium's headless shell")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, headless=True, args=[*CHROMIUM_ARGS, *browser_args])
        yield b
        b.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    also_through_local_api(metafunc, "relay_url", "in_process")


@pytest.fixture(scope="session")
def relay_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if getattr(request, "param", "in_process") == "local_api":
        yield request.getfixturevalue("local_api").base
        return
    relay = Relay(e2e_settings(), MemoryStore())
    with serve_app(build_app(relay), wait_for_stop=False) as url:
        yield url


@pytest.fixture(scope="session")
def host_url() -> Iterator[str]:
    app = Starlette(routes=[Mount("/", app=StaticFiles(directory=HOST_DIR, html=True))])
    with serve_app(app, wait_for_stop=False) as url:
        yield url


@pytest.fixture
def open_plugin(browser: Any, host_url: str) -> Iterator[Any]:
    """Factory: open the CODAP test host embedding the plugin served by ``relay``; returns a PluginPage."""
    contexts: list[Any] = []

    def factory(relay: str, *, query: str = "", init_script: str | None = None) -> PluginPage:
        context = browser.new_context(viewport={"width": 900, "height": 700})
        contexts.append(context)
        if init_script:
            context.add_init_script(init_script)
        page, messages = new_page(context)
        plugin = PluginPage(page, relay, host_url, query=query, console=messages)
        plugin.open()
        return plugin

    yield factory
    for context in contexts:
        close_tabs(context)


@pytest.fixture(scope="session")
def codap_build() -> Path:
    """The folder of the real CODAP build (skips, or fails under REAL_PARTS_REQUIRED, where there is none)."""
    dist: Path | None = codap_dist()
    if dist is None:
        missing("the CODAP build", HOW_TO_GET)
    return dist


@pytest.fixture(scope="session")
def codap_url(codap_build: Path) -> Iterator[str]:
    """The real CODAP build, served statically on loopback (as any web server would serve it)."""
    app = Starlette(routes=[Mount("/", app=StaticFiles(directory=codap_build, html=True))])
    with serve_app(app, wait_for_stop=False) as url:
        yield url


@pytest.fixture(scope="session")
def codap_https_url(codap_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same build over https with a self-signed certificate, as codap.concord.org serves it. Only a browser
    started with ``public_origin(codap_https_url)`` treats it as a public site (and trusts the certificate)."""
    tls = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    app = Starlette(routes=[Mount("/", app=StaticFiles(directory=codap_build, html=True))])
    with serve_app(app, tls=tls, wait_for_stop=False) as url:
        yield url


@pytest.fixture
def open_codap(browser: Any, codap_url: str) -> Iterator[Any]:
    """Factory: open the real CODAP with the plugin at ``plugin_url`` (``?di=``); returns a paired CodapPage.
    ``codap`` serves CODAP from another base URL (https, another site); ``context_options`` go to new_context."""
    with codap_pages(browser, codap_url) as factory:
        yield factory


@pytest.fixture(scope="module")
def full_frame_rate() -> bool:
    """Whether this module's CODAP pages run their animation frames at the display's rate, as people's browsers do,
    instead of the test pages' 10 a second (real_codap.py says why). A module that needs it overrides this fixture."""
    return False


@pytest.fixture(scope="module")
def pages(browser: Any, codap_url: str, full_frame_rate: bool) -> Iterator[Callable[..., CodapPage]]:
    """Real CODAP pages for one test module (a browser context each), all closed after it."""
    with codap_pages(browser, codap_url, full_frame_rate=full_frame_rate) as factory:
        yield factory


@pytest.fixture(autouse=True)
def close_what_the_test_opened(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on a module's shared CODAP page (a ``codap`` fixture), close the components the test
    opened, so the next test works in a document as light as the first (see CodapPage.close_components); what
    the module's fixture made stays. Best effort: a test that broke the page has failed already."""
    codap = request.getfixturevalue("codap") if "codap" in request.fixturenames else None
    if not isinstance(codap, CodapPage):
        yield
        return
    before = codap.component_ids()
    yield
    with contextlib.suppress(Exception):
        codap.close_components(keep=before)


@pytest.fixture(scope="module")
def codap(pages: Callable[..., CodapPage], relay_url: str) -> CodapPage:
    """The module's shared CODAP page, paired with the session relay; each test names its own datasets."""
    return pages(f"{relay_url}/plugin/")
