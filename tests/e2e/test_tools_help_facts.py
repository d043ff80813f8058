"""What the tools' help says CODAP can and cannot compute, checked against the real CODAP app: codap_api_help's
formulas topic lists exactly the functions CODAP's formula engine has (``get formulaEngine``), and CODAP has no
hypothesis test, p-value or distribution function, as that topic and compute_codap_statistics say; the t statistic
the help builds from per-group figures uses CODAP's own functions."""

from __future__ import annotations

import re

import pytest

from codap_relay_tooling.testing.real_codap import CodapPage

pytestmark = [pytest.mark.browser, pytest.mark.tools]


def test_the_formula_help_lists_codaps_functions_and_says_what_it_lacks(codap: CodapPage) -> None:
    engine = codap.ok({"action": "get", "resource": "formulaEngine"})
    functions = {name for category in engine.values() for name in category}
    text = codap.done("codap_api_help", {"topic": "formulas"})["content"][0]["text"]
    listed = text.split("by category, in a 150 KB reply):", 1)[1].split("No hypothesis test", 1)[0]
    words = set(re.findall(r"[A-Za-z][A-Za-z0-9]*", listed))
    groups = {
        "math",
        "trig",
        "stats",
        "two",
        "variable",
        "logic",
        "lookup",
        "random",
        "text",
        "dates",
        "colour",
        "other",
    }
    assert functions <= words and words - functions <= groups
    assert 500 < len(listed) < 1000
    # no test, p-value or distribution function among them
    assert not {f for f in functions if re.search(r"test|pval|cdf|chi|^[tz]$|^(t|z|norm|binom)dist", f, re.I)}
    assert "No hypothesis test, p-value or distribution function" in text

    # the t statistic the help builds from per-group figures uses CODAP's own functions
    assert {"mean", "stdDev", "count", "sqrt"} <= functions and "t = (m1 - m2) / sqrt(s1^2/n1 + s2^2/n2)" in text
