"""The MCP SDK's ``OAuthAuthorizationServerProvider`` over ``Grants``.

The SDK's handlers check what the protocol asks (the client and its redirect URI, PKCE S256, the code's client,
expiry and redirect URI, the refresh token's client and scopes); this provider keeps the records and adds what the
SDK leaves to it: the redirect policy (``RelayClient``: loopback on any port, nothing the policy refuses), the
RFC 8707 audience (a ``resource`` that is not this relay's ``/mcp`` is refused, and every token is bound to it),
single use of authorization codes and refresh tokens (taken from the store in one step, so of two concurrent
exchanges one gets nothing; one sent again ends its grant), and the grant behind every token.

One provider per HTTP request: it knows the relay's public URL as that request sees it (``public_base``) and the
address that asked (``client``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl

from ..errors import ClientDocumentRefused
from ..relay.grants import (
    AUTH_CODE,
    AUTH_CODE_TTL_SECONDS,
    CLIENT,
    CLIENT_KEPT_SECONDS,
    CLIENT_TTL_SECONDS,
    PENDING,
    PENDING_TTL_SECONDS,
    REFRESH,
    USED_CODE,
    USED_REFRESH,
    Grant,
    Grants,
    Verified,
    digest,
    ref_of_grant,
    secret,
)
from ..relay.limits import RateLimits
from .client_documents import client_of, is_document_id, verified_host
from .redirects import RelayClient
from .registration import MAX_NAME_CHARS

SCOPE = "codap"  # one scope: drive the CODAP document the person paired


def resource_url(base: str) -> str:
    """The protected resource, and every token's audience: this relay's MCP endpoint."""
    return f"{base}/mcp"


def issuer_of(base: str) -> str:
    """The issuer as the metadata names it (RFC 8414) and every authorization response carries it (RFC 9207)."""
    return str(AnyHttpUrl(base))


def _canonical(uri: str) -> tuple[str, str, str]:
    parts = urlsplit(uri)
    return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")


def same_resource(given: str | None, base: str) -> bool:
    """``given`` names this relay's ``/mcp`` (scheme and host in any case, a trailing slash or none)."""
    try:
        return given is not None and _canonical(given) == _canonical(resource_url(base))
    except ValueError:
        return False


class RelayOAuthProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Subclassed, not merely shaped like it: the SDK's default refuses the identity-assertion grant (SEP-990)."""

    def __init__(
        self,
        grants: Grants,
        limits: RateLimits,
        base: str,
        *,
        client: str | None = None,
        allow_loopback_documents: bool = False,
    ) -> None:
        self.grants = grants
        self.limits = limits
        self.base = base
        self.client = client
        self.allow_loopback_documents = allow_loopback_documents

    # --- clients ------------------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_id(client_id):
            try:
                return await self.client_document(client_id)
            except ClientDocumentRefused:  # /authorize said why first (http/oauth); the SDK says "not found"
                return None
        item = await self.grants.get(CLIENT, client_id)
        return None if item is None else RelayClient.model_validate(item.data)

    async def client_document(self, client_id: str) -> RelayClient:
        """The client a Client ID Metadata Document names (its client_id is the document's URL)."""
        return await client_of(
            self.grants,
            self.limits,
            client_id,
            allow_loopback=self.allow_loopback_documents,
            client=self.client,
        )

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Kept a day, until an app connects with it (``keep_client``): registering costs a stranger nothing."""
        assert client_info.client_id is not None
        data = client_info.model_dump(mode="json", exclude_none=True)
        await self.grants.put(CLIENT, client_info.client_id, data, CLIENT_TTL_SECONDS)

    async def keep_client(self, client_id: str) -> None:
        """An app connected with this registration: keep it as long as a grant may live and more."""
        item = None if is_document_id(client_id) else await self.grants.get(CLIENT, client_id)
        if item is not None:
            await self.grants.put(CLIENT, client_id, item.data, CLIENT_KEPT_SECONDS)

    # --- authorization: the consent page takes over ----------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and not same_resource(params.resource, self.base):
            raise AuthorizeError("invalid_target", f"This server is the resource {resource_url(self.base)}.")
        assert client.client_id is not None
        request = secret()
        pending = {
            "client_id": client.client_id,
            "client_name": (client.client_name or client.client_id)[:MAX_NAME_CHARS],
            "verified": verified_host(client.client_id),
            "redirect_uri": str(params.redirect_uri),
            "redirect_explicit": params.redirect_uri_provided_explicitly,
            "code_challenge": params.code_challenge,
            "state": params.state,
            "scopes": params.scopes or [SCOPE],
            "csrf": secret(),
        }
        await self.grants.put(PENDING, request, pending, PENDING_TTL_SECONDS)
        return f"{self.base}/oauth/consent?{urlencode({'request': request})}"

    async def approve(self, pending: dict[str, Any], grant: Grant) -> str:
        """The person approved in the plugin: a one-time code for the client, sent to its redirect URI."""
        code = secret()
        data = {k: pending[k] for k in ("client_id", "redirect_uri", "redirect_explicit", "code_challenge", "scopes")}
        await self.grants.put(
            AUTH_CODE, digest(code), {**data, "grant": grant.id}, AUTH_CODE_TTL_SECONDS, owner=grant.id
        )
        await self.keep_client(str(pending["client_id"]))
        return code

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        item = await self.grants.get(AUTH_CODE, digest(authorization_code))
        if item is None:
            # A code used before, sent again: someone else may hold it, so what it issued is revoked (RFC 6749 10.5).
            used = await self.grants.get(USED_CODE, digest(authorization_code))
            if used is not None:
                await self.grants.revoke_grant(str(used.data["grant"]))
            return None
        d = item.data
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(d["scopes"]),
            expires_at=item.expires_at,
            client_id=d["client_id"],
            code_challenge=d["code_challenge"],
            redirect_uri=AnyUrl(d["redirect_uri"]),
            redirect_uri_provided_explicitly=bool(d["redirect_explicit"]),
            resource=resource_url(self.base),
            subject=d["grant"],
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        # Taken, not read: a code is used once, even by two exchanges at the same moment.
        item = await self.grants.take(AUTH_CODE, digest(authorization_code.code))
        grant = None if item is None else await self.grants.live_grant(str(item.data["grant"]))
        if grant is None:
            raise TokenError("invalid_grant", "authorization code does not exist")
        await self.grants.put(USED_CODE, digest(authorization_code.code), {"grant": grant.id}, AUTH_CODE_TTL_SECONDS)
        return await self._issue(grant, authorization_code.scopes)

    # --- tokens -------------------------------------------------------------------------------------------

    async def _issue(self, grant: Grant, scopes: list[str]) -> OAuthToken:
        issued = await self.grants.issue(grant, scopes, resource_url(self.base))
        return OAuthToken(
            access_token=issued.access,
            token_type="Bearer",
            expires_in=issued.expires_in,
            scope=" ".join(scopes),
            refresh_token=issued.refresh,
        )

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = await self.grants.token(REFRESH, refresh_token)
        if found is None:
            # A rotated refresh token sent again: two parties hold the chain, so it ends (OAuth 2.1 4.3.1), the
            # tokens issued after this one included.
            used = await self.grants.get(USED_REFRESH, digest(refresh_token))
            if used is not None:
                await self.grants.revoke_grant(str(used.data["grant"]))
            return None
        item, grant = found
        return RefreshToken(
            token=refresh_token,
            client_id=grant.client_id,
            scopes=list(item.data["scopes"]),
            expires_at=int(item.expires_at),
            resource=str(item.data["resource"]),
            subject=grant.id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        # Rotated: the old refresh token is taken in the same step that finds it, so it works once; its digest is
        # kept as long as it would have lived, to know it when it comes again.
        item = await self.grants.take(REFRESH, digest(refresh_token.token))
        grant = None if item is None else await self.grants.live_grant(str(item.data["grant"]))
        if item is None or grant is None or ref_of_grant(grant.id) is None:  # a grant from before: connect again
            raise TokenError("invalid_grant", "refresh token does not exist")
        left = item.expires_at - self.grants.clock.now()
        await self.grants.put(USED_REFRESH, digest(refresh_token.token), {"grant": grant.id}, left)
        return await self._issue(grant, scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        verified = await self.verify(token)
        if verified is None:
            return None
        return AccessToken(
            token=token,
            client_id=verified.grant.client_id,
            scopes=list(verified.token.data["scopes"]),
            expires_at=int(verified.token.expires_at),
            resource=str(verified.token.data["resource"]),
            subject=verified.grant.id,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009 revocation ends the whole grant (the SDK asks to revoke both tokens; a grant is what both
        stand for): the plugin's list loses it and every token it issued is refused."""
        if token.subject:
            await self.grants.revoke_grant(token.subject)

    async def verify(self, token: str) -> Verified | None:
        """What an MCP call's bearer token stands for, if the token is live and was issued for this relay: one
        read of the store (Grants.verify)."""
        verified = await self.grants.verify(token)
        if verified is None or not same_resource(str(verified.token.data["resource"]), self.base):
            return None
        return verified
