"""How the document's resources are named: ``codap://`` URIs (names URL-encoded), a cases page's number, a
graph's label, and the answer to a URI the relay does not serve."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote

from .contents import ResourceError

SCHEME = "codap"
MAX_URI_CHARS = 2048  # a resource URI longer than this is refused (names are titles, not documents)
MAX_DIGITS = 9  # a page number: ASCII digits, at most this many
# CODAP v3's component ids are large (15 digits seen); JavaScript holds whole numbers exactly up to 2**53 - 1.
MAX_ID_DIGITS = 16


def dataset_uri(name: str, part: str = "") -> str:
    return f"{SCHEME}://datasets/{quote(name, safe='')}{part}"


def graph_uri(name: str) -> str:
    return f"{SCHEME}://graphs/{quote(name, safe='')}/image"


def graph_label(component: dict[str, Any]) -> str:
    """What a graph is called in its URI: its title as CODAP shows it, else its name, else its id."""
    for key in ("title", "name"):
        value = component.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return str(component.get("id", ""))


def page_uri(dataset: str, page: int) -> str:
    return dataset_uri(dataset, "/cases") + ("" if page == 1 else f"?page={page}")


def page_of(uri: str, query: str) -> int:
    if not query:
        return 1
    page = whole_number(parse_qs(query).get("page", [""])[-1])
    if page is None or page < 1:
        raise ResourceError("invalid", f"{uri}: page must be a whole number from 1 (digits 0-9, at most {MAX_DIGITS}).")
    return page


def whole_number(raw: str, max_digits: int = MAX_DIGITS) -> int | None:
    """``raw`` as a number if it is 1 to ``max_digits`` ASCII digits; else None. ``str.isdigit`` alone also takes
    ``²`` and other digits ``int`` refuses, and ``int`` refuses more than 4,300 digits."""
    if not 0 < len(raw) <= max_digits or not raw.isascii() or not raw.isdigit():
        return None
    return int(raw)


def unknown_uri(uri: str) -> ResourceError:
    return ResourceError(
        "not_found",
        f"No resource {uri}. The relay serves codap://datasets, codap://components, codap://activity, "
        "codap://datasets/NAME, "
        "codap://datasets/NAME/cases and codap://graphs/NAME/image (names URL-encoded); resources/list gives them "
        "for the open document.",
    )
