"""Refusals logged once per burst, not once each: a flood of refused connections or streams would otherwise write
a line per refusal (security issue 24: 11 MB of log)."""

from __future__ import annotations

import logging

#: Keys (client addresses, sessions) whose burst is still open; beyond this many the oldest are forgotten, so a
#: flood from many addresses costs bounded memory (a forgotten key's next refusal logs one more line).
MAX_KEYS = 10_000


class Burst:
    """Refusals of one kind, one log line per burst and key: a burst starts at the first refusal for a key after
    something was admitted for it (or ever) and lasts until something is admitted for it again."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what  # the line's text: %(key)s, %(refused)d (refusals so far since start) may appear in it
        self.active: dict[str, None] = {}  # insertion-ordered set
        self.refused = 0

    def refuse(self, key: str = "") -> None:
        self.refused += 1
        if key in self.active:
            return
        if len(self.active) >= MAX_KEYS:
            del self.active[next(iter(self.active))]
        self.active[key] = None
        self.log.warning(self.what, {"key": key, "refused": self.refused})

    def admitted(self, key: str = "") -> None:
        self.active.pop(key, None)
