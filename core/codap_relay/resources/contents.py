"""What a resource read answers: the contents (text or a base64 blob), a listed resource, and the error of a read
that cannot be answered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..jsonvalues import dumps


class ResourceError(Exception):
    """A read that cannot be answered: ``kind`` is not_found, not_connected, timeout, codap_error or invalid."""

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.data = data


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    size: int | None = None


@dataclass(frozen=True)
class Contents:
    uri: str
    mime_type: str
    text: str | None = None
    blob: str | None = None  # base64
    meta: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if self.text is not None:
            out["text"] = self.text
        if self.blob is not None:
            out["blob"] = self.blob
        if self.meta:
            out["_meta"] = self.meta
        return out


def json_contents(uri: str, value: Any) -> Contents:
    return Contents(uri, "application/json", text=dumps(value, ensure_ascii=False, indent=1))
