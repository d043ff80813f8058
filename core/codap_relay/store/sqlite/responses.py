"""Responses: an answer stored together with its request's new status, once; and reading it back."""

from __future__ import annotations

from ...errors import RequestExpired, RequestNotFound
from ...jsonvalues import dumps
from ...records import Completion, ResponseRecord
from .database import Database
from .rows import response_of


class ResponseOps(Database):
    def complete_request(self, response: ResponseRecord, *, now: float | None = None) -> Completion:
        with self._tx() as db:
            request = db.execute(
                "SELECT status, expires_at, created_at FROM requests WHERE code = ? AND id = ?",
                (response.code, response.id),
            ).fetchone()
            if request is None:
                raise RequestNotFound("no such request", request_id=response.id)
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
        return Completion(response, True, request["created_at"])

    def get_response(self, code: str, request_id: str) -> ResponseRecord | None:
        row = self._one("SELECT * FROM responses WHERE code = ? AND id = ?", (code, request_id))
        return None if row is None else response_of(row)
