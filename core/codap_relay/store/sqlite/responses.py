"""Responses: an answer stored together with its request's new status, once; and reading it back."""

from __future__ import annotations

from ...errors import RequestExpired, RequestNotFound, SessionNotFound
from ...jsonvalues import dumps
from ...records import Completion, ResponseRecord
from .database import Database
from .rows import response_of


class ResponseOps(Database):
    def complete_request(
        self,
        response: ResponseRecord,
        *,
        now: float | None = None,
        token_hash: str | None = None,
        alive_until: float | None = None,
    ) -> Completion:
        with self._tx() as db:
            request = db.execute(
                "SELECT r.status, r.expires_at, r.created_at, s.token_hash, s.closed_at, s.expires_at AS alive_to "
                "FROM requests r LEFT JOIN sessions s ON s.code = r.code WHERE r.code = ? AND r.id = ?",
                (response.code, response.id),
            ).fetchone()
            if request is None or token_hash not in (None, request["token_hash"]):
                raise RequestNotFound("no such request", request_id=response.id)
            if alive_until is not None and now is not None:
                if request["closed_at"] is not None:
                    raise SessionNotFound("session closed", reason="closed")
                if request["alive_to"] is None or request["alive_to"] <= now:
                    raise SessionNotFound("session expired", reason="expired")
            earlier = db.execute(
                "SELECT * FROM responses WHERE code = ? AND id = ?", (response.code, response.id)
            ).fetchone()
            if earlier is not None:
                return Completion(response_of(earlier), False, request["created_at"])
            pending = request["status"] in ("queued", "delivered")
            if now is not None and pending and request["expires_at"] <= now:
                raise RequestExpired("request expired unanswered", request_id=response.id)
            db.execute(
                "INSERT INTO responses (code, id, status, body, fingerprint, timestamp, expires_at, error_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    response.code,
                    response.id,
                    response.status,
                    dumps(response.body),
                    response.fingerprint,
                    response.timestamp,
                    response.expires_at,
                    response.error_code,
                ),
            )
            db.execute(
                "UPDATE requests SET status = ?, completed_at = ?, error_code = ? WHERE code = ? AND id = ?",
                (response.status, response.timestamp, response.error_code, response.code, response.id),
            )
            if alive_until is not None and now is not None:
                db.execute(
                    "UPDATE sessions SET last_seen = ?, expires_at = MAX(expires_at, ?) WHERE code = ?",
                    (now, alive_until, response.code),
                )
        return Completion(response, True, request["created_at"])

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        row = self._one("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id))
        return None if row is None else response_of(row)
