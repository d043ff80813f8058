"""The relay as its own OAuth 2.1 authorization server for ``/mcp`` (one connector per relay).

- ``relay/grants.py`` (a unit of the relay, which reads a grant on every call): the pure part: clients, pending
  consents, authorization codes, tokens (stored as their sha256, never the token), grants and plugin identities,
  all as ``AuthItem`` records behind the Store interface.
- ``provider.py``: the MCP SDK's ``OAuthAuthorizationServerProvider`` over ``Grants``: the SDK's handlers do the
  protocol (metadata, registration, /authorize checks, PKCE S256, the token and revocation endpoints).
- ``consent.py``: the consent, bound to the person's own flow by the number its page shows.
- ``redirects.py`` (where a browser may be sent back), ``registration.py`` (what a registration may hold),
  ``client_documents.py`` and ``addresses.py`` (Client ID Metadata Documents, fetched from public addresses only).
- http/oauth/: the routes, the consent page (the pairing) and the plugin's list of connected apps.

A grant binds a client to a plugin *identity*, not to a pairing code: the key the plugin keeps in its browser
storage (``key:<sha256 of it>``), or, where storage is blocked, the session itself (``code:<CODE>``), so such a
grant ends with its code. The plugin's latest session is found from its identity on every call.
"""
