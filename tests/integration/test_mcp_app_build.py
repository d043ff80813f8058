"""The MCP App served is the one its sources build: scripts/build-mcp-app, run again, gives the committed
core/codap_relay/mcp/app/document.html byte for byte (so no edit of mcpapp/src goes out unbuilt, and no edit of
the built file goes out without its source)."""

from __future__ import annotations

import pytest

from codap_relay.mcp.app import APP_FILE
from codap_relay_tooling.testing.mcp_app import build, mcp_app_modules
from codap_relay_tooling.testing.real_parts import need


def test_the_committed_app_is_the_build_of_its_sources() -> None:
    need(mcp_app_modules(), "the build tools")
    built, committed = build("--stdout"), APP_FILE.read_bytes()
    if built != committed:
        # Not pytest's own diff of the two: on 400 KB of minified script it ran for minutes.
        at = next((i for i, (a, b) in enumerate(zip(built, committed, strict=False)) if a != b), len(committed))
        pytest.fail(
            f"the build differs from the committed app at byte {at} of {len(built)} (committed: {len(committed)}):"
            f" built {built[at - 60 : at + 60]!r}, committed {committed[at - 60 : at + 60]!r};"
            " run scripts/build-mcp-app and commit core/codap_relay/mcp/app/"
        )
