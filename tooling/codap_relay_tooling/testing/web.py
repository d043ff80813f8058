"""httpx's request functions and clients for the tests and benchmarks, all with one TLS context.

httpx builds a new TLS context for every client it makes, and ``httpx.get`` makes a client per call: each loads
the whole CA bundle, about 50 ms of CPU. The tests make thousands of such calls (a server's health polled every
50 ms, a tool call per CODAP assertion), which cost minutes of CPU on a 2-core machine. Here every call shares
one context built the way httpx builds its default, so what is verified is unchanged; a caller may still pass its
own ``verify``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import httpx

TLS = httpx.create_ssl_context()


def _shared(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("verify", TLS)
    return kwargs


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, url, **_shared(kwargs))


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, **_shared(kwargs))


def post(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, **_shared(kwargs))


def delete(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.delete(url, **_shared(kwargs))


def options(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.options(url, **_shared(kwargs))


def stream(method: str, url: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
    return httpx.stream(method, url, **_shared(kwargs))


def Client(**kwargs: Any) -> httpx.Client:
    return httpx.Client(**_shared(kwargs))


def AsyncClient(**kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(**_shared(kwargs))
