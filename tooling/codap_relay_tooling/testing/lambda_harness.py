"""A Lambda function of this repository run in process as the Lambda runtime would: its environment, its
``app.py`` imported once (a cold start) and its handler invoked warm with the events API Gateway sends."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

# What every function finds in its environment besides its settings (placeholder credentials: moto or Local).
BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "codap-relay",
    "POWERTOOLS_METRICS_NAMESPACE": "CodapRelayTest",
    "POWERTOOLS_TRACE_DISABLED": "true",
}


def function_env(store_url: str, **settings: str) -> dict[str, str]:
    """A function's environment: the base, the store, and the relay settings given (``HEARTBEAT_SECONDS=…``)."""
    return {**BASE_ENV, "RELAY_STORE": store_url, **settings}


def load_function(root: Path, name: str) -> ModuleType:
    """Import ``functions/<name>/app.py`` as Lambda does at cold start, registered as ``lambda_fn_<name>``
    (``unload_function`` forgets it). functions/shared (the layer) must be on sys.path, as /opt/python is."""
    spec = importlib.util.spec_from_file_location(f"lambda_fn_{name}", root / "functions" / name / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def unload_function(name: str) -> None:
    sys.modules.pop(f"lambda_fn_{name}", None)
