"""What a tool result may carry besides text, and its one-line summary.

A plugin answers with ``{"content": [...], "structuredContent": {...}}`` (MCP's shape). Text items pass through as
they are. An image item, ``{"type": "image", "data": <base64>, "mimeType": "image/png"}``, ends up in an LLM
client's context, so the relay checks it before it stores the answer: a plugin may be buggy or hostile, and an
LLM client refuses (or chokes on) an image that is not one, or a huge one.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .errors import InvalidResult
from .jsonvalues import dumps

# The picture formats vision-capable LLM APIs accept, and how each file begins.
IMAGE_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # then four bytes of length, then WEBP (checked below)
}
# One image's decoded size. Well inside MAX_RESPONSE_BYTES once base64 (4/3) and JSON wrap it, and inside what MCP
# clients take (a few MB per result; Anthropic's API takes 5 MB per image).
MAX_IMAGE_BYTES = 1_500_000
MAX_IMAGES = 4
SUMMARY_CHARS = 300


def check_result(result: Any) -> None:
    """Raise InvalidResult (naming the item) unless every image item of ``result`` is a picture of an allowed
    type within the size limit. Results without a content list are not tool results in MCP's shape: untouched."""
    if not isinstance(result, dict) or not isinstance(result.get("content"), list):
        return
    images = 0
    for i, item in enumerate(result["content"]):
        if not isinstance(item, dict) or item.get("type") != "image":
            continue
        images += 1
        if images > MAX_IMAGES:
            raise InvalidResult(f"A result may hold at most {MAX_IMAGES} images.", field=f"result.content[{i}]")
        _check_image(item, f"result.content[{i}]")


def _check_image(item: dict[str, Any], where: str) -> None:
    mime = item.get("mimeType")
    if mime not in IMAGE_SIGNATURES:
        allowed = ", ".join(IMAGE_SIGNATURES)
        raise InvalidResult(f"{where}.mimeType must be one of {allowed}; got {mime!r}.", field=f"{where}.mimeType")
    data = item.get("data")
    if not isinstance(data, str) or not data:
        raise InvalidResult(f"{where}.data must be the image as a base64 string.", field=f"{where}.data")
    # Refuse by length before decoding: base64 holds 3 bytes in every 4 characters.
    if len(data) > (MAX_IMAGE_BYTES + 2) // 3 * 4:
        raise InvalidResult(
            f"{where} is larger than {MAX_IMAGE_BYTES:,} bytes; scale the image down or re-encode it.",
            field=f"{where}.data",
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidResult(f"{where}.data is not valid base64.", field=f"{where}.data") from None
    if not raw.startswith(IMAGE_SIGNATURES[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        raise InvalidResult(f"{where}.data is not a {mime} image.", field=f"{where}.data")


def summary(body: dict[str, Any] | None) -> str | None:
    """One line for a trace or a log: the first line of a result's first text item (or of its JSON), or the
    error's message; None while there is no answer."""
    if body is None:
        return None
    if "error" in body:
        error = body["error"]
        text = error.get("message") if isinstance(error, dict) else error
        return _clip(str(text or "failed"))
    result = body.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        for item in result["content"]:
            if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
                return _clip(item["text"])
    text = result if isinstance(result, str) else dumps(result, ensure_ascii=False)
    return _clip(text)


def _clip(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1] + "…"
