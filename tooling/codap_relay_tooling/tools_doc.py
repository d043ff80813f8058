"""docs/tools.md, written from the plugin's tool definitions and the coverage rows in docs/coverage/*.json:
``python -m codap_relay_tooling.tools_doc`` rewrites it (``--check`` says whether it is up to date). A unit test keeps
the file equal to what this writes. It lives beside the tests, not in the runtime package, because it reads docs/."""

from __future__ import annotations

import sys
from typing import Any

from codap_relay.catalog import by_family
from codap_relay.jsonvalues import dumps

from .coverage import CHECKOUT, Area, Row, load_areas, totals

TOOLS_MD = CHECKOUT / "docs" / "tools.md"
COMMAND = "python -m codap_relay_tooling.tools_doc"


def _kind(hints: dict[str, Any]) -> str:
    if hints.get("readOnlyHint"):
        return "reads only"
    return "may delete or overwrite" if hints.get("destructiveHint") else "adds or changes"


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    if "enum" in schema:
        text += ": " + ", ".join(f"`{v}`" for v in schema["enum"])
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def tools_section() -> list[str]:
    out: list[str] = []
    for heading, tools in by_family():
        out += [f"## {heading}", ""]
        for tool in tools:
            out += [f"### `{tool['name']}`: {tool['title']} ({_kind(tool.get('annotations', {}))})", ""]
            out += [tool["description"], ""]
            schema = tool["inputSchema"]
            props: dict[str, Any] = schema.get("properties", {})
            if not props:
                out += ["No arguments.", ""]
                continue
            required = set(schema.get("required", []))
            out += ["| argument | type | required | what it does |", "|---|---|---|---|"]
            for name, prop in props.items():
                what = _cell(str(prop.get("description", "")))
                if "default" in prop:
                    what += f" (default `{dumps(prop['default'])}`)"
                need = "yes" if name in required else ""
                out.append(f"| `{name}` | {_cell(_type(prop))} | {need} | {what} |")
            out.append("")
    return out


def _anchor(heading: str) -> str:
    return "".join(c for c in heading.lower().replace(" ", "-") if c.isalnum() or c == "-")


def _how(row: Row) -> str:
    if row.tool is None:
        return ""
    return f"`{row.tool}`" + (f" `{_cell(row.argument)}`" if row.argument else "")


def _proof(row: Row) -> str:
    if row.cannot is not None:
        return _cell(f"**cannot**: {row.cannot.why} Instead: {row.cannot.instead}")
    if row.test is None:
        return "**left**: not yet done" if row.tool is None else "**left**: no real-CODAP test yet"
    file, _, name = row.test.partition("::")
    return f"[`{name}`](../{file})"


def coverage_section(areas: list[Area]) -> list[str]:
    whole = totals(areas)
    out = [
        "## Coverage of CODAP's own interface",
        "",
        "Each item of CODAP 3.1.0's own menus, inspector panels and tool shelf, and the tool and argument that do it",
        "with the real-CODAP test that proves it (*typed*); or why CODAP's plugin API cannot, what was searched and",
        "tried, and the menu a person uses instead (*cannot*); or not yet covered (*left*). The rows live in",
        f"`docs/coverage/<area>.json` (the format: `codap_relay_tooling/coverage.py`); `{COMMAND}` writes this table.",
        "",
        "| area | items | typed | cannot | left |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| [{a.heading}](#{_anchor(a.heading)}) | {len(a.rows)} | {a.count('typed')} | {a.count('cannot')} | "
        f"{a.count('left')} |"
        for a in areas
    ]
    out += [f"| **all** | {whole['items']} | {whole['typed']} | {whole['cannot']} | {whole['left']} |", ""]
    for area in areas:
        out += [f"### {area.heading}", ""]
        out += ["| menu item | what a person does | tool and argument | proof, or why not |", "|---|---|---|---|"]
        out += [f"| {_cell(r.menu)} | {_cell(r.action)} | {_how(r)} | {_proof(r)} |" for r in area.rows]
        out.append("")
        cannot = [r for r in area.rows if r.cannot is not None]
        if cannot:
            out += ["What was searched and tried for the items CODAP's plugin API cannot do:", ""]
            out += [
                _cell(f"- **{r.menu}**: searched {r.cannot.searched}; tried {r.cannot.tried}")
                for r in cannot
                if r.cannot is not None
            ]
            out.append("")
    return out


def tools_markdown() -> str:
    """The whole of docs/tools.md."""
    out = [
        "# The tools",
        "",
        f"Written from the plugin's tool definitions (`core/codap_relay/plugin/js/tools/*.json`) by `{COMMAND}`;",
        "a test keeps it equal to them. What each tool answers and how it talks to CODAP:",
        "[plugin.md](plugin.md#the-tools). Which of CODAP's own menus each tool reaches, and which CODAP's plugin API",
        "cannot: [the coverage table](#coverage-of-codaps-own-interface).",
        "",
    ]
    areas = load_areas()
    out += tools_section()
    if areas:
        out += coverage_section(areas)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = tools_markdown()
    if "--check" in args:
        current = TOOLS_MD.read_text("utf-8") if TOOLS_MD.exists() else ""
        if current != text:
            print(f"docs/tools.md is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    TOOLS_MD.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
