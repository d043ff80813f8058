"""One Lambda execution environment for a buffered Python function: ``python -m codap_relay_tooling.localapi.runtime``.

Started by local-api with the function's environment (``_HANDLER``, ``LAMBDA_TASK_ROOT`` as the working
directory, the template's variables). It imports the handler once (the init phase, timed), then answers one
invocation at a time on loopback, the way the Lambda Runtime Interface Emulator's invoke API does:
``POST /2015-03-31/functions/function/invocations`` with the event as the body; the handler's return value comes
back as JSON, an exception as Lambda's error document with ``X-Amz-Function-Error: Unhandled``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from codap_relay_tooling.testing.lambda_context import LambdaContext

INVOKE_PATH = "/2015-03-31/functions/function/invocations"
READY_PREFIX = "LOCALAPI-RUNTIME-READY "  # the first line local-api waits for, followed by a nonce and JSON


def encode(result: Any) -> bytes:
    # The python3.12 runtime's marshaller writes raw UTF-8 (ensure_ascii=False); earlier runtimes escaped it.
    return json.dumps(result, ensure_ascii=False).encode("utf-8")


def error_document(exc: BaseException, request_id: str) -> dict[str, Any]:
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def load_handler(spec: str) -> Any:
    module_name, _, function_name = spec.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, function_name)


def build_server(handler: Any) -> HTTPServer:
    """The invoke API on a free loopback port, one invocation at a time."""
    function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "function")
    memory = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
    region = os.environ.get("AWS_REGION", "us-east-1")

    class Invocations(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: local-api reuses one connection per environment
        # The headers and the body go out in two writes; with Nagle's algorithm on, the body waits for the
        # client's delayed ACK (40 ms on Linux), which Lambda's own runtime API does not add to an invocation.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # no access log on the function's output
            pass

        def do_POST(self) -> None:
            if self.path != INVOKE_PATH:
                self.send_error(404)
                return
            payload = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request_id = self.headers.get("Lambda-Runtime-Aws-Request-Id") or "local"
            deadline_ms = int(self.headers.get("Lambda-Runtime-Deadline-Ms") or (time.time() + 30) * 1000)
            trace = self.headers.get("Lambda-Runtime-Trace-Id")
            if trace:
                os.environ["_X_AMZN_TRACE_ID"] = trace
            context = LambdaContext(
                function_name=function_name,
                memory_limit_in_mb=memory,
                aws_request_id=request_id,
                region=region,
                deadline=deadline_ms / 1000,
            )
            failed = False
            try:
                body = encode(handler(json.loads(payload), context))
            except Exception as exc:
                failed = True
                document = error_document(exc, request_id)
                print(f"[ERROR] {document['errorType']}: {document['errorMessage']}", file=sys.stderr)
                traceback.print_exc()
                body = encode(document)
            sys.stdout.flush()
            sys.stderr.flush()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if failed:
                self.send_header("X-Amz-Function-Error", "Unhandled")
            self.end_headers()
            self.wfile.write(body)

    return HTTPServer(("127.0.0.1", 0), Invocations)


def serve(handler: Any, nonce: str, init_ms: float) -> None:
    server = build_server(handler)
    ready = {"port": server.server_address[1], "initMs": round(init_ms, 2)}
    print(f"{READY_PREFIX}{nonce} {json.dumps(ready)}", flush=True)
    server.serve_forever()


def main() -> int:
    nonce = os.environ.pop("LOCALAPI_NONCE", "")
    started = time.perf_counter()
    try:
        handler = load_handler(os.environ["_HANDLER"])
    except Exception as exc:
        # Lambda reports an init failure as Runtime.ImportModuleError on the first invocation; here it is
        # announced at once, and local-api answers each invocation as API Gateway would (502).
        traceback.print_exc()
        failure = {"error": f"Runtime.ImportModuleError: {type(exc).__name__}: {exc}"}
        print(f"{READY_PREFIX}{nonce} {json.dumps(failure)}", flush=True)
        return 1
    serve(handler, nonce, (time.perf_counter() - started) * 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
