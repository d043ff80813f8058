"""Pairing codes and browser tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from .errors import InvalidCode

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648 base32: no 0/1/8/9, so no O/0 or I/1 confusion
CODE_LENGTH = 8
CODE_RE = re.compile(r"^[A-Z2-7]{8}$")

CodeFactory = Callable[[], str]


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_token() -> str:
    return secrets.token_urlsafe(32)


def normalise_code(raw: object) -> str:
    """Trim and upper-case, then check the format. Raises InvalidCode with what to do."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidCode(
            "A pairing code is required: the 8 characters shown in the CODAP plugin (letters A-Z and digits 2-7)."
        )
    # The plugin shows the code as ABCD-EFGH for reading; accept it typed that way, or with spaces.
    code = re.sub(r"[\s-]", "", raw).upper()
    if not CODE_RE.match(code):
        raise InvalidCode(
            "The pairing code must be 8 characters of A-Z and 2-7, as shown in the CODAP plugin; "
            "check it for typos or get a new one from the plugin."
        )
    return code


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), token_hash)


def redact_code(code: str, key: bytes) -> str:
    """What logs may show of a code: two characters and a short keyed hash, never the whole code. Keyed with the
    deployment's LOG_HINT_KEY: a plain hash of a 40-bit code is reversed by trying every code (51 s on 16 cores),
    while without the key there is nothing to try codes against."""
    digest = hmac.new(key, code.encode(), hashlib.sha256).hexdigest()[:8]
    return f"{code[:2]}…#{digest}"
