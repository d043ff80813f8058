"""Lambda function: GET /stream, the plugin's server-sent event stream.

Python Lambdas cannot stream a response themselves, so in AWS ``run.sh`` serves ``app`` with uvicorn and the
Lambda Web Adapter layer relays it as a response stream (AWS_LWA_INVOKE_MODE=response_stream). The stream ends
itself after STREAM_MAX_SECONDS with a ``retry:`` so EventSource reconnects with its cursor before Lambda's
15-minute limit. ``handler`` is the buffered form (``?mode=poll``, ``sam local invoke``).
"""

from relay_lambda import build

runtime = build(["stream", "meta"])  # meta: /healthz is the Web Adapter's readiness check
app = runtime.app
handler = runtime.handler
