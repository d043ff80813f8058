from __future__ import annotations

from pathlib import Path

import pytest

from codap_relay.codes import ALPHABET, CODE_RE, hash_token, new_code, normalise_code, redact_code, token_matches
from codap_relay.errors import InvalidCode
from codap_relay.settings import Settings, SettingsError


def test_codes_use_the_base32_alphabet() -> None:
    codes = {new_code() for _ in range(500)}
    assert all(CODE_RE.match(c) for c in codes)
    assert len(codes) == 500  # 40 bits: a repeat in 500 draws would mean a broken generator
    assert set("".join(codes)) <= set(ALPHABET)


@pytest.mark.parametrize("raw", [" abcd2345 ", "ABCD2345", "abcd2345\n", "ABCD-2345", "abcd 2345"])
def test_normalise_trims_and_upper_cases(raw: str) -> None:
    assert normalise_code(raw) == "ABCD2345"


@pytest.mark.parametrize("raw", ["", "   ", None, 12345678, "ABCD1234", "ABCDEFG", "ABCDEFGHI", "ABCD-234"])
def test_normalise_rejects_with_advice(raw: object) -> None:
    with pytest.raises(InvalidCode) as info:
        normalise_code(raw)
    assert "plugin" in info.value.message


def test_token_hash_and_redaction() -> None:
    h = hash_token("secret-token")
    assert token_matches("secret-token", h) and not token_matches("other", h)
    shown = redact_code("ABCD2345", b"k" * 32)
    assert "ABCD2345" not in shown and shown.startswith("AB")


def test_settings_from_env_defaults_and_overrides() -> None:
    s = Settings.from_env({"SESSION_TTL_SECONDS": "120", "CORS_ORIGIN": "https://a.example, https://b.example/"})
    assert s.session_ttl_seconds == 120
    assert s.cors_origin == ("https://a.example", "https://b.example")
    assert s.require_browser_token is True and s.max_request_bytes == 262144 and s.max_response_bytes == 3_000_000
    assert Settings.from_env({}, relay_store="memory:").relay_store == "memory:"


def test_settings_reject_bad_values_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match="SESSION_TTL_SECONDS"):
        Settings.from_env({"SESSION_TTL_SECONDS": "soon"})
    with pytest.raises(SettingsError, match="REQUIRE_BROWSER_TOKEN"):
        Settings.from_env({"REQUIRE_BROWSER_TOKEN": "perhaps"})


def test_codap_dir_must_hold_a_codap_build(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"CODAP_DIR: .*no index\.html"):
        Settings.from_env({"CODAP_DIR": str(tmp_path)})
    (tmp_path / "index.html").write_text("<!doctype html>")
    assert Settings.from_env({"CODAP_DIR": str(tmp_path)}).codap_dir == tmp_path


def test_an_idle_session_is_never_polled_more_often_than_a_busy_one() -> None:
    with pytest.raises(SettingsError, match=r"IDLE_POLL_INTERVAL_SECONDS.*POLL_INTERVAL_SECONDS"):
        Settings.from_env({"POLL_INTERVAL_SECONDS": "0.5", "IDLE_POLL_INTERVAL_SECONDS": "0.1"})
    s = Settings.from_env({"POLL_INTERVAL_SECONDS": "0.05", "IDLE_POLL_INTERVAL_SECONDS": "0.05"})
    assert s.idle_poll_interval_seconds == s.poll_interval_seconds == 0.05


def test_the_log_grace_cannot_outlast_what_the_stores_keep() -> None:
    from codap_relay.store.base import PURGE_GRACE_SECONDS

    assert Settings.from_env({}).log_grace_seconds == 3600
    assert Settings.from_env({"LOG_GRACE_SECONDS": str(PURGE_GRACE_SECONDS)}).log_grace_seconds == PURGE_GRACE_SECONDS
    for bad in (str(PURGE_GRACE_SECONDS + 1), "-1", "an hour"):
        with pytest.raises(SettingsError, match="LOG_GRACE_SECONDS"):
            Settings.from_env({"LOG_GRACE_SECONDS": bad})
