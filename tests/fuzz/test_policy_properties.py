"""The plugin's policy (tools/policy.js, tools/richtext.js) as a property: for generated component and rich-text
values, with URLs, styles and image nodes at random depths and under random keys (also inside JSON strings), what
the policy lets codap_api send never holds a URL the browser would load, a style, HTML attributes or an image node,
and a text's value is always the rebuilt object (never a string CODAP would parse). A Node process sanitises each
value as the plugin does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codap_relay_tooling.testing.real_parts import need

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "js" / "support" / "policy_worker.mjs"
NODE = shutil.which("node")


@pytest.fixture(autouse=True, scope="module")
def node_installed() -> None:
    need(NODE, "Node")


URLS = [
    "http://127.0.0.1:9/x.png",
    "https://example.org/",
    "//127.0.0.1:9/y",
    "javascript:alert(1)",
    "data:image/png;base64,AAAA",
    " HTTP://127.0.0.1:9/z ",
]
STYLES = [
    "position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647",
    "background-image:url(http://127.0.0.1:9/bg.png)",
    "background:url('//127.0.0.1:9/b')",
]
KEYS = [
    "type",
    "children",
    "text",
    "document",
    "attrs",
    "style",
    "styles",
    "Style",
    "src",
    "SRC",
    "url",
    "URL",
    "href",
    "srcset",
    "geoRaster",
    "currentGameUrl",
    "align",
    "bold",
    "italic",
    "underlined",
    "underline",
    "code",
    "color",
    "title",
    "items",
    "value",
    "x",
]
TYPES = [
    "paragraph",
    "heading1",
    "heading6",
    "bulleted-list",
    "ordered-list",
    "list-item",
    "link",
    "image",
    "Image",
    "block-quote",
    "iframe",
    "video",
    "text",
]
URL_KEYS = {"url", "currentgameurl", "georaster", "src", "href", "srcset"}
STYLE_KEYS = {"attrs", "style", "styles"}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(URLS + STYLES + TYPES), st.text(max_size=6)
)


def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
        st.builds(lambda t, c: {"type": t, "children": c}, st.sampled_from(TYPES), st.lists(inner, max_size=3)),
        st.builds(json.dumps, inner),  # CODAP parses JSON strings: the policy must read them too
    )


trees = st.recursive(scalars, nested, max_leaves=25)


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """A tree wrapped 0 to 60 levels deep in children lists (past every limit), as nodes or plain objects."""
    value = draw(trees)
    for _ in range(draw(st.integers(0, 60))):
        value = draw(st.sampled_from([{"type": "paragraph", "children": [value]}, {"children": [value]}, [value]]))
    return value


texts = st.one_of(
    deep().map(lambda v: {"document": {"children": v if isinstance(v, list) else [v]}}),
    deep().map(lambda v: json.dumps({"document": {"children": [v]}})),
    deep(),
    st.text(max_size=20),
)
requests = st.one_of(
    st.builds(
        lambda t, title: {
            "action": "create",
            "resource": "component",
            "values": {"type": "text", "text": t, "title": title},
        },
        texts,
        scalars,
    ),
    st.builds(lambda t: {"action": "update", "resource": "component[12]", "values": {"text": t}}, texts),
    st.builds(lambda v: {"action": "update", "resource": "component[12]", "values": v}, deep()),
    st.builds(
        lambda kind, v: {"action": "create", "resource": "component", "values": {"type": kind, "x": v}},
        st.sampled_from(["graph", "text", "map", "slider"]),
        deep(),
    ),
)


@pytest.fixture(scope="module")
def policy() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([NODE or "node", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield proc
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(timeout=10)


def review(proc: subprocess.Popen[str], request: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def loads_url(url: Any) -> bool:
    """Whether a link's href is anything but an http(s) URL (which a link only follows when clicked)."""
    return not (isinstance(url, str) and url.split(":", 1)[0] in ("http", "https"))


def problems(value: Any, path: str = "$", in_text: bool = False) -> Iterator[str]:
    """What in a value sent to CODAP could load a URL, style the page or be read as rich text."""
    if isinstance(value, str):
        text = value.strip()
        if "url(" in text.lower() and in_text:
            yield f"{path}: CSS url() in a text"
        if text[:1] in "{[":
            try:
                parsed = json.loads(text)
            except ValueError:
                return
            yield from problems(parsed, f"{path}(json)", in_text)
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from problems(item, f"{path}[{i}]", in_text)
        return
    if not isinstance(value, dict):
        return
    if str(value.get("type", "")).strip().lower() == "image":
        yield f"{path}: an image node"
    for key, item in value.items():
        k = key.strip().lower()
        if k in STYLE_KEYS:
            yield f"{path}.{key}: a style or HTML attributes"
        elif k in URL_KEYS and not (k == "href" and in_text and value.get("type") == "link" and not loads_url(item)):
            yield f"{path}.{key}: a URL"
        yield from problems(item, f"{path}.{key}", in_text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(request=requests)
def test_what_the_policy_sends_never_loads_a_url_or_styles_the_page(
    policy: subprocess.Popen[str], request: dict[str, Any]
) -> None:
    answer = review(policy, request)
    assert "crashed" not in answer, answer.get("crashed")
    if "refused" in answer:
        return
    sent = answer["sent"]
    values = sent["values"]
    assert not list(problems(values)), list(problems(values))
    if isinstance(values, dict) and "text" in values:
        text = values["text"]
        assert isinstance(text, dict) and isinstance(text["document"]["children"], list), "text is always rebuilt"
        assert not list(problems(text, "$.text", in_text=True)), list(problems(text, "$.text", in_text=True))
