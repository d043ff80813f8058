"""Reading request bodies at the edge: size limit before parsing, JSON only (finite numbers), UTF-8 only."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from ..errors import BadInput, PayloadTooLarge
from ..jsonvalues import loads

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
    return loads(raw)


def parse(model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "body"
        raise BadInput(f"Invalid field `{loc}`: {err['msg']}.", path=loc) from exc
