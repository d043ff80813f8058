"""Lambda function: the CODAP plugin's static files (/plugin/) plus /, /healthz and /openapi.json."""

from relay_lambda import build

runtime = build(["plugin", "meta", "llms"])
handler = runtime.handler
