"""Store backends and the URL scheme that picks one: ``memory:``, ``sqlite:///ABS/PATH.db``, ``dynamodb://TABLE?…``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from .base import Store


class StoreUrlError(ValueError):
    pass


def open_store(url: str) -> Store:
    parsed = urlparse(url)
    if url in ("memory:", "memory://"):
        from .memory import MemoryStore

        return MemoryStore()
    if parsed.scheme == "sqlite":
        path = url[len("sqlite://") :]
        if not path.startswith("/"):
            raise StoreUrlError(
                f"sqlite store URL needs an absolute path, like sqlite:///home/me/relay.db (got {url!r})"
            )
        from .sqlite import SqliteStore

        return SqliteStore(path)
    if parsed.scheme == "dynamodb":
        from .dynamodb import DynamoStore  # type: ignore[import-not-found,unused-ignore]

        query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        store: Store = DynamoStore.from_url(parsed.netloc, **query)
        return store
    raise StoreUrlError(
        f"unknown store URL {url!r}: use memory:, sqlite:///ABS/PATH.db or dynamodb://TABLE?region=…&endpoint_url=…"
    )


__all__ = ["Store", "StoreUrlError", "open_store"]
