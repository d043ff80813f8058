"""axe-core (Deque's accessibility engine, npm ``axe-core@4.14.1`` under .tools/) run inside a page or frame."""

from __future__ import annotations

import functools
from typing import Any

from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.real_parts import need

AXE_JS = CHECKOUT / ".tools" / "node_modules" / "axe-core" / "axe.min.js"

# WCAG 2.0, 2.1 and 2.2 at levels A and AA (2.2 added no level-A rules to axe).
WCAG_AA_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")


@functools.cache
def axe_source() -> str:
    need(AXE_JS.exists(), "axe-core")
    return AXE_JS.read_text()


def axe_violations(frame: Any, tags: tuple[str, ...] = WCAG_AA_TAGS, rules: list[str] | None = None) -> list[Any]:
    """axe's violations in ``frame`` (a Playwright Page or Frame) for ``tags``, or only for ``rules``. The engine
    is evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern."""
    if not frame.evaluate("() => typeof window.axe === 'object'"):
        frame.evaluate(axe_source())
    run_only = {"type": "rule", "values": rules} if rules else {"type": "tag", "values": list(tags)}
    found: list[Any] = frame.evaluate(
        """async (runOnly) => {
            const results = await axe.run(document, {runOnly, resultTypes: ['violations']});
            return results.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
        }""",
        run_only,
    )
    return found


def describe(violations: list[Any]) -> str:
    """The violations, one rule a paragraph with each element and why, for a failing assertion."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']}")
        lines.extend(f"    {n['target']}: {' '.join(str(n['summary']).split())}" for n in v["nodes"])
    return "\n".join(lines)
