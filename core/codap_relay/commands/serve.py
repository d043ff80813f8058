"""``codap-relay serve``: the relay on uvicorn with the embedded store and the plugin page."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..settings import Settings, SettingsError
from ..store import StoreUrlError
from . import options

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("serve", help="run the relay locally")
    p.add_argument("--host", type=options.host, default="127.0.0.1")
    p.add_argument("--port", type=options.port, default=8080)
    p.add_argument(
        "--store",
        type=options.store_url,
        help="memory:, sqlite:///ABS/PATH.db (default) or dynamodb://TABLE?endpoint_url=…",
    )
    p.add_argument(
        "--cors-origin", type=options.origins, help="comma-separated origins allowed to call the API from a browser"
    )
    p.add_argument(
        "--codap-dir",
        type=options.codap_build,
        help="an unpacked CODAP build to serve at /codap/ (CODAP with no browser prompt)",
    )
    p.add_argument(
        "--max-connections",
        type=options.positive_int,
        default=1000,
        help="open connections at most; more are answered 503 with Retry-After (default 1000, and never more "
        "than the process's file-handle limit allows)",
    )
    p.add_argument(
        "--header-timeout",
        type=options.positive_seconds,
        default=10,
        help="seconds a new connection has to send its request's headers before it is closed (default 10)",
    )
    p.add_argument(
        "--max-connections-per-address",
        type=options.positive_int,
        help="open connections one client address may hold; more are answered 503 with Retry-After (default half "
        "of --max-connections, so one client never holds them all)",
    )
    p.add_argument(
        "--body-timeout",
        type=options.positive_seconds,
        default=20,
        help="seconds a request's body has to arrive in once its headers have, before the connection is closed "
        "(default 20)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,  # any case: info, INFO, Info
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="log level (default INFO)",
    )
    p.set_defaults(run=run)


def connection_cap(wanted: int) -> int:
    """--max-connections, kept under the file-handle limit (each connection holds one; the store, logs and the
    listening socket need some too), so a flood meets the 503 rather than failing accept()."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return wanted
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - 64))


WILDCARDS = ("0.0.0.0", "::")


def default_hosts(bound: str, configured: str) -> str | None:
    """ALLOWED_HOSTS when it is not set: on loopback, the loopback names (the DNS-rebinding guard on); on one
    other address, that address; on every address (0.0.0.0, ::), none to guess, so serve refuses to start. Without
    this, ``*`` would answer any Host header and reflect it in the URLs the relay writes."""
    if configured.strip():
        return None  # Settings reads it
    if bound in LOOPBACK:
        return "localhost,127.0.0.1,[::1]"
    if bound in WILDCARDS:
        raise SettingsError(
            f"serving on every address ({bound}) needs ALLOWED_HOSTS: the host names and addresses clients use for "
            "this relay, comma-separated (e.g. ALLOWED_HOSTS=relay.school.example,192.0.2.10); * accepts any Host "
            "header and is unsafe off loopback"
        )
    return f"[{bound}]" if ":" in bound else bound


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from .. import logs
    from ..local import create_app
    from .connections import guarded_protocol

    logs.configure(args.log_level)
    base = f"http://{args.host if ':' not in args.host else f'[{args.host}]'}:{args.port}"
    try:
        hosts = default_hosts(args.host, os.environ.get("ALLOWED_HOSTS", ""))
        settings = Settings.from_env(
            relay_store=args.store, cors_origin=args.cors_origin, allowed_hosts=hosts, codap_dir=args.codap_dir
        )
        app = create_app(settings)
    except (SettingsError, StoreUrlError) as exc:
        print(f"codap-relay: {exc}", file=sys.stderr)
        return 2
    print(f"codap-relay {settings.relay_store.split('?')[0]}", flush=True)
    print(f"API:    {base}/", flush=True)
    print(f"Plugin: {base}/plugin/", flush=True)
    if settings.codap_dir is not None:
        print(f"CODAP:  {base}/codap/?di={base}/plugin/   (served from {settings.codap_dir})", flush=True)
    print(f"In CODAP: https://codap.concord.org/app/?di={base}/plugin/", flush=True)
    print(
        "  Chrome asks whether codap.concord.org may 'Access other apps and services on this device': "
        "answer Allow (README: the local path).",
        flush=True,
    )
    # proxy_headers off: uvicorn would otherwise take X-Forwarded-For from any loopback peer as the client's
    # address, so one process on this machine could reset every per-address limit. The relay reads that header
    # itself, and only with TRUST_PROXY on (http/context.py client_ip).
    cap = connection_cap(args.max_connections)
    per_address = None if args.max_connections_per_address is None else min(args.max_connections_per_address, cap)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=3,
        proxy_headers=False,
        http=guarded_protocol(
            cap,
            args.header_timeout,
            per_address=per_address,
            body_timeout=args.body_timeout,
        ),
    )
    return 0
