"""Checks for the command line's options, as argparse ``type=`` functions: a bad value stops the command before it
starts, with exit code 2 and one line that names the option and says what it takes (``Parser.error``)."""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
import sys
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from ..codes import normalise_code
from ..errors import BadInput, InvalidCode
from ..jsonvalues import loads
from ..store import StoreUrlError, check_store_url

Bad = argparse.ArgumentTypeError

HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
STAGE_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")  # API Gateway's stage names
TABLE_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")  # DynamoDB's table names
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")  # us-east-1, eu-central-2, us-gov-west-1
PARAMETER_RE = re.compile(r"^[A-Za-z0-9]+=")  # a CloudFormation parameter name, then its value
TOOL_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CONFIG_NAME_RE = re.compile(r"^[A-Za-z0-9_.@+=,-]{1,128}$")  # an AWS profile's or a samconfig environment's name


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line (argparse prints the whole usage first) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def port(text: str) -> int:
    value = _int(text, "a port number")
    if not 1 <= value <= 65535:
        raise Bad(f"a port is 1 to 65535, not {text!r}")
    return value


def positive_int(text: str) -> int:
    value = _int(text, "a whole number")
    if value < 1:
        raise Bad(f"must be 1 or more, not {text!r}")
    return value


def positive_seconds(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise Bad(f"must be a number of seconds above 0, not {text!r}")
    return value


def seconds(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise Bad(f"must be 0 or more seconds, not {text!r}")
    return value


def host(text: str) -> str:
    """An address to listen on: an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name (localhost)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        if not HOSTNAME_RE.match(text) or text.replace(".", "").isdigit():
            raise Bad(f"{text!r} is not a host name or IP address (e.g. 127.0.0.1, ::1, localhost)") from None
    return text


def store_url(text: str) -> str:
    try:
        check_store_url(text)
    except StoreUrlError as exc:
        raise Bad(str(exc)) from None
    return text


def origins(text: str) -> str:
    """Comma-separated browser origins, scheme://host[:port], as CORS_ORIGIN takes them."""
    from ..settings import ANCESTOR_RE  # the relay's own rule; imported only where needed (pydantic is slow to load)

    for origin in (p.strip().rstrip("/") for p in text.split(",")):
        if not origin or ":*" in origin or not ANCESTOR_RE.match(origin):
            raise Bad(f"{origin!r} is not an origin: give scheme://host or scheme://host:port, comma-separated")
    return text


def http_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Bad(f"{text!r} is not an http(s) URL, e.g. http://127.0.0.1:8080")
    try:
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError:
        raise Bad(f"{text!r} has a port outside 1 to 65535") from None
    return text


def codap_build(text: str) -> Path:
    path = Path(text).expanduser()
    if not (path / "index.html").is_file():
        raise Bad(f"{text} holds no CODAP build (no index.html); give the folder of an unpacked build")
    return path


def existing_file(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise Bad(f"no such file: {text}")
    return path


def stage(text: str) -> str:
    if not STAGE_RE.match(text):
        raise Bad(f"{text!r} is not a stage name (letters, digits, '-' and '_')")
    return text


def base_path(text: str) -> str:
    from ..settings import BASE_PATH_RE

    if not BASE_PATH_RE.match(text.strip("/")):
        raise Bad(f"{text!r} is not a URL path like codap (letters, digits, '.', '_', '~', '-' and '/')")
    return text


def parameter(text: str) -> str:
    if not PARAMETER_RE.match(text):
        raise Bad(f"takes NAME=VALUE, a template parameter and its value (got {text!r})")
    return text


def pairing_code(text: str) -> str:
    try:
        return normalise_code(text)
    except InvalidCode as exc:
        raise Bad(exc.message) from None


def request_id(text: str) -> str:
    from ..relay.queue import REQUEST_ID_RE

    if not REQUEST_ID_RE.match(text):
        raise Bad(f"{text!r} is not a request id (1 to 64 of letters, digits, '-' and '_')")
    return text


def tool_name(text: str) -> str:
    if not TOOL_RE.match(text):
        raise Bad(f"{text!r} is not a tool name (letters, digits, '-' and '_', e.g. get_codap_datasets)")
    return text


def json_object(text: str) -> dict[str, Any]:
    try:
        value = loads(text)  # the relay's own parser: 1e999 or nesting too deep is refused here, not sent on
    except BadInput as exc:
        raise Bad(f'must be a JSON object, e.g. \'{{"datasetName": "x"}}\' ({exc.message})') from None
    if not isinstance(value, dict):
        raise Bad("must be a JSON object, e.g. '{}'")
    return value


def table(text: str) -> str:
    if not TABLE_RE.match(text):
        raise Bad(f"{text!r} is not a DynamoDB table name (3 to 255 of letters, digits, '_', '-' and '.')")
    return text


def region(text: str) -> str:
    if not REGION_RE.match(text):
        raise Bad(f"{text!r} is not an AWS region, e.g. us-east-1")
    return text


def config_name(text: str) -> str:
    if not CONFIG_NAME_RE.match(text):
        raise Bad(f"{text!r} is not a profile or environment name (letters, digits and _.@+=,-)")
    return text


def per_second(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise Bad(f"must be a number per second, not {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise Bad(f"must be a number per second above 0, not {text!r}")
    return value


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Bad(f"must be {what}, not {text!r}") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise Bad(f"must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value):
        raise Bad(f"must be a finite number of seconds, not {text!r}")
    return value
