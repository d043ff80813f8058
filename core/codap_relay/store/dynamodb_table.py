"""Moved to ``codap_relay.store.dynamodb.table``; this name stays while callers outside the store import it."""

from .dynamodb.table import CREATE_KEYS, TABLE_TYPE, create_table, table_definition

__all__ = ["CREATE_KEYS", "TABLE_TYPE", "create_table", "table_definition"]
