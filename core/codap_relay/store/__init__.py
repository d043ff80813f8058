"""Store backends and the URL scheme that picks one: ``memory:``, ``sqlite:///ABS/PATH.db[?shared=1]``,
``dynamodb://TABLE?…``. ``shared=1``: other processes write the same SQLite file (waiters poll)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from .base import Store, StoreUrlError


def check_store_url(url: str) -> None:
    """Raise StoreUrlError unless ``url`` has the form of a store URL (nothing is opened; DynamoDB's options are
    checked when it is)."""
    parsed = urlparse(url)
    if url in ("memory:", "memory://"):
        return
    if parsed.scheme == "sqlite":
        path = url[len("sqlite://") :].split("?", 1)[0]
        if not path.startswith("/"):
            raise StoreUrlError(
                f"sqlite store URL needs an absolute path, like sqlite:///home/me/relay.db (got {url!r})"
            )
        options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        shared = options.pop("shared", "0").lower()
        if options or shared not in ("0", "1", "true", "false"):
            raise StoreUrlError(f"sqlite store URL takes only ?shared=1 (got {url!r})")
        return
    if parsed.scheme == "dynamodb":
        if not parsed.netloc:
            raise StoreUrlError(f"dynamodb store URL needs a table name, like dynamodb://relay (got {url!r})")
        return
    raise StoreUrlError(
        f"unknown store URL {url!r}: use memory:, sqlite:///ABS/PATH.db or dynamodb://TABLE?region=…&endpoint_url=…"
    )


def open_store(url: str) -> Store:
    check_store_url(url)
    parsed = urlparse(url)
    if url in ("memory:", "memory://"):
        from .memory import MemoryStore

        return MemoryStore()
    if parsed.scheme == "sqlite":
        path = url[len("sqlite://") :].split("?", 1)[0]
        shared = dict(parse_qs(parsed.query)).get("shared", ["0"])[-1].lower()
        from .sqlite import SqliteStore

        return SqliteStore(path, shared=shared in ("1", "true"))
    if parsed.scheme == "dynamodb":
        from .dynamodb import DynamoStore  # type: ignore[import-not-found,unused-ignore]

        query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        store: Store = DynamoStore.from_url(parsed.netloc, **query)
        return store
    raise StoreUrlError(
        f"unknown store URL {url!r}: use memory:, sqlite:///ABS/PATH.db or dynamodb://TABLE?region=…&endpoint_url=…"
    )


__all__ = ["Store", "StoreUrlError", "check_store_url", "open_store"]
