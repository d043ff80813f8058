"""Try the relay as a new user would: ``python -m codap_relay_tooling.trial``.

Run with no command, it starts ``codap-relay serve`` on loopback with the real CODAP build at /codap/, opens that
CODAP with the plugin in headless Chromium, prints the relay's URL and the pairing code, and stays up until
Ctrl+C. A model (or a person acting as one) then drives CODAP through the relay alone: ``/llms.txt?code=…``,
``/metadata?code=…``, ``POST /request`` or ``codap-relay call``.

Beside it, a control port on loopback lets the person running the trial see what CODAP really holds, by a path
the relay and the plugin's code do not take:

- ``python -m codap_relay_tooling.trial screenshot out.png``: CODAP's page as a PNG;
- ``python -m codap_relay_tooling.trial di '{"action": "get", "resource": "componentList"}'``: one raw Data
  Interactive request (or a list of them) sent from inside the plugin's frame, CODAP's reply as JSON;
- ``python -m codap_relay_tooling.trial info``: the relay URL, the pairing code and the CODAP page's URL.

The running trial writes where its control port is to a state file (``--state``, by default in the system's
temporary folder), which the other commands read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Protocol

import httpx

DEFAULT_STATE = Path(tempfile.gettempdir()) / "codap-relay-trial.json"


class Inspectable(Protocol):
    """What the control port needs of CODAP's page (real_codap.CodapPage has it)."""

    @property
    def url(self) -> str: ...

    def code(self) -> str: ...

    def di(self, request: dict[str, Any] | list[dict[str, Any]]) -> Any: ...

    def screenshot(self, path: Path) -> Path: ...


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


def _json(status: int, value: Any) -> Reply:
    return Reply(status, json.dumps(value, indent=1).encode())


def control(page: Inspectable, relay: str, method: str, path: str, body: bytes) -> Reply:
    """Answer one request to the control port: ``GET /info``, ``POST /di`` (a DI request as JSON) or
    ``POST /screenshot`` (``{"path": "…png"}``). Errors come back as ``{"error": …}`` with a 4xx/5xx status."""
    try:
        if method == "GET" and path == "/info":
            code = page.code()
            return _json(
                200, {"relay": relay, "code": code, "llms": f"{relay}/llms.txt?code={code}", "codap": page.url}
            )
        if method != "POST" or path not in ("/di", "/screenshot"):
            return _json(404, {"error": f"no {method} {path}: GET /info, POST /di, POST /screenshot"})
        try:
            payload = json.loads(body or b"null")
        except ValueError as exc:
            return _json(400, {"error": f"the body is not JSON: {exc}"})
        if path == "/di":
            if not isinstance(payload, dict | list):
                return _json(400, {"error": "send one DI request (an object) or a list of them"})
            return _json(200, page.di(payload))
        if not isinstance(payload, dict) or not isinstance(payload.get("path"), str):
            return _json(400, {"error": 'send {"path": "where/to/write.png"}'})
        written = page.screenshot(Path(payload["path"]).resolve())
        return _json(200, {"path": str(written)})
    except Exception as exc:  # the page's failure is the caller's answer, not the control port's end
        return _json(500, {"error": f"{type(exc).__name__}: {exc}"})


def _handler(page: Inspectable, relay: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            reply = control(page, relay, method, self.path, self.rfile.read(length) if length else b"")
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def _codap(relay: str, *, full_frame_rate: bool) -> Iterator[Inspectable]:
    from playwright.sync_api import sync_playwright

    from .testing.chromium import CHROMIUM_ARGS, chromium_path
    from .testing.real_codap import codap_pages

    executable = chromium_path()
    if executable is None:
        raise SystemExit("no chromium: install Debian's chromium (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            with codap_pages(browser, f"{relay}/codap", full_frame_rate=full_frame_rate) as open_page:
                yield open_page(f"{relay}/plugin/")
        finally:
            browser.close()


def serve(args: argparse.Namespace) -> int:
    from .testing.commands import serve_process
    from .testing.real_codap import codap_dist
    from .testing.servers import free_port

    codap_dir = Path(args.codap_dir) if args.codap_dir else codap_dist()
    if codap_dir is None or not (codap_dir / "index.html").is_file():
        raise SystemExit("no CODAP build: pass --codap-dir (a folder with index.html), or see README, Development")
    serve_args = ["--store", "memory:", "--codap-dir", str(codap_dir)]
    with (
        serve_process(*serve_args, port=args.port or None) as (relay, process),
        _codap(relay, full_frame_rate=args.full_frame_rate) as page,
    ):
        server = HTTPServer(("127.0.0.1", args.control_port or free_port()), _handler(page, relay))
        control_url = f"http://127.0.0.1:{server.server_address[1]}"
        state = Path(args.state)
        state.write_text(json.dumps({"control": control_url, "relay": relay, "code": page.code()}))
        code = page.code()
        print(f"relay:    {relay}\ncode:     {code}\nllms.txt: {relay}/llms.txt?code={code}", flush=True)
        print(f"CODAP:    {page.url}\ncontrol:  {control_url} (state in {state})", flush=True)
        print("Ctrl+C or kill ends the trial.", flush=True)
        # One thread drives Playwright (its sync API is bound to it), so the control port is served here too.
        server.timeout = 0.5
        # `kill PID` and Ctrl+C end it the same way, closing the browser and the relay (a shell that starts it in
        # the background leaves SIGINT ignored: Python's handler is set again for it).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while process.poll() is None:
                server.handle_request()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
            with contextlib.suppress(OSError):
                state.unlink()
        if process.poll() is not None:
            print(f"the relay exited: {process.output()[-2000:]}", file=sys.stderr)
            return 1
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    try:
        control_url = json.loads(Path(args.state).read_text())["control"]
    except (OSError, ValueError, KeyError):
        raise SystemExit(
            f"no running trial ({args.state}): start `python -m codap_relay_tooling.trial` first"
        ) from None
    response = httpx.request(method, f"{control_url}{path}", json=body, timeout=60)
    value = response.json()
    if response.status_code != 200:
        raise SystemExit(value.get("error", response.text))
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codap_relay_tooling.trial", description=__doc__.split("\n")[0])
    parser.add_argument("--state", default=os.environ.get("CODAP_RELAY_TRIAL_STATE", str(DEFAULT_STATE)))
    parser.add_argument("--port", type=int, default=0, help="the relay's port (default: a free one)")
    parser.add_argument("--control-port", type=int, default=0, help="the control port (default: a free one)")
    parser.add_argument("--codap-dir", help="an unpacked CODAP build (default: .tools/codap-v3.1.0)")
    parser.add_argument("--full-frame-rate", action="store_true", help="CODAP's animation frames at the display's rate")
    commands = parser.add_subparsers(dest="command", help="with none, start the trial and stay up")
    shot = commands.add_parser("screenshot", help="CODAP's page as a PNG")
    shot.add_argument("path")
    raw = commands.add_parser("di", help="one raw Data Interactive request from the plugin's frame")
    raw.add_argument("request", help='JSON: {"action": "get", "resource": "…"} or a list of such')
    commands.add_parser("info", help="the running trial's relay URL and pairing code")
    args = parser.parse_args(argv)
    if args.command is None:
        return serve(args)
    if args.command == "screenshot":
        # The path is the caller's: resolved here, where the caller is, not in the trial's own folder.
        print(_call(args, "POST", "/screenshot", {"path": str(Path(args.path).resolve())})["path"])
    elif args.command == "di":
        print(json.dumps(_call(args, "POST", "/di", json.loads(args.request)), indent=1))
    else:
        print(json.dumps(_call(args, "GET", "/info"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
