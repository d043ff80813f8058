"""Lambda function: POST /request: queue a tool call for the plugin (optionally wait for its answer)."""

from relay_lambda import build

runtime = build(["request"])
handler = runtime.handler
