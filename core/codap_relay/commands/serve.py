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


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from .. import logs
    from ..local import create_app
    from .connections import guarded_protocol

    logs.configure(args.log_level)
    base = f"http://{args.host if ':' not in args.host else f'[{args.host}]'}:{args.port}"
    # On loopback, the MCP endpoint's DNS-rebinding guard is on by default: only loopback Host headers pass.
    hosts = None
    if "ALLOWED_HOSTS" not in os.environ and args.host in LOOPBACK:
        hosts = "localhost,127.0.0.1,[::1]"
    try:
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
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=3,
        proxy_headers=False,
        http=guarded_protocol(connection_cap(args.max_connections), args.header_timeout),
    )
    return 0
