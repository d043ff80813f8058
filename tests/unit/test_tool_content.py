"""The relay's rules for image items in a plugin's result, and the one-line summary of an answer."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from codap_relay.errors import InvalidResult
from codap_relay.tool_content import MAX_IMAGE_BYTES, MAX_IMAGES, check_result, summary

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 40
WEBP = b"RIFF\x20\x00\x00\x00WEBPVP8 " + b"\x00" * 30


def image(raw: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": mime}


def result(*items: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "A graph."}, *items], "structuredContent": {}}


@pytest.mark.parametrize(("raw", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (WEBP, "image/webp")])
def test_pictures_of_the_allowed_types_pass(raw: bytes, mime: str) -> None:
    check_result(result(image(raw, mime)))


def test_results_that_are_not_in_mcp_shape_are_not_checked() -> None:
    for other in (None, 3, "text", [1, 2], {"ok": 1}, {"content": "not a list"}):
        check_result(other)


@pytest.mark.parametrize(
    ("item", "field", "words"),
    [
        ({**image(PNG), "mimeType": "image/svg+xml"}, "result.content[1].mimeType", "must be one of"),
        ({"type": "image", "mimeType": "image/png"}, "result.content[1].data", "base64 string"),
        ({**image(PNG), "data": "not base64!"}, "result.content[1].data", "not valid base64"),
        (image(JPEG, "image/png"), "result.content[1].data", "not a image/png"),
        (image(b"RIFF\x20\x00\x00\x00WAVEfmt ", "image/webp"), "result.content[1].data", "not a image/webp"),
        (image(PNG + b"\x00" * MAX_IMAGE_BYTES), "result.content[1].data", "larger than"),
    ],
    ids=["svg", "no data", "bad base64", "jpeg called png", "wave called webp", "too large"],
)
def test_a_bad_image_item_is_refused_naming_the_item(item: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidResult, match=words) as info:
        check_result(result(item))
    assert info.value.data["field"] == field and info.value.error == "invalid_result"


def test_the_size_limit_is_on_the_decoded_picture() -> None:
    check_result(result(image(PNG + b"\x00" * (MAX_IMAGE_BYTES - len(PNG)))))


def test_at_most_a_few_images_per_result() -> None:
    check_result(result(*[image(PNG)] * MAX_IMAGES))
    with pytest.raises(InvalidResult, match="at most"):
        check_result(result(*[image(PNG)] * (MAX_IMAGES + 1)))


def test_summary_is_the_first_line_of_the_text_or_the_error() -> None:
    assert summary(None) is None
    assert summary({"result": result(image(PNG))}) == "A graph."
    assert summary({"result": {"content": [{"type": "text", "text": "line one\nline two"}]}}) == "line one"
    assert summary({"result": {"made": True}}) == '{"made": true}'
    assert summary({"error": {"message": "CODAP refused it", "code": "codap_error"}}) == "CODAP refused it"
    long = summary({"result": "x" * 1000})
    assert long is not None and len(long) == 300 and long.endswith("…")
