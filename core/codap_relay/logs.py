"""JSON-lines logging for the local server. Nothing here ever logs a token or a whole pairing code."""

from __future__ import annotations

import json
import logging
import sys
import time

from .jsonvalues import dumps


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        base = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if message.startswith("{"):
            try:
                return dumps({**base, **json.loads(message)})
            except ValueError:
                pass
        return dumps({**base, "message": message})


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # uvicorn's access log prints full URLs, which carry codes and tokens in query strings: keep it off.
    logging.getLogger("uvicorn.access").disabled = True
