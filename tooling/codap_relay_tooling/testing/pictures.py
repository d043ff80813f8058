"""Reading a tool's picture of a CODAP graph as the LLM's client would: decode it, count its points by colour."""

from __future__ import annotations

import base64
import io
from typing import Any

POINT_COLOUR = (0xE6, 0x80, 0x5B)  # CODAP's default point colour (get component: pointColor "#e6805b")


def picture(data: str) -> Any:
    """A base64 image item's picture, decoded (a PIL image)."""
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
    image.load()
    return image


def point_pixels(image: Any) -> int:
    """How many pixels have the colour of CODAP's points (anti-aliased edges aside)."""
    rgb = image.convert("RGB")
    near = [range(c - 24, c + 25) for c in POINT_COLOUR]
    return sum(1 for p in rgb.get_flattened_data() if all(v in r for v, r in zip(p, near, strict=True)))


def result_point_pixels(result: dict[str, Any]) -> int | None:
    """The point pixels of a tool result's image item; None when it has no image."""
    images = [c for c in result.get("content", []) if c.get("type") == "image"]
    return point_pixels(picture(images[0]["data"])) if images else None
