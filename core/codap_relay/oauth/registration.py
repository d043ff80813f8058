"""What a client's registration (RFC 7591) or metadata document may hold: small, and only redirect URIs the policy
takes (redirects.py). A registration is kept a day until an app connects with it, then as long as a grant may
live; its name is copied into every pending authorization and shown in the plugin, so it is short."""

from __future__ import annotations

from typing import Any

from .redirects import redirect_problem

MAX_NAME_CHARS = 100
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 512
MAX_CONTACTS = 10
URI_FIELDS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
SHORT_FIELDS = ("software_id", "software_version", "scope")


class MetadataRefused(Exception):
    """``error``: RFC 7591's code (``invalid_redirect_uri`` or ``invalid_client_metadata``)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def check_metadata(metadata: Any) -> None:
    """Raise MetadataRefused for a registration or document the relay does not keep. Fields of the wrong type are
    left to the SDK's model, which says what it expected."""
    if not isinstance(metadata, dict):
        return
    name = metadata.get("client_name")
    if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
        raise MetadataRefused("invalid_client_metadata", f"client_name is at most {MAX_NAME_CHARS} characters.")
    uris = metadata.get("redirect_uris")
    if isinstance(uris, list):
        if len(uris) > MAX_REDIRECT_URIS:
            raise MetadataRefused("invalid_client_metadata", f"redirect_uris lists at most {MAX_REDIRECT_URIS}.")
        for uri in uris:
            problem = redirect_problem(uri) if isinstance(uri, str) else None
            if problem is not None:
                raise MetadataRefused("invalid_redirect_uri", f"redirect_uris: {problem} ({uri[:80]!r}).")
    for field in URI_FIELDS:
        value = metadata.get(field)
        if isinstance(value, str) and len(value) > MAX_URI_CHARS:
            raise MetadataRefused("invalid_client_metadata", f"{field} is at most {MAX_URI_CHARS} characters.")
    contacts = metadata.get("contacts")
    if isinstance(contacts, list) and (
        len(contacts) > MAX_CONTACTS or any(isinstance(c, str) and len(c) > 320 for c in contacts)
    ):
        raise MetadataRefused("invalid_client_metadata", f"contacts lists at most {MAX_CONTACTS} addresses.")
    for field in SHORT_FIELDS:
        value = metadata.get(field)
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            raise MetadataRefused("invalid_client_metadata", f"{field} is at most {MAX_NAME_CHARS} characters.")
