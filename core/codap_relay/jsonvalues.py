"""JSON in and out: one parser for every body the relay reads, one writer for everything it writes.

JSON holds finite numbers only. Python's ``json`` reads ``NaN`` and ``Infinity``, and a number too large for a
float (``1e999``) as infinity, then writes them back as ``Infinity``: text no JSON parser accepts (the plugin's,
an LLM client's, Starlette's own answers refuse it with a 500). So every body is parsed here, and refused with
BadInput naming the field (``args.values[2].x``) when it holds such a number; every JSON the relay writes goes
through ``dumps`` (``allow_nan=False``), so a number that got in some other way fails where it is written.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import BadInput, NonFiniteNumber

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities (ValueError) instead of writing text that is not JSON."""
    return json.dumps(value, allow_nan=False, **options)


def loads(text: str | bytes, *, root: str = "") -> Any:
    """Parse one JSON text, or raise BadInput saying what is wrong: not JSON, nested too deeply, a number JSON
    cannot hold (the field named by its path under ``root``), or a lone UTF-16 surrogate."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"The body is not valid UTF-8 (byte {exc.start}); send UTF-8 encoded JSON.") from exc
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise BadInput(f"The body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from exc
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise BadInput(f"The body is not valid JSON: {exc}.") from exc
    except RecursionError as exc:
        raise BadInput("The body is nested too deeply; flatten the data and send it again.") from exc
    check_finite(value, root)
    if "\\ud" in text.lower():  # only \u escapes can smuggle in a lone surrogate, which no UTF-8 output can hold
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadInput(
                "The body contains a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not "
                "text; fix the string and send it again."
            ) from exc
    return value


def check_finite(value: Any, root: str = "") -> None:
    """Raise NonFiniteNumber naming the first field (``root`` then its path) that holds NaN or an infinity.
    Iterative: a value parsed by another parser (the MCP SDK's) may be deeper than Python's recursion limit."""
    stack: list[tuple[Any, str]] = [(value, root)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                where = path or "the body"
                raise NonFiniteNumber(
                    f"`{where}` is a number JSON cannot hold ({item!r}: NaN, an infinity, or beyond ±1.8e308); "
                    "send a finite number, or null or a string.",
                    field=where,
                )
        elif isinstance(item, dict):
            stack.extend((v, field_path(path, str(k))) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(item))))


def field_path(parent: str, key: str) -> str:
    """``parent.key``, or ``parent["odd key"]`` when the key is not a plain name."""
    if _NAME.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _refuse_constant(name: str) -> Any:
    # Python accepts NaN and Infinity, JSON does not: stored, they would break every reader downstream.
    raise ValueError(f"{name} is not a JSON value (use null or a string)")
