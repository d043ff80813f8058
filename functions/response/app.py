"""Lambda function: POST /response (the plugin answers) and GET /response (the LLM reads the answer)."""

from relay_lambda import build

runtime = build(["response"])
handler = runtime.handler
