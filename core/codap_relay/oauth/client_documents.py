"""Client ID Metadata Documents (the MCP authorization spec's preferred registration): a client's ``client_id`` is
an https URL, and the JSON document there is its registration, which the relay fetches itself.

A fetch the relay makes on a stranger's say-so (server-side request forgery), so it is held in: https only, to a
host whose every address is public unicast (addresses.py: no private, loopback, link-local, multicast or other
special-purpose address, nor one that embeds an IPv4 address; checked after DNS resolution and again on the
connection actually made, so a name re-pointed in between still gets nothing), at most ``MAX_BYTES`` read,
``TIMEOUT_SECONDS`` for all of it, redirects never followed. Why a fetch failed is never said (``FETCH_FAILED``,
the same words whatever failed: refused, timed out, redirected, not 200, too long), else the answers would map
ports and hosts for whoever asks; what is wrong with a document read is said. A failed fetch is remembered
``FAILED_SECONDS`` and an address gets ``CLIENT_DOCUMENT_FETCHES_PER_MINUTE`` fetches; a document fetched is kept
``CACHE_SECONDS`` in the store (every function of a deployment reads it there), so a sign-in fetches it once.

Only tests serve a document from plain http on loopback, with ``oauth_client_documents_allow_loopback``.
"""

from __future__ import annotations

import functools
import json
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
from mcp.shared.auth import OAuthClientMetadata
from pydantic import ValidationError

from ..errors import ClientDocumentRefused
from ..relay.grants import CLIENT, CLIENT_FAILED, Grants
from ..relay.limits import RateLimits
from .addresses import public_address
from .redirects import RelayClient
from .registration import MetadataRefused, check_metadata

MAX_BYTES = 5 * 1024
TIMEOUT_SECONDS = 3.0
CACHE_SECONDS = 300
FAILED_SECONDS = 120
CLIENT_DOCUMENT_FETCHES_PER_MINUTE = 10
MAX_URL_CHARS = 512
FETCH_FAILED = (
    "The client's metadata document could not be fetched from its client_id URL. It must be served over https "
    f"from a public address, answer 200 with no redirect within {TIMEOUT_SECONDS:g} s, and hold at most "
    f"{MAX_BYTES} bytes; the relay does not say which of these failed."
)


def is_document_id(client_id: str) -> bool:
    """Whether a client_id names a metadata document (a URL) rather than a registration of this relay."""
    return client_id.startswith(("https://", "http://"))


def check_url(client_id: str, *, allow_loopback: bool) -> str:
    """The document URL as the spec allows it: https, a path, no fragment, no credentials, no dot segments.
    Returns its host."""
    if len(client_id) > MAX_URL_CHARS:
        raise ClientDocumentRefused(f"A client_id URL may be at most {MAX_URL_CHARS} characters.")
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018 (a port that is no number raises here)
    except ValueError:
        raise ClientDocumentRefused("A client_id URL must be a URL.") from None
    if parts.scheme != "https" and not (allow_loopback and parts.scheme == "http"):
        raise ClientDocumentRefused("A client_id URL must be https.")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ClientDocumentRefused("A client_id URL needs a host and no user name or password.")
    segments = parts.path.split("/")
    if parts.path in ("", "/") or "." in segments or ".." in segments or parts.fragment:
        raise ClientDocumentRefused("A client_id URL needs a path, without . or .. segments or a fragment.")
    return parts.hostname


async def resolve(host: str, port: int) -> list[str]:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise ClientDocumentRefused(FETCH_FAILED) from None
    return sorted({str(info[4][0]) for info in infos})


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every fetch: httpx would build one per client, loading the CA bundle (~50 ms of CPU)."""
    return httpx.create_ssl_context()


async def fetch(client_id: str, *, allow_loopback: bool) -> dict[str, Any]:
    """The document's JSON object, fetched within the limits above."""
    host = check_url(client_id, allow_loopback=allow_loopback)
    failed = ClientDocumentRefused(FETCH_FAILED)
    try:
        parts = urlsplit(client_id)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with anyio.fail_after(TIMEOUT_SECONDS):
            addresses = await resolve(host, port)
            if not addresses or not all(public_address(a, allow_loopback=allow_loopback) for a in addresses):
                raise failed
            timeout = httpx.Timeout(TIMEOUT_SECONDS)
            async with (
                httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False, verify=_tls()) as http,
                http.stream("GET", client_id, headers={"Accept": "application/json"}) as response,
            ):
                stream = response.extensions.get("network_stream")
                peer = stream.get_extra_info("server_addr") if stream is not None else None
                if not peer or not public_address(str(peer[0]), allow_loopback=allow_loopback):
                    raise failed  # the name resolved elsewhere by the time of the connection
                if response.status_code != 200:  # redirects included: none is followed
                    raise failed
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        raise failed
    except (TimeoutError, httpx.HTTPError, OSError, ValueError):
        raise failed from None
    try:
        document = json.loads(bytes(body))
    except (ValueError, RecursionError):
        raise ClientDocumentRefused("The client's metadata document is not JSON.") from None
    if not isinstance(document, dict):
        raise ClientDocumentRefused("The client's metadata document is not a JSON object.")
    return document


def registration(client_id: str, document: dict[str, Any]) -> RelayClient:
    """The document as a client of this relay: it must name itself by its own URL, list its redirect URIs (matched
    exactly by the SDK's handlers) and be a public client (PKCE, no secret: none can have been shared)."""
    if document.get("client_id") != client_id:
        raise ClientDocumentRefused("The metadata document's client_id must be its own URL, exactly.")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientDocumentRefused(f"A metadata document's client authenticates with none (PKCE), not {method}.")
    try:
        check_metadata(document)
    except MetadataRefused as exc:
        raise ClientDocumentRefused(f"The client's metadata document: {exc.message}") from None
    fields = {k: v for k, v in document.items() if k not in ("client_id", "client_secret", "client_secret_expires_at")}
    try:
        metadata = OAuthClientMetadata.model_validate({**fields, "token_endpoint_auth_method": "none"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise ClientDocumentRefused(f"The client's metadata document is not valid: {where}: {first['msg']}.") from None
    return RelayClient(client_id=client_id, **metadata.model_dump(exclude_none=True))


async def client_of(
    grants: Grants, limits: RateLimits, client_id: str, *, allow_loopback: bool, client: str | None
) -> RelayClient:
    """The client a document names: the copy kept from a recent fetch, else fetched now and kept. A refusal is
    remembered for a while, and ``client`` (the address that asked) gets a few fetches a minute."""
    kept = await grants.get(CLIENT, client_id)
    if kept is not None:
        return RelayClient.model_validate(kept.data)
    failed = await grants.get(CLIENT_FAILED, client_id)
    if failed is not None:
        raise ClientDocumentRefused(str(failed.data["said"]))
    if client is not None:
        await limits.admit("client-document", client, CLIENT_DOCUMENT_FETCHES_PER_MINUTE)
    try:
        found = registration(client_id, await fetch(client_id, allow_loopback=allow_loopback))
    except ClientDocumentRefused as exc:
        await grants.put(CLIENT_FAILED, client_id, {"said": exc.message}, FAILED_SECONDS)
        raise
    await grants.put(CLIENT, client_id, found.model_dump(mode="json", exclude_none=True), CACHE_SECONDS)
    return found


def verified_host(client_id: str) -> str | None:
    """What the relay can prove of a client: the host its metadata document is published at (None for a client
    registered here, whose name and redirect URIs are its own say)."""
    return urlsplit(client_id).netloc if is_document_id(client_id) else None
