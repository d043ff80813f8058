"""Client ID Metadata Documents (the MCP authorization spec's preferred registration): a client's ``client_id`` is
an https URL, and the JSON document there is its registration, which the relay fetches itself.

A fetch the relay makes on a stranger's say-so (server-side request forgery), so it is held in: https only, to a
host whose every address is public (no private, loopback, link-local or reserved address, checked after DNS
resolution and again on the connection actually made, so a name re-pointed in between still gets nothing), at
most ``MAX_BYTES`` read, ``TIMEOUT_SECONDS`` for all of it, redirects never followed. A document fetched is kept
``CACHE_SECONDS`` in the store (every function of a deployment reads it there), so a sign-in fetches it once.

Only tests serve a document from plain http on loopback, with ``oauth_client_documents_allow_loopback``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from pydantic import ValidationError

from ..errors import ClientDocumentRefused
from ..relay.grants import CLIENT, Grants

MAX_BYTES = 5 * 1024
TIMEOUT_SECONDS = 3.0
CACHE_SECONDS = 300
MAX_URL_CHARS = 512


def is_document_id(client_id: str) -> bool:
    """Whether a client_id names a metadata document (a URL) rather than a registration of this relay."""
    return client_id.startswith(("https://", "http://"))


def check_url(client_id: str, *, allow_loopback: bool) -> str:
    """The document URL as the spec allows it: https, a path, no fragment, no credentials, no dot segments.
    Returns its host."""
    if len(client_id) > MAX_URL_CHARS:
        raise ClientDocumentRefused(f"A client_id URL may be at most {MAX_URL_CHARS} characters.")
    parts = urlsplit(client_id)
    if parts.scheme != "https" and not (allow_loopback and parts.scheme == "http"):
        raise ClientDocumentRefused("A client_id URL must be https.")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ClientDocumentRefused("A client_id URL needs a host and no user name or password.")
    segments = parts.path.split("/")
    if parts.path in ("", "/") or "." in segments or ".." in segments or parts.fragment:
        raise ClientDocumentRefused("A client_id URL needs a path, without . or .. segments or a fragment.")
    return parts.hostname


def public_address(address: str, *, allow_loopback: bool) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global or (allow_loopback and ip.is_loopback)


async def resolve(host: str, port: int) -> list[str]:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise ClientDocumentRefused(f"The client_id's host {host} does not resolve.") from None
    return sorted({str(info[4][0]) for info in infos})


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every fetch: httpx would build one per client, loading the CA bundle (~50 ms of CPU)."""
    return httpx.create_ssl_context()


async def fetch(client_id: str, *, allow_loopback: bool) -> dict[str, Any]:
    """The document's JSON object, fetched within the limits above."""
    host = check_url(client_id, allow_loopback=allow_loopback)
    parts = urlsplit(client_id)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    refused = ClientDocumentRefused(f"The client_id's host {host} is not a public address; the relay fetches none.")
    try:
        with anyio.fail_after(TIMEOUT_SECONDS):
            addresses = await resolve(host, port)
            if not addresses or not all(public_address(a, allow_loopback=allow_loopback) for a in addresses):
                raise refused
            timeout = httpx.Timeout(TIMEOUT_SECONDS)
            async with (
                httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False, verify=_tls()) as http,
                http.stream("GET", client_id, headers={"Accept": "application/json"}) as response,
            ):
                stream = response.extensions.get("network_stream")
                peer = stream.get_extra_info("server_addr") if stream is not None else None
                if not peer or not public_address(str(peer[0]), allow_loopback=allow_loopback):
                    raise refused  # the name resolved elsewhere by the time of the connection
                if response.is_redirect:
                    raise ClientDocumentRefused("The client_id URL redirects; the relay follows no redirect.")
                if response.status_code != 200:
                    raise ClientDocumentRefused(f"The client_id URL answered {response.status_code}, not 200.")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        raise ClientDocumentRefused(f"The client's metadata document is over {MAX_BYTES} bytes.")
    except TimeoutError:
        raise ClientDocumentRefused(f"The client_id URL did not answer within {TIMEOUT_SECONDS:g} s.") from None
    except httpx.HTTPError as exc:
        raise ClientDocumentRefused(f"The client_id URL could not be read ({type(exc).__name__}).") from None
    try:
        document = json.loads(bytes(body))
    except (ValueError, RecursionError):
        raise ClientDocumentRefused("The client's metadata document is not JSON.") from None
    if not isinstance(document, dict):
        raise ClientDocumentRefused("The client's metadata document is not a JSON object.")
    return document


def registration(client_id: str, document: dict[str, Any]) -> OAuthClientInformationFull:
    """The document as a client of this relay: it must name itself by its own URL, list its redirect URIs (matched
    exactly by the SDK's handlers) and be a public client (PKCE, no secret: none can have been shared)."""
    if document.get("client_id") != client_id:
        raise ClientDocumentRefused("The metadata document's client_id must be its own URL, exactly.")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientDocumentRefused(f"A metadata document's client authenticates with none (PKCE), not {method}.")
    fields = {k: v for k, v in document.items() if k not in ("client_id", "client_secret", "client_secret_expires_at")}
    try:
        metadata = OAuthClientMetadata.model_validate({**fields, "token_endpoint_auth_method": "none"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise ClientDocumentRefused(f"The client's metadata document is not valid: {where}: {first['msg']}.") from None
    return OAuthClientInformationFull(client_id=client_id, **metadata.model_dump(exclude_none=True))


async def client_of(grants: Grants, client_id: str, *, allow_loopback: bool) -> OAuthClientInformationFull:
    """The client a document names: the copy kept from a recent fetch, else fetched now and kept."""
    kept = await grants.get(CLIENT, client_id)
    if kept is not None:
        return OAuthClientInformationFull.model_validate(kept.data)
    client = registration(client_id, await fetch(client_id, allow_loopback=allow_loopback))
    await grants.put(CLIENT, client_id, client.model_dump(mode="json", exclude_none=True), CACHE_SECONDS)
    return client
