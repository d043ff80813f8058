"""All settings in one pydantic model, read from the environment and validated at start-up."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from .store.base import PURGE_GRACE_SECONDS

DEFAULT_CORS = "https://codap.concord.org,https://codap3.concord.org"
# A frame-ancestors source: scheme://host with an optional port or ":*" (no paths, spaces, commas or semicolons,
# which would end the CSP directive).
ANCESTOR_RE = re.compile(r"^https?://(\*\.)?[A-Za-z0-9.-]+(:(\d{1,5}|\*))?$")
BASE_PATH_RE = re.compile(r"^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$")


def state_dir() -> Path:
    """Where the local commands keep their databases: $XDG_STATE_HOME/codap-relay (~/.local/state/codap-relay)."""
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "codap-relay"


def default_store_url() -> str:
    return f"sqlite:///{state_dir() / 'relay.db'}"


class SettingsError(ValueError):
    """Raised at start-up when the environment holds an invalid setting; the message names the variable."""


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session_ttl_seconds: int = Field(600, ge=30, le=86_400)
    request_ttl_seconds: int = Field(3600, ge=30, le=7 * 86_400)
    response_ttl_seconds: int = Field(3600, ge=30, le=7 * 86_400)
    # How long the plugin may still read a session's activity log after the session ended (closed or expired),
    # to save its trace. The stores keep an ended session's records PURGE_GRACE_SECONDS, so no longer than that.
    log_grace_seconds: int = Field(3600, ge=0, le=PURGE_GRACE_SECONDS)
    heartbeat_seconds: float = Field(15, gt=0, le=60)
    # How often a plugin on the push channel pings (its only sign of life there; each ping is two WebSocket messages
    # and a function call). Under API Gateway's 10-minute idle timeout. 480 s keeps a district's class day under $5
    # (docs/deploy.md); a push plugin counts as connected while seen within 2.5 pings (``push_grace_seconds``), and
    # one that closes its socket is detached at once ($disconnect).
    push_ping_seconds: float = Field(480, ge=1, le=540)
    # How long one post to a push connection may take, with no retry: it runs inside a submit (and so inside a
    # ?wait call's 29 s under API Gateway); a post that takes longer counts as unknown and the plugin's next ping
    # or resume catches up.
    push_publish_seconds: float = Field(1.0, gt=0, le=5)
    rate_limit_session_per_ip: int = Field(300, ge=1)
    rate_limit_request_per_code: int = Field(60, ge=1)
    guess_limit_per_ip: int = Field(20, ge=1)
    # Session status reads (GET /api/sessions/{code}) per minute per client address. A status read is one count
    # from an index; the limit caps what one address can make the relay do all the same.
    rate_limit_status_per_ip: int = Field(300, ge=1)
    # Messages per minute per push connection (a plugin sends one ping per PUSH_PING_SECONDS, and a resume per gap):
    # one past it closes the connection, so a client that floods its socket cannot use up the stage's messages for
    # long. Counted in each function instance (no store write): a flood passes it in any instance it reaches.
    rate_limit_push_messages_per_connection: int = Field(120, ge=1)
    # What one session may hold unanswered (its plugin away or slow): so many requests, so many bytes of arguments
    # (their JSON). A class of 30 students, each with a few calls pending, holds a few per session.
    max_pending_requests_per_session: int = Field(50, ge=1)
    max_pending_bytes_per_session: int = Field(4 * 1024 * 1024, ge=1024)
    # Bytes of request arguments one client address may queue per hour, across all its sessions: what it can make
    # the store keep (for REQUEST_TTL_SECONDS plus a day). 30 students x 60 calls x 10 KB = 18 MB an hour fit.
    request_bytes_per_ip_per_hour: int = Field(32 * 1024 * 1024, ge=1024)
    cors_origin: tuple[str, ...] = tuple(DEFAULT_CORS.split(","))
    require_browser_token: bool = True
    max_request_bytes: int = Field(262_144, ge=1024)
    # The largest result whose event still fits Lambda's 6,291,456-byte request limit in the worst case: JSON
    # escaping doubles a body made of quotes and backslashes, and the event's headers and context take up to
    # ~64 KiB more (2 * 3,000,000 + 65,536 < 6,291,456). The answer, read back, fits the 6,291,556-byte response
    # limit the same way. Tested at the limit through local-api (tests/integration/test_local_api_relay.py).
    max_response_bytes: int = Field(3_000_000, ge=1024)
    relay_store: str = Field(default_factory=default_store_url)
    trust_proxy: bool = False
    # How long a plugin may go unseen before it counts as disconnected.
    connected_grace_seconds: float = Field(30, gt=0)
    # Longest ?wait= a caller may ask for. API Gateway cuts a request at 29 s, the function's cold start and
    # DynamoDB retries included: docs/deploy.md gives the budget that leaves 15 s for waiting.
    max_wait_seconds: float = Field(15, gt=0, le=15)
    # Stores that cannot push (DynamoDB across Lambda instances) are polled: every poll_interval_seconds while a
    # session is in use, every idle_poll_interval_seconds once its stream has had no request for
    # poll_active_seconds. A waiting LLM always polls at the fast rate (someone is waiting).
    poll_interval_seconds: float = Field(0.05, gt=0, le=5)
    idle_poll_interval_seconds: float = Field(0.15, gt=0, le=5)
    poll_active_seconds: float = Field(60, ge=0, le=3600)
    # End a stream after this long so Lambda (15 min limit) closes it cleanly; 0 = never.
    stream_max_seconds: float = Field(0, ge=0)
    mcp_tool_timeout_seconds: float = Field(15, gt=0, le=15)  # the same 29 s budget as max_wait_seconds
    allowed_hosts: tuple[str, ...] = ("*",)
    # The pages that may show the plugin in a frame (the plugin page's CSP frame-ancestors): CODAP's public
    # origins by default; the relay's own origin (PUBLIC_BASE_URL, or 'self') always may. Patterns such as
    # http://localhost:* allow every port (a CODAP build served on this machine).
    frame_ancestors: tuple[str, ...] = tuple(DEFAULT_CORS.split(","))
    public_base_url: str | None = None
    # The path in front of every public URL on a custom domain with a base path mapping ("/codap" for
    # https://relay.example.org/codap/...): API Gateway keeps it in the path it hands the functions.
    public_base_path: str = ""
    # A CODAP build (a folder with index.html) served at /codap/: CODAP and the plugin then share one loopback
    # origin, so Chrome has no local-network access to ask about and the plugin's storage is first-party.
    codap_dir: Path | None = None
    # The push channel (PushChannel=websocket): the URL the plugin opens its WebSocket on (wss://…/{stage}, or
    # ws:// on loopback), and the management API's base (https://…/{stage}) the relay posts to. Both or neither.
    push_url: str = ""
    push_endpoint: str = ""
    # The key of the access log's code hints (an HMAC): the same in every process of a deployment, so one session's
    # lines share a hint. Unset, each process draws its own at start (hints then agree within a process only).
    log_hint_key: SecretStr = Field(default_factory=lambda: SecretStr(secrets.token_hex(32)), min_length=16)
    # The OAuth server of /mcp (docs/threat-model.md): an access token lives an hour (every call also checks its
    # grant, so a disconnect is at once anyway; the hour bounds a token copied out of a client); a refresh token
    # 30 days, rotated on each use, and a grant lives as long as its latest refresh token, so a teacher who uses
    # the connector once a month never consents again and one that went unused for a month ends by itself.
    oauth_access_ttl_seconds: int = Field(3600, ge=60, le=86_400)
    oauth_refresh_ttl_seconds: int = Field(30 * 86_400, ge=600, le=365 * 86_400)
    # Limits of MCP POSTs that carry a grant (an OAuth token), per minute: each grant's own, and each plugin's (all
    # the apps one CODAP approved, together: approving more apps buys no more calls). Neither counts by address,
    # since hosted apps call from a few shared addresses, and no window is shared by two plugins: the service's
    # ceiling is the gateway's throttle, which no one plugin's budget comes near (docs/threat-model.md).
    rate_limit_request_per_grant: int = Field(120, ge=1)
    rate_limit_request_per_plugin: int = Field(240, ge=1)
    # Where no grant exists yet, per address: registrations and authorizations a minute (and authorizations per
    # registered client, whose id is its installation's own), and consent questions asked an hour (each may make a
    # grant; a school of 30 classes behind one address connects its apps within the hour).
    rate_limit_register_per_ip: int = Field(20, ge=1)
    rate_limit_authorize_per_ip: int = Field(30, ge=1)
    rate_limit_authorize_per_client: int = Field(30, ge=1)
    rate_limit_grants_per_ip_per_hour: int = Field(60, ge=1)
    # Consent questions one pairing code may bring its plugin a minute: typing a stranger's code again and again
    # does not bury their plugin in questions.
    rate_limit_consent_per_code: int = Field(3, ge=1)
    # A client whose client_id is a URL (a Client ID Metadata Document) is read from there over https, from public
    # addresses only (oauth/client_documents.py). True lets plain http on loopback through too: for tests only.
    oauth_client_documents_allow_loopback: bool = False

    @property
    def push_grace_seconds(self) -> float:
        """How long a plugin on the push channel may go unseen and still count as connected: two missed pings and
        a half (never less than ``connected_grace_seconds``)."""
        return max(self.connected_grace_seconds, 2.5 * self.push_ping_seconds)

    @model_validator(mode="after")
    def _idle_polls_no_faster(self) -> Settings:
        if self.idle_poll_interval_seconds < self.poll_interval_seconds:
            raise ValueError(
                f"IDLE_POLL_INTERVAL_SECONDS ({self.idle_poll_interval_seconds:g}) must be at least "
                f"POLL_INTERVAL_SECONDS ({self.poll_interval_seconds:g}): an idle session is polled less often"
            )
        return self

    @model_validator(mode="after")
    def _push_both_or_neither(self) -> Settings:
        if bool(self.push_url) != bool(self.push_endpoint):
            raise ValueError(
                "PUSH_URL and PUSH_ENDPOINT go together: set both (the push channel on) or neither (SSE only)"
            )
        return self

    @field_validator("push_url")
    @classmethod
    def _push_url(cls, v: str) -> str:
        return _secure_url(v, "wss", "ws", "e.g. wss://abc.execute-api…/v1")

    @field_validator("push_endpoint")
    @classmethod
    def _push_endpoint(cls, v: str) -> str:
        return _secure_url(v, "https", "http", "the stage's base")

    @field_validator("cors_origin", "allowed_hosts", "frame_ancestors", mode="before")
    @classmethod
    def _split_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            return tuple(p.strip().rstrip("/") for p in v.split(",") if p.strip())
        return v

    @field_validator("frame_ancestors")
    @classmethod
    def _ancestors(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for origin in v:
            if not ANCESTOR_RE.match(origin):
                raise ValueError(
                    f"{origin!r} is not an origin: give scheme://host, scheme://host:port or scheme://host:* "
                    "(comma-separated, e.g. https://codap.concord.org,http://localhost:*)"
                )
        return v

    @field_validator("public_base_path", mode="before")
    @classmethod
    def _base_path(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        path = v.strip().strip("/")
        if path and not BASE_PATH_RE.match(path):
            raise ValueError("must be a URL path like /codap (letters, digits, '.', '_', '~', '-' and '/')")
        return f"/{path}" if path else ""

    @field_validator("codap_dir")
    @classmethod
    def _codap_build(cls, v: Path | None) -> Path | None:
        if v is not None and not (v / "index.html").is_file():
            raise ValueError(f"{v} holds no CODAP build (no index.html); give the folder of an unpacked build")
        return v

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read every field from its upper-case environment variable; overrides (CLI flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            key = name.upper()
            if key in env and env[key] != "":
                values[name] = env[key]
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
            raise SettingsError(f"invalid settings: {problems}") from exc


def _secure_url(value: str, secure: str, plain: str, example: str) -> str:
    """``value`` without trailing slashes when empty or a ``secure``:// URL, or a ``plain``:// one on this computer
    (local-api); else a ValueError that says so."""
    value = value.strip().rstrip("/")
    pattern = rf"^({secure}://[^/\s]+|{plain}://(127\.0\.0\.1|localhost)(:\d{{1,5}})?)(/[^\s]*)?$"
    if value and not re.match(pattern, value):
        where = f"{plain}:// only on 127.0.0.1 or localhost"
        raise ValueError(f"must be a URL that starts {secure}:// ({where}), {example}")
    return value
