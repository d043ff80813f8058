"""``codap-relay local-api``: the deployed stack on one machine, without Docker or AWS.

API Gateway's REST API stage in front (routes, limits and answers from template.yaml), each Lambda function in
processes of its own (its environment from the template), the stream behind a Web Adapter-style proxy, and a
store they share: SQLite (default) or DynamoDB Local. The emulator is developer tooling, not the runtime: it is
codap_relay_tooling.localapi (tooling/ in the checkout), imported only when this command runs.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

from ..sam_template import TemplateError, default_template
from ..store import StoreUrlError
from . import options


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "local-api",
        help="run the deployed stack locally: API Gateway stage, one process per Lambda function, the stream",
        description="Serve http://HOST:PORT/<stage>/… as the deployed REST API stage would, each function in its "
        "own processes with the environment template.yaml gives it (variables set in this environment win).",
    )
    p.add_argument("--host", type=options.host, default="127.0.0.1")
    p.add_argument("--port", type=options.port, default=3000)
    p.add_argument(
        "--store",
        type=options.store_url,
        help="sqlite:///ABS/PATH.db (default: local-api.db in the state folder) or "
        "dynamodb://TABLE?endpoint_url=http://127.0.0.1:8000 (DynamoDB Local; the table is created if missing)",
    )
    p.add_argument("--stage", type=options.stage, help="stage name, the first path segment (default: the template's)")
    p.add_argument(
        "--base-path",
        type=options.base_path,
        help="serve as a custom domain whose base path mapping PATH points at the stage: URLs are /PATH/…, and "
        "the event's path keeps /PATH (set the PublicBasePath parameter to match, as a deployment would)",
    )
    p.add_argument("--template", type=options.existing_file, help="path to template.yaml (default: ./template.yaml)")
    p.add_argument(
        "--parameter",
        action="append",
        type=options.parameter,
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter (repeatable), as sam deploy --parameter-overrides",
    )
    p.add_argument(
        "--push-channel",
        choices=("sse", "websocket"),
        help="the PushChannel parameter (default: the template's): websocket also serves the template's WebSocket "
        "API, ws://HOST:PUSH-PORT/<stage>, with its @connections management API on that port",
    )
    p.add_argument(
        "--push-port", type=options.port, help="the WebSocket API's own port (default: any free one; it is printed)"
    )
    p.add_argument(
        "--push-idle-timeout",
        type=options.positive_seconds,
        default=None,
        help="close a WebSocket connection idle this long (default 600, API Gateway's)",
    )
    p.add_argument(
        "--push-max-lifetime",
        type=options.positive_seconds,
        default=None,
        help="close any WebSocket connection open this long (default 7200, API Gateway's)",
    )
    p.add_argument(
        "--push-faults",
        type=int,
        default=None,
        metavar="SEED",
        help="for chaos tests: the WebSocket API's @connections posts fail now and then (500s, late answers, 410s "
        "that close the connection, slow posts), drawn from a generator seeded with SEED",
    )
    p.add_argument(
        "--max-instances",
        type=options.positive_int,
        default=None,
        help="most concurrent instances of one function (default 10); more requests wait for one to come free",
    )
    p.add_argument(
        "--forkserver",
        action="store_true",
        default=os.environ.get(FORKSERVER_ENV, "") == "1",
        help="fork each buffered function's process from one interpreter that has imported the libraries the "
        f"functions share (fast starts; Init Duration then leaves those imports out); also {FORKSERVER_ENV}=1",
    )
    p.set_defaults(run=run)


FORKSERVER_ENV = "CODAP_RELAY_LOCAL_API_FORKSERVER"  # the test suite sets it for every local-api it starts
# What the functions import (and the template reader): the aws and mcp extras.
FUNCTION_MODULES = ("yaml", "boto3", "mangum", "aws_lambda_powertools", "mcp")
# The emulator is not part of the runtime package (nor the Lambda layer): it comes with the checkout's tooling/.
INSTALL_TOOLING = "pip install -e ./tooling (from a codap-relay checkout)"


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import importlib.util

    import uvicorn

    if importlib.util.find_spec("codap_relay_tooling") is None:
        print(f"codap-relay: local-api needs the tooling package, not installed: {INSTALL_TOOLING}", file=sys.stderr)
        return 2
    missing = [name for name in FUNCTION_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"codap-relay: local-api runs the Lambda functions, which need {', '.join(missing)}: "
            "pip install 'codap-relay[aws,mcp]'",
            file=sys.stderr,
        )
        return 2

    from codap_relay_tooling.localapi.server import (
        DEFAULT_MAX_INSTANCES,
        Options,
        build_gateway,
        default_store_url,
        load,
        prepare_store,
        push_addresses,
    )
    from codap_relay_tooling.localapi.websocket import (
        IDLE_TIMEOUT_SECONDS,
        MAX_CONNECTION_SECONDS,
        MAX_MESSAGE_BYTES,
    )

    parameters: dict[str, str] = {}
    for item in args.parameter:
        name, _, value = item.partition("=")  # options.parameter checked the form
        parameters[name] = value
    if args.push_channel:
        parameters["PushChannel"] = args.push_channel
    template = (args.template or default_template()).resolve()
    options = Options(
        template=template,
        store_url=args.store or os.environ.get("RELAY_STORE") or default_store_url(),
        stage=args.stage,
        base_path=args.base_path,
        parameters=parameters,
        max_instances=args.max_instances or DEFAULT_MAX_INSTANCES,
        host=args.host,
        push_idle_seconds=args.push_idle_timeout or IDLE_TIMEOUT_SECONDS,
        push_max_seconds=args.push_max_lifetime or MAX_CONNECTION_SECONDS,
        push_faults=args.push_faults,
        forkserver=args.forkserver,
    )
    try:
        stack = load(options)
        store_url = prepare_store(options.store_url, template)
    except (TemplateError, StoreUrlError) as exc:
        print(f"codap-relay: {exc}", file=sys.stderr)
        return 2
    # One server, two listening sockets: the REST stage's and, with a WebSocket API in the template, that API's own
    # (a host of its own on AWS). Both are bound first, so that its address is in the functions' environment.
    try:
        sockets = [_bind(args.host, args.port)]
        if stack.socket_api is not None:
            sockets.append(_bind(args.host, args.push_port or 0))
            options = dataclasses.replace(options, push_port=sockets[-1].getsockname()[1])
    except OSError as exc:
        print(f"codap-relay: cannot listen on {args.host}: {exc}", file=sys.stderr)
        return 1
    gateway = build_gateway(options, stack, store_url)
    config = uvicorn.Config(
        gateway,
        host=args.host,
        port=args.port,
        lifespan="on",
        proxy_headers=False,  # API Gateway's sourceIp is the TCP peer; a client's X-Forwarded-For is only extended
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=2,  # open streams end; then every function process is stopped
        ws="websockets-sansio",
        ws_max_size=MAX_MESSAGE_BYTES,  # a bigger message closes the connection with 1009, as API Gateway does
        ws_per_message_deflate=False,  # API Gateway does not compress: a browser's offer of it is declined
    )
    host = args.host if ":" not in args.host else f"[{args.host}]"
    prefix = (args.base_path or stack.stage).strip("/")
    base = f"http://{host}:{args.port}/{prefix}"

    def announce() -> None:
        print(
            f"codap-relay local-api: {len(stack.functions)} functions from {template}, store {store_url.split('?')[0]}",
            flush=True,
        )
        print(f"API:    {base}/", flush=True)
        print(f"Plugin: {base}/plugin/", flush=True)
        print(f"MCP:    {base}/mcp/<pairing code>", flush=True)
        push = push_addresses(options, stack)
        if push:
            print(f"Push:   {push['PUSH_URL']} (@connections: {push['PUSH_ENDPOINT']}/@connections/<id>)", flush=True)

    gateway.on_ready = announce
    uvicorn.Server(config).run(sockets=sockets)
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket as uvicorn binds one (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
