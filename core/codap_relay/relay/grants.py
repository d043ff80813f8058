"""Clients, consents, codes, tokens and grants of the OAuth server, kept as ``AuthItem`` records.

Every secret handed out (authorization code, access and refresh token) is 256 bits from ``secrets`` and kept only
as its sha256, so a copy of the store holds nothing that can be replayed. A token names its grant; every use reads
the grant, so a disconnected grant is refused at once whatever tokens it issued.

Names that let one read answer an OAuth call: a grant's id starts with its plugin's reference (``plugin_ref``, a
hash of the plugin's identity) and an access token with its grant's id, so the token, its grant and the plugin's
latest code (``PLUGIN``, keyed by the reference) are read together (``verify``), and the call's rate windows are
the plugin's (limits.py ``admit_grant``) with no further read. Neither part is a secret: the token's own 256 bits
are.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..clock import Clock
from ..records import AuthItem

if TYPE_CHECKING:  # the relay's units import this module
    from ..relay.store_io import StoreIO

CLIENT, CLIENT_FAILED, PENDING, AUTH_CODE, USED_CODE = "client", "badclient", "pending", "authcode", "usedcode"
ACCESS, REFRESH, USED_REFRESH, GRANT, PLUGIN, SESSION_OWNER = (
    "access",
    "refresh",
    "usedrefresh",
    "grant",
    "plugin",
    "session-owner",
)
CLIENT_TTL_SECONDS = 86_400  # a registration no app has connected with yet is kept a day...
CLIENT_KEPT_SECONDS = 365 * 86_400  # ...and a year once one did (re-registering is cheap)
PENDING_TTL_SECONDS = 600  # the person has ten minutes from /authorize to approving in the plugin
AUTH_CODE_TTL_SECONDS = 120  # the client exchanges it within seconds of the redirect
MAX_GRANTS_PER_PLUGIN = 20  # apps connected to one CODAP at once (each app replaces its own earlier grant)


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


def plugin_ref(identity: str) -> str:
    """A plugin identity's short reference (128 bits of its hash): the start of its grants' ids."""
    return base64.urlsafe_b64encode(hashlib.sha256(identity.encode()).digest()[:16]).decode().rstrip("=")


def grant_of_token(token: str) -> str | None:
    """The grant id an access token names (``REF.GRANT.SECRET``), or None for a token of no such shape."""
    parts = token.split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) == 3 and all(parts) else None


def ref_of_grant(grant_id: str) -> str | None:
    """The plugin reference a grant's id starts with (None for a grant made before ids carried it)."""
    parts = grant_id.split(".")
    return parts[0] if len(parts) == 2 and all(parts) else None


@dataclass(frozen=True)
class Grant:
    id: str
    identity: str
    client_id: str
    client_name: str
    created_at: float
    expires_at: float
    verified: str | None = None  # the host of the client's metadata document, None for a registered client

    @classmethod
    def of(cls, item: AuthItem) -> Grant:
        d = item.data
        return cls(
            item.key,
            item.owner or "",
            d["client_id"],
            d["client_name"],
            d["created_at"],
            item.expires_at,
            d.get("verified"),
        )


@dataclass(frozen=True)
class Issued:
    """Tokens just issued: the secrets, shown once, and their lifetimes."""

    access: str
    refresh: str
    expires_in: int
    scopes: list[str]


@dataclass(frozen=True)
class Verified:
    """What an access token stands for: its grant, the token's item, and the pairing code of the plugin's latest
    session (None when the plugin has none kept)."""

    grant: Grant
    token: AuthItem
    code: str | None


class Grants:
    def __init__(self, store_io: StoreIO, clock: Clock, *, access_ttl: int, refresh_ttl: int) -> None:
        self.io = store_io
        self.store = store_io.store
        self.clock = clock
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    # --- plain items --------------------------------------------------------------------------------------

    async def put(self, kind: str, key: str, data: dict[str, Any], ttl: float, owner: str | None = None) -> None:
        now = self.clock.now()
        await self.io.run(self.store.put_auth, AuthItem(kind, key, owner, data, now + ttl), now=now)

    async def get(self, kind: str, key: str) -> AuthItem | None:
        """The item if it is there and not expired."""
        return self._live(await self.io.read(self.store.get_auth, kind, key))

    async def take(self, kind: str, key: str) -> AuthItem | None:
        """The item, deleted in the same step (once only); None if gone or expired."""
        return self._live(await self.io.run(self.store.take_auth, kind, key))

    def _live(self, item: AuthItem | None) -> AuthItem | None:
        return item if item is not None and item.expires_at > self.clock.now() else None

    # --- plugin identities --------------------------------------------------------------------------------

    async def plugin_opened(self, code: str, key: str | None) -> str:
        """A session opened: with the plugin's stored key, its identity now reaches this code. Returns it."""
        identity = identity_of_key(key) if key else identity_of_code(code)
        if key:
            await self.put(PLUGIN, plugin_ref(identity), {"code": code}, self.refresh_ttl)
        await self.put(SESSION_OWNER, code, {"identity": identity}, self.refresh_ttl)
        return identity

    async def identity_of(self, code: str) -> str:
        owner = await self.get(SESSION_OWNER, code)
        return str(owner.data["identity"]) if owner is not None else identity_of_code(code)

    @staticmethod
    def _code(identity: str, plugin: AuthItem | None) -> str | None:
        if identity.startswith("code:"):
            return identity[len("code:") :]
        return None if plugin is None else str(plugin.data["code"])

    async def code_of(self, identity: str) -> str | None:
        """The pairing code of the identity's latest session (the relay checks it is live)."""
        plugin = None if identity.startswith("code:") else await self.get(PLUGIN, plugin_ref(identity))
        return self._code(identity, plugin)

    # --- grants -------------------------------------------------------------------------------------------

    async def grant(self, identity: str, client_id: str, client_name: str, verified: str | None = None) -> Grant:
        """A new grant of ``identity`` to the client; an earlier grant of the same client to it is replaced."""
        for old in await self.grants_of(identity):
            if old.client_id == client_id:
                await self.revoke_grant(old.id)
        now = self.clock.now()
        grant_id = f"{plugin_ref(identity)}.{secrets.token_urlsafe(16)}"
        data = {"client_id": client_id, "client_name": client_name, "created_at": now, "verified": verified}
        await self.put(GRANT, grant_id, data, self.refresh_ttl, owner=identity)
        return Grant(grant_id, identity, client_id, client_name, now, now + self.refresh_ttl, verified)

    async def live_grant(self, grant_id: str) -> Grant | None:
        item = await self.get(GRANT, grant_id)
        return None if item is None else Grant.of(item)

    async def grants_of(self, identity: str) -> list[Grant]:
        """The identity's live grants, oldest first (a grant from before ids named their plugin is left out: its
        tokens are refused, and its app connects again)."""
        now = self.clock.now()
        items = await self.io.read(self.store.list_auth, GRANT, identity)
        live = (Grant.of(i) for i in items if i.expires_at > now and ref_of_grant(i.key) is not None)
        return sorted(live, key=lambda g: g.created_at)

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
        access, refresh = f"{grant.id}.{secret()}", secret()
        data = {"client_id": grant.client_id, "grant": grant.id, "scopes": scopes, "resource": resource}
        await self.put(ACCESS, digest(access), data, self.access_ttl, owner=grant.id)
        await self.put(REFRESH, digest(refresh), data, self.refresh_ttl, owner=grant.id)
        slid = {
            "client_id": grant.client_id,
            "client_name": grant.client_name,
            "created_at": grant.created_at,
            "verified": grant.verified,
        }
        await self.put(GRANT, grant.id, slid, self.refresh_ttl, owner=grant.identity)
        return Issued(access, refresh, self.access_ttl, scopes)

    async def token(self, kind: str, token: str) -> tuple[AuthItem, Grant] | None:
        """A live token of ``kind`` (ACCESS, REFRESH) whose grant is live, with its grant."""
        item = await self.get(kind, digest(token))
        if item is None:
            return None
        grant = await self.live_grant(str(item.data["grant"]))
        return None if grant is None else (item, grant)

    async def verify(self, token: str) -> Verified | None:
        """A live access token with its live grant and its plugin's latest code, in one read of the store."""
        grant_id = grant_of_token(token)
        ref = None if grant_id is None else ref_of_grant(grant_id)
        if grant_id is None or ref is None:
            return None
        keys = [(ACCESS, digest(token)), (GRANT, grant_id), (PLUGIN, ref)]
        access, grant_item, plugin = (self._live(i) for i in await self.io.read(self.store.get_auths, keys))
        if access is None or grant_item is None or access.data.get("grant") != grant_id:
            return None
        grant = Grant.of(grant_item)
        return Verified(grant, access, self._code(grant.identity, plugin))
