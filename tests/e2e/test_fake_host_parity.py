"""The CODAP test host (tests/e2e/codap_host) against the real CODAP build: the same Data Interactive requests,
sent from the plugin's frame to each, must get the same replies.

The host may leave out what the plugin does not read (the real replies carry far more: category maps, axis
bounds, colours), but whatever it answers must be what CODAP answers: the same keys with the same values, the
same error messages, and ids that correspond one to one across the whole script (the host numbers its objects
from 100000, CODAP draws 15-digit ids). So every test that runs on the host runs on a faithful copy of CODAP's
behaviour, and a change in CODAP's replies shows up here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from codap_relay_tooling.testing.plugin_page import CLASS_ROWS, CLASSES, MORE_CLASS_ROWS
from codap_relay_tooling.testing.real_codap import di_call

# The relay only serves the plugin's page here: the requests go from the frame straight to each host, so through
# local-api (the tools marker: run once) this would prove nothing more.
pytestmark = [pytest.mark.browser, pytest.mark.tools]

Reply = Any
Request = Any  # one request (a dict) or a message of several (a list)
Step = Request | Callable[[dict[str, Reply]], Request]


def get(resource: str) -> dict[str, Any]:
    return {"action": "get", "resource": resource}


def new_id(replies: dict[str, Reply], label: str) -> int:
    value: int = replies[label]["values"]["id"]
    return value


PEOPLE = {
    "name": "people",
    "title": "people",
    "collections": [
        {
            "name": "people",
            "attrs": [
                {"name": "name", "type": "categorical"},
                {"name": "age", "type": "numeric", "precision": 0, "unit": "years"},
                {"name": "my score"},
                {"name": "when", "type": "date"},
            ],
        }
    ],
}
ROWS = [
    {"name": "Ann", "age": 31, "my score": "7", "when": "2024-01-02"},
    {"name": "  Bob  ", "age": "x", "my_score": 8, "extra": 1},
    {"name": 'Cé "q", ü', "age": None, "my score": "", "when": "2024-02-03"},
    {"name": "Dee", "age": "12 cm", "my score": " 4.50 "},
]

# (label, request or a function of earlier replies by label) in the order they are sent
SCRIPT: list[tuple[str, Step]] = [
    ("frame", get("interactiveFrame")),
    ("people", {"action": "create", "resource": "dataContext", "values": PEOPLE}),
    ("people again", {"action": "create", "resource": "dataContext", "values": {"name": "people"}}),
    (
        "bare",
        {
            "action": "create",
            "resource": "dataContext",
            "values": {"name": "bare", "collections": [{"name": "bare", "attrs": [{"name": "v"}]}]},
        },
    ),
    ("rows", {"action": "create", "resource": "dataContext[people].item", "values": ROWS}),
    (
        "wrapped row",
        {"action": "create", "resource": "dataContext[people].item", "values": [{"values": {"name": "Eve"}}]},
    ),
    ("list", get("dataContextList")),
    ("collections", get("dataContext[people].collectionList")),
    ("collection", get("dataContext[people].collection[people]")),
    ("collection by id", lambda r: get(f"dataContext[people].collection[{r['collections']['values'][0]['id']}]")),
    ("dataset by id", lambda r: get(f"dataContext[{new_id(r, 'people')}].collectionList")),
    ("attributes", get("dataContext[people].collection[people].attributeList")),
    ("counts", [get("dataContext[people].collection[people].caseCount"), get("dataContext[people].itemCount")]),
    ("items", get("dataContext[people].itemSearch[*]")),
    ("attribute", get("dataContext[people].attribute[age]")),
    ("attribute canonical", get("dataContext[people].attribute[my score]")),
    ("no attribute", get("dataContext[people].attribute[nope]")),
    (
        "no dataset",
        [
            get("dataContext[nowhere].collectionList"),
            get("dataContext[nowhere].itemSearch[*]"),
            get("dataContext[nowhere].collection[x].caseCount"),
            get("dataContext[people].collection[x].caseCount"),
            get("dataContext[people].collection[x].attributeList"),
        ],
    ),
    ("unsupported", {"action": "notify", "resource": "dataContextList"}),
    ("no action", {"resource": "dataContextList"}),
    ("table", {"action": "create", "resource": "component", "values": {"type": "caseTable", "dataContext": "people"}}),
    (
        "table again",
        {"action": "create", "resource": "component", "values": {"type": "caseTable", "dataContext": "people"}},
    ),
    (
        "table by id",
        lambda r: {
            "action": "create",
            "resource": "component",
            "values": {"type": "caseTable", "dataContext": str(new_id(r, "bare"))},
        },
    ),
    (
        "no table",
        {"action": "create", "resource": "component", "values": {"type": "caseTable", "dataContext": "nowhere"}},
    ),
    (
        "names graph",
        {
            "action": "create",
            "resource": "component",
            "values": {"type": "graph", "dataContext": "people", "xAttributeName": "name", "title": "Names"},
        },
    ),
    (
        "scatter",
        {
            "action": "create",
            "resource": "component",
            "values": {"type": "graph", "dataContext": "people", "xAttributeName": "age", "yAttributeName": "my score"},
        },
    ),
    (
        "numeric as categories",
        {
            "action": "create",
            "resource": "component",
            "values": {
                "type": "graph",
                "dataContext": "people",
                "xAttributeName": "age",
                "xAttributeType": "categorical",
            },
        },
    ),
    (
        "lost graph",
        {
            "action": "create",
            "resource": "component",
            "values": {"type": "graph", "dataContext": "nowhere", "xAttributeName": "age"},
        },
    ),
    (
        "graphs",
        lambda r: [
            get(f"component[{new_id(r, g)}]") for g in ("names graph", "scatter", "numeric as categories", "lost graph")
        ],
    ),
    (
        "fuse",
        lambda r: [
            {"action": "update", "resource": f"component[{new_id(r, g)}]", "values": {"pointsAreFusedIntoBars": True}}
            for g in ("names graph", "scatter", "numeric as categories", "lost graph", "names graph")
        ],
    ),
    (
        "old fuse key",
        lambda r: {
            "action": "update",
            "resource": f"component[{new_id(r, 'scatter')}]",
            "values": {"pointsFusedIntoBars": True},
        },
    ),
    (
        "lines",
        lambda r: {
            "action": "update",
            "resource": f"component[{new_id(r, 'scatter')}]",
            "values": {"showConnectingLines": True},
        },
    ),
    (
        "graphs after",
        lambda r: [get(f"component[{new_id(r, g)}]") for g in ("names graph", "scatter", "numeric as categories")],
    ),
    ("by title", get("component[Names]")),
    ("components", get("componentList")),
    ("no component", get("component[424242]")),
    ("item", lambda r: get(f"dataContext[people].itemByID[{r['rows']['itemIDs'][0]}]")),
    (
        "update item",
        lambda r: {
            "action": "update",
            "resource": f"dataContext[people].itemByID[{r['rows']['itemIDs'][0]}]",
            "values": {"age": 32, "bogus": 1},
        },
    ),
    (
        "delete item",
        lambda r: {"action": "delete", "resource": f"dataContext[people].itemByID[{r['rows']['itemIDs'][3]}]"},
    ),
    (
        "no item",
        [
            get("dataContext[people].itemByID[424242]"),
            {"action": "update", "resource": "dataContext[people].itemByID[424242]", "values": {"age": 1}},
        ],
    ),
    ("items after", get("dataContext[people].itemSearch[*]")),
    (
        "new attribute",
        {
            "action": "create",
            "resource": "dataContext[people].collection[people].attribute",
            "values": [{"name": "extra", "type": "numeric"}],
        },
    ),
    (
        "attribute needs collection",
        {"action": "create", "resource": "dataContext[people].attribute", "values": [{"name": "x"}]},
    ),
    ("classes", CLASSES),
    (
        "class rows",
        {"action": "create", "resource": "dataContext[classes].item", "values": CLASS_ROWS + MORE_CLASS_ROWS},
    ),
    (
        "class counts",
        [
            get("dataContext[classes].collection[class].caseCount"),
            get("dataContext[classes].collection[pupil].caseCount"),
            get("dataContext[classes].itemCount"),
            get("dataContext[classes].itemSearch[*]"),
            get("dataContext[classes].collection[pupil]"),
        ],
    ),
    (
        "all cases",
        [
            get("dataContext[classes].collection[class].allCases"),
            get("dataContext[classes].collection[pupil].allCases"),
        ],
    ),
    # a dataset whose title is another's name: CODAP resolves dataContext[x] by title first, in document order
    (
        "decoy",
        {
            "action": "create",
            "resource": "dataContext",
            "values": {"name": "decoy", "title": "twin", "collections": [{"name": "decoy", "attrs": [{"name": "v"}]}]},
        },
    ),
    (
        "twin",
        {
            "action": "create",
            "resource": "dataContext",
            "values": {"name": "twin", "collections": [{"name": "twin", "attrs": [{"name": "w"}]}]},
        },
    ),
    ("twin resolves to decoy", get("dataContext[twin].collectionList")),
    ("twin attributes", lambda r: get(f"dataContext[{new_id(r, 'twin')}].collection[twin]")),
    (
        "twin graph",
        {
            "action": "create",
            "resource": "component",
            "values": {"type": "graph", "dataContext": "twin", "xAttributeName": "w"},
        },
    ),
    ("twin graph shows decoy", lambda r: get(f"component[{new_id(r, 'twin graph')}]")),
    (
        "twin graph by id",
        lambda r: [
            {
                "action": "update",
                "resource": f"component[{new_id(r, 'twin graph')}]",
                "values": {
                    "dataContext": str(new_id(r, "twin")),
                    "xAttributeID": r["twin attributes"]["values"]["attrs"][0]["id"],
                },
            },
            get(f"component[{new_id(r, 'twin graph')}]"),
        ],
    ),
    ("list after", get("dataContextList")),
]

# Differences by design: the host says it is the test host.
IGNORED_KEYS = {"codapVersion"}


def differences(fake: Any, real: Any, ids: tuple[dict[int, int], dict[int, int]], path: str) -> list[str]:
    """Where ``fake`` is not a part of ``real``: it must hold the same values under the keys it has; big integers
    are ids and must correspond one to one (the n-th id the host shows is the n-th id CODAP shows, throughout the
    script). A key CODAP leaves undefined counts as null."""
    if isinstance(fake, dict):
        if not isinstance(real, dict):
            return [f"{path}: host answered an object, CODAP {real!r}"]
        return [
            d
            for key, value in fake.items()
            if key not in IGNORED_KEYS
            for d in differences(value, real.get(key), ids, f"{path}.{key}")
        ]
    if isinstance(fake, list):
        if not isinstance(real, list) or len(real) != len(fake):
            return [f"{path}: host {fake!r}, CODAP {real!r}"]
        return [
            d for i, (f, r) in enumerate(zip(fake, real, strict=True)) for d in differences(f, r, ids, f"{path}[{i}]")
        ]
    if isinstance(fake, int) and not isinstance(fake, bool) and fake >= 100_000:
        if not (isinstance(real, int) and real >= 100_000):
            return [f"{path}: host id {fake}, CODAP {real!r}"]
        fake_ids, real_ids = ids
        if fake_ids.setdefault(fake, len(fake_ids)) != real_ids.setdefault(real, len(real_ids)):
            return [f"{path}: the host's id {fake} stands for another object than CODAP's {real}"]
        return []
    return [] if fake == real else [f"{path}: host {fake!r}, CODAP {real!r}"]


def run(frame: Any) -> dict[str, Reply]:
    replies: dict[str, Reply] = {}
    for label, step in SCRIPT:
        request = step(replies) if callable(step) else step
        replies[label] = di_call(frame, request)
    return replies


def test_the_host_answers_as_real_codap_does(open_plugin: Any, open_codap: Any, relay_url: str) -> None:
    host = open_plugin(relay_url)
    codap = open_codap(f"{relay_url}/plugin/")
    fake = run(host.frame)
    real = run(codap.frame)
    ids: tuple[dict[int, int], dict[int, int]] = ({}, {})
    found = [d for label, _ in SCRIPT for d in differences(fake[label], real[label], ids, label)]
    assert not found, "the test host differs from CODAP:\n" + "\n".join(found)
