"""Subcommands of ``codap-relay``."""
