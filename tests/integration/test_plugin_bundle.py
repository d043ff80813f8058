"""The plugin page the relay serves is the build of its sources (scripts/build-plugin), and a browser may keep its
built files for good: they are named by their content, and only the page, which names them, is checked again."""

from __future__ import annotations

from pathlib import Path

import httpx

from codap_relay.http.app import build_app
from codap_relay.http.plugin_files import IMMUTABLE, PLUGIN_DIST
from codap_relay.relay import Relay
from codap_relay.store.memory import MemoryStore
from codap_relay_tooling.testing import web
from codap_relay_tooling.testing.plugin_bundle import build_plugin, page_files, plugin_build_modules
from codap_relay_tooling.testing.real_parts import need
from codap_relay_tooling.testing.relay_settings import make_settings


def test_the_committed_page_is_the_build_of_its_sources(tmp_path: Path) -> None:
    """So that no edit of the plugin's modules, definitions, page or styles goes out unbuilt (the relay serves
    only the build), and no edit of the build goes out without its source."""
    need(plugin_build_modules(), "the build tools")
    fresh = build_plugin(tmp_path / "dist")
    committed = {p.name: p.read_bytes() for p in PLUGIN_DIST.iterdir()}
    built = {p.name: p.read_bytes() for p in fresh.iterdir()}
    assert sorted(committed) == sorted(built), "run scripts/build-plugin and commit core/codap_relay/plugin/dist/"
    for name, contents in built.items():
        assert committed[name] == contents, f"{name}: run scripts/build-plugin and commit core/codap_relay/plugin/dist/"


def test_the_page_loads_three_built_files_with_every_tool_definition_inside() -> None:
    """One script, one classic script (boot.js: it reports a page that did not start) and one stylesheet; the tool
    definitions the plugin registers are in the script, so it fetches none of them."""
    files = page_files((PLUGIN_DIST / "index.html").read_text())
    assert sorted(name.rsplit(".", 1)[1] for name in files) == ["css", "js", "js"], files
    assert sorted(p.name for p in PLUGIN_DIST.iterdir()) == sorted(["index.html", *files])
    script = PLUGIN_DIST / next(name for name in files if name.startswith("plugin-") and name.endswith(".js"))
    tools = Path(__file__).resolve().parents[2] / "core" / "codap_relay" / "plugin" / "js" / "tools"
    names = [tool.split('"', 1)[0] for tool in (tools / "raw.json").read_text().split('"name": "')[1:]]
    assert names and all(f'name:"{name}"' in script.read_text() for name in names), names


async def test_built_files_are_kept_for_good_and_the_page_is_checked_each_time() -> None:
    transport = httpx.ASGITransport(app=build_app(Relay(make_settings(), MemoryStore())))
    async with web.AsyncClient(transport=transport, base_url="http://relay.test") as c:
        page = await c.get("/plugin/")
        assert page.status_code == 200 and page.headers["cache-control"] == "no-cache" and page.headers["etag"]
        for name in page_files(page.text):
            built = await c.get(f"/plugin/{name}")
            assert built.status_code == 200 and built.headers["cache-control"] == IMMUTABLE, name
            assert "content-security-policy" in built.headers
        again = await c.get("/plugin/", headers={"If-None-Match": page.headers["etag"]})
        assert again.status_code == 304 and again.headers["cache-control"] == "no-cache" and not again.content
        # A name the build does not have (an old build's, after a deployment) is not found, and not kept.
        gone = await c.get("/plugin/plugin-000000000000.js")
        assert gone.status_code == 404 and "immutable" not in gone.headers.get("cache-control", "")
        # The sources are not served: the page and the files it names are the whole plugin.
        assert (await c.get("/plugin/js/main.js")).status_code == 404
