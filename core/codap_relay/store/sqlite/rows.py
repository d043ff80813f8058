"""Rows to records: how a row of each table reads back as the record the store interface returns."""

from __future__ import annotations

import json
import sqlite3

from ...records import AuthItem, RequestRecord, ResponseRecord, SessionRecord


def session_of(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        code=row["code"],
        token_hash=row["token_hash"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        manifest=row["manifest"],
        last_seq=row["last_seq"],
        last_seen=row["last_seen"],
        consumer=row["consumer"],
        closed_at=row["closed_at"],
    )


def request_of(row: sqlite3.Row) -> RequestRecord:
    return RequestRecord(
        code=row["code"],
        seq=row["seq"],
        id=row["id"],
        tool=row["tool"],
        args=json.loads(row["args"]),
        fingerprint=row["fingerprint"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        status=row["status"],
        delivered_at=row["delivered_at"],
        completed_at=row["completed_at"],
        error_code=row["error_code"],
    )


def response_of(row: sqlite3.Row) -> ResponseRecord:
    return ResponseRecord(
        code=row["code"],
        id=row["id"],
        status=row["status"],
        body=json.loads(row["body"]),
        fingerprint=row["fingerprint"],
        timestamp=row["timestamp"],
        expires_at=row["expires_at"],
        error_code=row["error_code"],
    )


def auth_item_of(row: sqlite3.Row) -> AuthItem:
    return AuthItem(
        kind=row["kind"],
        key=row["key"],
        owner=row["owner"],
        data=json.loads(row["data"]),
        expires_at=float(row["expires_at"]),
    )
