"""Clients, consents, codes, tokens and grants of the OAuth server, kept as ``AuthItem`` records.

Every secret handed out (authorization code, access and refresh token) is 256 bits from ``secrets`` and kept only
as its sha256, so a copy of the store holds nothing that can be replayed. A token names its grant; every use reads
the grant, so a disconnected grant is refused at once whatever tokens it issued.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..clock import Clock
from ..records import AuthItem

if TYPE_CHECKING:  # the relay's units import this module
    from ..relay.store_io import StoreIO

CLIENT, PENDING, AUTH_CODE, USED_CODE, ACCESS, REFRESH, GRANT, PLUGIN, SESSION_OWNER = (
    "client",
    "pending",
    "authcode",
    "usedcode",
    "access",
    "refresh",
    "grant",
    "plugin",
    "session-owner",
)
CLIENT_TTL_SECONDS = 365 * 86_400  # a registered client is kept a year (re-registering is cheap)
PENDING_TTL_SECONDS = 600  # the person has ten minutes from /authorize to approving in the plugin
AUTH_CODE_TTL_SECONDS = 120  # the client exchanges it within seconds of the redirect


def secret() -> str:
    """256 bits, URL-safe: 43 characters, never a pairing code's shape (8 of A-Z, 2-7)."""
    return secrets.token_urlsafe(32)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def identity_of_key(key: str) -> str:
    """The identity of a plugin that keeps ``key`` in its browser's storage."""
    return f"key:{digest(key)}"


def identity_of_code(code: str) -> str:
    """The identity of a plugin that can keep nothing: its session, so its grants end with its code."""
    return f"code:{code}"


@dataclass(frozen=True)
class Grant:
    id: str
    identity: str
    client_id: str
    client_name: str
    created_at: float
    expires_at: float

    @classmethod
    def of(cls, item: AuthItem) -> Grant:
        d = item.data
        return cls(item.key, item.owner or "", d["client_id"], d["client_name"], d["created_at"], item.expires_at)


@dataclass(frozen=True)
class Issued:
    """Tokens just issued: the secrets, shown once, and their lifetimes."""

    access: str
    refresh: str
    expires_in: int
    scopes: list[str]


class Grants:
    def __init__(self, store_io: StoreIO, clock: Clock, *, access_ttl: int, refresh_ttl: int) -> None:
        self.io = store_io
        self.store = store_io.store
        self.clock = clock
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    # --- plain items --------------------------------------------------------------------------------------

    async def put(self, kind: str, key: str, data: dict[str, Any], ttl: float, owner: str | None = None) -> None:
        await self.io.run(self.store.put_auth, AuthItem(kind, key, owner, data, self.clock.now() + ttl))

    async def get(self, kind: str, key: str) -> AuthItem | None:
        """The item if it is there and not expired."""
        item = await self.io.read(self.store.get_auth, kind, key)
        return item if item is not None and item.expires_at > self.clock.now() else None

    async def take(self, kind: str, key: str) -> AuthItem | None:
        """The item, deleted in the same step (once only); None if gone or expired."""
        item = await self.io.run(self.store.take_auth, kind, key)
        return item if item is not None and item.expires_at > self.clock.now() else None

    # --- plugin identities --------------------------------------------------------------------------------

    async def plugin_opened(self, code: str, key: str | None) -> str:
        """A session opened: with the plugin's stored key, its identity now reaches this code. Returns it."""
        identity = identity_of_key(key) if key else identity_of_code(code)
        if key:
            await self.put(PLUGIN, identity, {"code": code}, self.refresh_ttl)
        await self.put(SESSION_OWNER, code, {"identity": identity}, self.refresh_ttl)
        return identity

    async def identity_of(self, code: str) -> str:
        owner = await self.get(SESSION_OWNER, code)
        return str(owner.data["identity"]) if owner is not None else identity_of_code(code)

    async def code_of(self, identity: str) -> str | None:
        """The pairing code of the identity's latest session (the relay checks it is live)."""
        if identity.startswith("code:"):
            return identity[len("code:") :]
        found = await self.get(PLUGIN, identity)
        return None if found is None else str(found.data["code"])

    # --- grants -------------------------------------------------------------------------------------------

    async def grant(self, identity: str, client_id: str, client_name: str) -> Grant:
        """A new grant of ``identity`` to the client; an earlier grant of the same client to it is replaced."""
        for old in await self.grants_of(identity):
            if old.client_id == client_id:
                await self.revoke_grant(old.id)
        now = self.clock.now()
        grant_id = secrets.token_urlsafe(16)
        data = {"client_id": client_id, "client_name": client_name, "created_at": now}
        await self.put(GRANT, grant_id, data, self.refresh_ttl, owner=identity)
        return Grant(grant_id, identity, client_id, client_name, now, now + self.refresh_ttl)

    async def live_grant(self, grant_id: str) -> Grant | None:
        item = await self.get(GRANT, grant_id)
        return None if item is None else Grant.of(item)

    async def grants_of(self, identity: str) -> list[Grant]:
        now = self.clock.now()
        items = await self.io.read(self.store.list_auth, GRANT, identity)
        return sorted((Grant.of(i) for i in items if i.expires_at > now), key=lambda g: g.created_at)

    async def revoke_grant(self, grant_id: str) -> bool:
        """Disconnect: the grant goes, so every token it issued is refused from the next call on; its refresh
        tokens go too (best effort: without the grant they are refused anyway)."""
        gone = await self.io.run(self.store.delete_auth, GRANT, grant_id)
        for item in await self.io.read(self.store.list_auth, REFRESH, grant_id):
            await self.io.run(self.store.delete_auth, REFRESH, item.key)
        return bool(gone)

    # --- tokens -------------------------------------------------------------------------------------------

    async def issue(self, grant: Grant, scopes: list[str], resource: str) -> Issued:
        """A new access and refresh token for the grant; the grant's life slides to the refresh token's."""
        access, refresh = secret(), secret()
        data = {"client_id": grant.client_id, "grant": grant.id, "scopes": scopes, "resource": resource}
        await self.put(ACCESS, digest(access), data, self.access_ttl, owner=grant.id)
        await self.put(REFRESH, digest(refresh), data, self.refresh_ttl, owner=grant.id)
        slid = {"client_id": grant.client_id, "client_name": grant.client_name, "created_at": grant.created_at}
        await self.put(GRANT, grant.id, slid, self.refresh_ttl, owner=grant.identity)
        return Issued(access, refresh, self.access_ttl, scopes)

    async def token(self, kind: str, token: str) -> tuple[AuthItem, Grant] | None:
        """A live token of ``kind`` (ACCESS, REFRESH) whose grant is live, with its grant."""
        item = await self.get(kind, digest(token))
        if item is None:
            return None
        grant = await self.live_grant(str(item.data["grant"]))
        return None if grant is None else (item, grant)
