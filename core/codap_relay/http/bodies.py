"""Reading request bodies at the edge: size limit before parsing, JSON only, UTF-8 only."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from ..errors import BadInput, PayloadTooLarge

M = TypeVar("M", bound=BaseModel)


async def read_limited(request: Request, limit: int) -> bytes:
    too_large = PayloadTooLarge(
        f"The body is larger than this endpoint's limit of {limit} bytes; nothing was stored. "
        "Send less data per call (e.g. split cases over several requests).",
        limit=limit,
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int) -> Any:
    ctype = request.headers.get("content-type", "")
    raw = await read_limited(request, limit)
    if ctype.split(";")[0].strip().lower() not in ("application/json", "") and not ctype.endswith("+json"):
        raise BadInput(f"Send the body as JSON with Content-Type: application/json (got {ctype!r}).")
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
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
    if "\\ud" in text.lower():  # only \u escapes can smuggle in a lone surrogate, which no UTF-8 output can hold
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadInput(
                "The body contains a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not "
                "text; fix the string and send it again."
            ) from exc
    return value


def _refuse_constant(name: str) -> Any:
    # Python accepts NaN and Infinity, JSON does not: stored, they would break every reader downstream.
    raise ValueError(f"{name} is not a JSON value (use null or a string)")


def parse(model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "body"
        raise BadInput(f"Invalid field `{loc}`: {err['msg']}.", path=loc) from exc
