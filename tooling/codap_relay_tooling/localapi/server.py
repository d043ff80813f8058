"""Putting local-api together: the stack from the template, a pool per function, the store they share."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO
from urllib.parse import parse_qs, urlparse

from codap_relay.sam_template import load_template
from codap_relay.settings import state_dir
from codap_relay.store import StoreUrlError, open_store

from .forkserver import Forkserver
from .gateway import Gateway
from .instances import AdapterInstance, Instance, Pool, RuntimeInstance, function_environment
from .template import Function, Stack, read_stack
from .websocket import IDLE_TIMEOUT_SECONDS, MAX_CONNECTION_SECONDS, PostFaults, SocketGateway, quiet_refusals

DEFAULT_MAX_INSTANCES = 10


@dataclass(frozen=True)
class Options:
    template: Path
    store_url: str
    stage: str | None = None
    base_path: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    max_instances: int = DEFAULT_MAX_INSTANCES
    caller: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    #: The WebSocket API's own port (the template's push channel) and the host both listen on.
    push_port: int | None = None
    host: str = "127.0.0.1"
    push_idle_seconds: float = IDLE_TIMEOUT_SECONDS
    push_max_seconds: float = MAX_CONNECTION_SECONDS
    #: Seed for faults in the WebSocket API's management API (chaos tests); None: it behaves.
    push_faults: int | None = None
    #: Fork each buffered function's environment from a prepared interpreter (forkserver.py); else a fresh one.
    forkserver: bool = False


def default_store_url() -> str:
    return f"sqlite:///{state_dir() / 'local-api.db'}"


def prepare_store(url: str, template: Path) -> str:
    """The store URL every function gets. ``memory:`` is refused: it lives inside one process, and each function
    runs in its own. A SQLite file is marked shared (its writers are several processes, so waiters poll) and
    created once here; a DynamoDB Local table (``endpoint_url``) is created from the template when missing."""
    parsed = urlparse(url)
    if url.startswith("memory:"):
        raise StoreUrlError(
            "local-api cannot use the memory: store: every function runs in its own process, as on Lambda, and "
            "memory: lives inside one process, so the functions would not see each other's writes. Use "
            "sqlite:///ABS/PATH.db or dynamodb://TABLE?endpoint_url=… (DynamoDB Local)."
        )
    if parsed.scheme == "sqlite":
        shared = f"sqlite://{url[len('sqlite://') :].split('?', 1)[0]}?shared=1"
        open_store(shared).close()  # creates the file and its schema before several processes race to
        return shared
    if parsed.scheme == "dynamodb":
        options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        if options.get("endpoint_url"):
            _ensure_local_table(parsed.netloc, options, template)
        return url
    open_store(url)  # raises StoreUrlError with the accepted forms
    return url


def _ensure_local_table(table: str, options: Mapping[str, str], template: Path) -> None:
    from codap_relay.store.dynamodb import dynamodb_client
    from codap_relay.store.dynamodb.table import create_table, table_definition

    client = dynamodb_client(endpoint_url=options.get("endpoint_url"), region=options.get("region"))
    create_table(client, table, table_definition(load_template(template)))


def load(options: Options) -> Stack:
    stack = read_stack(options.template, parameters=options.parameters, region=_region(options.caller))
    if options.stage:
        stack = replace(stack, stage=options.stage)
    return stack


def _region(caller: Mapping[str, str]) -> str:
    return caller.get("AWS_REGION") or caller.get("AWS_DEFAULT_REGION") or "us-east-1"


def push_addresses(options: Options, stack: Stack) -> dict[str, str]:
    """PUSH_URL and PUSH_ENDPOINT pointing at the emulated WebSocket API (none without one in the template)."""
    if stack.socket_api is None or options.push_port is None:
        return {}
    host = options.host if ":" not in options.host else f"[{options.host}]"
    where = f"{host}:{options.push_port}/{stack.socket_api.stage}"
    return {"PUSH_URL": f"ws://{where}", "PUSH_ENDPOINT": f"http://{where}"}


def build_gateway(options: Options, stack: Stack, store_url: str, output: TextIO = sys.stderr) -> Gateway:
    layer_dir = options.template.resolve().parent / "functions" / "shared"
    pools: dict[str, Pool] = {}
    push = push_addresses(options, stack)
    forkserver = Forkserver() if options.forkserver else None
    for function in stack.functions.values():
        environment = function_environment(
            function,
            store_url=store_url,
            layer_dir=layer_dir,
            region=_region(options.caller),
            caller=options.caller,
            own=push,
        )

        def make(fn: Function, number: int, environment: dict[str, str] = environment) -> Instance:
            if fn.web_adapter:
                return AdapterInstance(fn, number, environment, output)
            instance = RuntimeInstance(fn, number, environment, output)
            instance.forkserver = forkserver
            return instance

        cap = options.max_instances
        reserved = function.reserved_concurrency
        if reserved is not None:
            cap = min(cap, reserved)
        pools[function.logical_id] = Pool(function, make, cap, throttles=reserved is not None and reserved <= cap)
    gateway = Gateway(stack, pools, output, base_path=options.base_path)
    gateway.forkserver = forkserver
    if stack.socket_api is not None and options.push_port is not None:
        gateway.socket = SocketGateway(
            stack.socket_api,
            pools,
            gateway.invoker,
            idle_seconds=options.push_idle_seconds,
            max_seconds=options.push_max_seconds,
            faults=PostFaults(random.Random(options.push_faults)) if options.push_faults is not None else None,
        )
        gateway.socket_port = options.push_port
        quiet_refusals()
    return gateway
