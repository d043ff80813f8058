"""The coverage of CODAP's own interface: for each item of its menus, inspector panels and tool shelf, the tool and
argument that does it (and the real-CODAP test that proves it), or why CODAP's plugin API cannot.

Rows live in ``docs/coverage/<area>.json``, one file per part of CODAP's interface (table.json, graph.json, ...),
each a JSON list of objects with exactly these keys:

- ``menu``: where a person finds it, ``"<Component> ▸ <panel or menu> ▸ <item>"``;
- ``action``: what a person does there;
- ``tool``, ``argument``: the tool and argument that do it (``argument`` is an input property of the tool, or
  ``name: value``, or several joined by ``,`` or ``+``), or null;
- ``test``: the pytest node id of the real-CODAP test that proves it (``tests/e2e/test_x.py::test_y``), or null;
- ``cannot``: null, or ``{"why", "searched", "tried", "instead"}`` when CODAP's plugin API cannot do it: why, what
  was searched in CODAP's build and docs, what was tried in real CODAP and what happened, the menu a person uses
  (such a row may still name the tool whose answer says so, and the test that proves the answer).

A row is *typed* when it names a tool and a test, *cannot* when it says why not, and *left* otherwise.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codap_relay.catalog import plugin_tools

CHECKOUT = Path(__file__).resolve().parents[2]
COVERAGE_DIR = CHECKOUT / "docs" / "coverage"

# Each area's heading, in the order a person meets them; other files follow by name.
AREAS = {
    "document": "The document",
    "tool_shelf": "The tool shelf",
    "table": "Case table",
    "case_card": "Case card",
    "graph": "Graph",
    "map": "Map",
    "slider": "Slider",
    "text": "Text",
    "calculator": "Calculator",
    "plugin": "Plugins and web pages",
}

Status = Literal["typed", "cannot", "left"]


class Cannot(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    why: str = Field(min_length=1)
    searched: str = Field(min_length=1)
    tried: str = Field(min_length=1)
    instead: str = Field(min_length=1)


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    menu: str = Field(min_length=1)
    action: str = Field(min_length=1)
    tool: str | None
    argument: str | None
    test: str | None
    cannot: Cannot | None

    @property
    def status(self) -> Status:
        if self.cannot is not None:
            return "cannot"
        return "typed" if self.tool and self.test else "left"


@dataclass(frozen=True)
class Area:
    key: str  # the file's stem
    heading: str
    rows: tuple[Row, ...]

    def count(self, status: Status) -> int:
        return sum(1 for r in self.rows if r.status == status)


def heading(key: str) -> str:
    return AREAS.get(key, key.replace("_", " ").capitalize())


def load_areas(folder: Path = COVERAGE_DIR) -> list[Area]:
    """Every area's rows, in AREAS order then by file name. A file that is not a list of rows raises ValueError
    naming the file and the row."""
    files = sorted(folder.glob("*.json"), key=lambda p: (list(AREAS).index(p.stem) if p.stem in AREAS else 99, p.stem))
    areas = []
    for path in files:
        raw = json.loads(path.read_text("utf-8"))
        if not isinstance(raw, list):
            raise ValueError(f"{path.name}: a coverage file is a JSON list of rows")
        rows = []
        for i, item in enumerate(raw):
            try:
                rows.append(Row.model_validate(item))
            except ValidationError as error:
                menu = item.get("menu") if isinstance(item, dict) else item
                raise ValueError(f"{path.name} row {i} ({menu!r}): {error}") from None
        areas.append(Area(path.stem, heading(path.stem), tuple(rows)))
    return areas


def totals(areas: Iterable[Area]) -> dict[str, int]:
    areas = list(areas)
    counts = {s: sum(a.count(s) for a in areas) for s in ("typed", "cannot", "left")}
    return {"items": sum(len(a.rows) for a in areas), **counts}


_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def argument_names(argument: str) -> list[str]:
    """The input properties an ``argument`` text names: ``hidden``, ``hidden: true``, ``where, caseIds``,
    ``position.left + size``."""
    names = []
    for part in re.split(r"\s*[,+]\s*", argument.strip()):
        found = _ARG_NAME.match(part)
        names.append(found.group() if found else part)
    return names


@cache
def _defined_tests(path: Path) -> frozenset[str]:
    """``test_x`` and ``Class::test_x`` of every test function a test file defines."""
    tree = ast.parse(path.read_text("utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(
                f"{node.name}::{f.name}" for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return frozenset(names)


def names_a_test(node_id: str, checkout: Path = CHECKOUT) -> bool:
    """Whether a pytest node id (``tests/e2e/test_x.py::test_y`` or ``...::Class::test_y``, a parameter in brackets
    allowed) names a test function defined in that file."""
    file, sep, name = node_id.partition("::")
    path = checkout / file
    if not sep or not file.startswith("tests/") or not path.is_file():
        return False
    return name.split("[", 1)[0] in _defined_tests(path)


def problems(areas: Iterable[Area], checkout: Path = CHECKOUT) -> list[str]:
    """What is wrong with the rows: a tool that does not exist, an argument the tool does not take, a test node id
        that names no test, a menu and action listed twice. A cannot row may name the tool whose answer says so (and the
    test that proves that answer)."""
    tools: dict[str, dict[str, Any]] = {t["name"]: t for t in plugin_tools()}
    found: list[str] = []
    seen: dict[str, str] = {}
    for area in areas:
        for row in area.rows:
            where = f"{area.key}.json: {row.menu}"
            key = f"{row.menu} / {row.action}"
            if key in seen:
                found.append(f"{where}: listed twice ({seen[key]})")
            seen[key] = area.key
            if row.tool is not None:
                spec = tools.get(row.tool)
                if spec is None:
                    found.append(f"{where}: no tool {row.tool!r}")
                elif row.argument is not None:
                    props = spec["inputSchema"].get("properties", {})
                    found += [
                        f"{where}: {row.tool} has no argument {name!r}"
                        for name in argument_names(row.argument)
                        if name not in props
                    ]
            if row.test is not None and not names_a_test(row.test, checkout):
                found.append(f"{where}: no test {row.test!r}")
            if row.argument is not None and row.tool is None:
                found.append(f"{where}: an argument without a tool")
    return found
