"""Tool manifests: the default one from the contract, checks for plugin-supplied ones, argument validation."""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidArguments, InvalidManifest, UnknownTool
from .records import canonical_json

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

# jsonschema is imported where it is used: it costs 100+ ms at cold start, and most Lambda functions
# (stream, response, metadata, plugin) never validate anything.

MANIFEST_VERSION = "1.0.0"
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,64}\Z")  # \Z: "$" would let a trailing newline through
MAX_TOOLS = 64

# The original contract's manifest (seed 002), for plugins that register none. The codap-relay plugin registers
# its own (plugin/js/tools/, read by catalog.py), whose seed tools accept every call these schemas accept.
DEFAULT_TOOLS: list[dict[str, Any]] = json.loads((Path(__file__).with_name("seed_tools.json")).read_text("utf-8"))


def check_manifest(tools: Any) -> list[dict[str, Any]]:
    """Validate a plugin-supplied manifest; returns it unchanged or raises InvalidManifest saying what to fix."""
    if not isinstance(tools, list) or not tools:
        raise InvalidManifest("`tools` must be a non-empty array of {name, description, inputSchema} objects.")
    if len(tools) > MAX_TOOLS:
        raise InvalidManifest(f"`tools` may hold at most {MAX_TOOLS} tools; this one has {len(tools)}.")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise InvalidManifest(f"{where} must be an object with name, description and inputSchema.")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            raise InvalidManifest(f"{where}.name must be 1-64 letters, digits or underscores.", path=f"{where}.name")
        if name in seen:
            raise InvalidManifest(f"{where}.name {name!r} appears twice; tool names must be unique.")
        seen.add(name)
        if not isinstance(tool.get("description", ""), str):
            raise InvalidManifest(f"{where}.description must be a string.", path=f"{where}.description")
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise InvalidManifest(
                f'{where}.inputSchema must be a JSON Schema with "type": "object".', path=f"{where}.inputSchema"
            )
        _check_annotations(tool.get("annotations"), f"{where}.annotations")
        problem = _schema_problem(canonical_json(schema))
        if problem is not None:
            raise InvalidManifest(
                f"{where}.inputSchema is not a valid JSON Schema: {problem}", path=f"{where}.inputSchema"
            )
        if "outputSchema" in tool:
            _check_output_schema(tool["outputSchema"], f"{where}.outputSchema")
    return tools


def _check_output_schema(schema: Any, where: str) -> None:
    """MCP's typed results: a tool may declare the JSON Schema its structuredContent follows, always an object."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise InvalidManifest(f'{where} must be a JSON Schema with "type": "object".', path=where)
    problem = _schema_problem(canonical_json(schema))
    if problem is not None:
        raise InvalidManifest(f"{where} is not a valid JSON Schema: {problem}", path=where)


@lru_cache(maxsize=1024)
def _schema_problem(schema_json: str) -> str | None:
    """What makes a schema invalid against JSON Schema 2020-12's metaschema, or None. Remembered per schema: the
    check costs about 9 ms a schema, 0.6 s of CPU for the plugin's manifest, and every tab of a class registers
    the same one (a warm sessions function checks each of its schemas once)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(json.loads(schema_json))
    except SchemaError as exc:
        return str(exc.message)
    return None


ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _check_annotations(annotations: Any, where: str) -> None:
    """MCP's tool annotations, when a tool declares them: the hints are booleans (MCP clients and the plugin's
    replay act on them)."""
    if annotations is None:
        return
    if not isinstance(annotations, dict):
        raise InvalidManifest(f"{where} must be an object of MCP tool annotations.", path=where)
    for hint in ANNOTATION_HINTS:
        if hint in annotations and not isinstance(annotations[hint], bool):
            raise InvalidManifest(f"{where}.{hint} must be true or false.", path=f"{where}.{hint}")


@lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Draft202012Validator:
    import json

    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def find_tool(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for tool in tools:
        if tool["name"] == name:
            return tool
    available = [t["name"] for t in tools]
    raise UnknownTool(
        f"Tool {name!r} is not offered by this CODAP session. Available tools: {', '.join(available)}. "
        "Read GET /metadata for their schemas.",
        tool=name,
        available=available,
    )


def validate_args(tool: dict[str, Any], args: Any) -> None:
    """Raise InvalidArguments naming the failing path (e.g. ``args.recordCount``) and the rule it broke."""
    from jsonschema.exceptions import best_match

    validator = _validator(canonical_json(tool["inputSchema"]))
    error = best_match(validator.iter_errors(args))
    if error is None:
        return
    path = "args" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    properties = error.schema.get("properties") if isinstance(error.schema, dict) else None
    if error.validator == "additionalProperties" and isinstance(properties, dict) and isinstance(error.instance, dict):
        raise _unexpected(tool["name"], path, [k for k in error.instance if k not in properties], properties)
    raise InvalidArguments(
        f"Invalid arguments for {tool['name']}: {path}: {error.message}. "
        "Fix the arguments to match the tool's inputSchema (GET /metadata) and send again.",
        tool=tool["name"],
        path=path,
    )


def _unexpected(name: str, path: str, given: list[str], properties: dict[str, Any]) -> InvalidArguments:
    """An error naming the arguments the tool (or the object at ``path``) accepts, and the one closest to each
    unexpected name: by spelling, or by its description using the word ("direction" → descending, "Sort direction")."""
    accepted = list(properties)
    guesses = {wrong: guess for wrong in given if (guess := _closest(wrong, properties))}
    where = "" if path == "args" else f" in {path}"
    hints = "".join(f" ({w!r}: did you mean {g!r}?)" for w, g in guesses.items())
    listed = ", ".join(repr(k) for k in given)
    return InvalidArguments(
        f"Invalid arguments for {name}: {listed} {'is not an argument' if len(given) == 1 else 'are not arguments'} "
        f"it takes{where}{hints}. "
        + (f"It takes: {', '.join(accepted)}. Send again with those names" if accepted else "It takes none: send {}")
        + " (GET /metadata has the tool's inputSchema).",
        tool=name,
        path=path,
        available=accepted,
        closest=next(iter(guesses.values()), None),
    )


def _closest(wrong: str, properties: dict[str, Any]) -> str | None:
    word = wrong.lower()

    def score(key: str) -> float:
        spelled = SequenceMatcher(None, word, key.lower()).ratio()
        described = properties[key].get("description", "") if isinstance(properties[key], dict) else ""
        said = len(word) >= 4 and re.search(rf"\b{re.escape(word)}", str(described).lower()) is not None
        return spelled + (0.5 if said else 0.0)

    best = max(properties, key=score, default=None)
    return best if best is not None and score(best) >= 0.6 else None
